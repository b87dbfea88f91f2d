"""Waiting for holds (see _hold) without a thread: the manager's
notification descriptors (zl_notify_fd), read by poll(2) on the waiting
thread (wait) or by the event loop (LoopWatcher).

The library writes a byte on every descriptor of a manager whenever one of
its holds is granted, lost or ended; wake-ups coalesce, so a reader drains
what is there and then looks at every hold it waits for. A descriptor is
opened before the first look, so that no change falls between the look and
the sleep. zl_close closes the library's ends once every hold has ended:
the descriptor reads end-of-file, and the holds have all ended by then.

Where the library has no descriptors (zl_notify_fd is Linux-only; it
answers ZL_DRIVER elsewhere), holds are looked at every POLL_INTERVAL
instead: the same outcomes, seen up to that much later.

Every descriptor this process opens is closed in a child forked from it: the
child cannot use the library (see _library), and its copy would keep the
parent's socket open after the parent closed it.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import select
import threading
import time
from collections.abc import Callable
from typing import Protocol

from ._abi_gen import Code
from ._errors import error_for, last_error
from ._library import library

POLL_INTERVAL = 0.01
"""How often, in seconds, a hold is looked at where the library has no
notification descriptors (off Linux)."""

_open_fds: set[int] = set()  # the descriptors open in this process, for the fork handler
_open_mu = threading.Lock()


def open_descriptor(manager: int) -> int | None:
    """A new notification descriptor of manager, non-blocking, or None where
    the library cannot give one (then the caller polls): off Linux, or when
    the process is out of descriptors. Raises the library's error for a bad
    or closed manager."""
    fd = ctypes.c_int(-1)
    code = library().zl_notify_fd(manager, ctypes.byref(fd))
    if code == Code.DRIVER:
        return None
    if code != Code.OK:
        raise error_for(code, last_error())
    os.set_blocking(fd.value, False)
    with _open_mu:
        _open_fds.add(fd.value)
    return fd.value


def close_descriptor(fd: int) -> None:
    """Close a descriptor from open_descriptor, unless the fork handler has
    (the number may have been reused since). The library closes its end
    when it next writes to it."""
    with _open_mu:
        if fd not in _open_fds:
            return
        _open_fds.discard(fd)
    os.close(fd)


def drain(fd: int) -> bool:
    """Read and discard what the library wrote; return False at end-of-file
    (its manager has closed, and every hold of it has ended) or when the
    socket fails (never expected): the caller polls then, rather than
    being woken by a socket that stays readable."""
    while True:
        try:
            data = os.read(fd, 512)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False


def _close_inherited() -> None:
    # After fork, in the child: a single thread, so no lock is needed (and
    # the parent's may have been held by a thread that did not survive).
    global _open_mu
    _open_mu = threading.Lock()
    for fd in _open_fds:
        try:
            os.close(fd)
        except OSError:
            pass
    _open_fds.clear()


os.register_at_fork(after_in_child=_close_inherited)


def wait(manager: int, ready: Callable[[], bool]) -> None:
    """Return once ready() is true, looking each time a hold of manager
    changes. The calling thread sleeps in poll(2) on a descriptor of its own,
    so a signal's exception (KeyboardInterrupt) ends the wait at once; the
    caller then cancels what it waited for."""
    if ready():
        return
    fd = open_descriptor(manager)
    poller = select.poll()
    if fd is not None:
        poller.register(fd, select.POLLIN)
    try:
        while not ready():
            if fd is None:
                time.sleep(POLL_INTERVAL)
                continue
            poller.poll()
            if not drain(fd):  # the manager has closed: poll the rest
                poller.unregister(fd)
                close_descriptor(fd)
                fd = None
    finally:
        if fd is not None:
            close_descriptor(fd)


class Watched(Protocol):
    """A hold a LoopWatcher looks at: check() reads its state (without
    waiting) and settles what its waiters await."""

    def check(self) -> None: ...


class LoopWatcher:
    """The holds of one manager that tasks of one event loop wait on, and
    the notification descriptor the loop reads for them (loop.add_reader),
    or a timer every POLL_INTERVAL where there is none. It lives while it
    has holds to watch: the last unwatch() removes the reader and closes the
    descriptor. Every method runs on the loop's thread."""

    def __init__(self, manager: int, loop: asyncio.AbstractEventLoop, forget: Callable[[LoopWatcher], None]) -> None:
        self.loop = loop
        self._forget = forget
        self._watched: dict[Watched, None] = {}  # insertion-ordered: looked at in arrival order
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False
        self._pid = os.getpid()
        self.fd = open_descriptor(manager)
        if self.fd is not None:
            try:
                loop.add_reader(self.fd, self._readable)
            except BaseException:
                close_descriptor(self.fd)
                raise

    def __len__(self) -> int:
        return len(self._watched)

    def watch(self, w: Watched) -> None:
        self._watched[w] = None
        if self.fd is None:
            self._schedule()

    def unwatch(self, w: Watched) -> None:
        self._watched.pop(w, None)
        if not self._watched:
            self.close()

    def scan(self) -> None:
        """Look at every hold watched (each check() may unwatch its own)."""
        for w in list(self._watched):
            w.check()

    def _readable(self) -> None:
        if self.fd is not None and not drain(self.fd):
            self._stop_reading()  # end-of-file: the manager has closed
        self.scan()
        if not self._closed and self.fd is None:
            self._schedule()

    def _schedule(self) -> None:
        if self._timer is None and not self._closed:
            self._timer = self.loop.call_later(POLL_INTERVAL, self._tick)

    def _tick(self) -> None:
        self._timer = None
        self.scan()
        if self._watched:
            self._schedule()

    def _stop_reading(self) -> None:
        fd, self.fd = self.fd, None
        if fd is None or os.getpid() != self._pid:
            # In a forked child the fork handler has closed the descriptor,
            # and the loop's epoll instance is the parent's too: removing the
            # reader here would remove the parent's.
            return
        if not self.loop.is_closed():
            self.loop.remove_reader(fd)
        close_descriptor(fd)

    def close(self) -> None:
        """Stop watching: remove the reader, close the descriptor. From the
        loop's thread, or from any thread once the loop is closed."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._stop_reading()
        self._forget(self)


class Watchers:
    """The LoopWatchers of one manager, one per event loop that waits on
    its holds (a manager may serve several loops, one after another as with
    two asyncio.run calls, or at once from several threads)."""

    def __init__(self, manager: Callable[[], int]) -> None:
        self._manager = manager  # the manager's handle, or ClosedError
        self._by_loop: dict[asyncio.AbstractEventLoop, LoopWatcher] = {}
        self._mu = threading.Lock()

    def watch(self, w: Watched) -> LoopWatcher:
        """Start watching w for the running loop, and return its watcher."""
        loop = asyncio.get_running_loop()
        with self._mu:
            watcher = self._by_loop.get(loop)
        if watcher is None:
            self.sweep()
            watcher = LoopWatcher(self._manager(), loop, self._forget)
            with self._mu:
                self._by_loop[loop] = watcher
        watcher.watch(w)
        return watcher

    def _forget(self, watcher: LoopWatcher) -> None:
        with self._mu:
            if self._by_loop.get(watcher.loop) is watcher:
                del self._by_loop[watcher.loop]

    def sweep(self) -> None:
        """Close the watchers of loops that have closed with holds still
        watched (a loop stopped while a task waited): nothing will read their
        descriptors any more."""
        with self._mu:
            dead = [w for loop, w in self._by_loop.items() if loop.is_closed()]
        for w in dead:
            w.close()

    def watched(self) -> int:
        """How many holds are watched, over every loop: a task waiting for
        a key, or in its with-block, counts one (for tests and debugging)."""
        with self._mu:
            return sum(len(w) for w in self._by_loop.values())
