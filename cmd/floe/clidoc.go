package main

//go:generate go run . gen-cli-doc ../../docs/cli.md

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cliDocIntro opens docs/cli.md: the conventions every command shares,
// written by hand. The rest of the page is written from the command
// definitions, so it cannot drift from what the binary accepts.
//
//go:embed clidoc_intro.md
var cliDocIntro string

// cliDocCmd is the hidden command behind go generate: it writes the
// reference of root's visible commands to the file it is given.
func cliDocCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:    "gen-cli-doc FILE",
		Short:  "write the command reference (docs/cli.md) from the command definitions",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return os.WriteFile(args[0], cliReference(root), 0o644)
		},
	}
}

// cliReference is the Markdown reference of root's visible commands, in
// the order `floe -h` lists them.
func cliReference(root *cobra.Command) []byte {
	var b bytes.Buffer
	b.WriteString(cliDocIntro)
	b.WriteString("\n## Commands\n\n| command | what it does |\n|---|---|\n")
	var leaves []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.Name() == "help" {
				continue
			}
			if sub.HasAvailableSubCommands() {
				walk(sub)
				continue
			}
			leaves = append(leaves, sub)
			fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", sub.CommandPath(), anchor(sub.CommandPath()), cell(sub.Short))
		}
	}
	walk(root)
	for _, c := range leaves {
		fmt.Fprintf(&b, "\n## %s\n\n%s.\n\n```text\n%s\n```\n", c.CommandPath(), upperFirst(strings.TrimSuffix(c.Short, ".")), c.UseLine())
		var rows []string
		c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			name := "`--" + f.Name + "`"
			if f.Shorthand != "" {
				name = "`-" + f.Shorthand + "`, " + name
			}
			def := f.DefValue
			switch {
			case def == "" || def == "[]":
				def = ""
			case f.Value.Type() == "bool" && def == "false":
				def = ""
			default:
				def = "`" + def + "`"
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s |", name, def, cell(f.Usage)))
		})
		if len(rows) > 0 {
			b.WriteString("\n| flag | default | |\n|---|---|---|\n")
			b.WriteString(strings.Join(rows, "\n"))
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

// anchor is the fragment GitHub gives the heading "## text".
func anchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cell makes text safe inside a Markdown table cell.
func cell(text string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(text)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
