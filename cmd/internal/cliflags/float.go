package cliflags

import (
	"errors"
	"math"
	"strconv"

	"github.com/spf13/pflag"
)

// float is a float64 flag that refuses, as it is parsed, what is not a
// finite number: NaN and infinities would otherwise pass every range
// check (a comparison with NaN is false) and reach the daemon.
type float struct{ p *float64 }

func (f float) String() string { return strconv.FormatFloat(*f.p, 'g', -1, 64) }
func (f float) Type() string   { return "float" }

func (f float) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return errors.New("out of range")
	case err != nil:
		return errors.New("not a number")
	case math.IsNaN(v) || math.IsInf(v, 0):
		return errors.New("not a finite number")
	}
	*f.p = v
	return nil
}

// Float64Var adds a float64 flag to fl, as fl.Float64Var does, whose value
// must be a finite number: anything else fails the parse with a message
// naming the flag, the value and what was wrong (`invalid argument "NaN"
// for "--threshold" flag: not a finite number`). The command checks the
// range itself.
func Float64Var(fl *pflag.FlagSet, p *float64, name string, value float64, usage string) {
	*p = value
	fl.Var(float{p}, name, usage)
}
