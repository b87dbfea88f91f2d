"""Tests of the Python client, standard library only.

Run from sdk/python with the library built (make cshared), or with
ZEROTAL_LOCK_LIBRARY naming it:

    python3 -m unittest discover -s tests

The Go test TestPython (sdk/cshared) runs them against the test build of the
library, whose zl_test_live_handles lets them check that no handle leaks.
"""

import json
import signal
import tempfile
import threading
import time
import unittest
import uuid

from support import eventually, library_threads, live_handles, open_fds, queued_tickets

import zerotal_lock as zl
from zerotal_lock import _abi_gen, _notify


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
        with self.assertRaises(zl.ClosedError) as cm:
            m.lock(self.key("k"), 5)
        self.assertIn("closed", str(cm.exception))
        with self.assertRaises(zl.ClosedError):
            lk.acquire()  # freed


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
        with self.assertRaises(zl.InvalidArgumentError):
            self.m.lock(self.key("ttl"), 0)
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
            time.sleep(2.2)  # over twice the TTL; a refresh may stall ~0.6 s
            return held.lost

        self.assertFalse(self.m.try_run(self.key("refresh"), 1.0, long_work, refresh=True))

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
            releaser = threading.Thread(target=lk.release)
            releaser.start()
            with self.m.block_lock(key, 5, timeout=5) as held:
                self.assertGreater(held.token, 0)
            releaser.join()  # a later test counts the threads alive

    def test_waiting_for_block_lock_or_block_run_can_be_interrupted(self):
        key = self.key("interrupt")
        before = live_handles()
        for wait in (
            lambda: self.m.block_lock(key, 5, timeout=30).__enter__(),
            lambda: self.m.block_run(key, 5, lambda held: self.fail("ran under a held key"), timeout=30),
        ):
            with self.m.lock(key, 5) as lk:
                self.assertTrue(lk.acquire())
                main = threading.main_thread().ident
                timer = threading.Timer(0.1, signal.pthread_kill, (main, signal.SIGINT))
                timer.start()
                start = time.monotonic()
                with self.assertRaises(KeyboardInterrupt):
                    wait()
                self.assertLess(time.monotonic() - start, 2)  # the signal comes at 0.1 s
                timer.join()
                self.assertEqual(live_handles(), None if before is None else before + 1)  # lk only: the wait has ended
                lk.release()
            with self.m.lock(key, 5) as again:
                self.assertTrue(again.acquire(), "the interrupted wait took the key")

    def test_block_lock_waits_on_no_thread_and_leaves_no_descriptor(self):
        key = self.key("threadless")
        before = open_fds()
        threads = {t.ident for t in threading.enumerate()}
        seen = []
        with self.m.lock(key, 5) as lk:
            self.assertTrue(lk.acquire())

            def release():
                seen.append(({t.ident for t in threading.enumerate()} - threads, library_threads()))
                lk.release()

            timer = threading.Timer(0.2, release)
            timer.start()
            with self.m.block_lock(key, 5, timeout=10, refresh=True) as held:
                self.assertFalse(held.lost)
                self.assertEqual(library_threads(), [])
            timer.join()
        self.assertEqual(seen, [({timer.ident}, [])])  # the timer's thread only
        with self.m.block_lock(key, 5, timeout=0):  # one attempt, and the last write
            pass
        self.assertLessEqual(len(open_fds() - before), 1)  # the library's end, until its next write
        self.m.close()
        self.assertEqual(open_fds() - before, set())

    def test_close_ends_a_wait_on_another_thread(self):
        key = self.key("closing")
        result = {}
        with zl.Manager({"driver": "memory", "prefix": "pytest:"}) as other, other.lock(key, 30) as holder:
            self.assertTrue(holder.acquire())

            def wait():
                try:
                    with self.m.block_lock(key, 5, timeout=60):
                        result["error"] = None
                except zl.Error as e:
                    result["error"] = e

            t = threading.Thread(target=wait)
            t.start()
            # Into its wait: asleep on its notification descriptor, which
            # zl_close ends by closing the library's end.
            self.assertTrue(eventually(lambda: len(_notify._open_fds) == 1))
            self.m.close()
            t.join(5)
            self.assertFalse(t.is_alive(), "the wait outlived its manager")
            self.assertIsInstance(result.get("error"), zl.ClosedError)

    def test_waiting_threads_get_the_key_in_the_order_they_came(self):
        # The file driver queues each waiter as a ticket file in the key's
        # room (see queued_tickets), which the test counts: each waiter starts once the one
        # before it has queued, so the arrival order is known.
        with tempfile.TemporaryDirectory() as d:
            m = zl.Manager({"driver": "file", "prefix": "pytest:", "file": {"dir": d}})
            try:
                self.fifo(m, lambda: queued_tickets(d))
            finally:
                m.close()

    def fifo(self, m, queued):
        key = self.key("fifo")
        order = []
        with m.lock(key, 30) as holder:
            self.assertTrue(holder.acquire())

            def waiter(i):
                with m.block_lock(key, 5, timeout=30):
                    order.append(i)

            threads = []
            for i in range(5):
                threads.append(threading.Thread(target=waiter, args=(i,)))
                threads[-1].start()
                self.assertTrue(eventually(lambda: queued() == i + 1), "waiter %d never queued" % i)
            holder.release()
            for t in threads:
                t.join(10)
        self.assertEqual(order, [0, 1, 2, 3, 4])

    def test_cancel_lets_a_with_block_lock_go_at_once(self):
        key = self.key("let-go")
        with self.m.try_lock(key, 30) as held:
            held.cancel()
            self.assertTrue(held.lost)
            with self.m.lock(key, 5) as other:  # released in the background: soon
                self.assertTrue(eventually(other.acquire), "the cancelled lock is still held")

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


class InputTest(Base):
    """Bad input gets the library's error, naming the argument, before
    anything reaches C."""

    def assertRefused(self, fn, *words):
        with self.assertRaises(zl.InvalidArgumentError) as cm:
            fn()
        for w in words:
            self.assertIn(w, str(cm.exception))
        self.assertNotRegex(str(cm.exception), r"^zl_")
        return cm.exception

    def test_keys_with_nul_are_refused_not_cut_short(self):
        self.assertRefused(lambda: self.m.lock(self.key("a\x00b"), 5), "key", "NUL")
        self.assertRefused(lambda: self.m.try_run(self.key("a\x00zzz"), 5, lambda held: None), "key")
        with self.m.lock(self.key("a"), 5) as lk:
            self.assertTrue(lk.acquire())  # "a\0..." never locked "a"

    def test_keys_that_are_not_unicode_text(self):
        self.assertRefused(lambda: self.m.lock(self.key("\ud800"), 5), "key", "surrogate")

    def test_ttls_and_durations(self):
        for ttl in (None, float("nan"), float("inf"), "5", True, -1, 0, 0.0004, 3 * 2**63, 366 * 24 * 3600):
            self.assertRefused(lambda: self.m.lock(self.key("t"), ttl), "ttl")
        with self.m.lock(self.key("year"), 365 * 24 * 3600) as lk:
            self.assertTrue(lk.acquire())
        for kw in ({"timeout": float("nan")}, {"timeout": "1"}, {"retry_delay": -1}, {"refresh_every": float("inf")}):
            name = next(iter(kw))
            self.assertRefused(lambda: self.m.block_run(self.key("o"), 5, lambda held: None, **kw), name)
        with self.m.lock(self.key("b"), 5) as lk:
            self.assertRefused(lambda: lk.block(timeout=2**70), "timeout")

    def test_config_text_that_is_not_unicode(self):
        e = self.assertRefused(lambda: zl.Manager({"driver": "sqlite", "sqlite": {"path": "/tmp/caf\udce9.db"}}), "sqlite.path")
        self.assertNotIsInstance(e, UnicodeError)

    def test_messages_speak_python(self):
        with self.assertRaises(zl.InvalidArgumentError) as cm:
            zl.Manager({"driver": "file"})
        msg = str(cm.exception)
        self.assertNotRegex(msg, r"^zl_")
        self.assertNotIn("Config.", msg)
        self.assertIn("file.dir", msg)


class LifetimeTest(Base):
    def test_a_dropped_lock_is_freed_and_warns_if_it_held(self):
        import gc
        import warnings

        key = self.key("dropped")
        lk = self.m.lock(key, 30)
        self.assertTrue(lk.acquire())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del lk
            gc.collect()
        self.assertTrue(any(issubclass(w.category, ResourceWarning) for w in caught), caught)
        with self.m.lock(key, 5) as again:
            self.assertTrue(again.acquire(), "the dropped lock kept its key")

    def test_dropped_locks_leak_no_handles(self):
        import gc

        before = live_handles()
        for i in range(2000):
            self.m.lock(self.key("many%d" % i), 5)
        gc.collect()
        if before is not None:
            self.assertEqual(live_handles(), before)

    def test_a_dropped_manager_is_closed(self):
        import gc
        import warnings

        before = live_handles()
        m = zl.Manager({"driver": "memory"})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del m
            gc.collect()
        self.assertTrue(any(issubclass(w.category, ResourceWarning) for w in caught), caught)
        if before is not None:
            self.assertEqual(live_handles(), before)


class InterruptTest(Base):
    def test_ctrl_c_ends_a_lock_block_at_once(self):
        key = self.key("sigint")
        with self.m.lock(key, 30) as holder, self.m.lock(key, 30) as waiter:
            self.assertTrue(holder.acquire())
            main = threading.main_thread().ident
            timer = threading.Timer(0.1, signal.pthread_kill, (main, signal.SIGINT))
            timer.start()
            start = time.monotonic()
            with self.assertRaises(KeyboardInterrupt):
                waiter.block(timeout=30)
            self.assertLess(time.monotonic() - start, 5)
            timer.join()
            self.assertFalse(waiter.is_acquired)
            holder.release()
            self.assertTrue(waiter.acquire(), "the interrupted wait left the key held")


class ForkTest(unittest.TestCase):
    def test_a_forked_child_gets_an_error_not_a_hang(self):
        import multiprocessing

        zl.version()  # loaded in this process
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()

        def child(q):
            try:
                zl.Manager({"driver": "memory"})
                q.put("no error")
            except zl.ForkError as e:
                q.put("ForkError: %s" % e)
            except BaseException as e:  # noqa: B036 - reported to the parent
                q.put("%s: %s" % (type(e).__name__, e))

        p = ctx.Process(target=child, args=(q,))
        p.start()
        p.join(30)
        if p.is_alive():
            p.kill()
            self.fail("the forked child hung")
        self.assertRegex(q.get(timeout=5), r"^ForkError: .*spawn")


if __name__ == "__main__":
    unittest.main()
