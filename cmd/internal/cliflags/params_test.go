package cliflags

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sif-dev/sif/index/fingerprint"
)

// TestParamsUsageDefaults: the default each scheme flag's usage shows is
// the one fingerprint.Params.Normalize fills in for a zero field.
func TestParamsUsageDefaults(t *testing.T) {
	var p fingerprint.Params
	fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
	AddParams(fl, &p, "scheme")
	shown := func(name string) string {
		f := fl.Lookup(name)
		if f == nil {
			t.Fatalf("no --%s", name)
		}
		m := regexp.MustCompile(`\(default ([^)]*)\)$`).FindStringSubmatch(f.Usage)
		if m == nil {
			t.Fatalf("--%s: no default in %q", name, f.Usage)
		}
		return m[1]
	}
	norm := func(q fingerprint.Params) fingerprint.Params {
		n, err := q.Normalize()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	m := norm(fingerprint.Params{Scheme: fingerprint.Manber})
	for name, want := range map[string]int{"window": m.Window, "bits": m.Bits, "mod-bits": m.ModBits} {
		if got := shown(name); got != strconv.Itoa(want) {
			t.Errorf("--%s: usage shows default %s, Normalize gives %d", name, got, want)
		}
	}
	if got, want := shown("avg-chunk"), norm(fingerprint.Params{Scheme: fingerprint.Chunks}).AvgChunk; got != strconv.Itoa(want) {
		t.Errorf("--avg-chunk: usage shows default %s, Normalize gives %d", got, want)
	}
	// min-chunk and max-chunk are shown relative to avg: check the
	// relation for a few averages.
	for _, avg := range []int{64, 256, 4096} {
		c := norm(fingerprint.Params{Scheme: fingerprint.Chunks, AvgChunk: avg})
		for name, got := range map[string]int{"min-chunk": c.MinChunk, "max-chunk": c.MaxChunk} {
			expr := shown(name)
			var want int
			switch {
			case strings.HasPrefix(expr, "avg/"):
				k, _ := strconv.Atoi(strings.TrimPrefix(expr, "avg/"))
				want = avg / max(k, 1)
			case strings.HasPrefix(expr, "avg*"):
				k, _ := strconv.Atoi(strings.TrimPrefix(expr, "avg*"))
				want = avg * k
			default:
				t.Fatalf("--%s: default %q is not avg/K or avg*K", name, expr)
			}
			if got != want {
				t.Errorf("--%s: usage shows default %s, which is %d for avg %d; Normalize gives %d", name, expr, want, avg, got)
			}
		}
	}
	if fmt.Sprint(p) != fmt.Sprint(fingerprint.Params{}) {
		t.Errorf("AddParams set %+v before any flag was given", p)
	}
}

// TestFloat64Var: a float flag takes finite numbers and refuses NaN,
// infinities and what is not a number, naming the flag.
func TestFloat64Var(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want float64
		err  string
	}{
		{"25", 25, ""},
		{"-1.5", -1.5, ""},
		{"1e2", 100, ""},
		{"NaN", 0, `invalid argument "NaN" for "--threshold" flag: not a finite number`},
		{"nan", 0, "not a finite number"},
		{"Inf", 0, "not a finite number"},
		{"-inf", 0, "not a finite number"},
		{"+Infinity", 0, "not a finite number"},
		{"1e400", 0, "out of range"},
		{"ten", 0, `invalid argument "ten" for "--threshold" flag: not a number`},
	} {
		var v float64
		fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
		Float64Var(fl, &v, "threshold", 7, "usage")
		if v != 7 {
			t.Fatalf("default %v, want 7", v)
		}
		err := fl.Parse([]string{"--threshold", c.arg})
		switch {
		case c.err == "" && (err != nil || v != c.want):
			t.Errorf("--threshold %s: %v, %v; want %v", c.arg, v, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("--threshold %s: %v; want an error with %q", c.arg, err, c.err)
		}
	}
}
