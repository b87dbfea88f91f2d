"""Hold: one zl_hold, the C ABI's background lock, which the with-block
styles (try_lock, block_lock, block_run, and their async twins) are built on.

zl_hold returns at once; a library goroutine waits for the key with the
engine's Manager.Block (the driver's FIFO queue, its notices, the timeout
and retry delay of the options) and then holds it, with the engine's
refresh and loss tracking, until the hold is cancelled or freed. Nothing
waits on a Python thread meanwhile: the caller reads the hold's state
(which never waits) whenever the manager's notification descriptor says a
hold has changed (see _notify), and zl_cancel stops a wait at once without
giving up its place in line before then.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from . import _args
from ._abi_gen import Code, Error, LostError, zl_lock, zl_options
from ._errors import check, error_for, last_error
from ._library import library


class Hold:
    """One zl_hold on key: started by the constructor, ended by end() (or
    cancel() and, once ended() says so, free()).

    Its accessors return at once: ended() (the hold is over and nothing it
    took is held any more), granted() (the key is held now), lost() (work
    under it must stop). handle is the zl_lock the lock's accessors,
    zl_refresh and zl_lost take, until free().
    """

    def __init__(self, manager: int, key: str, ttl: _args.Seconds, opts: zl_options) -> None:
        out = zl_lock()
        check(library().zl_hold(manager, _args.key(key), _args.ttl(ttl), ctypes.byref(opts), ctypes.byref(out)))
        self.handle: int = out.value
        self.key = key
        self._outcome: tuple[int, str] | None = None  # zl_free's code and detail, once freed
        self._seen_granted = False

    def _flag(self, fn: Callable[[int, object], int]) -> bool:
        v = ctypes.c_int()
        check(fn(self.handle, ctypes.byref(v)))
        return bool(v.value)

    def ended(self) -> bool:
        """Whether the hold is over: its wait failed or was cancelled, or its
        lock was let go or lost and released. free() returns at once then."""
        return self._outcome is not None or self._flag(library().zl_hold_done)

    def lost(self) -> bool:
        """Whether work under the hold must stop: the lock was lost, the
        manager is closing, cancel() was called, or the hold is over."""
        return self._outcome is not None or self._flag(library().zl_lost)

    def granted(self) -> bool:
        """Whether the key is held now (and was never let go since). A
        cancelled wait never reads as granted: zl_lost is 1 from the
        cancellation on."""
        if self._outcome is not None or self._flag(library().zl_hold_done):
            return False
        held = self._flag(library().zl_is_acquired) and not self._flag(library().zl_lost)
        self._seen_granted = self._seen_granted or held
        return held

    @property
    def was_granted(self) -> bool:
        """Whether granted() has ever said so."""
        return self._seen_granted

    def settled(self) -> bool:
        """Whether the wait is over, either way: what a waiter waits for."""
        return self.granted() or self.ended()

    def cancel(self) -> None:
        """End the hold in the background: a wait stops (at once, wherever
        it is in line), a held lock is released. It never waits."""
        if self._outcome is None:
            check(library().zl_cancel(self.handle))

    def free(self) -> tuple[int, str]:
        """Free the handle and return the hold's outcome: zl_free's code and
        detail (ZL_OK when the lock was held until let go, ZL_LOST,
        ZL_NOT_ACQUIRED, ZL_CANCELED, ZL_CLOSED...). It waits for the hold to
        end, so call it once ended() says so where waiting is not allowed
        (an event loop). Idempotent."""
        if self._outcome is None:
            code = library().zl_free(self.handle)
            self._outcome = (code, last_error() if code else "")
        return self._outcome

    def end(self) -> tuple[int, str]:
        """Let the hold go (cancel, then free): for a thread, which may wait
        for the release."""
        self.cancel()
        return self.free()

    def refusal(self) -> Error:
        """The exception of a hold that ended before it was granted (free()
        has been called): why it was not, or LostError for a lock lost as it
        was granted."""
        code, detail = self.free()
        if code == Code.OK:
            return LostError("lock %r was lost as it was granted" % self.key)
        return error_for(code, detail)


def annotate(e: BaseException, outcome: tuple[int, str]) -> None:
    """Add a hold's failure to an exception from the work under it, as
    try_run does: the work failed and the lock was also lost, say."""
    code, detail = outcome
    if code != Code.OK and hasattr(e, "add_note"):
        e.add_note("zerotal_lock: " + detail)


def try_options(refresh: bool, refresh_every: _args.Seconds | None) -> zl_options:
    """The zl_options of a hold that makes a single attempt, as zl_try does
    (timeout_set with timeout_ms 0)."""
    return _args.options(timeout=0, refresh=refresh, refresh_every=refresh_every)

