package index

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
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
