package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, strings.Replace(help, flagsPlaceholder, flagTable(fs), 1))
			return nil, &exitError{code: exitOK}
		}
		if err != nil {
			return nil, usageError(fs.Name(), "%v", err)
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

// flagOrder is the order in which help lists flags: a command's own, most
// important first, then the backend's (see backendFlags), under a heading.
var flagOrder = []string{"key", "ttl", "wait", "retry-delay", "grace", "verbose", "json", "force",
	"driver", "sqlite-path", "redis-url", "dir", "prefix"}

// firstBackendFlag is where the backend's flags begin in flagOrder.
const firstBackendFlag = "driver"

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
