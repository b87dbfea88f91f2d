package redis

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// The driver's Lua: lua/constants.lua (the layout of a lock and its
// constants), lua/lib.lua (the helpers of the scripts that touch the queue)
// and one file per operation.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// luaScript is one operation's script. On a server with Redis Functions
// (7.0 and later) the driver loads every script once, as one function
// library, and calls it with FCALL: the constants and helpers are then
// defined once per server instead of once per call. On older servers, or
// where the user may not load functions, it sends the script to EVALSHA,
// and to EVAL when the server answers NOSCRIPT (after a restart or a SCRIPT
// FLUSH).
type luaScript struct {
	fn  any // the function's name in the library, boxed once
	src any // the EVAL form: constants, the helpers when it needs them, and the body; boxed once
	sha any // the EVAL form's SHA-1 in hex, boxed once
}

// The operations' scripts, and the library that holds them all.
var (
	acquireScript      = newScript("acquire", true)
	waitScript         = newScript("wait", true)
	releaseScript      = newScript("release", true)
	leaveScript        = newScript("leave", true)
	forceReleaseScript = newScript("force_release", true)
	extendScript       = newScript("extend", false)
	inspectScript      = newScript("inspect", false)

	library = buildLibrary("acquire", "wait", "release", "leave", "force_release", "extend", "inspect")
)

// libraryVersion names the library and its functions after a hash of all
// the Lua, so that drivers of different versions on one server each find
// their own code: FUNCTION LOAD never replaces another version's.
var libraryVersion = func() string {
	h := sha1.New()
	entries, _ := luaFiles.ReadDir("lua")
	for _, e := range entries {
		h.Write([]byte(e.Name()))
		h.Write(luaFile(strings.TrimSuffix(e.Name(), ".lua")))
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

// luaFile returns the contents of lua/<name>.lua; the files are compiled in,
// so a missing one is a bug in the build.
func luaFile(name string) []byte {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("redis driver: " + err.Error())
	}
	return b
}

// functionName is the name of script name's function in the library.
func functionName(name string) string { return "zerotal_lock_" + name + "_" + libraryVersion }

func newScript(name string, needsLib bool) *luaScript {
	src := string(luaFile("constants"))
	if needsLib {
		src += string(luaFile("lib"))
	}
	src += string(luaFile(name))
	sum := sha1.Sum([]byte(src))
	return &luaScript{fn: functionName(name), src: src, sha: hex.EncodeToString(sum[:])}
}

// buildLibrary returns the FUNCTION LOAD text of a library registering each
// named script as a function of (KEYS, ARGV), so that a script body reads
// the same in both forms.
func buildLibrary(names ...string) string {
	var b strings.Builder
	b.WriteString("#!lua name=zerotal_lock_" + libraryVersion + "\n")
	b.Write(luaFile("constants"))
	b.Write(luaFile("lib"))
	for _, name := range names {
		b.WriteString("\nredis.register_function('" + functionName(name) + "', function(KEYS, ARGV)\n")
		b.Write(luaFile(name))
		b.WriteString("end)\n")
	}
	return b.String()
}

// scriptRunner runs the scripts on one client, by FCALL while the server
// lets it and by EVALSHA once it does not.
type scriptRunner struct {
	client  goredis.UniversalClient
	shared  *goredis.AutoPipeliner // concurrent calls share round trips through it; nil: each call its own
	busy    atomic.Int32           // calls in flight
	behind  atomic.Int32           // abandoned shared commands not yet run: later calls queue behind them
	waiters sync.WaitGroup         // the goroutines that wait for those commands
	mu      sync.Mutex             // guards closed against the waiters' Add
	closed  bool                   // set by close: no more waiter goroutines
	noFcall atomic.Bool            // set once FCALL or FUNCTION LOAD is refused: EVAL from then on
	loadMu  sync.Mutex             // one FUNCTION LOAD at a time
}

// run sends cmd, c's command, whose first two elements it fills with the
// command name and the function or script, followed by numkeys, the keys and
// the arguments. The caller may reuse c once run has returned, unless run
// marked it abandoned.
func (r *scriptRunner) run(ctx context.Context, s *luaScript, c *scriptCall, cmd []any) *goredis.Cmd {
	if !r.noFcall.Load() {
		cmd[0], cmd[1] = "fcall", s.fn
		reply := r.do(ctx, c, cmd)
		err := reply.Err()
		switch {
		case err == nil || !isServerError(err):
			return reply
		case goredis.HasErrorPrefix(err, "Function not found"):
			// A server that has not seen this version, restarted
			// without persistence, or a node that took over slots.
			if r.load(ctx) {
				return r.do(ctx, c, cmd)
			}
		case cannotCallFunctions(err):
			r.noFcall.Store(true)
		default:
			return reply
		}
	}
	cmd[0], cmd[1] = "evalsha", s.sha
	reply := r.do(ctx, c, cmd)
	if goredis.HasErrorPrefix(reply.Err(), "NOSCRIPT") {
		cmd[0], cmd[1] = "eval", s.src
		reply = r.do(ctx, c, cmd)
	}
	return reply
}

// load loads the library on every primary the client reaches and reports
// whether FCALL may be tried again. A server without Functions, or a user
// who may not load them, switches the runner to EVAL for good. A failure
// of another kind (the server went away) leaves the mode as it is: the
// call then fails as any call would, and a later one tries again.
func (r *scriptRunner) load(ctx context.Context) bool {
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	load := func(ctx context.Context, c *goredis.Client) error { return loaded(c.FunctionLoad(ctx, library).Err()) }
	var err error
	switch c := r.client.(type) {
	case *goredis.ClusterClient:
		err = c.ForEachMaster(ctx, load)
	case *goredis.Ring:
		err = c.ForEachShard(ctx, load)
	case *goredis.Client:
		err = load(ctx, c)
	default:
		err = loaded(r.client.FunctionLoad(ctx, library).Err())
	}
	if err != nil && isServerError(err) {
		r.noFcall.Store(true)
		return false
	}
	return err == nil
}

// loaded is the error of a FUNCTION LOAD, nil when the library was there
// already: another process, or another driver of this one, loaded it.
func loaded(err error) error {
	if goredis.HasErrorPrefix(err, "Library") && strings.Contains(err.Error(), "already exists") {
		return nil
	}
	return err
}

// isServerError reports whether err is an error reply of the server, as
// opposed to a failure to reach it.
func isServerError(err error) bool {
	var re goredis.Error
	return errors.As(err, &re)
}

// cannotCallFunctions reports whether err says that this server or user
// cannot use FCALL: a server before 7.0, or an ACL without it.
func cannotCallFunctions(err error) bool {
	return goredis.HasErrorPrefix(err, "unknown command") || goredis.HasErrorPrefix(err, "NOPERM")
}

// sharedEngines is how many full-duplex engines share round trips.
const sharedEngines = 2

// do sends one command, sharing a round trip with the calls of other
// goroutines when the runner has an AutoPipeliner and another call is in
// flight: a lone caller goes straight to a connection of the pool, which
// costs it no hand-off between goroutines.
//
// A shared call honours ctx: the caller returns when ctx ends, while the
// command, already queued, may still be sent. c is then marked abandoned,
// since the command's arguments point into it, and until that command has
// run every call goes through the pipeliner, whose stream is ordered per
// key (the engine is chosen by the lock key, the only key a script names): the clean-up that follows an abandoned call (a waiter leaving the queue, the
// engine releasing what a cancelled acquire may have taken) then runs after
// it on the server, never before it.
func (r *scriptRunner) do(ctx context.Context, c *scriptCall, cmd []any) *goredis.Cmd {
	n := r.busy.Add(1)
	defer r.busy.Add(-1)
	if r.shared == nil || (n == 1 && r.behind.Load() == 0) {
		return r.client.Do(ctx, cmd...)
	}
	reply := goredis.NewCmd(ctx, cmd...)
	f := r.shared.Submit(ctx, reply)
	if err := f.WaitContext(ctx); err != nil && ctx.Err() != nil {
		c.abandoned = true
		r.mu.Lock()
		if !r.closed { // after close no leave is left for behind to order
			r.behind.Add(1)
			r.waiters.Add(1)
			go func() {
				defer r.waiters.Done()
				defer r.behind.Add(-1)
				_ = f.Wait() // ends when the command has run, or the client closes
			}()
		}
		r.mu.Unlock()
		ended := goredis.NewCmd(ctx)
		ended.SetErr(err)
		return ended
	}
	return reply
}

// close waits for the goroutines that wait for abandoned commands, and stops
// new ones: a call still in flight when its Driver closes may be abandoned
// while close waits.
func (r *scriptRunner) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.waiters.Wait()
}

// sharedRoundTrips returns the auto-pipeliner the calls of c share round
// trips through, nil when c has none to give (an invalid configuration of
// the caller's, a pipeline pool too small, or a closed client): then each
// call has its own.
//
// Two full-duplex engines, each on a connection of its own, chosen by the
// command's first key: every script names only the lock key, so the calls
// on one key keep their order (what an abandoned call's clean-up needs, see
// do), and while the server runs one engine's batch the client gathers the
// other's. With one engine the client and the server take turns: measured
// with 16 goroutines on distinct keys and the server on another core, one
// engine gave 0.76–0.86× the bare pair, two 1.22–1.29× (tools/bench; on one
// shared core, where nothing can overlap, one engine 1.20–1.22×, two 1.05×).
func sharedRoundTrips(c *goredis.Client) *goredis.AutoPipeliner {
	ap, err := c.AsyncAutoPipelineWithOptions(&goredis.AutoPipelineOptions{FullDuplex: true, NumShards: sharedEngines})
	if err != nil {
		return nil
	}
	return ap
}
