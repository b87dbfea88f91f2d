package spec

import "time"

// ABI is the C ABI of zerotal lock: the same engine and drivers as the Go
// API, for C and for every language that can call C. Its functions are the
// Go API's (zl_open is Open, zl_try is Manager.Try, zl_acquire is
// ManagedLock.Acquire...) plus the ones this interface declares: versions,
// error detail and the life of handles.
//
// Handles. zl_manager and zl_lock are opaque integers, never pointers; 0 is
// never a valid handle and a handle is never reused, so a freed, closed or
// unknown handle, or a handle of the wrong kind, gives ZL_INVALID_HANDLE
// instead of touching memory. Close every manager with zl_close and free
// every lock handle with zl_free, also after its manager is closed: calls on
// a lock handle of a closed manager give ZL_CLOSED.
//
// Errors. Every function that can fail returns an int code: ZL_OK (0) or one
// of the zl_code values, the same numbers as the Go API's Code. After a code
// other than ZL_OK, zl_last_error() returns this thread's detail message;
// out-parameters are written only on ZL_OK.
//
// Strings. Strings passed in are NUL-terminated UTF-8, borrowed for the
// duration of the call. Strings the library returns are never allocated for
// the caller: they are static (zl_version, zl_strerror), per-thread
// (zl_last_error), or copied into a buffer the caller owns (zl_key,
// zl_owner) with the size protocol: on entry *len is the buffer's size; the
// library sets *len to the size the string needs, NUL included, and copies
// it only if it fits, else returns ZL_INVALID_ARGUMENT. A NULL buf asks for
// the size alone and returns ZL_OK.
//
// Descriptions are the Go API's, with C names: where one mentions ctx, the
// context is the call itself (zl_cancel ends a zl_block's wait); fn's context
// ending is what zl_lost reports inside a callback; and an error "matching" a
// code is that code.
//
// Durations are int64_t milliseconds. Times are int64_t milliseconds since
// the Unix epoch.
//
// Threads. Every function may be called from any thread, concurrently, on
// the same handles. Blocking calls (zl_block, zl_block_run) block only their
// own thread.
//
// Platform. The library carries a Go runtime: load it once and never unload
// it (dlclose is not supported), do not fork a process that has loaded it
// unless the child only calls exec, and do not load two Go-built shared
// libraries that each expect to own the process's signal handlers.
//
//lock:abi zerotal_lock zl 1
type ABI interface {
	// Version returns the library's version: the version of the Go module it
	// was built from, as Go's build information records it.
	//
	//lock:c zl_version static
	Version() string

	// ABIVersion returns the version of the C ABI the library implements, so
	// that a program can check at run time that it loaded a library matching
	// the header it was compiled with (ZL_ABI_VERSION).
	//
	//lock:c zl_abi_version
	ABIVersion() int

	// StrError returns a short description of code, for messages. Codes the
	// library does not know give "unknown error code".
	//
	//lock:c zl_strerror static
	StrError(code Code) string

	// LastError returns the detail of the last call on this thread that
	// returned a code other than ZL_OK, such as `zl_acquire: lock: invalid
	// key: is empty`, or "" if there was none. A successful call leaves it
	// unchanged. Long messages are truncated.
	//
	//lock:c zl_last_error thread
	LastError() string

	// Close closes the manager m and ends its handle. It stops the
	// refreshers; makes the callbacks still running see zl_lost, and their
	// zl_try or zl_block_run return ZL_CLOSED or ZL_LOST; releases what the
	// manager still holds (best effort: a lock whose release fails expires by
	// its TTL); and closes the driver. The handle ends even when Close fails,
	// so closing it again gives ZL_INVALID_HANDLE. The lock handles made by m
	// stay valid until zl_free, and their calls give ZL_CLOSED.
	//
	//lock:c zl_close frees
	Close(m Manager) error

	// Free ends the life of a lock handle made by zl_make. If the handle holds
	// the lock, Free releases it first; the handle is freed even when that
	// release fails (the lock then expires by its TTL), and the release's
	// error is returned. Freeing a handle twice, or the handle lent to a
	// callback, is an error; freeing 0 gives ZL_INVALID_HANDLE.
	//
	//lock:c zl_free frees
	Free(l ManagedLock) error

	// Lost reports whether the callback that received l should stop: its
	// lock was lost (a refresh found it gone, or its TTL passed without a
	// refresh), its manager is closing, or zl_cancel was called on l. A long
	// callback should check it between steps. It is for the handle a callback
	// receives; on a handle made by zl_make use zl_is_acquired.
	//
	//lock:c zl_lost out=lost
	Lost(l ManagedLock) (bool, error)

	// Cancel interrupts the calls on l in progress from other threads: a
	// zl_block waiting on a handle made by zl_make returns ZL_CANCELED, and
	// later calls on it work as usual. On the handle lent to a callback,
	// Cancel asks the callback to stop (zl_lost then reports 1).
	//
	//lock:c zl_cancel
	Cancel(l ManagedLock) error

	// Hold takes key in the background and holds it until told to let go,
	// for callers that must not block a thread while they wait or while they
	// work: an event loop. It returns at once with a new lock handle; a
	// library goroutine waits for the key as zl_block_run does (opts: the
	// timeout, default the TTL, and timeout_set with timeout_ms 0 for a single
	// attempt as zl_try makes; the retry delay; refresh), then holds it, with
	// the engine's background refresh when opts asks for it and its
	// client-side expiry, until zl_cancel or zl_free ends the hold.
	//
	// The handle tells how the hold goes, without waiting: zl_is_acquired
	// turns 1 once the key is held and 0 again once it is lost or let go;
	// zl_lost turns 1 once the work must stop (the lock was lost, the manager
	// is closing, or zl_cancel was called); zl_hold_done turns 1 once the hold
	// has ended and nothing it took is held any more. The accessors (zl_key,
	// zl_owner, zl_token, zl_expires_at) describe the held lock, and
	// zl_refresh, zl_acquire and zl_release work on it as on the handle lent
	// to a callback; before the key is held, zl_refresh reports 0 and calls
	// that would take the key are refused with ZL_CANCELED. Every change is signalled on the manager's zl_notify_fd
	// descriptors, so an event loop sleeps until there is something to read.
	//
	// zl_cancel ends the hold in the background: a wait stops (the hold ends
	// with ZL_CANCELED), a held lock is released. zl_free ends it too, waits
	// for the end, frees the handle and returns the outcome: ZL_OK when the
	// lock was held from the grant until it was let go, ZL_LOST when it was
	// lost meanwhile (whatever ended the hold), ZL_NOT_ACQUIRED when the wait
	// ran out, ZL_CANCELED when it was cancelled first, ZL_CLOSED when the
	// manager closed, ZL_INVALID_ARGUMENT for a bad key, TTL or option. After
	// zl_hold_done reports 1, zl_free returns at once.
	//
	//lock:c zl_hold
	Hold(m Manager, key string, ttl time.Duration, opts ...Option) (ManagedLock, error)

	// HoldDone reports whether the hold l (a handle made by zl_hold) has
	// ended: its wait failed or was cancelled, or its lock was let go or lost
	// and the library is done with the backend. zl_free then returns the
	// outcome at once.
	//
	//lock:c zl_hold_done out=done
	HoldDone(l ManagedLock) (bool, error)

	// NotifyFD returns a new file descriptor that becomes readable whenever a
	// hold of the manager m changes (granted, lost, ended), for an event loop
	// to watch instead of polling. It is one end of a Unix socket pair: read
	// and discard what is there, then look at the holds with zl_hold_done,
	// zl_is_acquired and zl_lost. Wake-ups coalesce (a byte may stand for
	// several changes, and none is written while unread ones wait), so read
	// until the descriptor would block and check every hold you wait on. The
	// caller owns the descriptor and closes it; zl_close closes the library's
	// ends, so the descriptor then reads end-of-file. Each call makes a new
	// descriptor, and every one is signalled.
	//
	//lock:c zl_notify_fd out=fd
	NotifyFD(m Manager) (int, error)
}
