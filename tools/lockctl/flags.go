package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// flagsPlaceholder marks where a command's help text lists its flags.
const flagsPlaceholder = "{{flags}}"

// newFlagSet returns a FlagSet that reports errors to its caller instead of
// printing them with the whole usage text: lockctl's errors are one line.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses args with fs and returns the positional arguments. With
// interspersed, flags may also follow positional arguments (`status KEY
// --json`) until a "--"; without it, the first positional argument ends the
// flags, so that `run --key k ls -l` leaves -l to ls. -h and --help print
// help (with the flags in place of flagsPlaceholder) on stdout and end the
// command with status 0.
func parseArgs(stdout io.Writer, fs *flag.FlagSet, help string, args []string, interspersed bool) ([]string, error) {
	if err := checkFlagValues(fs, args); err != nil {
		return nil, err
	}
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, strings.Replace(help, flagsPlaceholder, flagTable(fs), 1))
			return nil, &exitError{code: exitOK}
		}
		if err != nil {
			return nil, usageError(fs.Name(), "%s", flagProblem(err))
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if !interspersed || len(rest) == 0 || (consumed > 0 && args[consumed-1] == "--") {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// badValue is the flag package's message for a value its flag refused.
var badValue = regexp.MustCompile(`^invalid value (".*") for flag -([^:]+): (.*)$`)

// flagProblem rewords the flag package's errors in the --name form the help
// uses: `--wait "6o": want seconds …` rather than `invalid value "6o" for
// flag -wait: …`.
func flagProblem(err error) string {
	msg := err.Error()
	if m := badValue.FindStringSubmatch(msg); m != nil {
		why := m[3]
		if why == "parse error" { // an integer flag's word for "not a number"
			why = "not a whole number"
		}
		msg = "--" + m[2] + " " + m[1] + ": " + why
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag --" + strings.TrimLeft(name, "-")
	}
	return msg
}

// checkFlagValues refuses "--" as the value of a flag that takes one: the
// flag package would take it as the value (`status --prefix -- a --json`
// would look up a key named "--json"), while the user meant the end of the
// flags. A value of "--" can still be given as --flag=--.
func checkFlagValues(fs *flag.FlagSet, args []string) error {
	for i := 0; i < len(args)-1; i++ {
		arg := args[i]
		if arg == "--" {
			return nil
		}
		name := strings.TrimLeft(arg, "-")
		if name == arg || name == "" || strings.Contains(name, "=") || len(arg)-len(name) > 2 {
			continue // not a flag, or its value is attached
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if args[i+1] == "--" {
			return usageError(fs.Name(), "flag --%s needs a value, and got \"--\", which ends the flags (for the value \"--\" itself, write --%s=--)", name, name)
		}
		i++ // the flag's value
	}
	return nil
}

// flagOrder is the order in which help lists flags: a command's own, most
// important first, then the backend's (see backendFlags), under a heading.
var flagOrder = []string{"key", "ttl", "wait", "retry-delay", "grace", "busy-exit", "quiet", "verbose", "json", "force",
	"url", "driver", "sqlite-path", "redis-url", "dir", "prefix"}

// firstBackendFlag is where the backend's flags begin in flagOrder.
const firstBackendFlag = "url"

// flagTable lists fs's flags in flagOrder, in the GNU style of the rest of
// the help (--name VALUE), which flag.PrintDefaults does not use.
func flagTable(fs *flag.FlagSet) string {
	var b strings.Builder
	order := slices.Clone(flagOrder)
	fs.VisitAll(func(f *flag.Flag) { // a flag missing from flagOrder still shows, last
		if !slices.Contains(order, f.Name) {
			order = append(order, f.Name)
		}
	})
	for _, name := range order {
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if name == firstBackendFlag {
			b.WriteString("\nBackend flags (the same for every command):\n")
		}
		valueName, usage := flag.UnquoteUsage(f)
		b.WriteString("  --" + f.Name)
		if valueName != "" {
			b.WriteString(" " + valueName)
		}
		b.WriteString("\n")
		for line := range strings.SplitSeq(usage, "\n") {
			b.WriteString("        " + line + "\n")
		}
	}
	return b.String()
}
