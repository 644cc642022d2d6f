package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// cliDir is where the CLI pages go, one per command, as cobra names them.
const cliDir = referenceDir + "/cli"

// cliPages renders docs/reference/cli/*.md from the command tree the
// binary runs.
func cliPages(string) (map[string][]byte, error) {
	root := rootCommand()
	// Execute adds cobra's completion command; the reference shows it too.
	root.InitDefaultCompletionCmd()
	return cliPagesOf(root)
}

// cliPagesOf renders one page per available command of the tree under
// root with cobra's own markdown generator. Defaults that depend on the
// machine generating them (the home directory in --cache-dir) are written
// as kubectl's docs write them, so the pages are the same everywhere.
func cliPagesOf(root *cobra.Command) (map[string][]byte, error) {
	home, _ := os.UserHomeDir()
	var prepare func(c *cobra.Command)
	prepare = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				switch {
				case f.Name == "cache-dir":
					f.DefValue = "$HOME/.kube/cache"
				case home != "" && strings.Contains(f.DefValue, home):
					f.DefValue = strings.ReplaceAll(f.DefValue, home, "$HOME")
				}
			})
		}
		for _, sub := range c.Commands() {
			prepare(sub)
		}
	}
	prepare(root)

	dir, err := os.MkdirTemp("", "gendocs-cli-")
	if err != nil {
		return nil, fmt.Errorf("making a directory for cobra's pages: %w", err)
	}
	defer os.RemoveAll(dir)
	header := func(string) string {
		return fmt.Sprintf(generatedHeader, "the cobra command tree (spf13/cobra/doc)")
	}
	if err := doc.GenMarkdownTreeCustom(root, dir, header, func(s string) string { return s }); err != nil {
		return nil, fmt.Errorf("generating the CLI pages: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading cobra's pages: %w", err)
	}
	pages := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading cobra's pages: %w", err)
		}
		pages[cliDir+"/"+e.Name()] = b
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("cobra generated no page for %s", root.Name())
	}
	return pages, nil
}
