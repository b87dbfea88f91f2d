"""asyncio: AsyncManager, AsyncLock and AsyncHeldLock.

Nothing here blocks the event loop, and the with-block styles (try_lock,
block_lock, try_run, block_run) use no thread at all: each is a zl_hold (see
_hold), whose wait and held lock live in the library, and the manager's
notification descriptor, read by the loop (see _notify), says when to look
at it. A wait keeps its place in the driver's queue from start to end, its
timeout is the engine's, and a cancelled task's wait ends at once
(zl_cancel). Calls that talk to the backend (acquire, release, refresh,
close) run on the loop's default executor; AsyncLock.block, a zl_block on
a handle, waits on a thread of its own. The accessors (key, token, lost...)
run on the loop: they never wait for the backend.

Cancellation ends waits: a task cancelled while it waits for a key, or
while its body runs, finishes cancelling once nothing it started holds the
key any more.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from . import _args
from ._abi_gen import Code, Config, InvalidHandleError, zl_options
from ._errors import error_for, last_error
from ._hold import Hold, annotate, try_options
from ._library import library
from ._lock import LentLock, Lock
from ._manager import Manager
from ._notify import LoopWatcher, Watchers

T = TypeVar("T")


class AsyncHeldLock(LentLock):
    """The lock an async with-block or run holds (AsyncManager.try_lock,
    block_lock, try_run, block_run), valid while the block lasts.

    The library holds it (and with refresh=True, refreshes it) in the
    background. Its lost property turns true when the work should stop: the
    lock was lost, the manager is closing, or cancel() was called (which
    lets the lock go at once); wait_lost() waits for that.
    """

    def __init__(self, handle: int, hold: _AsyncHold) -> None:
        super().__init__(handle)
        self._hold = hold

    async def refresh(self) -> bool:
        """Extend the lock by its TTL if still held; return whether it was."""
        handle = self._live()
        v = ctypes.c_int()

        def call() -> int:
            code = library().zl_refresh(handle, ctypes.byref(v))
            if code:
                raise error_for(code, last_error())
            return v.value

        return bool(await asyncio.to_thread(call))

    async def wait_lost(self) -> None:
        """Return once lost is true, or the block has ended: race it against
        the work to stop the work when the lock goes, for example with
        asyncio.wait(..., return_when=FIRST_COMPLETED). The library's
        notification wakes it: it does not poll."""
        await asyncio.shield(self._hold.lost)


class AsyncLock:
    """A handle on one key, for explicit acquire and release from asyncio
    (AsyncManager.lock): a Lock whose calls to the backend run on threads.

    Free it with aclose(), or use it in an async with statement, which frees
    it on exit; freeing releases the lock if the handle holds it. A task
    cancelled in acquire() or block() leaves the key free: a grant that
    arrives as the task is cancelled is released before the cancellation
    goes on.
    """

    def __init__(self, lock: Lock) -> None:
        self._lock = lock

    @property
    def sync(self) -> Lock:
        """The Lock this handle wraps, for calls from other threads."""
        return self._lock

    @property
    def key(self) -> str:
        """The lock's key, without the manager's prefix."""
        return self._lock.key

    @property
    def owner(self) -> str:
        """The owner token of the current or last acquisition: 32 hex digits, or ""."""
        return self._lock.owner

    @property
    def token(self) -> int:
        """The fencing token of the current acquisition: it only increases per key."""
        return self._lock.token

    @property
    def is_acquired(self) -> bool:
        """Whether the lock is held, as far as this client can tell."""
        return self._lock.is_acquired

    @property
    def expires_at(self) -> float | None:
        """The client-side estimate of the expiry, in seconds since the epoch, or None."""
        return self._lock.expires_at

    async def acquire(self) -> bool:
        """Try once to take the lock; return whether it was taken. If this
        handle already holds it, reset its TTL."""
        held_before = self._lock.is_acquired
        fut = asyncio.ensure_future(asyncio.to_thread(self._lock.acquire))
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            if not held_before:
                await _finish(self._give_back(fut))
            raise

    async def _give_back(self, fut: asyncio.Future[bool]) -> None:
        """Release the lock if the acquire a cancelled task left running
        took it."""
        try:
            got = await fut
        except Exception:
            return  # it failed, and nobody is left to tell
        if got:
            await asyncio.to_thread(self._lock.release)

    async def block(self, *, timeout: _args.Seconds | None = None, retry_delay: _args.Seconds | None = None) -> None:
        """Wait for the lock up to timeout seconds (default: the TTL; 0: one
        attempt). Raise NotAcquiredError when the timeout passes first. The
        wait (one zl_block, so it keeps its place in the driver's queue) runs
        on a thread of its own; when the task is cancelled, zl_cancel ends it
        at once."""
        handle = self._lock._live()
        timeout_ms, retry_ms = _args.ms(timeout, "timeout"), _args.ms(retry_delay, "retry_delay")
        held_before = self._lock.is_acquired  # then a cancelled block keeps it
        loop = asyncio.get_running_loop()
        done: asyncio.Future[tuple[int, str]] = loop.create_future()

        def wait() -> None:
            code = library().zl_block(handle, timeout_ms, retry_ms)
            _resolve(loop, done, (code, last_error() if code else ""))

        threading.Thread(target=wait, name="zerotal_lock async block", daemon=True).start()
        try:
            code, detail = await asyncio.shield(done)
        except asyncio.CancelledError:
            await _finish(self._end_block(handle, done, release=not held_before))
            raise
        if code:
            raise error_for(code, detail)

    async def _end_block(self, handle: int, done: asyncio.Future[tuple[int, str]], release: bool) -> None:
        """End the wait of a cancelled block() and, with release, give back a
        key it was granted as it ended."""
        while not done.done():
            # zl_cancel ends the calls in progress only: repeat it until the
            # wait has seen it.
            library().zl_cancel(handle)
            await asyncio.wait({done}, timeout=0.01)
        code, _ = done.result()
        if code == Code.OK and release:
            await asyncio.to_thread(self._lock.release)

    async def release(self) -> None:
        """Release the lock if this handle holds it; never another owner's."""
        await asyncio.to_thread(self._lock.release)

    async def force_release(self) -> None:
        """Free the key whoever holds it: for administration and recovery."""
        await asyncio.to_thread(self._lock.force_release)

    async def refresh(self) -> bool:
        """Extend the lock by its TTL if still held; return whether it was."""
        return await asyncio.to_thread(self._lock.refresh)

    def cancel(self) -> None:
        """Interrupt a block() in progress in another task or thread."""
        self._lock.cancel()

    async def aclose(self) -> None:
        """Release the lock if held and end the handle. Idempotent."""
        await _finish(asyncio.to_thread(self._lock.free))

    async def __aenter__(self) -> AsyncLock:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class AsyncManager:
    """The asyncio face of a Manager: the same locks, drivers and errors, with
    coroutines that never block the event loop and waits that end when their
    task is cancelled.

        async with zerotal_lock.AsyncManager({"url": "redis://locks:6379/0"}) as m:
            async with m.block_lock("report", ttl=60, timeout=5, refresh=True) as held:
                await build_report(held.token)

    config is what Manager takes (a dict, a JSON string, or None for the
    environment), or a Manager to wrap; the AsyncManager owns it then, and
    aclose() closes it. The constructor opens the manager on the calling
    thread, which may connect to the backend: inside a running event loop,
    await AsyncManager.open(config) does it on a thread.
    """

    def __init__(self, config: Manager | Config | str | None = None) -> None:
        self._manager = config if isinstance(config, Manager) else Manager(config)
        self._watchers = Watchers(self._manager._live)

    @classmethod
    async def open(cls, config: Config | str | None = None) -> AsyncManager:
        """Open a manager on a thread: AsyncManager(config) without blocking
        the event loop."""
        return cls(await asyncio.to_thread(Manager, config))

    @property
    def sync(self) -> Manager:
        """The Manager this one wraps, for calls from other threads."""
        return self._manager

    @property
    def closed(self) -> bool:
        """Whether aclose() has been called."""
        return self._manager.closed

    async def aclose(self) -> None:
        """Close the manager (on a thread): stop refreshers, make running work
        see lost, release what it holds and close the driver. Idempotent.
        Tasks waiting for a key get ClosedError."""
        await _finish(asyncio.to_thread(self._manager.close))
        self._watchers.sweep()

    async def __aenter__(self) -> AsyncManager:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def lock(self, key: str, ttl: _args.Seconds) -> AsyncLock:
        """Return an AsyncLock on key with a TTL in seconds; it is not
        acquired."""
        return AsyncLock(self._manager.lock(key, ttl))

    def try_lock(
        self,
        key: str,
        ttl: _args.Seconds,
        *,
        refresh: bool = False,
        refresh_every: _args.Seconds | None = None,
    ) -> contextlib.AbstractAsyncContextManager[AsyncHeldLock]:
        """An async context manager holding key for its block if key is free:

            async with m.try_lock("job", ttl=30, refresh=True) as held:
                ...

        Raise NotAcquiredError if the key is held. The library holds (and
        with refresh, refreshes) the lock in the background while the block
        runs on the event loop. On exit the lock is released, and LostError
        is raised if it was lost meanwhile.
        """
        return self._held(key, ttl, try_options(refresh, refresh_every))

    def block_lock(
        self,
        key: str,
        ttl: _args.Seconds,
        *,
        timeout: _args.Seconds | None = None,
        retry_delay: _args.Seconds | None = None,
        refresh: bool = False,
        refresh_every: _args.Seconds | None = None,
    ) -> contextlib.AbstractAsyncContextManager[AsyncHeldLock]:
        """try_lock that waits for key up to timeout seconds (default: the
        TTL; 0: one attempt). Raise NotAcquiredError when the timeout passes
        first. The wait keeps its place in the driver's queue (memory, Redis,
        PostgreSQL and etcd hand a released key to their longest waiter), and
        a task cancelled while it waits stops waiting at once."""
        return self._held(key, ttl, _args.options(timeout, retry_delay, refresh, refresh_every))

    def _held(self, key: str, ttl: _args.Seconds, opts: zl_options) -> contextlib.AbstractAsyncContextManager[AsyncHeldLock]:
        # Arguments are checked now; the hold starts when the block is entered.
        self._manager._live()
        _args.key(key)
        _args.ttl(ttl)
        return _held(lambda: _AsyncHold(self._watchers, self._manager._live(), key, ttl, opts))

    async def try_run(
        self,
        key: str,
        ttl: _args.Seconds,
        fn: Callable[[AsyncHeldLock], Awaitable[T]],
        *,
        refresh: bool = False,
        refresh_every: _args.Seconds | None = None,
    ) -> T:
        """Await fn(held) under key if it is free, and return its result.

        fn is an async function (or returns an awaitable). Raise
        NotAcquiredError without running fn if the key is held, and LostError
        if the lock was lost while fn ran. An exception from fn propagates,
        after the release.
        """
        async with self.try_lock(key, ttl, refresh=refresh, refresh_every=refresh_every) as held:
            return await _awaited(fn, held)

    async def block_run(
        self,
        key: str,
        ttl: _args.Seconds,
        fn: Callable[[AsyncHeldLock], Awaitable[T]],
        *,
        timeout: _args.Seconds | None = None,
        retry_delay: _args.Seconds | None = None,
        refresh: bool = False,
        refresh_every: _args.Seconds | None = None,
    ) -> T:
        """Wait for key up to timeout seconds (default: the TTL), then await
        fn(held) under it as try_run does."""
        async with self.block_lock(
            key, ttl, timeout=timeout, retry_delay=retry_delay, refresh=refresh, refresh_every=refresh_every
        ) as held:
            return await _awaited(fn, held)


async def _awaited(fn: Callable[[AsyncHeldLock], Awaitable[T]], held: AsyncHeldLock) -> T:
    result = fn(held)
    if not inspect.isawaitable(result):
        raise TypeError(
            "fn returned %s, not an awaitable: pass an async function (run a blocking one "
            "with Manager.try_run on a thread: await asyncio.to_thread(m.sync.try_run, ...))"
            % type(result).__name__
        )
    value: T = await result
    return value


@contextlib.asynccontextmanager
async def _held(start: Callable[[], _AsyncHold]) -> AsyncIterator[AsyncHeldLock]:
    hold = start()
    held = await hold.enter()
    try:
        yield held
    except BaseException as e:
        annotate(e, await hold.end())
        raise
    code, detail = await hold.end()
    if code:
        raise error_for(code, detail)


class _AsyncHold:
    """One zl_hold awaited on an event loop. Its manager's LoopWatcher calls
    check() after every change of a hold, which settles the futures the
    tasks await: granted (held, or ended first), lost, ended. Nothing waits
    on a thread."""

    def __init__(self, watchers: Watchers, manager: int, key: str, ttl: _args.Seconds, opts: zl_options) -> None:
        loop = asyncio.get_running_loop()
        self.granted: asyncio.Future[None] = loop.create_future()
        self.lost: asyncio.Future[None] = loop.create_future()
        self.ended: asyncio.Future[None] = loop.create_future()
        self._hold = Hold(manager, key, ttl, opts)
        try:
            self._watcher: LoopWatcher = watchers.watch(self)
        except BaseException:
            self._hold.end()  # cannot be watched: end it here (it has just begun)
            raise
        self.check()

    def check(self) -> None:
        """Look at the hold (every call returns at once) and settle what it
        has reached."""
        if self.ended.done():
            return
        try:
            ended = self._hold.ended()
            if not self.granted.done() and (ended or self._hold.granted()):
                self.granted.set_result(None)
            if self.granted.done() and not self.lost.done() and (ended or self._hold.lost()):
                self.lost.set_result(None)
        except Exception:
            # Unreadable (never expected): stop watching, and make sure the
            # hold ends, so that zl_free says why without a long wait.
            ended = True
            with contextlib.suppress(Exception):
                self._hold.cancel()
        if ended:
            for fut in (self.granted, self.lost, self.ended):
                if not fut.done():
                    fut.set_result(None)
            self._watcher.unwatch(self)

    async def enter(self) -> AsyncHeldLock:
        """Wait for the grant. A cancelled task stops the wait (zl_cancel)
        and finishes cancelling once the hold has ended, so that a key
        granted at that moment is released first."""
        try:
            await asyncio.shield(self.granted)
        except asyncio.CancelledError:
            await self.end()
            raise
        if not self._hold.was_granted:
            await self.end()  # it has ended: returns at once
            raise self._hold.refusal()
        return AsyncHeldLock(self._hold.handle, self)

    async def end(self) -> tuple[int, str]:
        """Let the hold go and return its outcome (zl_free's code and
        detail), even if the task is cancelled meanwhile (the cancellation is
        raised after)."""
        return await _finish(self._end())

    async def _end(self) -> tuple[int, str]:
        if not self.ended.done():
            self._hold.cancel()
            await asyncio.wait({self.ended})
        return self._hold.free()


def _resolve(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[T], value: T) -> bool:
    """Set fut's result from another thread, unless it is settled already;
    return false if its loop has closed (then nobody waits for it any
    more)."""

    def settle() -> None:
        if not fut.done():
            fut.set_result(value)

    try:
        loop.call_soon_threadsafe(settle)
    except RuntimeError:
        return False  # the loop is closed
    return True


async def _finish(work: Awaitable[T]) -> T:
    """Await work (a future of a call on another thread, or a coroutine,
    which runs as a task of its own) to the end, even if this task is
    cancelled meanwhile, and return its result; a cancellation is raised
    once the work is done. Cleanup that must not be cut short runs so."""
    fut = asyncio.ensure_future(work)
    cancelled = False
    while not fut.done():
        try:
            await asyncio.wait({fut})
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return fut.result()
