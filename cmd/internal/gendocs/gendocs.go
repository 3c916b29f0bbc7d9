// Package gendocs writes the manual pages and shell completions of a cobra
// command tree. sifd and sifctl each carry it as a hidden "gen-docs"
// command, which the Debian package build (packaging/deb) runs on the
// binaries it ships, so the pages describe exactly those binaries.
package gendocs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// Command returns the hidden command "gen-docs DIR", which calls Write on
// the root of the tree it is added to.
func Command() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "Write the manual pages and shell completions into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return Write(cmd.Root(), args[0])
		},
	}
}

// Write checks the flags' defaults (CheckDefaults) and writes into dir, creating its subdirectories:
//
//	man1/ROOT.1, man1/ROOT-SUB.1, ...  section 1 pages, one per visible command
//	bash/ROOT                          bash completion (bash-completion v2)
//	zsh/_ROOT                          zsh completion
//	fish/ROOT.fish                     fish completion
//
// ROOT is root's name. The pages are dated $SOURCE_DATE_EPOCH when it is
// set, so that a package build is reproducible, else today. Hidden
// commands (this one among them) get no page.
func Write(root *cobra.Command, dir string) error {
	if err := CheckDefaults(root); err != nil {
		return err
	}
	root.InitDefaultCompletionCmd()
	name := root.Name()
	for _, sub := range []string{"man1", "bash", "zsh", "fish"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("gendocs: %w", err)
		}
	}
	root.DisableAutoGenTag = true
	header := &doc.GenManHeader{Section: "1", Source: "sif " + root.Version, Manual: "sif manual"}
	if err := doc.GenManTree(root, header, filepath.Join(dir, "man1")); err != nil {
		return fmt.Errorf("gendocs: manual pages: %w", err)
	}
	for _, c := range []struct {
		file string
		gen  func(f *os.File) error
	}{
		{filepath.Join("bash", name), func(f *os.File) error { return root.GenBashCompletionV2(f, true) }},
		{filepath.Join("zsh", "_"+name), func(f *os.File) error { return root.GenZshCompletion(f) }},
		{filepath.Join("fish", name+".fish"), func(f *os.File) error { return root.GenFishCompletion(f, true) }},
	} {
		f, err := os.Create(filepath.Join(dir, c.file))
		if err != nil {
			return fmt.Errorf("gendocs: %w", err)
		}
		err = c.gen(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("gendocs: %s: %w", c.file, err)
		}
	}
	return nil
}

// CheckDefaults fails when a flag of the tree under root would show two
// defaults: cobra prints "(default X)" after the usage of every flag whose
// default is not its type's zero value, so such a usage must not name one
// of its own. A default the usage states (a flag whose zero means "the
// daemon's default", say) is printed from the value in effect, not typed.
func CheckDefaults(root *cobra.Command) error {
	var bad []string
	check := func(cmd *cobra.Command, f *pflag.Flag) {
		switch f.DefValue {
		case "", "0", "false", "[]", "0s":
			return // cobra prints no default
		}
		if strings.Contains(strings.ToLower(f.Usage), "default") {
			bad = append(bad, fmt.Sprintf("%s --%s (default %s): %q", cmd.CommandPath(), f.Name, f.DefValue, f.Usage))
		}
	}
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) { check(cmd, f) })
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(root)
	if len(bad) > 0 {
		return fmt.Errorf("gendocs: flags whose help would show two defaults:\n  %s", strings.Join(bad, "\n  "))
	}
	return nil
}
