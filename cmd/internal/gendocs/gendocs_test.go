package gendocs

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestCheckDefaults(t *testing.T) {
	root := &cobra.Command{Use: "tool"}
	sub := &cobra.Command{Use: "sub", Run: func(*cobra.Command, []string) {}}
	root.AddCommand(sub)
	sub.Flags().Int("limit", 0, "at most this many (0: the daemon's default, 8)")
	sub.Flags().Float64("threshold", 25, "least percentage")
	if err := CheckDefaults(root); err != nil {
		t.Fatalf("a zero default named in the usage, a non-zero one not: %v", err)
	}
	sub.Flags().Float64("other", 25, "least percentage (default 50 with --dirs)")
	err := CheckDefaults(root)
	if err == nil || !strings.Contains(err.Error(), "tool sub --other (default 25)") {
		t.Fatalf("two defaults: %v", err)
	}
}
