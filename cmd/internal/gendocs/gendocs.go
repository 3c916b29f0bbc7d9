// Package gendocs writes the manual pages and shell completions of a cobra
// command tree. sifd and sifctl each carry it as a hidden "gen-docs"
// command, which the Debian package build (packaging/deb) runs on the
// binaries it ships, so the pages describe exactly those binaries.
package gendocs

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
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

// Write writes into dir, creating its subdirectories:
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
