"""Tests of the Python client, standard library only.

Run from sdk/python with the library built (make cshared), or with
ZEROTAL_LOCK_LIBRARY naming it:

    python3 -m unittest discover -s tests

The Go test TestPython (sdk/cshared) runs them against the test build of the
library, whose zl_test_live_handles lets them check that no handle leaks.
"""

import ctypes
import json
import signal
import threading
import time
import unittest
import uuid

import zerotal_lock as zl
from zerotal_lock import _abi_gen


def live_handles():
    """The number of live handles, or None without the test build."""
    lib = zl.library()
    try:
        fn = lib.zl_test_live_handles
    except AttributeError:
        return None
    fn.restype = ctypes.c_int
    return fn()


class Base(unittest.TestCase):
    def setUp(self):
        self.before = live_handles()
        self.m = zl.Manager({"driver": "memory", "prefix": "pytest:"})
        self.prefix = "%s/%s/" % (self.id(), uuid.uuid4().hex)

    def tearDown(self):
        self.m.close()
        after = live_handles()
        if self.before is not None:
            self.assertEqual(after, self.before, "handles leaked")

    def key(self, name):
        return self.prefix + name


class LibraryTest(unittest.TestCase):
    def test_versions(self):
        self.assertTrue(zl.version())
        self.assertEqual(zl.library().zl_abi_version(), zl.ABI_VERSION)

    def test_every_code_has_its_exception(self):
        lib = zl.library()
        for code in zl.Code:
            text = lib.zl_strerror(code).decode()
            self.assertNotEqual(text, "unknown error code", code)
            if code == zl.Code.OK:
                self.assertNotIn(code, zl.ERRORS)
                continue
            cls = zl.ERRORS[code]
            self.assertTrue(issubclass(cls, zl.Error))
            self.assertEqual(cls.code, code)
            self.assertEqual(cls.description, text)
            self.assertTrue(cls.__doc__)
        self.assertEqual(lib.zl_strerror(999).decode(), "unknown error code")

    def test_exception_names(self):
        self.assertIs(zl.ERRORS[zl.Code.NOT_ACQUIRED], zl.NotAcquiredError)
        self.assertIs(zl.ERRORS[zl.Code.LOST], zl.LostError)
        self.assertIs(zl.ERRORS[zl.Code.INVALID_HANDLE], zl.InvalidHandleError)
        self.assertIs(zl.ERRORS[zl.Code.CLOSED], zl.ClosedError)

    def test_options_struct_matches_the_header(self):
        names = [f[0] for f in _abi_gen.zl_options._fields_]
        self.assertEqual(names, ["timeout_ms", "timeout_set", "retry_delay_ms", "refresh", "refresh_every_ms"])


class ManagerTest(Base):
    def test_config_errors_name_the_member(self):
        with self.assertRaises(zl.InvalidArgumentError) as cm:
            zl.Manager({"driver": "memory", "sqlite": {"pth": "x"}, "extra": 1})
        self.assertIn('"sqlite.pth"', str(cm.exception))
        self.assertIn('"extra"', str(cm.exception))
        self.assertEqual(cm.exception.code, zl.Code.INVALID_ARGUMENT)
        with self.assertRaises(zl.InvalidArgumentError) as cm:
            zl.Manager({"driver": "carrier-pigeon"})
        self.assertIn("memory", str(cm.exception))
        with self.assertRaises(zl.InvalidArgumentError):
            zl.Manager("{not json")

    def test_config_as_json_and_from_the_environment(self):
        with zl.Manager(json.dumps({"driver": "memory"})):
            pass
        with zl.Manager(None):  # the test runs without LOCK_DRIVER: memory
            pass

    def test_close_is_idempotent_and_final(self):
        m = zl.Manager({"driver": "memory"})
        lk = m.lock(self.key("k"), 5)
        self.assertTrue(lk.acquire())
        m.close()
        m.close()
        with self.assertRaises(zl.ClosedError):
            lk.acquire()
        self.assertFalse(lk.is_acquired)  # close released it
        lk.free()
        with self.assertRaises(zl.InvalidHandleError):
            m.lock(self.key("k"), 5)


class LockTest(Base):
    def test_acquire_release_and_accessors(self):
        key = self.key("ключ 🔒")
        with self.m.lock(key, 5) as a, self.m.lock(key, 5) as b:
            self.assertEqual(a.key, key)
            self.assertEqual(a.owner, "")
            self.assertIsNone(a.expires_at)
            before = time.time()
            self.assertTrue(a.acquire())
            self.assertTrue(a.is_acquired)
            self.assertRegex(a.owner, "^[0-9a-f]{32}$")
            self.assertAlmostEqual(a.expires_at, before + 5, delta=1)
            first = a.token
            self.assertGreater(first, 0)
            self.assertFalse(b.acquire())
            with self.assertRaises(zl.NotAcquiredError) as cm:
                b.block(timeout=0.05, retry_delay=0.005)
            self.assertIn("not acquired after waiting", str(cm.exception))
            self.assertTrue(a.refresh())
            a.release()
            self.assertFalse(a.is_acquired)
            b.block(timeout=1)
            self.assertGreater(b.token, first)
            a.force_release()
            self.assertFalse(b.refresh())

    def test_block_wakes_when_released_from_another_thread(self):
        key = self.key("handoff")
        with self.m.lock(key, 5) as a, self.m.lock(key, 5) as b:
            self.assertTrue(a.acquire())
            t = threading.Thread(target=a.release)
            t.start()
            b.block(timeout=5)
            t.join()
            self.assertTrue(b.is_acquired)

    def test_cancel_interrupts_a_block(self):
        key = self.key("cancel")
        with self.m.lock(key, 60) as a, self.m.lock(key, 60) as b:
            self.assertTrue(a.acquire())
            result = {}

            def wait():
                try:
                    b.block(timeout=60)
                except zl.Error as e:
                    result["error"] = e

            t = threading.Thread(target=wait)
            t.start()
            deadline = time.monotonic() + 10
            while t.is_alive() and time.monotonic() < deadline:
                b.cancel()  # cancels the calls in progress: repeat until it was in one
                t.join(0.005)
            t.join()
            self.assertIsInstance(result.get("error"), zl.CanceledError)

    def test_misuse_raises_instead_of_crashing(self):
        lk = self.m.lock(self.key("misuse"), 5)
        lk.free()
        lk.free()  # idempotent in Python
        dead = zl.Lock(123456789)
        with self.assertRaises(zl.InvalidHandleError):
            dead.acquire()
        with self.assertRaises(zl.InvalidHandleError):
            zl.Lock(self.m._handle).acquire()  # a manager is not a lock
        with self.m.lock("", 5) as empty, self.assertRaises(zl.InvalidArgumentError):
            empty.acquire()
        bad = self.m.lock(self.key("ttl"), 0)
        with self.assertRaises(zl.InvalidArgumentError):
            bad.acquire()
        bad.free()
        with self.assertRaises(zl.InvalidArgumentError):
            self.m.lock(b"bytes", 5)


class RunTest(Base):
    def test_try_run_returns_fn_result(self):
        got = self.m.try_run(self.key("run"), 5, lambda held: (held.key, held.token, held.lost))
        self.assertEqual(got[0], self.key("run"))
        self.assertGreater(got[1], 0)
        self.assertFalse(got[2])

    def test_try_run_when_held(self):
        key = self.key("held")
        with self.m.lock(key, 5) as lk:
            self.assertTrue(lk.acquire())
            ran = []
            with self.assertRaises(zl.NotAcquiredError):
                self.m.try_run(key, 5, ran.append)
            self.assertEqual(ran, [])
            with self.assertRaises(zl.NotAcquiredError):
                self.m.block_run(key, 5, ran.append, timeout=0.05, retry_delay=0.005)
            self.assertEqual(ran, [])

    def test_exception_in_fn_propagates_and_releases(self):
        key = self.key("boom")

        def boom(held):
            raise KeyError("boom")

        with self.assertRaises(KeyError):
            self.m.try_run(key, 5, boom)
        self.assertEqual(self.m.try_run(key, 5, lambda held: "free again"), "free again")

    def test_outliving_the_ttl_is_lost(self):
        def outlive(held):
            deadline = time.monotonic() + 5
            while not held.lost and time.monotonic() < deadline:
                time.sleep(0.002)
            return held.lost

        with self.assertRaises(zl.LostError):
            self.m.try_run(self.key("expire"), 0.03, outlive)

    def test_refresh_keeps_a_long_run(self):
        def long_work(held):
            time.sleep(0.7)
            return held.lost

        self.assertFalse(self.m.try_run(self.key("refresh"), 0.3, long_work, refresh=True))

    def test_lock_taken_away_is_reported(self):
        key = self.key("stolen")

        def steal(held):
            with self.m.lock(key, 1) as thief:
                thief.force_release()
            deadline = time.monotonic() + 5
            while not held.lost and time.monotonic() < deadline:
                time.sleep(0.002)
            return held.lost

        with self.assertRaises(zl.LostError):
            self.m.try_run(key, 1, steal, refresh_every=0.01)


class ContextManagerTest(Base):
    def test_try_lock_holds_for_the_block(self):
        key = self.key("with")
        with self.m.try_lock(key, 5) as held:
            self.assertEqual(held.key, key)
            self.assertFalse(held.lost)
            with self.assertRaises(zl.NotAcquiredError):
                with self.m.try_lock(key, 5):
                    self.fail("ran under a held key")
        with self.m.try_lock(key, 5):  # released on exit
            pass

    def test_block_lock_waits(self):
        key = self.key("wait")
        with self.m.lock(key, 5) as lk:
            self.assertTrue(lk.acquire())
            with self.assertRaises(zl.NotAcquiredError):
                with self.m.block_lock(key, 5, timeout=0.05, retry_delay=0.005):
                    self.fail("ran under a held key")
            threading.Thread(target=lk.release).start()
            with self.m.block_lock(key, 5, timeout=5) as held:
                self.assertGreater(held.token, 0)

    def test_waiting_for_block_lock_can_be_interrupted(self):
        key = self.key("interrupt")
        with self.m.lock(key, 5) as lk:
            self.assertTrue(lk.acquire())
            main = threading.main_thread().ident
            timer = threading.Timer(0.1, signal.pthread_kill, (main, signal.SIGINT))
            timer.start()
            start = time.monotonic()
            with self.assertRaises(KeyboardInterrupt):
                with self.m.block_lock(key, 5, timeout=30):
                    self.fail("ran under a held key")
            self.assertLess(time.monotonic() - start, 20)
            timer.join()
            lk.release()
        # The abandoned wait gets the key now, and gives it back at once.
        with self.m.block_lock(key, 5, timeout=10):
            pass

    def test_exception_in_the_block_propagates_and_releases(self):
        key = self.key("raise")
        with self.assertRaises(ValueError):
            with self.m.try_lock(key, 5):
                raise ValueError("inside")
        with self.m.try_lock(key, 5):
            pass

    def test_lost_lock_raises_on_exit(self):
        key = self.key("lost")
        with self.assertRaises(zl.LostError):
            with self.m.try_lock(key, 0.03) as held:
                deadline = time.monotonic() + 5
                while not held.lost and time.monotonic() < deadline:
                    time.sleep(0.002)
                self.assertTrue(held.lost)

    def test_threads_exclude_each_other(self):
        key = self.key("contended")
        inside = [0]
        overlaps = [0]
        entered = [0]
        mu = threading.Lock()
        errors = []

        def worker(i):
            try:
                for r in range(20):
                    if (i + r) % 2:
                        ctx = self.m.block_lock(key, 10, timeout=30, retry_delay=0.001)
                    else:
                        ctx = self.m.lock(key, 10)
                    if isinstance(ctx, zl.Lock):
                        with ctx:
                            ctx.block(timeout=30, retry_delay=0.001)
                            self._critical(mu, inside, overlaps, entered)
                            ctx.release()
                    else:
                        with ctx:
                            self._critical(mu, inside, overlaps, entered)
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(overlaps[0], 0)
        self.assertEqual(entered[0], 6 * 20)

    @staticmethod
    def _critical(mu, inside, overlaps, entered):
        with mu:
            inside[0] += 1
            if inside[0] > 1:
                overlaps[0] += 1
            entered[0] += 1
        time.sleep(0.0005)
        with mu:
            inside[0] -= 1


if __name__ == "__main__":
    unittest.main()
