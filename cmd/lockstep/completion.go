package main

import (
	"fmt"

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

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the bash completion script",
		ArgsUsage: "bash",
		Description: `Prints a bash script that completes lockstep's commands and flags (zsh users: run
"autoload -U bashcompinit && bashcompinit" first).

Example:
  source <(lockstep completion bash)`,
		Action: func(c *cli.Context) error {
			if shell := c.Args().First(); shell != "bash" || c.NArg() != 1 {
				return fmt.Errorf("completion %q: only bash is supported", shell)
			}
			_, err := fmt.Fprint(c.App.Writer, bashCompletion)
			return err
		},
	}
}
