package cliflags

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Errors of the command line, in plain words: cobra and pflag say
// `accepts 2 arg(s), received 1` and `invalid argument "abc" for
// "--threshold" flag: strconv.ParseFloat: parsing "abc": invalid syntax`;
// sifd and sifctl say what was wrong and what they want, and where to read
// more.

// FlagError rewrites pflag's errors for a flag that does not parse: give
// it to the root command's SetFlagErrorFunc.
func FlagError(cmd *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		f := bad.GetFlag()
		why := wantOf(f.Value.Type())
		if c := errors.Unwrap(bad); c != nil && !strings.Contains(c.Error(), "strconv.") && !strings.HasPrefix(c.Error(), "time: ") {
			why = c.Error() // a value of this package's own, which says it plainly
		}
		return fmt.Errorf("--%s %q: %s (see '%s --help')", f.Name, bad.GetValue(), why, cmd.CommandPath())
	}
	var syntax *pflag.InvalidSyntaxError
	if errors.As(err, &syntax) {
		return fmt.Errorf("%q: a flag is --NAME or --NAME=VALUE (see '%s --help')", syntax.GetSpecifiedFlag(), cmd.CommandPath())
	}
	var missing *pflag.ValueRequiredError
	if errors.As(err, &missing) {
		f := missing.GetFlag()
		return fmt.Errorf("--%s needs a value: %s (see '%s --help')", f.Name, wantOf(f.Value.Type()), cmd.CommandPath())
	}
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) {
		return fmt.Errorf("%s has no flag %s (see '%s --help')", cmd.CommandPath(), dashed(unknown.GetSpecifiedName(), unknown.GetSpecifiedShortnames()), cmd.CommandPath())
	}
	return err
}

// dashed writes the flag pflag did not know: name is the long flag's
// name, or, when shorts is the cluster of letters after "-" it was in
// (-0, -xv), the letter it did not know.
func dashed(name, shorts string) string {
	if shorts != "" {
		return "-" + name
	}
	return "--" + name
}

// wantOf says what a flag of a pflag value type takes.
func wantOf(typ string) string {
	switch typ {
	case "float64", "float32", "float":
		return "want a number, such as 50 or 0.5"
	case "int", "int64", "int32", "uint", "uint64", "uint32":
		return "want a whole number"
	case "duration":
		return "want a duration, such as 30s, 5m or 1h"
	case "bool":
		return "want true or false"
	case "stringSlice", "stringArray":
		return "want a list of values"
	}
	return "want a " + typ
}

var argCount = regexp.MustCompile(`^(accepts (\d+) arg\(s\), received (\d+)|requires at least (\d+) arg\(s\), only received (\d+)|accepts at most (\d+) arg\(s\), received (\d+)|accepts between (\d+) and (\d+) arg\(s\), received (\d+))$`)

// ArgsError rewrites cobra's errors for a wrong number of arguments and
// an unknown command, naming the command's usage, for cmd and err as
// ExecuteContextC returns them; other errors are returned as they are.
func ArgsError(cmd *cobra.Command, err error) error {
	if cmd == nil || err == nil {
		return err
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "unknown command ") {
		name := strings.Fields(msg)[2]
		switch {
		case cmd.HasSubCommands():
			return fmt.Errorf("%s has no command %s (see '%s --help')", cmd.CommandPath(), name, cmd.CommandPath())
		default: // cobra.NoArgs says it so
			return fmt.Errorf("%s takes no arguments, and was given %s (see '%s --help')", cmd.CommandPath(), name, cmd.CommandPath())
		}
	}
	m := argCount.FindStringSubmatch(msg)
	if m == nil {
		return err
	}
	var got string
	for _, i := range []int{3, 5, 7, 10} {
		if m[i] != "" {
			got = m[i]
		}
	}
	return fmt.Errorf("wrong number of arguments (%s given): usage: %s (see '%s --help')", got, cmd.UseLine(), cmd.CommandPath())
}
