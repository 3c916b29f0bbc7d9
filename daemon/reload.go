package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/sif-dev/sif/index/fingerprint"
)

// reloadLoop, on every reload signal (SIGHUP) until ctx is done, makes
// the socket file again if it was removed or replaced, and reloads the
// configuration if there is a Config.Reload.
func (d *Daemon) reloadLoop(ctx context.Context) {
	sig := make(chan os.Signal, 1)
	stop := notifyReload(sig)
	if stop == nil {
		return // no reload signal here (Windows)
	}
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			if d.sock != nil {
				d.sock.Ensure(d.log) // logs what it finds wrong
			}
			if d.cfg.Reload != nil {
				d.reload()
			}
		}
	}
}

// reload applies a new configuration: roots, exclusions, size limits and
// the log level at once; other changes are logged as needing a restart. An invalid
// configuration leaves the running one in place.
func (d *Daemon) reload() {
	d.log.Info("reloading the configuration")
	nc, err := d.cfg.Reload()
	if err == nil {
		nc, err = nc.withDefaults()
	}
	if err != nil {
		d.errs.add("reload: " + err.Error())
		d.log.Error("reload failed: keeping the running configuration", "err", err)
		return
	}
	f, err := newFilter(nc)
	if err != nil {
		d.log.Error("reload failed: keeping the running configuration", "err", err)
		return
	}
	d.ctlMu.Lock()
	defer d.ctlMu.Unlock()
	old := d.cfg
	for _, c := range []struct {
		name    string
		changed bool
	}{
		{"db", nc.DB != old.DB},
		{"socket", nc.Socket != old.Socket},
		{"socket_access", nc.SocketAccess != old.SocketAccess},
		{"operator_group", nc.OperatorGroup != old.OperatorGroup},
		{"workers", nc.Workers != old.Workers},
		{"scheme", nc.Params != (fingerprint.Params{}) && nc.Params != d.ix.Params()},
		{"scheme.simihash", nc.SimiHash != nil && *nc.SimiHash != d.ix.SimiHash()},
		{"settle_delay", nc.SettleDelay != old.SettleDelay},
		{"max_settle_delay", nc.MaxSettleDelay != old.MaxSettleDelay},
		{"rescan_interval", nc.RescanInterval != old.RescanInterval},
		{"network_fs", nc.NetworkFS != old.NetworkFS},
		{"min_free_space", nc.MinFreeSpace != old.MinFreeSpace},
		{"fleet", !fleetEqual(nc.Fleet, old.Fleet)},
	} {
		if c.changed {
			d.log.Warn("configuration change takes effect at restart", "key", c.name)
		}
	}
	d.reloadLogLevel(nc.LogLevel)
	filterChanged := !slices.Equal(nc.Exclude, old.Exclude) || nc.MinFileSize != old.MinFileSize || nc.MaxFileSize != old.MaxFileSize
	d.cfg.Exclude, d.cfg.MinFileSize, d.cfg.MaxFileSize = nc.Exclude, nc.MinFileSize, nc.MaxFileSize
	d.filt.Store(f)
	if d.watch != nil {
		d.watch.SetExclude(f.exclude)
	}

	// Roots: those of the new configuration, with sifctl's changes.
	rf, err := d.loadRootsFile()
	if err != nil {
		d.log.Error("reload: reading the roots file", "err", err)
		return
	}
	d.rmu.Lock() // removedRoots reads them under rmu, not ctlMu
	d.cfg.Roots = nc.Roots
	d.rmu.Unlock()
	want, source := effectiveRoots(nc.Roots, rf)
	d.logRoots("reload: root", want, source, removedRoots(nc.Roots, rf))
	var added, removed []string
	for _, r := range d.rootList() {
		if !slices.Contains(want, r.path) {
			d.dropRoot(r)
			removed = append(removed, r.path)
		}
	}
	for _, p := range want {
		if x := d.rootOf(p); x != nil && x.path == p {
			continue
		}
		r, err := d.addRoot(d.runCtx, p, source[p])
		var overlap *rootOverlapError
		if errors.As(err, &overlap) {
			d.log.Warn("reload: root inside another root: ignored", "root", p, "under", overlap.other)
			continue
		}
		if err != nil {
			d.errs.add("reload: " + err.Error())
			d.log.Error("reload: root refused", "err", err)
			continue
		}
		added = append(added, p)
		d.spawn(func(ctx context.Context) { d.startRoot(ctx, r, "root added by reload") })
	}
	if filterChanged {
		// Files now excluded or out of the size limits are dropped, and
		// files newly included are read, by a reconcile of every root.
		for _, r := range d.rootList() {
			if !slices.Contains(added, r.path) {
				d.requestScan(r, r.path, false, "exclusions or size limits changed")
			}
		}
	}
	d.log.Info("configuration reloaded", "roots_added", added, "roots_removed", removed, "filters_changed", filterChanged)
}

// reloadLogLevel applies a changed log level ("" leaves it as it is): at
// once when the logger's level is a LevelVar, else it is logged as
// needing a restart. The caller holds ctlMu.
func (d *Daemon) reloadLogLevel(level string) {
	old := d.cfg.LogLevel
	if level == "" || strings.EqualFold(level, old) {
		return
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		d.log.Error("reload: log level not changed", "log_level", level, "err", err)
		return
	}
	if d.cfg.LevelVar == nil {
		d.log.Warn("configuration change takes effect at restart", "key", "log_level", "from", old, "to", level)
		return
	}
	// Said at warn level under the more verbose of the two levels, so it
	// shows whatever they are: before a change to a quieter level, after
	// a change to a more verbose one.
	quieter := lv > d.cfg.LevelVar.Level()
	if quieter {
		d.log.Warn("log level changed", "from", old, "to", level)
	}
	d.cfg.LevelVar.Set(lv)
	d.cfg.LogLevel = level
	if !quieter {
		d.log.Warn("log level changed", "from", old, "to", level)
	}
}
