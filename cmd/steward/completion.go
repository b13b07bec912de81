package main

import (
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/stewardhq/steward/completion"
)

const completionUsageText = `Usage: steward completion bash|zsh|fish

Prints a shell completion script for steward's commands and flags, generated
from the same flag definitions the commands parse, so it never lags behind.

Examples:
  # bash, for this shell, then for every new one:
  source <(steward completion bash)
  steward completion bash > /etc/bash_completion.d/steward

  # zsh (compinit must be loaded):
  steward completion zsh > "${fpath[1]}/_steward"

  # fish:
  steward completion fish > ~/.config/fish/completions/steward.fish
`

func completionShellNames() []string { return completion.Shells() }

func completionFlagSet(out io.Writer) *flag.FlagSet {
	return newFlagSet("completion", completionUsageText, out)
}

func runCompletion(args []string, stdout, stderr io.Writer) int {
	fs := completionFlagSet(stderr)
	if stop, code := parseFlags(fs, args, stdout, stderr); stop {
		return code
	}
	if fs.NArg() != 1 || !slices.Contains(completion.Shells(), fs.Arg(0)) {
		return usageError(stderr, "completion", fmt.Errorf("name one shell: bash, zsh or fish (got %q)", fs.Args()))
	}
	completion.Write(stdout, fs.Arg(0), completedCommands())
	return exitOK
}

// completedCommands are steward's commands as completion describes them.
func completedCommands() []completion.Command {
	var out []completion.Command
	for _, c := range commands() {
		out = append(out, completion.Command{Name: c.name, Summary: c.summary, Flags: completion.Flags(c.flags()), Files: c.operands.files, Words: c.operands.words})
	}
	return out
}
