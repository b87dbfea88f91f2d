// Command lockgen generates zerotal lock's Go API, engine error table and
// driver contract from spec/.
//
// Run it from the repository root. By default it only checks: it lists the
// generated files that are missing, stale or no longer generated, and exits
// with status 1 if there are any. With -w it writes them.
//
//	go run ./gen/cmd/lockgen      # check
//	go run ./gen/cmd/lockgen -w   # write (make generate)
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/zerotal/lock/gen/internal/generate"
)

func main() {
	write := flag.Bool("w", false, "write the generated files instead of checking them")
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: lockgen [-w] [-root dir]")
		os.Exit(2)
	}
	os.Exit(run(*root, *write, os.Stdout, os.Stderr))
}

// run checks or writes the generated files of the repository at root and
// returns the exit status.
func run(root string, write bool, stdout, stderr io.Writer) int {
	files, err := generate.Repo(root)
	if err != nil {
		fmt.Fprintln(stderr, "lockgen:", err)
		return 1
	}
	changes, err := generate.Diff(root, files)
	if err != nil {
		fmt.Fprintln(stderr, "lockgen:", err)
		return 1
	}
	if !write {
		for _, c := range changes {
			fmt.Fprintln(stderr, "lockgen: stale:", c)
		}
		if len(changes) > 0 {
			fmt.Fprintln(stderr, "lockgen: generated files are out of date: run `make generate`")
			return 1
		}
		return 0
	}
	if err := generate.Apply(root, files, changes); err != nil {
		fmt.Fprintln(stderr, "lockgen:", err)
		return 1
	}
	for _, c := range changes {
		fmt.Fprintln(stdout, "lockgen:", c.Action, c.Path)
	}
	return 0
}
