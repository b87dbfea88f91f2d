"""async_example.py: take locks from asyncio with zerotal_lock.AsyncManager.

Nothing blocks the event loop, and no thread waits: the library waits for
each key in the driver's queue and holds and refreshes each lock in the
background while your coroutine runs, and a task cancelled while it waits
for a key stops waiting at once.

    python3 async_example.py '{"url": "sqlite:///tmp/locks.db"}'
"""

import asyncio
import json
import sys

import zerotal_lock


async def build_report(held: zerotal_lock.AsyncHeldLock) -> str:
    await asyncio.sleep(0.05)  # the work: the event loop is free meanwhile
    if held.lost:
        raise RuntimeError("lost the lock: stop")
    return "built under fencing token %d" % held.token


async def worker(m: zerotal_lock.AsyncManager, name: str, order: list[str]) -> None:
    # Tasks take turns: each waits up to 5 seconds for the key.
    async with m.block_lock("example:ledger", ttl=10, timeout=5):
        order.append(name)
        await asyncio.sleep(0.02)


async def main() -> None:
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else None
    m = await zerotal_lock.AsyncManager.open(config)  # opens on a thread
    async with m:
        # Run an async function under a lock, if it is free.
        print("report:", await m.try_run("example:report", ttl=30, fn=build_report, refresh=True))

        # Hold a lock for an async with-block, three tasks in turn.
        order: list[str] = []
        await asyncio.gather(*(worker(m, "task %d" % i, order) for i in range(3)))
        print("ledger: held by", ", ".join(sorted(order)), "in turn")

        # Cancelling a task ends its wait, and leaves nothing held.
        async with m.lock("example:ledger", ttl=10) as holder:
            await holder.acquire()
            waiter = asyncio.create_task(m.block_run("example:ledger", ttl=10, fn=build_report, timeout=60))
            await asyncio.sleep(0.1)
            waiter.cancel()
            try:
                await waiter
            except asyncio.CancelledError:
                print("ledger: the waiting task was cancelled")
        try:
            async with m.try_lock("example:ledger", ttl=10) as held:
                print("ledger: free again, token", held.token)
        except zerotal_lock.NotAcquiredError as e:
            print("ledger: still held (%s, HTTP %d)" % (e, e.http_status))


if __name__ == "__main__":
    asyncio.run(main())
