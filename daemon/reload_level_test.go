package daemon

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestReloadLogLevel: a changed log level applies at once when the
// logger's level is a LevelVar, and is logged; without one it is logged as
// needing a restart; an unchanged one is left alone.
func TestReloadLogLevel(t *testing.T) {
	var buf bytes.Buffer
	lv := new(slog.LevelVar)
	lv.Set(slog.LevelWarn)
	d := &Daemon{log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: lv})),
		cfg: Config{LogLevel: "warn", LevelVar: lv}}

	d.reloadLogLevel("WARN")
	d.reloadLogLevel("")
	if buf.Len() != 0 || lv.Level() != slog.LevelWarn {
		t.Fatalf("unchanged level: level %v, log %q", lv.Level(), buf.String())
	}
	d.reloadLogLevel("debug")
	if lv.Level() != slog.LevelDebug || d.cfg.LogLevel != "debug" || !strings.Contains(buf.String(), `msg="log level changed" from=warn to=debug`) {
		t.Errorf("to debug: level %v, log %q", lv.Level(), buf.String())
	}
	buf.Reset()
	d.reloadLogLevel("error")
	if lv.Level() != slog.LevelError || !strings.Contains(buf.String(), `from=debug to=error`) {
		t.Errorf("to error: level %v, log %q (the change must be logged before it hides warnings)", lv.Level(), buf.String())
	}

	buf.Reset()
	d.cfg = Config{LogLevel: "info"}
	d.log = slog.New(slog.NewTextHandler(&buf, nil))
	d.reloadLogLevel("debug")
	if d.cfg.LogLevel != "info" || !strings.Contains(buf.String(), "takes effect at restart") || !strings.Contains(buf.String(), "key=log_level") {
		t.Errorf("without a LevelVar: %q", buf.String())
	}
}
