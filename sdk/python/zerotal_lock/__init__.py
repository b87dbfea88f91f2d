"""Distributed locks for Python through zerotal lock's C ABI.

The same engine and drivers as the Go API (memory, sqlite, file, redis,
postgres, etcd), so a Python worker and a Go service contending on one
SQLite file or one Redis key exclude each other. Only the standard library
is needed: the package loads libzerotal_lock.so (bundled in the wheel) with
ctypes.

    import zerotal_lock

    with zerotal_lock.Manager({"url": "sqlite:///var/lib/app/locks.db"}) as m:
        with m.try_lock("invoice:7", ttl=30, refresh=True) as held:
            print("holding", held.key, "with fencing token", held.token)

Three call styles: run a function under a lock (try_run, block_run), hold a
lock for a with-block (try_lock, block_lock), or take a handle and acquire
and release it yourself (lock). AsyncManager has the same for asyncio.

Durations are seconds (floats welcome); the library works in milliseconds.
Every failure raises a subclass of Error, one per error code, with code,
detail and http_status: NotAcquiredError, LostError, InvalidArgumentError,
ClosedError, InvalidHandleError, DriverError, CanceledError,
DeadlineExceededError, CallbackError, InternalError; and ForkError in a
child forked after the library was loaded.

The library is found bundled in the package (an installed wheel), then
through $ZEROTAL_LOCK_LIBRARY, then in the repository's build directory
(make cshared), then on the system's library path.
"""

from __future__ import annotations

import os

from ._abi_gen import (
    ABI_VERSION,
    ERRORS,
    CallbackError,
    CanceledError,
    ClosedError,
    Code,
    Config,
    DeadlineExceededError,
    DriverError,
    Error,
    FileConfig,
    InternalError,
    InvalidArgumentError,
    InvalidHandleError,
    LostError,
    NotAcquiredError,
    RedisConfig,
    SQLiteConfig,
)
from ._aio import AsyncHeldLock, AsyncLock, AsyncManager
from ._library import ForkError, library, library_path, version
from ._lock import HeldLock, Lock
from ._manager import Manager


def _version() -> str:
    """The package's version: the repository's VERSION without its "v". A
    wheel carries a copy in the package; a checkout has it at its root."""
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.path.join(here, "VERSION"), os.path.join(here, "..", "..", "..", "VERSION")):
        try:
            with open(path, encoding="utf-8") as f:
                return f.read().strip().lstrip("v")
        except OSError:
            continue
    return "0+unknown"


__version__ = _version()
"""This package's version (the repository's VERSION file)."""

__all__ = [
    "ABI_VERSION",
    "ERRORS",
    "AsyncHeldLock",
    "AsyncLock",
    "AsyncManager",
    "CallbackError",
    "CanceledError",
    "ClosedError",
    "Code",
    "Config",
    "DeadlineExceededError",
    "DriverError",
    "Error",
    "FileConfig",
    "ForkError",
    "HeldLock",
    "InternalError",
    "InvalidArgumentError",
    "InvalidHandleError",
    "Lock",
    "LostError",
    "Manager",
    "NotAcquiredError",
    "RedisConfig",
    "SQLiteConfig",
    "__version__",
    "library",
    "library_path",
    "version",
]
