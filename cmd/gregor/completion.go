package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// actions are the second words of the commands that take one.
var actions = map[string][]string{
	"topics":     {"list", "create", "describe", "delete", "alter-config"},
	"groups":     {"list", "describe", "delete", "reset-offsets"},
	"users":      {"add", "delete"},
	"link":       {"create", "list", "status", "promote", "delete"},
	"completion": {"bash", "zsh"},
}

// completionScript completes commands and actions from the lists above and
// flags from the command's own --help (so they never go stale); bash's
// completion, which zsh loads through bashcompinit.
const completionScript = `# gregor completion: source it, or put it where your shell loads completions:
#   bash: gregor completion bash > /etc/bash_completion.d/gregor
#   zsh:  gregor completion zsh > "${fpath[1]}/_gregor"
_gregor() {
	local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} act=""
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "%s" -- "$cur"))
		return
	fi
	case "$cmd" in
%s	esac
	if [ "$COMP_CWORD" -eq 2 ] && [ -n "$acts" ]; then
		COMPREPLY=($(compgen -W "$acts" -- "$cur"))
		return
	fi
	if [ -n "$acts" ]; then act=${COMP_WORDS[2]}; fi
	case "$cur" in
	-*)
		local flags
		flags=$("${COMP_WORDS[0]}" $cmd $act --help 2>&1 | sed -n 's/^  -\([a-z][a-z0-9.-]*\).*/--\1/p')
		COMPREPLY=($(compgen -W "$flags" -- "$cur"))
		;;
	*)
		COMPREPLY=($(compgen -f -- "$cur"))
		;;
	esac
}
`

// completion lists the commands, itself among them.
func init() { subcommands["completion"] = completionCmd }

func completionCmd(args []string) error {
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
		fmt.Fprintln(os.Stderr, "usage: gregor completion bash|zsh")
		return errUsage
	}
	cmds := append(slices.Sorted(maps.Keys(subcommands)), "serve", "version", "help")
	var cases strings.Builder
	for _, c := range slices.Sorted(maps.Keys(actions)) {
		fmt.Fprintf(&cases, "\t%s) acts=%q ;;\n", c, strings.Join(actions[c], " "))
	}
	cases.WriteString("\t*) acts=\"\" ;;\n")
	fmt.Printf(completionScript, strings.Join(cmds, " "), cases.String())
	if args[0] == "zsh" {
		fmt.Println("autoload -U +X bashcompinit && bashcompinit")
	}
	fmt.Println("complete -o default -F _gregor gregor")
	return nil
}
