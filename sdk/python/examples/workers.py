"""workers.py: processes take turns at one lock on a SQLite file, started
the way the library needs.

The library carries a Go runtime, whose threads do not survive fork: start
worker processes with "spawn" (or "forkserver"), so that each loads the
library itself. A child forked after its parent loaded the library gets
zerotal_lock.ForkError instead of a hang.

    python3 workers.py [/tmp/locks.db]
"""

import multiprocessing
import os
import sys
import tempfile
import time

import zerotal_lock

Span = tuple[float, float, int]  # start, end, fencing token


def work(db: str, rounds: int) -> list[Span]:
    spans: list[Span] = []

    def critical(held: zerotal_lock.HeldLock) -> Span:
        start = time.time()
        time.sleep(0.01)
        return start, time.time(), held.token

    with zerotal_lock.Manager({"url": "sqlite://" + db}) as m:
        for _ in range(rounds):
            spans.append(m.block_run("example:batch", ttl=10, fn=critical, timeout=30, retry_delay=0.002))
    return spans


def main() -> None:
    db = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "locks.db")
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        results = pool.starmap(work, [(db, 5)] * 3)
    spans = sorted(span for result in results for span in result)
    overlaps = sum(1 for a, b in zip(spans, spans[1:]) if b[0] < a[1])
    increasing = all(a[2] < b[2] for a, b in zip(spans, spans[1:]))
    print("workers: %d critical sections in 3 processes, %d overlapping" % (len(spans), overlaps))
    print("workers: fencing tokens increase in time order:", increasing)


if __name__ == "__main__":
    main()
