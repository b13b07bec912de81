// Command steward is Steward's one binary: `serve` runs the admission webhook
// server, `manifests` renders the install manifests, `check` runs the rules
// offline over YAML files for GitOps CI, `audit` runs the background audit
// once against a cluster, `version` says which build it is and `completion`
// prints shell completion scripts.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// Exit codes, the same for every command (docs/cli.md). A script can tell
// a run that found something from one that could not run, and why.
const (
	// exitOK: the command did what it was asked and found nothing wrong.
	exitOK = 0
	// exitFailed: the command ran and found problems (check's findings,
	// audit's failing findings), or failed at run time.
	exitFailed = 1
	// exitUsage: bad flags or arguments; nothing was done.
	exitUsage = 2
	// exitConfig: the --config file could not be read, decoded or
	// validated (the message names the field); for check, also an input
	// file it could not read or parse.
	exitConfig = 3
	// exitCluster: the API server could not be found (kubeconfig missing
	// or invalid), reached, or authenticated to at start-up.
	exitCluster = 4
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
		return exitUsage
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
	return usageError(stderr, "", fmt.Errorf("unknown command %q", args[0]))
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
	if !ok || len(args) > 1 {
		if ok {
			return usageError(stderr, "help", unexpectedArguments(args[1:]))
		}
		return usageError(stderr, "help", fmt.Errorf("unknown command %q", args[0]))
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
// help, exitUsage after a bad flag, whose error it printed (usageError).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (stop bool, code int) {
	if helpAsked(fs, args, stdout) {
		return true, exitOK
	}
	if err := parseQuietly(fs, args); err != nil {
		return true, usageError(stderr, commandName(fs), err)
	}
	return false, exitOK
}

// parseQuietly parses args into fs without the flag package's own report
// of an error (the error and the whole help): the caller prints the error
// alone (usageError), and the help only when it is asked for.
func parseQuietly(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	defer fs.SetOutput(out)
	if err := fs.Parse(args); err != nil {
		return errors.New(flagError(err))
	}
	return nil
}

// commandName is the command a flag set belongs to: "serve" of "steward serve".
func commandName(fs *flag.FlagSet) string {
	return strings.TrimPrefix(fs.Name(), "steward ")
}

// usageError prints a bad command line's error the way every command
// does, first and alone, then where the help is, and returns exitUsage:
//
//	steward serve: flag provided but not defined: --prot
//	Run 'steward serve --help' for usage.
//
// name is the command, "" for steward itself ("help" points to steward's
// help too: it takes no flags).
func usageError(stderr io.Writer, name string, err error) int {
	printError(stderr, name, err)
	if name == "" || name == "help" {
		fmt.Fprintln(stderr, "Run 'steward --help' for usage.")
	} else {
		fmt.Fprintf(stderr, "Run 'steward %s --help' for usage.\n", name)
	}
	return exitUsage
}

// fail prints an error that is not the command line's fault and returns
// code: exitFailed, exitConfig or exitCluster.
func fail(stderr io.Writer, name string, code int, err error) int {
	printError(stderr, name, err)
	return code
}

// printError prints err as "steward <name>: <message>", one line for each
// of several joined errors.
func printError(stderr io.Writer, name string, err error) {
	prefix := "steward: "
	if name != "" {
		prefix = "steward " + name + ": "
	}
	for _, e := range flatten(err) {
		fmt.Fprintf(stderr, "%s%s\n", prefix, e)
	}
}

// flatten lists the errors errors.Join joined into err, however nested.
func flatten(err error) []error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var errs []error
	for _, e := range joined.Unwrap() {
		if e != nil {
			errs = append(errs, flatten(e)...)
		}
	}
	return errs
}

// singleDashFlag finds a flag the flag package's errors name with one dash
// ("flag provided but not defined: -prot"); steward's help writes long
// flags with two, as users type them.
var singleDashFlag = regexp.MustCompile(`(^|: | for flag | for )-([A-Za-z0-9][A-Za-z0-9-]+)`)

// flagError is a flag parsing error's message with long flags written
// --name.
func flagError(err error) string {
	return singleDashFlag.ReplaceAllString(err.Error(), "$1--$2")
}

// unexpectedArguments is the error of operands a command does not take.
func unexpectedArguments(args []string) error {
	return fmt.Errorf("unexpected arguments: %s", strings.Join(args, " "))
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
