"""contender.py: one side of the cross-runtime test (TestCrossRuntime in
sdk/cshared).

    python3 tests/contender.py CONFIG_JSON KEY ROUNDS HOLD_MS LOG

It opens a manager from CONFIG_JSON, prints "ready" and waits for a line on
stdin (the Go side starts its own rounds then), then takes KEY ROUNDS times
with block_run, holding it HOLD_MS each time, and appends one line per
critical section to LOG: "start_ns end_ns token python", times from the
wall clock the Go side reads too. After its first round it prints "first"
and waits for another line: the Go side sends it once every runtime has had
its first round, so that no runtime can finish before another has begun.
"""

import sys
import time

import zerotal_lock


def main():
    config, key, rounds, hold_ms, log_path = sys.argv[1:6]
    rounds, hold = int(rounds), int(hold_ms) / 1000
    lines = []

    def critical(held):
        start = time.time_ns()
        time.sleep(hold)
        end = time.time_ns()
        if held.lost:
            raise RuntimeError("lost the lock inside the critical section")
        lines.append("%d %d %d python\n" % (start, end, held.token))

    with zerotal_lock.Manager(config) as m:
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(rounds):
            m.block_run(key, ttl=10, fn=critical, timeout=60, retry_delay=0.002)
            if i == 0:
                print("first", flush=True)
                sys.stdin.readline()
            time.sleep(hold)  # give the other side its turn between rounds
    with open(log_path, "w") as f:
        f.writelines(lines)


if __name__ == "__main__":
    main()
