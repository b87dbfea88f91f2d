"""bench_waits.py: what a wait costs, on the memory driver (not a test: run
it by hand).

    make cshared && cd sdk/python && python3 tests/bench_waits.py

It prints, as median and 90th percentile over its rounds:
- cancel: from task.cancel() to the end of `await task`, for a task waiting
  in AsyncManager.block_lock on a held key;
- the round trip of an uncontended with-block (enter and exit) in
  AsyncManager.block_lock and try_lock, and Manager.block_lock and try_lock;
- hand-off: from the holder's release to the waiting task's entry.

To compare with another version of the package, put it first on PYTHONPATH.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

import zerotal_lock as zl

CONFIG: zl.Config = {"driver": "memory", "prefix": "bench-waits:"}


def report(name: str, samples: list[float]) -> None:
    samples = sorted(samples)
    p90 = samples[int(len(samples) * 0.9)]
    print("%-28s median %9.1f µs   p90 %9.1f µs   (n=%d)" % (name, statistics.median(samples) * 1e6, p90 * 1e6, len(samples)))


async def timed(n: int, fn: Callable[[], Awaitable[None]]) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - start)
    return out


async def main() -> None:
    m = zl.AsyncManager(CONFIG)
    other = zl.Manager(CONFIG)
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200

    async def wait() -> None:
        async with m.block_lock("held", 5, timeout=60):
            raise AssertionError("ran under a held key")

    holder = other.lock("held", 60)
    holder.acquire()
    cancels = []
    for _ in range(max(10, rounds // 10)):  # the old slices make each up to 0.5 s
        task = asyncio.create_task(wait())
        await asyncio.sleep(0.02)
        start = time.perf_counter()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        cancels.append(time.perf_counter() - start)
    holder.free()
    report("async cancel of a wait", cancels)

    async def async_block() -> None:
        async with m.block_lock("free", 5, timeout=5):
            pass

    async def async_try() -> None:
        async with m.try_lock("free", 5):
            pass

    report("async block_lock enter+exit", await timed(rounds, async_block))
    report("async try_lock enter+exit", await timed(rounds, async_try))

    def sync_rounds(ctx: Callable[[], object]) -> list[float]:
        out = []
        for _ in range(rounds):
            start = time.perf_counter()
            with ctx():  # type: ignore[attr-defined]
                pass
            out.append(time.perf_counter() - start)
        return out

    report("sync block_lock enter+exit", sync_rounds(lambda: m.sync.block_lock("free", 5, timeout=5)))
    report("sync try_lock enter+exit", sync_rounds(lambda: m.sync.try_lock("free", 5)))

    handoffs = []
    for _ in range(max(10, rounds // 4)):
        h = other.lock("handoff", 60)
        h.acquire()
        entered = asyncio.get_running_loop().create_future()

        async def waiter() -> None:
            async with m.block_lock("handoff", 5, timeout=10):
                entered.set_result(time.perf_counter())

        task = asyncio.create_task(waiter())
        await asyncio.sleep(0.005)
        start = time.perf_counter()
        await asyncio.to_thread(h.free)
        handoffs.append(await entered - start)
        await task
    report("async hand-off", handoffs)
    other.close()
    await m.aclose()


if __name__ == "__main__":
    print("zerotal_lock from", zl.__file__)
    asyncio.run(main())
