package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

const versionHelp = `Usage: lockctl version

Print lockctl's module version, the version of the lock SDK
(github.com/zerotal/lock/sdk/go) it was built with, which decides the lock
semantics, and the Go toolchain. A binary built from a checkout says "(devel)";
one installed with 'go install …@VERSION' says VERSION.

Example:
  lockctl version
`

// sdkModule is the module whose version says which lock semantics lockctl has.
const sdkModule = "github.com/zerotal/lock/sdk/go"

func versionCommand(e *env, args []string) error {
	fs := newFlagSet("version")
	rest, err := parseArgs(e.stdout, fs, versionHelp, args, false)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError("version", "unexpected argument %q", rest[0])
	}
	fmt.Fprintln(e.stdout, versionLine())
	return nil
}

// versionLine is the one line `lockctl version` prints.
func versionLine() string {
	version, sdk := "(unknown)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, dep := range bi.Deps {
			if dep.Path == sdkModule {
				sdk = dep.Version
				if dep.Replace != nil {
					// A replace (a checkout, or the workspace) makes the
					// required version meaningless.
					sdk = "(devel)"
				}
			}
		}
	}
	if sdk == "" {
		sdk = "(unknown)"
	}
	return fmt.Sprintf("lockctl %s, lock SDK %s (%s %s/%s)", version, sdk, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
