package main

import "testing"

// TestHumanBytes: sizes for people, in powers of 1024.
func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0:           "0 bytes",
		1:           "1 byte",
		1000:        "1000 bytes",
		1023:        "1023 bytes",
		1024:        "1.0 KiB",
		1536:        "1.5 KiB",
		10188:       "9.9 KiB",
		10200:       "10 KiB",
		300000:      "293 KiB",
		1<<20 - 100: "1.0 MiB", // 1023.9 KiB would print as 1024 KiB
		1288490189:  "1.2 GiB",
		5 << 40:     "5.0 TiB",
		1<<63 - 1:   "8.0 EiB",
	} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSizeFlag: --min-size takes sifd's size syntax and refuses the rest.
func TestSizeFlag(t *testing.T) {
	var n int64
	f := sizeFlag{&n}
	for s, want := range map[string]int64{"0": 0, "4096": 4096, "100K": 100 << 10, "1MB": 1e6, "1.5GiB": 3 << 29} {
		if err := f.Set(s); err != nil || n != want {
			t.Errorf("Set(%q): %d, %v; want %d", s, n, err, want)
		}
	}
	for _, s := range []string{"", "abc", "-1", "unlimited", "1X"} {
		if err := f.Set(s); err == nil {
			t.Errorf("Set(%q) accepted: %d", s, n)
		}
	}
}
