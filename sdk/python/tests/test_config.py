"""Tests of the configuration: dicts, JSON strings, and the environment read
from os.environ when a manager opens (the library's Go runtime only has the
environment the process had when it loaded the library)."""

from __future__ import annotations

import os
import tempfile
import unittest
import uuid
from typing import Any
from unittest import mock

import zerotal_lock as zl
from zerotal_lock import _abi_gen

zl.version()  # the library is loaded before any variable below is set


def environment(**variables: str) -> Any:
    """os.environ with the library's variables unset but these."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LOCK_") and k != "REDIS_URL"}
    clean.update(variables)
    return mock.patch.dict(os.environ, clean, clear=True)


class EnvironmentTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.db = os.path.join(self.dir.name, "locks.db")
        self.key = "config/%s" % uuid.uuid4().hex

    def assertShareLocks(self, a: zl.Manager, b: zl.Manager) -> None:
        with a.lock(self.key, 5) as la, b.lock(self.key, 5) as lb:
            self.assertTrue(la.acquire())
            self.assertFalse(lb.acquire(), "the managers do not share their locks")

    def test_no_config_reads_os_environ_when_the_manager_opens(self) -> None:
        with environment(LOCK_DRIVER="sqlite", LOCK_SQLITE_PATH=self.db, LOCK_PREFIX="env:"):
            m = zl.Manager()
        with m, zl.Manager({"url": "sqlite://" + self.db, "prefix": "env:"}) as explicit:
            self.assertShareLocks(m, explicit)

    def test_lock_url_wins_over_the_driver(self) -> None:
        with environment(LOCK_URL="sqlite://" + self.db, LOCK_DRIVER="redis"):
            m = zl.Manager()
        with m, zl.Manager({"driver": "sqlite", "sqlite": {"path": self.db}}) as explicit:
            self.assertShareLocks(m, explicit)

    def test_the_environment_names_a_bad_driver(self) -> None:
        with environment(LOCK_DRIVER="carrier-pigeon"), self.assertRaises(zl.InvalidArgumentError) as cm:
            zl.Manager()
        self.assertIn("carrier-pigeon", str(cm.exception))

    def test_redis_url_defaults_to_the_variable_as_it_is_now(self) -> None:
        with environment(), self.assertRaises(zl.InvalidArgumentError) as cm:
            zl.Manager({"driver": "redis"})
        self.assertIn("REDIS_URL", str(cm.exception))
        # A port nobody listens on: opening does not dial, so it succeeds
        # once the URL is there.
        config: zl.Config = {"driver": "redis"}
        with environment(REDIS_URL="redis://127.0.0.1:1/0"):
            zl.Manager(config).close()
        self.assertEqual(config, {"driver": "redis"}, "the caller's dict was changed")

    def test_every_variable_of_the_spec_is_read(self) -> None:
        self.assertEqual(
            sorted(_abi_gen.CONFIG_ENVIRONMENT.values()),
            ["LOCK_DRIVER", "LOCK_FILE_DIR", "LOCK_PREFIX", "LOCK_SQLITE_PATH", "LOCK_URL", "REDIS_URL"],
        )


class ConfigTest(unittest.TestCase):
    def test_json_strings(self) -> None:
        with zl.Manager('{"driver": "memory", "prefix": "json:"}'):
            pass
        with self.assertRaises(zl.InvalidArgumentError) as cm:
            zl.Manager("{not json")
        self.assertIn("JSON", str(cm.exception))
        with self.assertRaises(zl.InvalidArgumentError):
            zl.Manager('{"driver": "memory", "sqlite": {"pth": "x"}}')
        with self.assertRaises(zl.InvalidArgumentError):
            zl.Manager('"memory"')  # not an object: the library says so

    def test_other_types_are_refused(self) -> None:
        with self.assertRaises(zl.InvalidArgumentError) as cm:
            zl.Manager(["memory"])  # type: ignore[arg-type]
        self.assertIn("list", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
