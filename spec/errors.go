package spec

import "time"

// Code is a stable numeric error code. A code never changes meaning once
// published: the C ABI and other runtimes see the same numbers. [CodeOf] maps
// any error to its code, and [Code.HTTPStatus] to the HTTP status a server
// should answer with.
type Code int

// Codes is the error table. Each field is one code, in numeric order:
//
//   - code: the number (stable forever);
//   - http: the HTTP status for the error;
//   - sentinel, message: the sentinel error matched with errors.Is, and its text;
//   - error: the typed error carrying the details;
//   - is: an error outside this package that has this code (context's errors);
//   - rank: the precedence in CodeOf when one error tree holds several coded
//     errors: the lowest rank wins, and among equals the outermost error;
//   - text: a short description for other languages (the C ABI's zl_strerror,
//     the Python client's exceptions).
//
// An error that carries no code of this table came from outside the library:
// in practice from the caller's own function, since every backend failure is
// wrapped in a *DriverError. CodeOf gives it the code marked fallback.
type Codes struct {
	// OK means success: the error is nil.
	OK Code `code:"0" http:"200" text:"success"`

	// NotAcquired means the key is held by another owner: Try and Acquire
	// found it held, or Block's wait ran out.
	NotAcquired Code `code:"1" http:"409" sentinel:"ErrNotAcquired" message:"lock: not acquired" error:"NotAcquiredError" rank:"1" text:"not acquired: the key is held by another owner"`

	// Lost means the lock stopped being held by its owner while the work ran
	// (a refresh found it gone, refreshes failed until the TTL passed, or fn
	// outlived the TTL), so the work was not provably exclusive.
	Lost Code `code:"2" http:"409" sentinel:"ErrLost" message:"lock: lost" error:"LostError" rank:"1" text:"lock lost: the work was not provably exclusive"`

	// InvalidArgument means bad input, rejected before any backend call.
	InvalidArgument Code `code:"3" http:"400" sentinel:"ErrInvalidArgument" message:"lock: invalid argument" error:"InvalidArgumentError" rank:"1" text:"invalid argument"`

	// Closed means the manager (or its driver) is closed.
	Closed Code `code:"4" http:"503" sentinel:"ErrClosed" message:"lock: closed" rank:"1" text:"the manager is closed"`

	// InvalidHandle means an unknown, freed or wrong-kind handle was passed to
	// the C ABI.
	InvalidHandle Code `code:"5" http:"400" text:"invalid handle: unknown, freed or of the wrong kind"`

	// Driver means the backend failed.
	Driver Code `code:"6" http:"503" error:"DriverError" rank:"3" text:"the backend failed"`

	// Canceled means the caller's context was cancelled.
	Canceled Code `code:"7" http:"499" is:"context.Canceled" rank:"2" text:"canceled"`

	// DeadlineExceeded means the caller's context deadline passed.
	DeadlineExceeded Code `code:"8" http:"504" is:"context.DeadlineExceeded" rank:"2" text:"deadline exceeded"`

	// Callback means the function run under the lock returned an error.
	Callback Code `code:"9" http:"500" fallback:"true" text:"the callback returned an error"`

	// Internal means a bug: a panic inside the library was contained.
	Internal Code `code:"10" http:"500" text:"internal error (a bug): a panic was contained"`
}

// NotAcquiredError reports contention: the key was held by another owner
// (Try, Acquire), or Block waited its whole timeout without getting it.
// errors.Is(err, ErrNotAcquired) is true for it; a server should answer 409
// Conflict.
//
//lock:format lock: {Key:q} not acquired[ after waiting {Waited}]
type NotAcquiredError struct {
	Key    string        // the caller's key, without the prefix
	Waited time.Duration // how long Block waited; 0 for Try and Acquire
}

// LostError reports that the lock stopped being held by this owner while its
// work ran, so the work was not provably exclusive. errors.Is(err, ErrLost) is
// true for it.
//
//lock:format lock: {Key:q} lost while held: {Reason}[ (fencing token {Token} holds it now)][, failing since {Since}][: {Cause}]
type LostError struct {
	Key    string     // the caller's key, without the prefix
	Reason LostReason // why the lock was lost
	Token  uint64     // LostTakenOver: the new holder's fencing token, when the driver has tokens
	Since  time.Time  // LostUnreachable: when the refreshes began to fail
	Cause  error      // the backend's last error, or ErrClosed; may be nil
}

// LostReason says why a lock was lost: the Reason of a [LostError].
type LostReason int

// LostReasons is the table of LostReason values: each field is one constant,
// with its number (value, stable once published) and its words (text, what
// String returns and a LostError's message says).
//
//lock:enum LostReason
type LostReasons struct {
	// LostExpired means the TTL passed without a refresh: the work outlived
	// the TTL with refresh off, or the acquire itself took the whole TTL.
	LostExpired LostReason `value:"1" text:"its TTL passed before it was refreshed"`

	// LostTakenOver means the backend says another owner holds the key now.
	LostTakenOver LostReason `value:"2" text:"another owner holds the key now"`

	// LostGone means the backend no longer had the lock and nobody holds the
	// key: it was force-released, expired on the server, or lost by the
	// backend (a restart without persistence, a failover).
	LostGone LostReason `value:"3" text:"the backend no longer had it (force-released, expired there, or lost by the backend)"`

	// LostUnreachable means every refresh failed until the TTL passed.
	LostUnreachable LostReason `value:"4" text:"the backend failed every refresh until the TTL passed"`

	// LostReleased means the handle itself released the lock, or took it
	// again under a new owner, while the work ran.
	LostReleased LostReason `value:"5" text:"its own handle released it, or took it again under a new owner, while the work ran"`

	// LostClosed means the manager closed while the work ran.
	LostClosed LostReason `value:"6" text:"the manager closed"`
}

// InvalidArgumentError reports bad input, such as an empty key, a TTL under a
// millisecond, a negative timeout or a nil function. It is returned before any
// backend call, so nothing held is touched. errors.Is(err,
// ErrInvalidArgument) is true for it.
//
//lock:format lock: invalid {Field}: {Reason}
//lock:input
type InvalidArgumentError struct {
	Field  string // the argument or option at fault, e.g. "key", "ttl", "timeout"
	Reason string // what is wrong with it
}

// DriverError reports a backend failure, wrapped with the operation and the
// caller's key. It never matches ErrNotAcquired: a failure is not contention.
//
//lock:format lock: {Op}[ {Key:q}]: {Err}
type DriverError struct {
	Op  string // "acquire", "release", "extend", "force release", "exists", "inspect", "open <driver>"
	Key string // the caller's key, without the prefix; "" when opening
	Err error  // the driver's error
}
