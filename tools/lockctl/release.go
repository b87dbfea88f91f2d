package main

import (
	"context"
	"fmt"
	"time"
)

const releaseHelp = `Usage: lockctl release --force [flags] KEY...

Free each KEY, whoever holds it. This is for recovery: clearing a lock whose
holder you know is gone, on a driver that cannot see that by itself (a
holder on another host keeps its lock until its TTL passes). If the holder
is still at work, mutual exclusion is broken: a lockctl run that held the
key notices at its next refresh (within a third of its TTL), stops its
command with SIGTERM and exits 79. That is why --force is required.

Flags:
{{flags}}
Exit status: 0 when every key is free afterwards, 64 for a usage error
(--force missing), 70 when the backend failed, 78 when it cannot be opened
or reached.

Examples:
  lockctl status deploy                 # who holds it?
  lockctl release --force deploy
  lockctl release --force --driver redis --redis-url redis://locks.internal deploy
`

func releaseCommand(e *env, args []string) error {
	var (
		force   bool
		backend backendFlags
	)
	fs := newFlagSet("release")
	fs.BoolVar(&force, "force", false, "required: confirm that the lock is freed whoever holds it")
	backend.register(fs)
	keys, err := parseArgs(e.stdout, fs, releaseHelp, args, true)
	if err != nil {
		return err
	}
	switch {
	case len(keys) == 0:
		return usageError("release", "missing KEY")
	case !force:
		return usageError("release", "release frees a lock whoever holds it, breaking mutual exclusion if the holder is still at work; add --force to confirm")
	}
	be, err := backend.resolve("release", e.getenv)
	if err != nil {
		return err
	}
	m, err := be.open()
	if err != nil {
		return err
	}
	defer m.Close()

	for i, key := range keys {
		l := m.Make(key, time.Second) // Make needs a TTL; freeing a key does not use it
		// Who held it is only for the report: looking and freeing are two
		// steps, so the holder may change in between, and the key is freed
		// whatever the lookup said.
		h, held, known, err := lookupHolder(context.Background(), l)
		if err != nil {
			return be.failed(err, i == 0, fmt.Sprintf("inspect %q", key))
		}
		ctx, cancel := context.WithTimeout(context.Background(), inspectTimeout)
		err = l.ForceRelease(ctx)
		cancel()
		if err != nil {
			return be.failed(err, false, fmt.Sprintf("release %q", key))
		}
		switch {
		case !known:
			fmt.Fprintf(e.stdout, "released %q\n", key)
		case held:
			fmt.Fprintf(e.stdout, "released %q (was held by %s)\n", key, holderText(h, time.Now()))
		default:
			fmt.Fprintf(e.stdout, "%q was already free\n", key)
		}
	}
	return nil
}
