// Command steward is Steward's one binary: `serve` runs the admission webhook
// server, `manifests` renders the install manifests, `check` runs the rules
// offline over YAML files for GitOps CI, `audit` runs the background audit
// once against a cluster, `version` says which build it is and `completion`
// prints shell completion scripts.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one subcommand of steward. The table below is the only list of
// them: the usage text, `steward help`, and the completion scripts are all
// generated from it, so a new flag or command is never missing from one.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
	// flags returns the command's flag set with its help text, bound to
	// throwaway values: it is used for help and completion, not parsing.
	flags func() *flag.FlagSet
	// operands are what the command takes besides flags, for completion:
	// files, or one of a fixed set of words.
	operands operands
}

type operands struct {
	files bool
	words []string
}

// commands returns steward's subcommands in the order `steward help` lists
// them. It is a function because completion refers back to it.
func commands() []command {
	return []command{
		{name: "serve", summary: "run the admission webhook server", run: runServe, flags: func() *flag.FlagSet { o := defaultServeOptions(); return serveFlagSet(&o, io.Discard) }},
		{name: "manifests", summary: "render the install manifests (kustomize base and overlays)", run: runManifests, flags: func() *flag.FlagSet { return manifestsFlagSet(&manifestsOptions{}, io.Discard) }},
		{name: "check", summary: "check YAML files for Flux API versions that are deprecated or removed", run: runCheck, flags: func() *flag.FlagSet { return checkFlagSet(&checkOptions{}, io.Discard) }, operands: operands{files: true}},
		{name: "audit", summary: "run the background audit once against a cluster and print what the rules find", run: runAudit, flags: func() *flag.FlagSet { return auditFlagSet(&auditOptions{}, io.Discard) }},
		{name: "version", summary: "print the version, VCS revision, Go version and platform", run: runVersion, flags: func() *flag.FlagSet { return versionFlagSet(io.Discard) }},
		{name: "completion", summary: "print a shell completion script (bash, zsh or fish)", run: runCompletion, flags: func() *flag.FlagSet { return completionFlagSet(io.Discard) }, operands: operands{words: completionShellNames()}},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	switch args[0] {
	case "--version", "-version":
		return runVersion(nil, stdout, stderr)
	case "-h", "--help", "-help":
		fmt.Fprint(stdout, usage())
		return 0
	case "help":
		return runHelp(args[1:], stdout, stderr)
	}
	if c, ok := lookupCommand(args[0]); ok {
		return c.run(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "steward: unknown command %q\n\n%s", args[0], usage())
	return 2
}

func lookupCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// runHelp is `steward help [COMMAND]`: the overview, or one command's help
// on standard output, as `steward COMMAND --help` prints it.
func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage())
		return 0
	}
	c, ok := lookupCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "steward help: unknown command %q\n\n%s", args[0], usage())
		return 2
	}
	fs := c.flags()
	fs.SetOutput(stdout)
	fs.Usage()
	return 0
}

func usage() string {
	var b strings.Builder
	b.WriteString("Usage: steward <command> [flags]\n\nSteward is an admission webhook server that keeps GitOps and control-plane\nobjects honest. Commands:\n\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-11s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'steward help <command>' or 'steward <command> --help' for a command's\nflags and examples.\n")
	return b.String()
}

// newFlagSet is the flag set of `steward name`, whose help is usageText
// followed by its flags.
func newFlagSet(name, usageText string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("steward "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	setUsage(fs, usageText)
	return fs
}

// parseFlags parses args into fs, printing the help to stdout when it is
// asked for. stop says the command is done, exiting with code: 0 after
// help, 2 after an error the flag package has already printed.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (stop bool, code int) {
	if helpAsked(fs, args, stdout) {
		return true, 0
	}
	if err := fs.Parse(args); err != nil {
		return true, 2
	}
	return false, 0
}

// setUsage gives a flag set the help every steward command prints: what the
// command does and examples (text), then its flags.
func setUsage(fs *flag.FlagSet, text string) {
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprint(out, text)
		printFlags(out, fs)
	}
}

// printFlags lists a command's flags the way they are written on a command
// line (--name), with the value's type and any default that says something.
func printFlags(out io.Writer, fs *flag.FlagSet) {
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprint(out, "\nFlags:\n")
			first = false
		}
		typ, usage := flag.UnquoteUsage(f)
		dashes := "--"
		if len(f.Name) == 1 {
			dashes = "-" // a short flag, such as check's -o
		}
		fmt.Fprintf(out, "  %s%s", dashes, f.Name)
		if typ != "" {
			fmt.Fprintf(out, " %s", typ)
		}
		fmt.Fprintf(out, "\n        %s", usage)
		switch f.DefValue {
		case "", "0", "0s", "false", "[]":
		default:
			fmt.Fprintf(out, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(out)
	})
}

// helpAsked prints fs's help to stdout when args ask for it (-h, --help,
// before any "--"): help that was asked for is output, not an error.
func helpAsked(fs *flag.FlagSet, args []string, stdout io.Writer) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelpFlag(a) {
			fs.SetOutput(stdout)
			fs.Usage()
			return true
		}
	}
	return false
}

// isHelpFlag matches the help flags the standard flag package knows.
func isHelpFlag(a string) bool {
	return a == "-h" || a == "--h" || a == "-help" || a == "--help"
}
