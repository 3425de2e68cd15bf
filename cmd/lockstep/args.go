package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst returns args with the flags of the command they select moved before that
// command's positional arguments. urfave/cli/v2 stops reading flags at the first
// positional argument, and the commands are documented (and typed) the natural way:
// `lockstep invoke counter.add --key k`. The order of the flags among themselves, and of
// the positional arguments among themselves, is kept; everything after "--" stays
// positional. Arguments that select no command, and shell-completion requests, are
// returned as they are.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 2 || args[len(args)-1] == completionFlag {
		return args // cli looks for the completion flag in the last place only
	}
	var cmd *cli.Command
	cmds := app.Commands
	i := 1
	for ; i < len(args); i++ {
		next := findCommand(cmds, args[i])
		if next == nil {
			break
		}
		cmd, cmds = next, next.Subcommands
	}
	if cmd == nil || (len(cmd.Subcommands) > 0 && cmd.Action == nil) {
		return args // no command, or a group whose subcommand was not named (and that does nothing itself)
	}
	out := append([]string(nil), args[:i]...)
	var positional []string
	dashdash := false
	for j := i; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--":
			dashdash = true
			positional = append(positional, args[j+1:]...)
			j = len(args)
		case len(a) > 1 && strings.HasPrefix(a, "-"):
			out = append(out, a)
			if !strings.Contains(a, "=") && takesValue(cmd, strings.TrimLeft(a, "-")) && j+1 < len(args) {
				j++
				out = append(out, args[j])
			}
		default:
			positional = append(positional, a)
		}
	}
	if dashdash {
		out = append(out, "--")
	}
	return append(out, positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether the flag name of cmd is followed by a value: any flag but a
// boolean one. An unknown flag takes none (cli reports it).
func takesValue(cmd *cli.Command, name string) bool {
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return false
}
