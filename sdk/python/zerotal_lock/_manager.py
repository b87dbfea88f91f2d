"""Manager: the three call styles on one driver — run a function under a lock
(try_run, block_run), hold a lock for a with-block (try_lock, block_lock), or
take a handle (lock)."""

from __future__ import annotations

import contextlib
import ctypes
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from . import _args, _notify
from ._abi_gen import ClosedError, Code, Config, zl_callback, zl_lock, zl_manager, zl_options
from ._errors import check, error_for, last_error
from ._hold import Hold, annotate, try_options
from ._library import library, loaded
from ._lock import HeldLock, Lock

T = TypeVar("T")

def _collect_manager(handle: int) -> None:
    """The finalizer of a Manager nobody closed: close it, warning as an
    unclosed file does."""
    lib = loaded()
    if lib is None:
        return
    warnings.warn(
        "zerotal_lock.Manager was collected unclosed; it is closed now, which "
        "releases its locks (close it, or use it in a with statement)",
        ResourceWarning,
        stacklevel=2,
    )
    lib.zl_close(handle)


class Manager:
    """Takes locks on one driver under one key prefix; safe for many threads.

    config is a dict (see Config: "url", or "driver" with "sqlite", "redis"
    or "file", and "prefix", all optional) or the same as a JSON string;
    None reads the environment as Go's ConfigFromEnv does (LOCK_URL,
    LOCK_DRIVER, LOCK_PREFIX, LOCK_SQLITE_PATH, REDIS_URL, LOCK_FILE_DIR),
    from os.environ when the manager opens. Close it with close(), or use it
    as a context manager. A Manager that is garbage-collected unclosed is
    closed then, with a ResourceWarning.
    """

    _handle = 0

    def __init__(self, config: Config | str | None = None) -> None:
        raw = _args.config_json(config)
        h = zl_manager()
        check(library().zl_open(raw, ctypes.byref(h)))
        self._handle = h.value
        self._finalizer = weakref.finalize(self, _collect_manager, h.value)

    def _live(self) -> int:
        """The handle, or ClosedError when the manager is closed."""
        if not self._handle:
            raise ClosedError("the manager is closed")
        return self._handle

    @property
    def closed(self) -> bool:
        """Whether close() has been called."""
        return not self._handle

    def close(self) -> None:
        """Stop refreshers, make running work see lost, release what the
        manager holds and close the driver. Idempotent."""
        handle, self._handle = self._handle, 0
        if handle:
            self._finalizer.detach()
            check(library().zl_close(handle))

    def __enter__(self) -> Manager:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def lock(self, key: str, ttl: _args.Seconds) -> Lock:
        """Return a Lock on key with a TTL in seconds; it is not acquired."""
        h = zl_lock()
        check(library().zl_make(self._live(), _args.key(key), _args.ttl(ttl), ctypes.byref(h)))
        return Lock(h.value, key)

    def try_run(
        self,
        key: str,
        ttl: _args.Seconds,
        fn: Callable[[HeldLock], T],
        *,
        refresh: bool = False,
        refresh_every: _args.Seconds | None = None,
    ) -> T:
        """Run fn(held) under key if it is free, and return its result.

        Raise NotAcquiredError without running fn if the key is held. With
        refresh, the lock is extended in the background while fn runs. If
        the lock was lost while fn ran, raise LostError: the work was not
        provably exclusive. An exception from fn propagates, after the
        release.
        """
        opts = _args.options(refresh=refresh, refresh_every=refresh_every)
        return self._run(key, ttl, opts, fn)

    def block_run(
        self,
        key: str,
        ttl: _args.Seconds,
        fn: Callable[[HeldLock], T],
        *,
        timeout: _args.Seconds | None = None,
        retry_delay: _args.Seconds | None = None,
        refresh: bool = False,
        refresh_every: _args.Seconds | None = None,
    ) -> T:
        """Wait for key up to timeout seconds (default: the TTL; 0: one
        attempt), then run fn(held) under it as try_run does. Raise
        NotAcquiredError when the timeout passes first. The wait is
        block_lock's: it keeps its place in the driver's queue, and Ctrl-C
        ends it at once."""
        with self.block_lock(
            key, ttl, timeout=timeout, retry_delay=retry_delay, refresh=refresh, refresh_every=refresh_every
        ) as held:
            return fn(held)

    def _run(self, key: str, ttl: _args.Seconds, opts: zl_options, fn: Callable[[HeldLock], T]) -> T:
        outcome: dict[str, Any] = {}

        def trampoline(handle: int, _user_data: object) -> int:
            try:
                outcome["value"] = fn(HeldLock(handle))
                return 0
            except BaseException as e:  # noqa: B036 - handed back to the caller below
                outcome["error"] = e
                return 1

        cb = zl_callback(trampoline)
        code = library().zl_try(self._live(), _args.key(key), _args.ttl(ttl), ctypes.byref(opts), cb, None)
        detail = last_error() if code else ""
        if "error" in outcome:
            err: BaseException = outcome.pop("error")
            if code not in (Code.OK, Code.CALLBACK) and hasattr(err, "add_note"):
                err.add_note("zerotal_lock: " + detail)
            raise err
        if code:
            raise error_for(code, detail)
        value: T = outcome["value"]
        return value

    def try_lock(
        self,
        key: str,
        ttl: _args.Seconds,
        *,
        refresh: bool = False,
        refresh_every: _args.Seconds | None = None,
    ) -> contextlib.AbstractContextManager[HeldLock]:
        """A context manager holding key for its block if key is free:

            with m.try_lock("job", ttl=30, refresh=True) as held:
                ...

        Raise NotAcquiredError if the key is held. The library holds the lock
        in the background (zl_hold: refresh and lost detection work as for
        try_run) while the block runs on the caller's thread. On exit the
        lock is released, and LostError is raised if it was lost meanwhile.
        """
        return _held(self, key, ttl, try_options(refresh, refresh_every))

    def block_lock(
        self,
        key: str,
        ttl: _args.Seconds,
        *,
        timeout: _args.Seconds | None = None,
        retry_delay: _args.Seconds | None = None,
        refresh: bool = False,
        refresh_every: _args.Seconds | None = None,
    ) -> contextlib.AbstractContextManager[HeldLock]:
        """try_lock that waits for key up to timeout seconds (default: the
        TTL; 0: one attempt). Raise NotAcquiredError when the timeout passes
        first. The wait keeps its place in the driver's queue (memory, Redis,
        PostgreSQL and etcd hand a released key to their longest waiter).
        Ctrl-C (or any exception raised in the thread) ends the wait at once:
        it is cancelled, and a key granted at that moment is released before
        the exception goes on."""
        return _held(self, key, ttl, _args.options(timeout, retry_delay, refresh, refresh_every))


@contextlib.contextmanager
def _held(manager: Manager, key: str, ttl: _args.Seconds, opts: zl_options) -> Iterator[HeldLock]:
    """Hold key for a with-block: a zl_hold, waited for in poll(2) on this
    thread (see _notify.wait), then held by the library while the block
    runs."""
    m = manager._live()
    hold = Hold(m, key, ttl, opts)
    try:
        _notify.wait(m, hold.settled)
    except BaseException:
        hold.end()  # interrupted: stop the wait, release a key granted meanwhile
        raise
    if not hold.was_granted:
        raise hold.refusal()
    try:
        yield HeldLock(hold.handle)
    except BaseException as e:
        annotate(e, hold.end())
        raise
    code, detail = hold.end()
    if code:
        raise error_for(code, detail)
