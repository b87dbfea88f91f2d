"""Finding and loading libzerotal_lock: once per process, never unloaded, and
never used by a child forked after it was loaded."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Iterator

from ._abi_gen import ABI_VERSION, Error, Library, declare

LIBRARY_NAME = "libzerotal_lock.so"

_HERE = os.path.dirname(os.path.abspath(__file__))

BUNDLED = os.path.join(_HERE, "_lib", LIBRARY_NAME)
"""Where a wheel puts the library: inside the package, so that an installed
package needs nothing else."""

CHECKOUT = os.path.normpath(os.path.join(_HERE, "..", "..", "cshared", "build", LIBRARY_NAME))
"""Where `make cshared` puts the library in a checkout of the repository."""

_lib: Library | None = None
_path = ""
_loaded_in: int | None = None  # the pid of the process that loaded the library
_mu = threading.Lock()


class ForkError(Error):
    """The library was loaded in a process that has forked since: the child
    cannot use it (its Go runtime's threads do not survive fork, and a call
    would hang). Use multiprocessing's "spawn" or "forkserver" start method,
    or load the library only in the processes that use it (after the fork:
    gunicorn without --preload, Celery with a non-fork pool).
    """


def candidates() -> Iterator[str]:
    """The places the library is looked for, in order: bundled in the package
    (an installed wheel), $ZEROTAL_LOCK_LIBRARY, the checkout's build
    directory, the system's library path. The bundled library comes first
    because this package's ctypes prototypes were generated with it; the
    variable is for checkouts and for testing another build.
    """
    yield BUNDLED
    env = os.environ.get("ZEROTAL_LOCK_LIBRARY")
    if env:
        yield env
        return  # a library named explicitly is the one wanted, or an error
    yield CHECKOUT
    found = ctypes.util.find_library("zerotal_lock")
    if found:
        yield found


def _forked() -> None:
    global _lib
    _lib = None  # the child must never call the inherited copy


def library() -> Library:
    """Return the loaded library (a ctypes.CDLL with every prototype
    declared), loading it on first use. The library is never unloaded: a Go
    runtime cannot be. In a child forked after the library was loaded, raise
    ForkError rather than hang.
    """
    global _lib, _path, _loaded_in
    lib = _lib
    if lib is not None:
        return lib
    if _loaded_in is not None and _loaded_in != os.getpid():
        raise ForkError(
            "zerotal_lock was loaded by process %d, which has forked since: "
            "this child (pid %d) cannot use it. Start worker processes with "
            "the 'spawn' or 'forkserver' method, or import zerotal_lock in "
            "the workers only" % (_loaded_in, os.getpid())
        )
    with _mu:
        if _lib is not None:
            return _lib
        tried = []
        for path in candidates():
            if os.sep in path and not os.path.exists(path):
                tried.append(path)
                continue
            loaded = declare(ctypes.CDLL(path))
            if loaded.zl_abi_version() != ABI_VERSION:
                raise ImportError(
                    "%s implements C ABI version %d; this package needs %d"
                    % (path, loaded.zl_abi_version(), ABI_VERSION)
                )
            _loaded_in = os.getpid()
            os.register_at_fork(after_in_child=_forked)
            _lib, _path = loaded, path
            return loaded
        raise ImportError(
            "libzerotal_lock not found (tried %s): install the wheel (make wheel), "
            "build it with `make cshared`, or set ZEROTAL_LOCK_LIBRARY"
            % ", ".join(tried or ["the library path"])
        )


def library_path() -> str:
    """Return the path of the library in use, loading it if needed."""
    library()
    return _path


def loaded() -> Library | None:
    """The library if this process loaded it, else None: for finalizers,
    which must not load it (nor call a copy inherited across fork)."""
    return _lib


def version() -> str:
    """Return the library's version: the version of the Go module it was
    built from, as Go's build information records it."""
    return library().zl_version().decode()
