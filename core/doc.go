// Package core is the zerotal lock engine: owner tokens, Try / Block / Run,
// background refresh, lock-lost detection, input validation and the closed
// state, on top of any [driver.Driver].
//
// Application code should use package lock (github.com/zerotal/lock/sdk/go),
// whose generated API wraps this package. The engine is kept separate so the
// Go API and the C ABI share one implementation, and so that it depends on
// nothing outside the standard library.
//
// The engine's promises, whatever the driver:
//   - Every acquisition gets a fresh 128-bit random owner token, and release
//     and refresh are owner-guarded, so a late holder never frees or extends
//     someone else's lock.
//   - The local view never outlives the real lock: a lock's expiry is measured
//     on the monotonic clock from the moment its acquire or refresh was sent,
//     not from when the answer came back.
//   - Work is never reported as done under the lock unless it provably was:
//     when the lock is lost while fn runs, fn's context is cancelled with cause
//     ErrLost and Run returns a *LostError, even if fn returned nil.
//   - Bad input is rejected with an *InvalidArgumentError naming the field
//     before any driver call.
//   - Release runs on a context detached from the caller's cancellation, so a
//     cancelled request still frees its lock.
package core
