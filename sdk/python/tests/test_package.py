"""Tests of the package as a package: its public names, their annotations,
py.typed, the version. (The Go test TestPythonTypes runs mypy --strict over
it; this checks what a type checker cannot: that the annotations are there
at run time and resolve.)"""

from __future__ import annotations

import inspect
import os
import typing
import unittest

import zerotal_lock as zl


def public_callables() -> list[tuple[str, object]]:
    """Every public function, class and method of the package, by name."""
    out: list[tuple[str, object]] = []
    for name in zl.__all__:
        obj = getattr(zl, name)
        if inspect.isfunction(obj):
            out.append((name, obj))
        elif inspect.isclass(obj) and obj.__module__.startswith("zerotal_lock"):
            members = {}
            for cls in reversed(inspect.getmro(obj)):
                if cls.__module__.startswith("zerotal_lock"):
                    members.update(vars(cls))
            for attr, member in members.items():
                if attr.startswith("_") and attr not in ("__init__", "__enter__", "__exit__", "__aenter__", "__aexit__"):
                    continue
                if isinstance(member, (classmethod, staticmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member):
                    out.append(("%s.%s" % (name, attr), member))
    return out


class PackageTest(unittest.TestCase):
    def test_everything_public_is_annotated(self) -> None:
        callables = public_callables()
        self.assertGreater(len(callables), 60)
        for name, fn in callables:
            hints = typing.get_type_hints(fn)  # resolves every annotation, or raises
            sig = inspect.signature(fn)  # type: ignore[arg-type]
            self.assertIn("return", hints, "%s has no return annotation" % name)
            for p in sig.parameters.values():
                if p.name in ("self", "cls") or p.kind is p.VAR_POSITIONAL:
                    continue
                self.assertIn(p.name, hints, "%s: parameter %s has no annotation" % (name, p.name))

    def test_every_public_name_has_a_docstring(self) -> None:
        for name, fn in public_callables():
            if name.endswith(("__init__", "__enter__", "__exit__", "__aenter__", "__aexit__")):
                continue
            self.assertTrue(inspect.getdoc(fn), "%s has no docstring" % name)

    def test_py_typed_marks_the_package(self) -> None:
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(zl.__file__), "py.typed")))

    def test_version(self) -> None:
        self.assertRegex(zl.__version__, r"^\d+\.\d+\.\d+")
        self.assertTrue(zl.version())
        self.assertTrue(os.path.exists(zl.library_path()))

    def test_every_error_has_an_http_status(self) -> None:
        self.assertEqual(zl.NotAcquiredError.http_status, 409)
        self.assertEqual(zl.LostError.http_status, 409)
        self.assertEqual(zl.InvalidArgumentError.http_status, 400)
        self.assertEqual(zl.DriverError.http_status, 503)
        for cls in zl.ERRORS.values():
            self.assertIn(cls.http_status, range(400, 600))


if __name__ == "__main__":
    unittest.main()
