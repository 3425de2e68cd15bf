package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// completionFlag is the flag urfave/cli appends, last, to ask for completions.
const completionFlag = "--generate-bash-completion"

// bashCompletion asks the binary itself for the words that may follow.
const bashCompletion = `# bash completion for lockstep; load with: source <(lockstep completion bash)
_lockstep_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  if [[ "$cur" == -* ]]; then
    words+=("$cur")
  fi
  local opts
  opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
}
complete -o bashdefault -o default -F _lockstep_complete lockstep
`

// zshCompletion is urfave/cli's zsh script (its autocomplete/zsh_autocomplete) for
// lockstep: it asks the binary, as bash's does; with $0 ending in zsh, urfave/cli answers
// "name:usage" lines that _describe shows with their descriptions.
const zshCompletion = `#compdef lockstep
# zsh completion for lockstep; load with: source <(lockstep completion zsh)
_lockstep_complete() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(env 0=zsh ${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(env 0=zsh ${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _lockstep_complete lockstep
`

// completionShells are the shells `lockstep completion` writes scripts for.
var completionShells = []string{"bash", "zsh", "fish"}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that completes lockstep's commands and flags. bash and zsh ask the binary
for the words that may follow (urfave/cli's --generate-bash-completion); fish's script
lists every command and flag, generated from the binary (urfave/cli's ToFishCompletion).

Examples:
  source <(lockstep completion bash)
  source <(lockstep completion zsh)
  lockstep completion fish > ~/.config/fish/completions/lockstep.fish`,
		Action: func(c *cli.Context) error {
			shell := c.Args().First()
			if c.NArg() != 1 {
				shell = ""
			}
			var script string
			switch shell {
			case "bash":
				script = bashCompletion
			case "zsh":
				script = zshCompletion
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				script = s
			default:
				return fmt.Errorf("completion %q: want one of %s", shell, strings.Join(completionShells, ", "))
			}
			_, err := fmt.Fprint(c.App.Writer, script)
			return err
		},
	}
}
