"""What the tests share."""

from __future__ import annotations

import ctypes
import os
import pathlib
import threading
import time
from collections.abc import Callable

import zerotal_lock as zl


def live_handles() -> int | None:
    """The number of live handles, or None without the test build (whose
    zl_test_live_handles lets the tests check that no handle leaks)."""
    lib = zl.library()
    try:
        fn = getattr(lib, "zl_test_live_handles")
    except AttributeError:
        return None
    fn.restype = ctypes.c_int
    n: int = fn()
    return n


def library_threads() -> list[str]:
    """The names of the threads this package started that are still alive."""
    return [t.name for t in threading.enumerate() if t.name.startswith("zerotal_lock")]


def eventually(condition: Callable[[], bool], within: float = 5.0) -> bool:
    """Poll condition until it holds or within seconds pass; return whether
    it held."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def open_fds() -> set[int]:
    """The file descriptors open in this process (Linux's /proc/self/fd),
    less the one listing them."""
    fds = set()
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            os.fstat(fd)
        except OSError:
            continue  # the directory os.listdir had open
        fds.add(fd)
    return fds


def queued_tickets(lock_dir: str) -> int:
    """How many waiters the file driver's lock directory has queued: each is
    a ticket file ("t." and a sequence number) in its key's room."""
    return sum(1 for _ in pathlib.Path(lock_dir).rglob("t.*"))
