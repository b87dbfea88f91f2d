"""The lock handles: HeldLock (lent to the work a try/block run holds) and
Lock (made by Manager.lock, for explicit acquire and release)."""

from __future__ import annotations

import ctypes
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from . import _args
from ._abi_gen import ClosedError, Code, Error
from ._errors import check, error_for, last_error
from ._library import library, loaded


def _buffer_string(fn: Callable[[int, object, object], int], handle: int) -> str:
    """Read a string with the size protocol of zl_key and zl_owner."""
    size = ctypes.c_size_t(0)
    check(fn(handle, None, ctypes.byref(size)))
    buf = ctypes.create_string_buffer(size.value)
    check(fn(handle, buf, ctypes.byref(size)))
    return buf.value.decode("utf-8")


class LockInfo:
    """What every lock handle tells without talking to the backend: key,
    owner, token, expiry. These never block, so they are safe on an event
    loop too."""

    _handle = 0

    def _live(self) -> int:
        """The handle, or ClosedError when it has been freed."""
        if not self._handle:
            raise ClosedError("the lock handle has been freed")
        return self._handle

    @property
    def key(self) -> str:
        """The lock's key, without the manager's prefix."""
        return _buffer_string(library().zl_key, self._live())

    @property
    def owner(self) -> str:
        """The owner token of the current or last acquisition: 32 hex digits, or ""."""
        return _buffer_string(library().zl_owner, self._live())

    @property
    def token(self) -> int:
        """The fencing token of the current acquisition: it only increases per
        key. Pass it to the store you write to, which rejects a lower one than
        it has seen."""
        v = ctypes.c_uint64()
        check(library().zl_token(self._live(), ctypes.byref(v)))
        return v.value

    @property
    def is_acquired(self) -> bool:
        """Whether the lock is held, as far as this client can tell."""
        v = ctypes.c_int()
        check(library().zl_is_acquired(self._live(), ctypes.byref(v)))
        return bool(v.value)

    @property
    def expires_at(self) -> float | None:
        """The client-side estimate of the expiry, in seconds since the epoch,
        or None before the first acquisition."""
        v = ctypes.c_int64()
        check(library().zl_expires_at(self._live(), ctypes.byref(v)))
        return v.value / 1000 if v.value else None


class LentLock(LockInfo):
    """What the handle lent to a run's work adds: whether the work should
    stop, and asking it to."""

    def __init__(self, handle: int) -> None:
        self._handle = handle

    @property
    def lost(self) -> bool:
        """Whether the work under this lock should stop: the lock was lost, the
        manager is closing, or cancel() was called. Check it between steps.
        It never blocks."""
        v = ctypes.c_int()
        check(library().zl_lost(self._live(), ctypes.byref(v)))
        return bool(v.value)

    def cancel(self) -> None:
        """Ask the work under this lock to stop (lost turns true). It never
        blocks. The lock of a with-block (try_lock, block_lock, and
        block_run's, which the library holds in the background) is let go at
        once, in the background; try_run's is released when fn returns."""
        check(library().zl_cancel(self._live()))


class HeldLock(LentLock):
    """The lock a run or a with-block holds (Manager.try_run, block_run,
    try_lock, block_lock), valid while the run or the block lasts.

    Its lost property turns true when the work should stop: the lock was
    lost, the manager is closing, or cancel() was called.
    """

    def refresh(self) -> bool:
        """Extend the lock by its TTL if still held; return whether it was.
        It talks to the backend."""
        v = ctypes.c_int()
        check(library().zl_refresh(self._live(), ctypes.byref(v)))
        return bool(v.value)


def _collect_lock(handle: int, key: str) -> None:
    """The finalizer of a Lock nobody freed: release and free it, warning as
    an unclosed file does when it still held its lock."""
    lib = loaded()
    if lib is None:
        return  # forked, or the interpreter is going away: nothing to call
    held = ctypes.c_int()
    if lib.zl_is_acquired(handle, ctypes.byref(held)) == Code.OK and held.value:
        warnings.warn(
            "zerotal_lock.Lock %r was collected while it held its lock; it is "
            "released now (free it, or use it in a with statement)" % key,
            ResourceWarning,
            stacklevel=2,
        )
    lib.zl_free(handle)


class Lock(LockInfo):
    """A handle on one key, for explicit acquire and release (Manager.lock).

    Free it with free(), or use it as a context manager, which frees it on
    exit; freeing releases the lock if the handle holds it. A Lock that is
    garbage-collected unfreed is freed then, with a ResourceWarning if it
    still held its lock. Its methods may be called from any thread; those
    that talk to the backend are serialised per handle.
    """

    def __init__(self, handle: int, key: str = "") -> None:
        self._handle = handle
        self._finalizer = weakref.finalize(self, _collect_lock, handle, key)

    def acquire(self) -> bool:
        """Try once to take the lock; return whether it was taken. If this
        handle already holds it, reset its TTL."""
        v = ctypes.c_int()
        check(library().zl_acquire(self._live(), ctypes.byref(v)))
        return bool(v.value)

    def block(self, *, timeout: _args.Seconds | None = None, retry_delay: _args.Seconds | None = None) -> None:
        """Wait for the lock up to timeout seconds (default: the TTL; 0: one
        attempt). Raise NotAcquiredError when the timeout passes first, and
        CanceledError when cancel() interrupts the wait. The wait runs on a
        helper thread, so that KeyboardInterrupt (and any other exception
        raised in this thread while it waits) ends it at once: the wait is
        cancelled, a lock granted meanwhile is released (unless the handle
        held it before), and the exception goes on.
        """
        handle = self._live()
        timeout_ms, retry_ms = _args.ms(timeout, "timeout"), _args.ms(retry_delay, "retry_delay")
        held_before = self.is_acquired  # then an interrupted block keeps it
        outcome: dict[str, Error | None] = {}
        done = threading.Event()

        def wait() -> None:
            try:
                code = library().zl_block(handle, timeout_ms, retry_ms)
                outcome["error"] = error_for(code, last_error()) if code else None
            finally:
                done.set()

        t = threading.Thread(target=wait, name="zerotal_lock block", daemon=True)
        t.start()
        try:
            done.wait()
        except BaseException:
            library().zl_cancel(handle)
            t.join()
            if outcome.get("error") is None and not held_before:
                library().zl_release(handle)  # granted as the wait ended
            raise
        t.join()
        err = outcome["error"]
        if err is not None:
            raise err

    def release(self) -> None:
        """Release the lock if this handle holds it; never another owner's."""
        check(library().zl_release(self._live()))

    def force_release(self) -> None:
        """Free the key whoever holds it: for administration and recovery."""
        check(library().zl_force_release(self._live()))

    def refresh(self) -> bool:
        """Extend the lock by its TTL if still held; return whether it was."""
        v = ctypes.c_int()
        check(library().zl_refresh(self._live(), ctypes.byref(v)))
        return bool(v.value)

    def cancel(self) -> None:
        """Interrupt a block() in progress on another thread (it raises
        CanceledError); later calls work as usual."""
        check(library().zl_cancel(self._live()))

    def free(self) -> None:
        """Release the lock if held and end the handle. Idempotent."""
        handle, self._handle = self._handle, 0
        if handle:
            self._finalizer.detach()
            check(library().zl_free(handle))

    def __enter__(self) -> Lock:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.free()
