"""Distributed locks for Python through zerotal lock's C ABI.

The same engine and drivers as the Go API (memory, sqlite, redis, file), so a
Python worker and a Go service contending on one SQLite file or one Redis key
exclude each other. Only the standard library is needed: the package loads
libzerotal_lock.so with ctypes.

    import zerotal_lock

    with zerotal_lock.Manager({"driver": "sqlite", "sqlite": {"path": "locks.db"}}) as m:
        with m.try_lock("invoice:7", ttl=30, refresh=True) as held:
            print("holding", held.key, "with fencing token", held.token)

Durations are seconds (floats welcome); the library works in milliseconds.
Every failure raises a subclass of Error, one per error code: NotAcquiredError,
LostError, InvalidArgumentError, ClosedError, InvalidHandleError, DriverError,
CanceledError, DeadlineExceededError, CallbackError, InternalError.

The library is found through $ZEROTAL_LOCK_LIBRARY, then next to this package,
then in the repository's build directory (make cshared), then on the system's
library path.
"""

import contextlib
import ctypes
import ctypes.util
import json
import os
import threading

from ._abi_gen import (
    ABI_VERSION,
    DEFAULT,
    ERRORS,
    CallbackError,
    CanceledError,
    ClosedError,
    Code,
    DeadlineExceededError,
    DriverError,
    Error,
    InternalError,
    InvalidArgumentError,
    InvalidHandleError,
    LostError,
    NotAcquiredError,
    declare,
    zl_callback,
    zl_lock,
    zl_manager,
    zl_options,
)

__all__ = [
    "ABI_VERSION",
    "CallbackError",
    "CanceledError",
    "ClosedError",
    "Code",
    "DeadlineExceededError",
    "DriverError",
    "Error",
    "HeldLock",
    "InternalError",
    "InvalidArgumentError",
    "InvalidHandleError",
    "Lock",
    "LostError",
    "Manager",
    "NotAcquiredError",
    "library",
    "version",
]

_LIBRARY_NAME = "libzerotal_lock.so"
_lib = None
_lib_mu = threading.Lock()


def _candidates():
    env = os.environ.get("ZEROTAL_LOCK_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, _LIBRARY_NAME)
    yield os.path.join(here, "..", "..", "cshared", "build", _LIBRARY_NAME)
    found = ctypes.util.find_library("zerotal_lock")
    if found:
        yield found


def library():
    """Return the loaded library (a ctypes.CDLL with every prototype
    declared), loading it on first use. The library is never unloaded: a
    Go runtime cannot be.
    """
    global _lib
    with _lib_mu:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            if not os.path.exists(path) and os.sep in path:
                tried.append(path)
                continue
            lib = declare(ctypes.CDLL(path))
            if lib.zl_abi_version() != ABI_VERSION:
                raise ImportError(
                    "%s implements C ABI version %d; this package needs %d"
                    % (path, lib.zl_abi_version(), ABI_VERSION)
                )
            _lib = lib
            return lib
        raise ImportError(
            "libzerotal_lock not found (tried %s): build it with `make cshared` "
            "or set ZEROTAL_LOCK_LIBRARY" % ", ".join(tried or ["the library path"])
        )


def version():
    """Return the library's version."""
    return library().zl_version().decode()


def _check(code):
    """Raise the exception of a non-zero code, with this thread's detail.

    It must run on the thread that made the call, right after it: the
    detail is per thread.
    """
    if code != Code.OK:
        detail = library().zl_last_error().decode("utf-8", "replace")
        raise _error(code, detail)


def _error(code, detail):
    cls = ERRORS.get(code)
    if cls is None:
        err = Error(detail or "unknown error code %d" % code)
        err.code = code
        return err
    return cls(detail)


def _ms(seconds, name):
    """Seconds to whole milliseconds; None means the default."""
    if seconds is None:
        return DEFAULT
    if seconds < 0:
        raise InvalidArgumentError("%s: %r is negative" % (name, seconds))
    return int(round(seconds * 1000))


def _key(key):
    if not isinstance(key, str):
        raise InvalidArgumentError("key: want a str, got %s" % type(key).__name__)
    return key.encode("utf-8")


def _options(timeout=None, retry_delay=None, refresh=False, refresh_every=None):
    o = zl_options()
    if timeout is not None:
        o.timeout_ms = _ms(timeout, "timeout")
        o.timeout_set = 1
    if retry_delay is not None:
        o.retry_delay_ms = _ms(retry_delay, "retry_delay")
    o.refresh = 1 if refresh else 0
    if refresh_every is not None:
        o.refresh_every_ms = _ms(refresh_every, "refresh_every")
    return o


def _buffer_string(fn, handle):
    """Read a string with the size protocol of zl_key and zl_owner."""
    size = ctypes.c_size_t(0)
    _check(fn(handle, None, ctypes.byref(size)))
    buf = ctypes.create_string_buffer(size.value)
    _check(fn(handle, buf, ctypes.byref(size)))
    return buf.value.decode("utf-8")


class _Accessors:
    """What every lock handle tells: key, owner, token, expiry."""

    _handle = 0

    @property
    def key(self):
        """The lock's key, without the manager's prefix."""
        return _buffer_string(library().zl_key, self._handle)

    @property
    def owner(self):
        """The owner token of the current or last acquisition: 32 hex digits, or ""."""
        return _buffer_string(library().zl_owner, self._handle)

    @property
    def token(self):
        """The fencing token of the current acquisition: it only increases per key."""
        v = ctypes.c_uint64()
        _check(library().zl_token(self._handle, ctypes.byref(v)))
        return v.value

    @property
    def is_acquired(self):
        """Whether the lock is held, as far as this client can tell."""
        v = ctypes.c_int()
        _check(library().zl_is_acquired(self._handle, ctypes.byref(v)))
        return bool(v.value)

    @property
    def expires_at(self):
        """The client-side estimate of the expiry, in seconds since the epoch, or None."""
        v = ctypes.c_int64()
        _check(library().zl_expires_at(self._handle, ctypes.byref(v)))
        return v.value / 1000 if v.value else None

    def refresh(self):
        """Extend the lock by its TTL if still held; return whether it was."""
        v = ctypes.c_int()
        _check(library().zl_refresh(self._handle, ctypes.byref(v)))
        return bool(v.value)


class HeldLock(_Accessors):
    """The lock a try/block run holds, valid while the run lasts.

    Its lost property turns true when the work should stop: the lock was
    lost, the manager is closing, or cancel() was called.
    """

    def __init__(self, handle):
        self._handle = handle

    @property
    def lost(self):
        """Whether the work under this lock should stop."""
        v = ctypes.c_int()
        _check(library().zl_lost(self._handle, ctypes.byref(v)))
        return bool(v.value)

    def cancel(self):
        """Ask the work under this lock to stop (lost turns true)."""
        _check(library().zl_cancel(self._handle))


class Lock(_Accessors):
    """A handle on one key, for explicit acquire and release (Manager.lock).

    Free it with free(), or use it as a context manager, which frees it on
    exit; freeing releases the lock if the handle holds it.
    """

    def __init__(self, handle):
        self._handle = handle

    def acquire(self):
        """Try once to take the lock; return whether it was taken."""
        v = ctypes.c_int()
        _check(library().zl_acquire(self._handle, ctypes.byref(v)))
        return bool(v.value)

    def block(self, timeout=None, retry_delay=None):
        """Wait for the lock up to timeout seconds (default: the TTL; 0: one
        attempt). Raise NotAcquiredError when the timeout passes first, and
        CanceledError when cancel() interrupts the wait.
        """
        _check(
            library().zl_block(
                self._handle, _ms(timeout, "timeout"), _ms(retry_delay, "retry_delay")
            )
        )

    def release(self):
        """Release the lock if this handle holds it; never another owner's."""
        _check(library().zl_release(self._handle))

    def force_release(self):
        """Free the key whoever holds it: for administration and recovery."""
        _check(library().zl_force_release(self._handle))

    def cancel(self):
        """Interrupt a block() in progress on another thread."""
        _check(library().zl_cancel(self._handle))

    def free(self):
        """Release the lock if held and end the handle. Idempotent."""
        handle, self._handle = self._handle, 0
        if handle:
            _check(library().zl_free(handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()
        return False


class Manager:
    """Takes locks on one driver under one key prefix; safe for many threads.

    config is a dict (or a JSON string) with the members of the Go API's
    Config: {"driver", "prefix", "sqlite": {"path"}, "redis": {"url"},
    "file": {"dir"}}, all optional; None reads the configuration from the
    environment (LOCK_DRIVER, LOCK_PREFIX, LOCK_SQLITE_PATH, REDIS_URL,
    LOCK_FILE_DIR). Close it with close(), or use it as a context manager.
    """

    def __init__(self, config=None):
        if config is None:
            raw = None
        elif isinstance(config, str):
            raw = config.encode("utf-8")
        else:
            raw = json.dumps(config).encode("utf-8")
        h = zl_manager()
        _check(library().zl_open(raw, ctypes.byref(h)))
        self._handle = h.value

    def close(self):
        """Stop refreshers, release what the manager holds and close the
        driver. Idempotent."""
        handle, self._handle = self._handle, 0
        if handle:
            _check(library().zl_close(handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def lock(self, key, ttl):
        """Return a Lock on key with a TTL in seconds; it is not acquired."""
        h = zl_lock()
        _check(library().zl_make(self._handle, _key(key), _ms(ttl, "ttl"), ctypes.byref(h)))
        return Lock(h.value)

    def try_run(self, key, ttl, fn, refresh=False, refresh_every=None):
        """Run fn(held) under key if it is free, and return its result.

        Raise NotAcquiredError without running fn if the key is held. With
        refresh, the lock is extended in the background while fn runs. If
        the lock was lost while fn ran, raise LostError: the work was not
        provably exclusive. An exception from fn propagates, after the
        release.
        """
        opts = _options(refresh=refresh, refresh_every=refresh_every)
        return self._run(library().zl_try, key, ttl, opts, fn)

    def block_run(self, key, ttl, fn, timeout=None, retry_delay=None, refresh=False, refresh_every=None):
        """Wait for key up to timeout seconds (default: the TTL), then run
        fn(held) under it as try_run does."""
        opts = _options(timeout, retry_delay, refresh, refresh_every)
        return self._run(library().zl_block_run, key, ttl, opts, fn)

    def _run(self, c_fn, key, ttl, opts, fn):
        outcome = {}

        def trampoline(handle, _user_data):
            try:
                outcome["value"] = fn(HeldLock(handle))
                return 0
            except BaseException as e:  # noqa: B036 - handed back to the caller below
                outcome["error"] = e
                return 1

        cb = zl_callback(trampoline)
        code = c_fn(self._handle, _key(key), _ms(ttl, "ttl"), ctypes.byref(opts), cb, None)
        detail = library().zl_last_error().decode("utf-8", "replace") if code else ""
        if "error" in outcome:
            err = outcome.pop("error")
            if code not in (Code.OK, Code.CALLBACK) and hasattr(err, "add_note"):
                err.add_note("zerotal_lock: " + detail)
            raise err
        if code:
            raise _error(code, detail)
        return outcome.get("value")

    def try_lock(self, key, ttl, refresh=False, refresh_every=None):
        """A context manager holding key for its block if key is free:

            with m.try_lock("job", ttl=30, refresh=True) as held:
                ...

        Raise NotAcquiredError if the key is held. The engine runs the lock
        on a helper thread (so refresh and lost detection work as for
        try_run) while the block runs on the caller's thread. On exit the
        lock is released, and LostError is raised if it was lost meanwhile.
        """
        opts = _options(refresh=refresh, refresh_every=refresh_every)
        return _held(self, library().zl_try, key, ttl, opts)

    def block_lock(self, key, ttl, timeout=None, retry_delay=None, refresh=False, refresh_every=None):
        """try_lock that waits for key up to timeout seconds (default: the TTL)."""
        opts = _options(timeout, retry_delay, refresh, refresh_every)
        return _held(self, library().zl_block_run, key, ttl, opts)


@contextlib.contextmanager
def _held(manager, c_fn, key, ttl, opts):
    run = _BackgroundRun(manager, c_fn, key, ttl, opts)
    held = run.start()
    try:
        yield held
    except BaseException:
        run.finish(failed=True)
        raise
    run.finish(failed=False)


class _BackgroundRun:
    """One try/block run whose callback waits on a helper thread until the
    with-block on the caller's thread is done."""

    def __init__(self, manager, c_fn, key, ttl, opts):
        self._args = (manager._handle, _key(key), _ms(ttl, "ttl"), opts)
        self._c_fn = c_fn
        self._entered = threading.Event()  # the callback holds the lock, or the call ended
        self._exit = threading.Event()  # the with-block is done
        self._failed = False
        self._held = None
        self._code = Code.OK
        self._detail = ""
        self._thread = threading.Thread(target=self._call, name="zerotal_lock run", daemon=True)

    def _callback(self, handle, _user_data):
        self._held = HeldLock(handle)
        self._entered.set()
        self._exit.wait()
        return 1 if self._failed else 0

    def _call(self):
        cb = zl_callback(self._callback)
        m, key, ttl, opts = self._args
        try:
            self._code = self._c_fn(m, key, ttl, ctypes.byref(opts), cb, None)
            if self._code:
                self._detail = library().zl_last_error().decode("utf-8", "replace")
        finally:
            self._entered.set()

    def start(self):
        self._thread.start()
        try:
            self._entered.wait()
        except BaseException:
            # Interrupted while waiting: if the lock comes, give it back.
            self.finish(failed=True, wait=False)
            raise
        if self._held is None:
            self._thread.join()
            raise _error(self._code, self._detail)
        return self._held

    def finish(self, failed, wait=True):
        self._failed = failed
        self._exit.set()
        if not wait:
            return
        self._thread.join()
        if not failed and self._code:
            raise _error(self._code, self._detail)
