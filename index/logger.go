package index

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleLogger routes Pebble's log lines to a slog.Logger: Infof at Debug
// (Pebble's informational lines are about its own housekeeping), Errorf at
// Error. Fatalf logs at Error and panics: Pebble calls it only when it
// cannot go on, and a library must not exit the process.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) log(level slog.Level, format string, args []any) {
	if p.l == nil || !p.l.Enabled(context.Background(), level) {
		return
	}
	p.l.Log(context.Background(), level, strings.TrimSuffix(fmt.Sprintf(format, args...), "\n"), "component", "pebble")
}

func (p pebbleLogger) Infof(format string, args ...any)  { p.log(slog.LevelDebug, format, args) }
func (p pebbleLogger) Errorf(format string, args ...any) { p.log(slog.LevelError, format, args) }
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.log(slog.LevelError, format, args)
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// eventListener reports the Pebble events an operator should hear about:
// background errors and data corruption at Error, write stalls and slow
// disks at Warn, flushes and compactions at Debug.
// Corruption is not fatal: the read that met it returns an error that
// IsCorrupt recognises. onBackground, if not nil, is called with every
// background error (a flush or compaction that failed, e.g. for want of
// space), on Pebble's goroutine.
func eventListener(l *slog.Logger, onBackground func(error)) *pebble.EventListener {
	if onBackground == nil {
		onBackground = func(error) {}
	}
	if l == nil {
		return &pebble.EventListener{
			BackgroundError: onBackground,
			DataCorruption:  func(pebble.DataCorruptionInfo) {},
		}
	}
	ctx := context.Background()
	return &pebble.EventListener{
		BackgroundError: func(err error) { l.Error("pebble background error", "err", err); onBackground(err) },
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			l.Error("pebble found corrupt data", "info", info.String())
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) { l.Warn("pebble write stall", "reason", info.Reason) },
		WriteStallEnd:   func() { l.Info("pebble write stall ended") },
		DiskSlow: func(info pebble.DiskSlowInfo) {
			l.Warn("pebble disk slow", "path", info.Path, "duration", info.Duration)
		},
		FlushEnd: func(info pebble.FlushInfo) {
			if l.Enabled(ctx, slog.LevelDebug) {
				l.Debug("pebble flush", "info", info.String())
			}
		},
		CompactionEnd: func(info pebble.CompactionInfo) {
			if l.Enabled(ctx, slog.LevelDebug) {
				l.Debug("pebble compaction", "info", info.String())
			}
		},
	}
}
