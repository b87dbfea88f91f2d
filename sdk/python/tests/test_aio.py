"""Tests of the asyncio API: AsyncManager, AsyncLock, AsyncHeldLock.

What they hold it to: the event loop keeps ticking while a task waits for a
key, with no thread per wait; a cancelled task's wait ends at once and
leaves the key free and no thread or descriptor behind; waiters get the key
in the order they came (the driver's queue), and a loss is seen within a
refresh period; a manager serves several event loops in turn; errors are
the same exception classes as everywhere.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import statistics
import tempfile
import threading
import time
import unittest
import uuid
from collections.abc import Callable

from support import library_threads, live_handles, open_fds, queued_tickets

import zerotal_lock as zl
from zerotal_lock import _notify

CONFIG: zl.Config = {"driver": "memory", "prefix": "pytest-aio:"}

# Generous bounds for a shared 2-core machine: what they catch is a blocked
# loop (a gap of the whole wait), a wait that ignores cancellation (the
# whole timeout) or one that sees it late (the 0.5 s slices of before: a
# cancelled wait ends in about a millisecond now).
TICK = 0.01
MAX_TICK_GAP = 0.25
CANCEL_BOUND = 0.1


class AsyncBase(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        before = live_handles()
        if before is not None:  # cleanups run last first: this one after every other
            self.addCleanup(lambda: self.assertEqual(live_handles(), before, "handles leaked"))
        self.m = zl.AsyncManager(CONFIG)
        self.addAsyncCleanup(self.m.aclose)
        # Another manager on the same in-process lock table: "someone else".
        self.other = zl.Manager(CONFIG)
        self.addCleanup(self.other.close)
        self.prefix = "%s/%s/" % (self.id(), uuid.uuid4().hex)

    def key(self, name: str) -> str:
        return self.prefix + name

    def hold(self, key: str, ttl: float = 30) -> zl.Lock:
        """Hold key through the other manager."""
        lk = self.other.lock(key, ttl)
        self.assertTrue(lk.acquire())
        self.addCleanup(lk.free)
        return lk

    def assertFree(self, key: str) -> None:
        """Someone else can take key at once."""
        with self.other.lock(key, 5) as lk:
            self.assertTrue(lk.acquire(), "the key is still held")

    async def assertNoThreadsLeft(self) -> None:
        deadline = time.monotonic() + 5
        while library_threads() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self.assertEqual(library_threads(), [], "threads outlived their run")

    async def until(self, condition: Callable[[], bool], what: str, within: float = 5.0) -> None:
        """Let the loop run until condition holds; fail after within seconds."""
        deadline = time.monotonic() + within
        while not condition():
            if time.monotonic() > deadline:
                self.fail("timed out waiting until " + what)
            await asyncio.sleep(0.002)

    def waiting(self, n: int) -> Callable[[], bool]:
        """A condition: n holds of self.m are watched (tasks waiting, or in
        their blocks)."""
        return lambda: self.m._watchers.watched() == n


class Ticker:
    """A task that wakes every TICK seconds and records the longest gap."""

    def __init__(self) -> None:
        self.max_gap = 0.0
        self.ticks = 0
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            self.max_gap = max(self.max_gap, now - last)
            self.ticks += 1
            last = now

    def stop(self) -> None:
        self._task.cancel()


class BlockLockTest(AsyncBase):
    async def test_the_loop_keeps_ticking_while_a_task_waits_a_second(self) -> None:
        key = self.key("wait")
        holder = self.hold(key)
        ticker = Ticker()
        loop = asyncio.get_running_loop()
        loop.call_later(1.0, lambda: threading.Thread(target=holder.release).start())
        threads = threading.active_count()
        seen: list[int] = []
        loop.call_later(0.5, lambda: seen.append(threading.active_count()))
        start = time.monotonic()
        async with self.m.block_lock(key, 5, timeout=10) as held:
            waited = time.monotonic() - start
            self.assertIsInstance(held, zl.AsyncHeldLock)
            self.assertEqual(held.key, key)
            self.assertGreater(held.token, 0)
            self.assertFalse(held.lost)
        ticker.stop()
        self.assertGreaterEqual(waited, 0.9)
        self.assertLess(ticker.max_gap, MAX_TICK_GAP, "the event loop was blocked")
        self.assertGreater(ticker.ticks, 20)
        self.assertEqual(seen, [threads], "a thread was started for the wait")
        self.assertFree(key)
        await self.assertNoThreadsLeft()

    async def test_a_task_cancelled_while_it_waits_leaves_no_lock_and_no_thread(self) -> None:
        key = self.key("cancel-wait")
        holder = self.hold(key)
        baseline = threading.active_count()
        entered = []

        async def waiter() -> None:
            async with self.m.block_lock(key, 5, timeout=60):
                entered.append(True)

        latencies = []
        for _ in range(5):
            task = asyncio.create_task(waiter())
            await self.until(self.waiting(1), "the task waits")
            await asyncio.sleep(0.05)  # well into its wait
            self.assertEqual(library_threads(), [])
            self.assertEqual(threading.active_count(), baseline)
            start = time.monotonic()
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            latencies.append(time.monotonic() - start)
            self.assertEqual(self.m._watchers.watched(), 0)
        self.assertLess(statistics.median(latencies), CANCEL_BOUND, latencies)
        self.assertEqual(entered, [])
        holder.release()
        self.assertFree(key)  # the cancelled waits hold nothing
        self.assertEqual(threading.active_count(), baseline)

    async def test_waiters_get_the_key_in_the_order_they_came(self) -> None:
        # The file driver queues each waiter as a ticket file in the key's
        # room (see queued_tickets): each waiter starts once the one before
        # it has queued, so the arrival order is known.
        with tempfile.TemporaryDirectory() as d:
            config = {"driver": "file", "prefix": "pytest:", "file": {"dir": d}}
            m = zl.AsyncManager(config)
            other = zl.Manager(config)
            try:
                await self.fifo(m, other, lambda: queued_tickets(d))
            finally:
                await m.aclose()
                other.close()

    async def fifo(self, m: zl.AsyncManager, other: zl.Manager, queued: Callable[[], int]) -> None:
        key = self.key("fifo")
        holder = other.lock(key, 30)
        self.assertTrue(holder.acquire())
        order: list[int] = []

        async def waiter(i: int) -> None:
            async with m.block_lock(key, 5, timeout=30):
                order.append(i)
                await asyncio.sleep(0.005)

        tasks = []
        for i in range(5):
            tasks.append(asyncio.create_task(waiter(i)))
            await self.until(lambda: queued() == i + 1, "waiter %d queues" % i)
        await asyncio.to_thread(holder.release)
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        holder.free()
        self.assertEqual(order, [0, 1, 2, 3, 4], "the key was not handed over in arrival order")

    async def test_a_loss_is_seen_within_a_refresh_period(self) -> None:
        key = self.key("stolen")
        with self.assertRaises(zl.LostError) as cm:
            async with self.m.block_lock(key, 5, timeout=1, refresh=True, refresh_every=0.05) as held:
                self.assertFalse(held.lost)
                waiter = asyncio.create_task(held.wait_lost())
                await asyncio.sleep(0.01)
                self.assertFalse(waiter.done())
                with self.other.lock(key, 5) as admin:
                    admin.force_release()
                start = time.monotonic()
                await asyncio.wait_for(waiter, 5)
                seen = time.monotonic() - start
                self.assertTrue(held.lost)
        self.assertIn("lost", str(cm.exception))
        self.assertLess(seen, 0.5, "the loss was seen %.3fs after the force release (refresh every 0.05s)" % seen)
        self.assertFree(key)

    async def test_a_task_cancelled_in_its_block_releases_at_once(self) -> None:
        key = self.key("cancel-body")
        inside = asyncio.Event()

        async def worker() -> None:
            async with self.m.block_lock(key, 30, timeout=5, refresh=True):
                inside.set()
                await asyncio.sleep(3600)

        task = asyncio.create_task(worker())
        await inside.wait()
        with self.other.lock(key, 5) as lk:
            self.assertFalse(lk.acquire(), "the block did not hold the key")
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        self.assertFree(key)
        await self.assertNoThreadsLeft()

    async def test_aclose_ends_waits_and_blocks(self) -> None:
        m = zl.AsyncManager(CONFIG)
        self.hold(self.key("closing"))
        lost: list[bool] = []
        holding = asyncio.Event()

        async def waiter() -> None:
            async with m.block_lock(self.key("closing"), 5, timeout=60):
                self.fail("ran under a held key")

        async def holder() -> None:
            async with m.block_lock(self.key("free"), 5, timeout=60) as held:
                holding.set()
                await held.wait_lost()
                lost.append(held.lost)

        tasks = [asyncio.create_task(waiter()), asyncio.create_task(holder())]
        # A hold is watched from the start of its wait: the holder must be
        # in its block, not still waiting for the free key's grant, or
        # aclose would refuse it rather than end its work.
        await asyncio.wait_for(holding.wait(), 10)
        await self.until(lambda: m._watchers.watched() == 2, "the waiter waits and the holder holds")
        await m.aclose()
        results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
        self.assertIsInstance(results[0], zl.ClosedError)
        self.assertIsInstance(results[1], zl.ClosedError)  # the work was cut short, and told so on exit
        self.assertIn("closed while", str(results[1]))
        self.assertEqual(lost, [True])
        self.assertEqual(m._watchers.watched(), 0)
        self.assertFree(self.key("free"))

    async def test_the_timeout_raises_not_acquired_saying_how_long(self) -> None:
        key = self.key("timeout")
        self.hold(key)
        start = time.monotonic()
        with self.assertRaises(zl.NotAcquiredError) as cm:
            async with self.m.block_lock(key, 5, timeout=0.6, retry_delay=0.01):
                self.fail("ran under a held key")
        self.assertGreaterEqual(time.monotonic() - start, 0.55)
        # The engine's own message, as from Go and the sync API.
        self.assertRegex(str(cm.exception), r"not acquired after waiting ([6-9]\d\d(\.\d+)?ms|\d+(\.\d+)?s)$")
        self.assertEqual(cm.exception.http_status, 409)
        with self.assertRaises(zl.NotAcquiredError):
            async with self.m.block_lock(key, 5, timeout=0):  # one attempt
                self.fail("ran under a held key")

    async def test_tasks_exclude_each_other(self) -> None:
        key = self.key("contended")
        inside, overlaps, entered = [0], [0], [0]

        async def worker() -> None:
            for _ in range(5):
                async with self.m.block_lock(key, 10, timeout=30, retry_delay=0.001):
                    inside[0] += 1
                    overlaps[0] += inside[0] > 1
                    entered[0] += 1
                    await asyncio.sleep(0.001)
                    inside[0] -= 1

        await asyncio.gather(*(worker() for _ in range(6)))
        self.assertEqual(overlaps[0], 0)
        self.assertEqual(entered[0], 30)


class TryTest(AsyncBase):
    async def test_try_run_awaits_an_async_fn_under_the_lock(self) -> None:
        key = self.key("run")

        async def work(held: zl.AsyncHeldLock) -> tuple[str, int]:
            await asyncio.sleep(0.01)
            with self.other.lock(key, 5) as lk:
                self.assertFalse(lk.acquire())
            return held.key, held.token

        got_key, token = await self.m.try_run(key, 5, work)
        self.assertEqual(got_key, key)
        self.assertGreater(token, 0)
        self.assertFree(key)

    async def test_try_run_when_held(self) -> None:
        key = self.key("held")
        self.hold(key)
        ran = []

        async def work(held: zl.AsyncHeldLock) -> None:
            ran.append(held)

        with self.assertRaises(zl.NotAcquiredError):
            await self.m.try_run(key, 5, work)
        with self.assertRaises(zl.NotAcquiredError):
            async with self.m.try_lock(key, 5):
                self.fail("ran under a held key")
        self.assertEqual(ran, [])

    async def test_an_exception_propagates_after_the_release(self) -> None:
        key = self.key("boom")

        async def boom(held: zl.AsyncHeldLock) -> None:
            raise KeyError("boom")

        with self.assertRaises(KeyError):
            await self.m.try_run(key, 5, boom)
        self.assertFree(key)

    async def test_a_blocking_fn_is_refused_and_the_key_released(self) -> None:
        key = self.key("sync-fn")
        with self.assertRaises(TypeError) as cm:
            await self.m.try_run(key, 5, lambda held: 42)  # type: ignore[arg-type, return-value]
        self.assertIn("async function", str(cm.exception))
        self.assertFree(key)

    async def test_outliving_the_ttl_is_lost_and_wait_lost_says_so(self) -> None:
        async def outlive(held: zl.AsyncHeldLock) -> bool:
            await asyncio.wait_for(held.wait_lost(), 5)
            return held.lost

        with self.assertRaises(zl.LostError):
            await self.m.try_run(self.key("expire"), 0.05, outlive)

    async def test_wait_lost_returns_when_the_run_ends(self) -> None:
        async with self.m.try_lock(self.key("ends"), 5) as held:
            waiter = asyncio.create_task(held.wait_lost())
            await asyncio.sleep(0.01)
            self.assertFalse(waiter.done())
        await asyncio.wait_for(waiter, 5)

    async def test_refresh_keeps_a_long_run(self) -> None:
        async def long_work(held: zl.AsyncHeldLock) -> bool:
            await asyncio.sleep(2.2)  # over twice the TTL; a refresh may stall ~0.6 s
            self.assertTrue(await held.refresh())
            return held.lost

        self.assertFalse(await self.m.block_run(self.key("refresh"), 1.0, long_work, refresh=True))

    async def test_errors_are_the_same_classes(self) -> None:
        with self.assertRaises(zl.InvalidArgumentError) as cm:
            async with self.m.try_lock(self.key("ttl"), 0):
                pass
        self.assertIn("ttl", str(cm.exception))
        with self.assertRaises(zl.InvalidArgumentError):
            await self.m.block_run(self.key("t"), 5, asyncio.sleep, timeout=float("nan"))
        m = await zl.AsyncManager.open(CONFIG)
        await m.aclose()
        await m.aclose()  # idempotent
        self.assertTrue(m.closed)
        with self.assertRaises(zl.ClosedError):
            async with m.try_lock(self.key("closed"), 5):
                pass


class AsyncLockTest(AsyncBase):
    async def test_acquire_release_and_accessors(self) -> None:
        key = self.key("handle")
        async with self.m.lock(key, 5) as a, self.m.lock(key, 5) as b:
            self.assertEqual(a.key, key)
            self.assertIsNone(a.expires_at)
            self.assertTrue(await a.acquire())
            self.assertTrue(a.is_acquired)
            self.assertRegex(a.owner, "^[0-9a-f]{32}$")
            self.assertFalse(await b.acquire())
            with self.assertRaises(zl.NotAcquiredError):
                await b.block(timeout=0.05, retry_delay=0.005)
            self.assertTrue(await a.refresh())
            first = a.token
            await a.release()
            await b.block(timeout=1)
            self.assertGreater(b.token, first)
            await a.force_release()
            self.assertFalse(await b.refresh())
        with self.assertRaises(zl.ClosedError):
            await a.acquire()  # freed

    async def test_a_cancelled_block_ends_at_once_and_holds_nothing(self) -> None:
        key = self.key("handle-cancel")
        holder = self.hold(key)
        async with self.m.lock(key, 5) as lk:
            task = asyncio.create_task(lk.block(timeout=60))
            while not library_threads():
                await asyncio.sleep(0.005)
            await asyncio.sleep(0.05)
            start = time.monotonic()
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            self.assertLess(time.monotonic() - start, 1.0)
            self.assertFalse(lk.is_acquired)
            holder.release()
            self.assertFree(key)
        await self.assertNoThreadsLeft()

    async def test_block_wakes_when_the_key_is_released(self) -> None:
        key = self.key("handle-wake")
        holder = self.hold(key)
        ticker = Ticker()
        asyncio.get_running_loop().call_later(0.3, lambda: threading.Thread(target=holder.release).start())
        async with self.m.lock(key, 5) as lk:
            await lk.block(timeout=10)
            self.assertTrue(lk.is_acquired)
        ticker.stop()
        self.assertLess(ticker.max_gap, MAX_TICK_GAP)


class DescriptorTest(unittest.TestCase):
    """The notification descriptor: one per manager and event loop while
    tasks wait, none left after, across loops and forks."""

    def setUp(self) -> None:
        zl.version()  # the library and its runtime's own descriptors first
        self.before = open_fds()
        self.m = zl.AsyncManager(CONFIG)
        self.other = zl.Manager(CONFIG)
        self.addCleanup(self.other.close)
        self.key = "%s/%s" % (self.id(), uuid.uuid4().hex)

    def assertNoDescriptorsLeft(self) -> None:
        self.assertEqual(open_fds() - self.before, set(), "descriptors outlived the manager")

    async def cancelled_waits(self, n: int) -> int:
        """n tasks that wait for a held key and are cancelled, one after the
        other; return the most descriptors open at once that were not open
        before (in the running loop)."""
        base = open_fds()
        most = 0
        with self.other.lock(self.key, 30) as holder:
            self.assertTrue(holder.acquire())
            for _ in range(n):
                task = asyncio.create_task(self.wait())
                while self.m._watchers.watched() == 0:
                    await asyncio.sleep(0.002)
                most = max(most, len(open_fds() - base))
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                self.assertEqual(self.m._watchers.watched(), 0)
        return most

    async def wait(self) -> None:
        async with self.m.block_lock(self.key, 5, timeout=60):
            self.fail("ran under a held key")

    def test_none_left_after_waits_on_two_event_loops_in_turn(self) -> None:
        # While a task waits: one socket pair (this end and the library's),
        # and the library's end of the last wait's pair, which it closes at
        # its next write (it learns then that this end has gone).
        self.assertLessEqual(asyncio.run(self.cancelled_waits(20)), 3)
        self.assertLessEqual(asyncio.run(self.cancelled_waits(3)), 3)  # the same manager on a new loop

        async def take() -> int:
            async with self.m.block_lock(self.key, 5, timeout=5) as held:
                return held.token

        self.assertGreater(asyncio.run(take()), 0)
        asyncio.run(self.m.aclose())
        self.assertNoDescriptorsLeft()

    def test_a_loop_closed_while_a_task_waits_leaves_nothing_after_aclose(self) -> None:
        with self.other.lock(self.key, 30) as holder:
            self.assertTrue(holder.acquire())
            loop = asyncio.new_event_loop()
            loop.set_exception_handler(lambda loop, context: None)  # "Task was destroyed but it is pending"
            task = loop.create_task(self.wait())

            async def until_waiting() -> None:
                while self.m._watchers.watched() == 0:
                    await asyncio.sleep(0.002)

            loop.run_until_complete(until_waiting())
            loop.close()  # abandoned, its task still waiting
            del task
            asyncio.run(self.m.aclose())  # ends the hold, closes the abandoned loop's descriptor
        self.assertEqual(self.m._watchers.watched(), 0)
        self.assertNoDescriptorsLeft()

    def test_a_forked_child_closes_the_descriptors_it_inherits(self) -> None:
        async def fork_while_waiting() -> tuple[str, str]:
            with self.other.lock(self.key, 30) as holder:
                self.assertTrue(holder.acquire())
                task = asyncio.create_task(self.wait())
                while self.m._watchers.watched() == 0:
                    await asyncio.sleep(0.002)
                fds = sorted(_notify._open_fds)
                self.assertEqual(len(fds), 1)
                inode = os.fstat(fds[0]).st_ino
                ctx = multiprocessing.get_context("fork")
                q = ctx.Queue()
                p = ctx.Process(target=_report_descriptor, args=(q, fds[0], inode))
                p.start()
                got = await asyncio.to_thread(q.get, timeout=30)
                await asyncio.to_thread(p.join, 30)
                parent = "parent: %s" % _open(fds[0], inode)
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                return got, parent

        child, parent = asyncio.run(fork_while_waiting())
        self.assertEqual(child, "closed")
        self.assertEqual(parent, "parent: open")  # the child closed its copy only
        asyncio.run(self.m.aclose())
        self.assertNoDescriptorsLeft()


def _open(fd: int, inode: int) -> str:
    try:
        return "open" if os.fstat(fd).st_ino == inode else "closed"
    except OSError:
        return "closed"


def _report_descriptor(q: multiprocessing.Queue[str], fd: int, inode: int) -> None:
    q.put(_open(fd, inode))


class PollingTest(AsyncBase):
    """Where the library has no notification descriptors (off Linux), holds
    are looked at every POLL_INTERVAL: the same behaviour, seen that much
    later."""

    async def asyncSetUp(self) -> None:
        await super().asyncSetUp()
        real = _notify.open_descriptor
        _notify.open_descriptor = lambda manager: None  # type: ignore[assignment]
        self.addCleanup(setattr, _notify, "open_descriptor", real)

    async def test_waits_cancellation_and_loss_by_polling(self) -> None:
        key = self.key("poll")
        holder = self.hold(key)
        before = open_fds()
        task = asyncio.create_task(self.wait(key))
        await self.until(self.waiting(1), "the task waits")
        await asyncio.sleep(0.05)
        self.assertEqual(open_fds() - before, set())
        start = time.monotonic()
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        # One sample on a busy machine: the bound is loose here; the median
        # of several is held to CANCEL_BOUND elsewhere.
        self.assertLess(time.monotonic() - start, 1.0)
        asyncio.get_running_loop().call_later(0.2, lambda: threading.Thread(target=holder.release).start())
        with self.assertRaises(zl.LostError):
            async with self.m.block_lock(key, 5, timeout=5, refresh=True, refresh_every=0.05) as held:
                with self.other.lock(key, 5) as admin:
                    admin.force_release()
                await asyncio.wait_for(held.wait_lost(), 2)
        self.assertFree(key)

    async def wait(self, key: str) -> None:
        async with self.m.block_lock(key, 5, timeout=60):
            self.fail("ran under a held key")


if __name__ == "__main__":
    unittest.main()
