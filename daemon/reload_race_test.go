package daemon

import (
	"sync"
	"testing"
)

// The status reads the configured roots while a reload replaces them
// (sifctl status during systemctl reload): run with -race.
func TestStatusDuringReload(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	var mu sync.Mutex
	n := 0
	cfg := Config{Roots: []string{a}}
	cfg.Reload = func() (Config, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n%2 == 1 {
			return Config{Roots: []string{a, b}}, nil
		}
		return Config{Roots: []string{a}}, nil
	}
	d, _ := startDaemon(t, cfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			d.reload()
		}
	}()
	for {
		select {
		case <-done:
			if st := d.Status(); len(st.Roots) != 1 {
				t.Errorf("after an even number of reloads: roots %+v", st.Roots)
			}
			return
		default:
			d.Status()
		}
	}
}
