"""example.py: take a lock from Python with zerotal_lock, in the three call
styles: run a function under it, hold it for a with-block, or take a handle.

Run it with the package installed (make wheel; pip install
sdk/python/dist/*.whl), or from a checkout after make cshared with
PYTHONPATH=sdk/python:

    python3 example.py '{"url": "sqlite:///tmp/locks.db"}'

With no argument, the configuration comes from the environment (LOCK_URL,
LOCK_DRIVER, ...; the default is the in-process memory driver).
"""

import json
import sys

import zerotal_lock


def main() -> None:
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else None
    print("libzerotal_lock", zerotal_lock.version())
    with zerotal_lock.Manager(config) as m:
        # Hold a lock for a with-block, refreshed in the background.
        try:
            with m.try_lock("example:report", ttl=30, refresh=True) as held:
                print("report: running under the lock with fencing token", held.token)
                if held.lost:
                    raise RuntimeError("lost the lock: stop")
        except zerotal_lock.NotAcquiredError:
            print("report: someone else holds the lock")

        # Run a function under a lock, waiting up to 5 seconds for it.
        owner = m.block_run("example:invoice", ttl=10, timeout=5, fn=lambda held: held.owner)
        print("invoice: held by owner", owner)

        # Or take and release it explicitly.
        with m.lock("example:invoice", ttl=10) as lock:
            if lock.acquire():
                print("invoice: acquired, token", lock.token)
                lock.release()


if __name__ == "__main__":
    main()
