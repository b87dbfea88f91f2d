"""contender.py: one side of the cross-runtime test (TestCrossRuntime in
sdk/cshared).

    python3 tests/contender.py CONFIG_JSON KEY ROUNDS HOLD_MS LOG

It opens a manager from CONFIG_JSON, prints "ready" and waits for a line on
stdin (the Go side starts its own rounds then), then takes KEY ROUNDS times
with block_run, holding it HOLD_MS each time. Inside each critical section
it appends "enter python TOKEN" as its first act and "leave python TOKEN" as
its last to LOG, which every runtime appends to (O_APPEND: each line lands
whole, in the order the writes happened), so the file is the order in which
the runtimes held the key, with no clock to compare. After its first round
it prints "first" and waits for another line: the Go side sends it once
every runtime has had its first round, so that no runtime can finish before
another has begun.
"""

import os
import sys
import time

import zerotal_lock


def main():
    config, key, rounds, hold_ms, log_path = sys.argv[1:6]
    rounds, hold = int(rounds), int(hold_ms) / 1000
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def critical(held):
        os.write(log, b"enter python %d\n" % held.token)
        time.sleep(hold)
        if held.lost:
            raise RuntimeError("lost the lock inside the critical section")
        os.write(log, b"leave python %d\n" % held.token)

    with zerotal_lock.Manager(config) as m:
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(rounds):
            m.block_run(key, ttl=10, fn=critical, timeout=60, retry_delay=0.002)
            if i == 0:
                print("first", flush=True)
                sys.stdin.readline()
            time.sleep(hold)  # give the other side its turn between rounds
    os.close(log)


if __name__ == "__main__":
    main()
