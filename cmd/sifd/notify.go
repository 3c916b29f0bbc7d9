package main

import (
	sddaemon "github.com/coreos/go-systemd/v22/daemon"

	"github.com/sif-dev/sif/daemon"
)

// systemdNotifier returns the daemon.Notifier that speaks systemd's notify
// protocol (through go-systemd's SdNotify) to the socket named by
// $NOTIFY_SOCKET, which systemd sets for a Type=notify unit. Without
// $NOTIFY_SOCKET it does nothing.
func systemdNotifier() daemon.Notifier { return sdNotifier{} }

type sdNotifier struct{}

func (sdNotifier) Notify(state string) error {
	_, err := sddaemon.SdNotify(false, state)
	return err
}
