// Command release keeps the repository's modules publishable together. They
// are released in lockstep: every module requires its siblings at the one
// version in the file VERSION, and a release tags each published module at
// it (sdk/go/v0.2.0, drivers/redis/v0.2.0, ...), as multi-module
// repositories such as opentelemetry-go and go-redis do. During
// development go.work resolves the siblings to the working tree; nothing
// else needs replace directives, so every go.mod is exactly what users get.
//
// Usage, from the repository root:
//
//	go run ./tools/release bump vX.Y.Z   require vX.Y.Z everywhere, then print the tags to push
//	go run ./tools/release tags          print the tags of the current version
//	go run ./tools/release proxy DIR     write a file:// module proxy of the tree at the current version
//	go run ./tools/release tidy          go mod tidy every module, the siblings coming from such a proxy
//
// make release VERSION=vX.Y.Z runs bump and tidy.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return fmt.Errorf("want a command: bump VERSION, tags, proxy DIR or tidy")
	}
	r, err := loadRepo(root)
	if err != nil {
		return err
	}
	switch cmd, rest := args[0], args[1:]; {
	case cmd == "bump" && len(rest) == 1:
		if err := bump(r, rest[0]); err != nil {
			return err
		}
		printTags(r)
		return nil
	case cmd == "tags" && len(rest) == 0:
		printTags(r)
		return nil
	case cmd == "proxy" && len(rest) == 1:
		return writeProxy(r, rest[0])
	case cmd == "tidy" && len(rest) == 0:
		return tidy(r)
	}
	return fmt.Errorf("unknown command %q (want bump VERSION, tags, proxy DIR or tidy)", args)
}

// printTags prints the git tags that publish the modules at r.version.
func printTags(r *repo) {
	fmt.Printf("Tag the release commit, then push the tags:\n")
	for _, m := range r.modules {
		if m.published() {
			fmt.Printf("  git tag %s\n", m.Tag(r.version))
		}
	}
	fmt.Printf("  git push origin")
	for _, m := range r.modules {
		if m.published() {
			fmt.Printf(" %s", m.Tag(r.version))
		}
	}
	fmt.Println()
}
