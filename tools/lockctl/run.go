package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	lock "github.com/zerotal/lock/sdk/go"
)

const runHelp = `Usage: lockctl run [flags] -- COMMAND [ARGS...]

Take the lock KEY, run COMMAND under it, and release the lock when COMMAND
exits. The lock is refreshed while COMMAND runs (every third of the TTL), so
it lasts as long as COMMAND does: the TTL only says how soon another caller
may take over if lockctl dies without releasing it. On one host the sqlite
and file drivers take over at once when lockctl's process is gone, and on
Linux COMMAND is killed when lockctl is, so a lock never outlives its
command nor a command its lock.

COMMAND runs with lockctl's standard input, output and error, and these
added to its environment:
  LOCK_KEY    the key
  LOCK_OWNER  this acquisition's owner token (32 hex digits)
  LOCK_TOKEN  its fencing token: a number that grows with every acquisition
              of the key, for resources that reject stale writers (0 with
              the file driver, which has none)

Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to lockctl reach COMMAND
(^C typed on the terminal reaches it once, from the terminal itself), and
lockctl releases the lock once COMMAND has exited. While lockctl waits for
the lock, they end the wait instead.

Lost lock: if the lock stops being held while COMMAND runs (someone ran
'lockctl release --force', or the backend could not be reached for a whole
TTL), COMMAND gets SIGTERM, then SIGKILL after --grace, and lockctl exits 79.

Process tree: outside a terminal's foreground, COMMAND runs in a process
group apart from lockctl's; signals, a lost lock's SIGTERM and SIGKILL go
to the whole group; what COMMAND leaves running in it is stopped before the
lock is released; and if lockctl is killed, a guard process stops the
group. A process that leaves the group (setsid, as daemons do) runs on
outside the lock.

While it waits on a terminal, lockctl shows on stderr how long it has waited
and who holds the lock.

Flags:
{{flags}}
Environment (a flag wins over its variable):
  LOCK_DRIVER, LOCK_SQLITE_PATH, REDIS_URL, LOCK_FILE_DIR, LOCK_PREFIX

Exit status:
  N       COMMAND's own exit status
  128+N   COMMAND was killed by signal N; or lockctl was, by a signal, while
          it waited for the lock (COMMAND did not run)
  64      usage error: a bad flag or argument
  70      the lock backend failed after it had been reached
  75      the lock is held by someone else, or --wait ran out (--busy-exit
          chooses another status, as flock's -E does)
  78      configuration error: unknown driver, bad path, unreachable server
  79      the lock was lost while COMMAND ran, and COMMAND was stopped
  126     COMMAND cannot be run
  127     COMMAND was not found
A COMMAND that itself exits with one of these numbers cannot be told apart
by status alone: lockctl also says what happened on stderr.

Durations (--ttl, --wait, --retry-delay, --grace) are seconds, as flock's
-w takes them (60, 2.5), or carry a unit (90s, 10m, 1h30m, 500ms).

Examples:
  # Skip this run (exit 75) if the previous backup still holds the lock.
  lockctl run --key backup --ttl 2m -- /usr/local/bin/backup

  # In a crontab: skip quietly (no mail, status 0) while the last run works.
  */5 * * * * lockctl run --quiet --busy-exit 0 --key sync -- /usr/local/bin/sync

  # In a crontab: wait up to 60 seconds for the previous run, then give up.
  0 * * * * lockctl run --wait 60 --key report -- /usr/local/bin/report

  # Wait up to ten minutes for the lock, showing who holds it.
  lockctl run --key deploy --wait 10m -- ./deploy.sh production

  # One deploy at a time across hosts, through Redis.
  REDIS_URL=redis://locks.internal:6379/0 \
    lockctl run --driver redis --key deploy --wait 30m -- ./deploy.sh

  # A lock directory shared by the processes of one host.
  lockctl run --driver file --dir /var/lock/myapp --key import -- ./import
`

// runOptions are the settings of `lockctl run`.
type runOptions struct {
	key        string
	ttl        time.Duration
	wait       time.Duration
	retryDelay time.Duration
	grace      time.Duration
	busyExit   int
	quiet      bool
	verbose    bool
	backend    backendFlags
}

func runCommand(e *env, args []string) error {
	var o runOptions
	fs := newFlagSet("run")
	fs.StringVar(&o.key, "key", "", "the lock's `key` (required)")
	durationVar(fs, &o.ttl, "ttl", 30*time.Second, "the `duration` a lock outlives a lockctl that dies without releasing it;\nat least 1ms (default 30s)")
	durationVar(fs, &o.wait, "wait", 0, "the longest `duration` to wait for a held lock; 0 gives up at once with\nthe busy status (default 0)")
	durationVar(fs, &o.retryDelay, "retry-delay", lockDefaultRetryDelay, "the `duration` between tries while waiting, when the backend cannot\nannounce releases (default 100ms)")
	durationVar(fs, &o.grace, "grace", 10*time.Second, "the `duration` COMMAND has between SIGTERM and SIGKILL after a lost lock\n(default 10s)")
	fs.IntVar(&o.busyExit, "busy-exit", exitBusy, "the exit `status` when the key is held, or --wait ran out: 0 to 255, as\nflock's -E; 0 makes a skipped run a success (default 75)")
	fs.BoolVar(&o.quiet, "quiet", false, "say nothing when the key is held or --wait runs out (cron mails any output)")
	fs.BoolVar(&o.verbose, "verbose", false, "say on stderr when lockctl waits, takes and releases the lock")
	o.backend.register(fs)
	argv, err := parseArgs(e.stdout, fs, runHelp, args, false)
	if err != nil {
		return err
	}
	if err := o.validate(argv); err != nil {
		return err
	}
	path, err := lookCommand(argv[0])
	if err != nil {
		return err
	}
	be, err := o.backend.resolve("run", e.getenv)
	if err != nil {
		return err
	}
	m, err := be.open()
	if err != nil {
		return err
	}
	defer m.Close()
	r := &runner{e: e, o: o, be: be, m: m, path: path, argv: argv}
	return r.run()
}

// lockDefaultRetryDelay is the SDK's default, repeated so that the help can
// show it as a flag default.
const lockDefaultRetryDelay = 100 * time.Millisecond

// validate rejects bad settings before any backend is opened.
func (o *runOptions) validate(argv []string) error {
	switch {
	case o.key == "":
		return usageError("run", "--key is required")
	case len(argv) == 0:
		return usageError("run", "missing COMMAND: put it after --, as in: lockctl run --key KEY -- COMMAND")
	case o.ttl < time.Millisecond:
		return usageError("run", "--ttl %v is too short: it must be at least 1ms", o.ttl)
	case o.wait < 0:
		return usageError("run", "--wait %v is negative: use 0 to give up at once", o.wait)
	case o.retryDelay < time.Millisecond:
		return usageError("run", "--retry-delay %v is too short: it must be at least 1ms", o.retryDelay)
	case o.grace < 0:
		return usageError("run", "--grace %v is negative", o.grace)
	case o.busyExit < 0 || o.busyExit > 255:
		return usageError("run", "--busy-exit %d is not an exit status: want 0 to 255", o.busyExit)
	case o.quiet && o.verbose:
		return usageError("run", "--quiet and --verbose contradict each other; give one")
	}
	return nil
}

// runner is one `lockctl run` on an open backend.
type runner struct {
	e    *env
	o    runOptions
	be   backend
	m    *lock.Manager
	path string   // the command's executable
	argv []string // the command and its arguments
	sigs *signalRouter
	tree *tree // where the command will run (tree.go)

	// What happened under the lock, set by underLock.
	ran      bool  // the command started
	status   int   // its exit status, once it ran
	startErr error // why it could not start
}

// run takes the lock, runs the command under it and releases it, and
// returns what lockctl exits with.
func (r *runner) run() error {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	r.sigs = newSignalRouter(cancel)
	defer r.sigs.stop()

	// The first call to the backend: it tells an unreachable backend
	// (a configuration error) from a held key, and names the holder.
	probe := r.m.Make(r.o.key, r.o.ttl)
	// The command's process tree is prepared before the wait, so that a
	// hand-off from the previous holder does not wait for it.
	r.tree = newTree(r.o.grace)
	defer r.tree.done()
	h, held, _, err := lookupHolder(ctx, probe)
	if err != nil {
		if e := r.interrupted(ctx); e != nil {
			return e
		}
		return r.be.failed(err, true, fmt.Sprintf("inspect %q", r.o.key))
	}
	start := time.Now()
	if r.o.verbose && r.o.wait > 0 && held {
		r.say("%q is held by %s; waiting up to %v", r.o.key, holderText(h, start), r.o.wait)
	}
	var line *waitLine
	if r.o.wait > 0 {
		line = startWaitLine(r.e.stderr, r.o.key, probe, start)
	}
	defer line.stop()

	fn := func(ctx context.Context) error {
		line.stop()
		if r.o.verbose {
			l, _ := lock.FromContext(ctx)
			r.say("acquired %q after %v, token %d", r.o.key, time.Since(start).Round(time.Millisecond), l.Token())
		}
		return r.underLock(ctx)
	}
	opts := []lock.Option{lock.WithRefresh()}
	if r.o.wait > 0 {
		opts = append(opts, lock.WithTimeout(r.o.wait), lock.WithRetryDelay(r.o.retryDelay))
		err = r.m.Block(ctx, r.o.key, r.o.ttl, fn, opts...)
	} else {
		err = r.m.Try(ctx, r.o.key, r.o.ttl, fn, opts...)
	}
	line.stop()
	return r.outcome(ctx, probe, err, start)
}

// underLock runs the command while the lock is held; ctx ends if the lock
// is lost.
func (r *runner) underLock(ctx context.Context) error {
	if !r.sigs.beginCommand(ctx) {
		return nil // a signal ended the run, or the lock is already lost: outcome says which
	}
	defer r.sigs.finish()
	l, _ := lock.FromContext(ctx)
	environ := append(os.Environ(),
		"LOCK_KEY="+r.o.key,
		"LOCK_OWNER="+l.Owner(),
		"LOCK_TOKEN="+strconv.FormatUint(l.Token(), 10),
	)
	c, err := startCommand(r.path, r.argv, environ, r.tree)
	if err != nil {
		r.startErr = err
		return nil
	}
	r.ran = true
	r.sigs.attach(c.signal)
	onLoss := func() {
		r.say("lost the lock on %q: %s; sending SIGTERM to the command, SIGKILL in %v", r.o.key, lossReason(context.Cause(ctx)), r.o.grace)
	}
	onKill := func() {
		r.say("the command is still running %v after SIGTERM; sending SIGKILL", r.o.grace)
	}
	r.status = c.stopOnLoss(ctx, r.o.grace, onLoss, onKill)
	return nil
}

// outcome turns the result of Try or Block into lockctl's exit.
func (r *runner) outcome(ctx context.Context, probe *lock.ManagedLock, err error, start time.Time) error {
	switch {
	case r.startErr != nil:
		return r.startErr
	case errors.Is(err, lock.ErrLost) && r.ran:
		return fail(exitLost, "the lock on %q was lost while the command ran; the command exited with status %d", r.o.key, r.status)
	case errors.Is(err, lock.ErrLost):
		return fail(exitLost, "lost the lock on %q before the command started: %s", r.o.key, lossReason(err))
	case r.ran && err != nil:
		// The command ran under the lock from start to end; only the
		// release failed, and the lock will expire by its TTL.
		r.say("warning: the command finished, but releasing the lock failed (it expires within %v): %s", r.o.ttl, r.be.diagnose(err, true).why)
		return &exitError{code: r.status}
	case r.ran:
		if r.o.verbose {
			r.say("released %q", r.o.key)
		}
		return &exitError{code: r.status}
	}
	if e := r.interrupted(ctx); e != nil {
		return e
	}
	switch {
	case errors.Is(err, lock.ErrNotAcquired):
		return r.busy(ctx, probe, start)
	case err != nil:
		return r.be.failed(err, false, fmt.Sprintf("take the lock on %q", r.o.key))
	}
	return fail(exitSoftware, "the lock on %q was taken but the command did not run", r.o.key)
}

// busy is the error for a key that was held: it names the holder, unless
// --quiet asks for silence.
func (r *runner) busy(ctx context.Context, probe *lock.ManagedLock, start time.Time) error {
	if r.o.quiet {
		return &exitError{code: r.o.busyExit}
	}
	now := time.Now()
	msg := fmt.Sprintf("%q is held", r.o.key)
	if h, held, known, err := lookupHolder(ctx, probe); err == nil && known && held {
		msg += " by " + holderText(h, now)
	}
	if r.o.wait > 0 {
		msg += fmt.Sprintf("; gave up after waiting %v", now.Sub(start).Round(time.Millisecond))
	}
	return fail(r.o.busyExit, "%s", msg)
}

// interrupted is the error for a run that a signal ended while it waited,
// or nil.
func (r *runner) interrupted(ctx context.Context) error {
	var ie *interruptedError
	if !errors.As(context.Cause(ctx), &ie) {
		return nil
	}
	return fail(exitSignal+int(ie.sig), "%v while waiting for %q; the command did not run", ie, r.o.key)
}

// say writes one line for the user on stderr.
func (r *runner) say(format string, args ...any) {
	fmt.Fprintf(r.e.stderr, "lockctl: "+format+"\n", args...)
}

// lossReason says why the lock was lost, from the cause of the command's
// context: the reason the engine reports, the new holder's token when
// another owner took over, and the backend's last error.
func lossReason(cause error) string {
	var lost *lock.LostError
	if !errors.As(cause, &lost) {
		return cause.Error()
	}
	msg := lost.Reason.String()
	if lost.Token != 0 {
		msg += fmt.Sprintf(" (fencing token %d holds it now)", lost.Token)
	}
	if !lost.Since.IsZero() {
		msg += fmt.Sprintf(", failing since %s", lost.Since.Format(time.TimeOnly))
	}
	if lost.Cause != nil && !errors.Is(lost.Cause, lock.ErrClosed) {
		msg += ": " + stripLayers(lost.Cause.Error())
	}
	return msg
}
