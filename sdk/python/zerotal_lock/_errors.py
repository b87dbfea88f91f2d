"""Turning the C ABI's codes into the exceptions of _abi_gen."""

from __future__ import annotations

import re

from ._abi_gen import ERRORS, Code, Error
from ._library import library

_C_FUNCTION = re.compile(r"^zl_[a-z_]+: ")


def check(code: int) -> None:
    """Raise the exception of a non-zero code, with this thread's detail.

    It must run on the thread that made the call, right after it: the detail
    is per thread.
    """
    if code != Code.OK:
        raise error_for(code, last_error())


def last_error() -> str:
    """This thread's detail message, without the C function's name that the C
    ABI starts it with."""
    return _C_FUNCTION.sub("", library().zl_last_error().decode("utf-8", "replace"))


def error_for(code: int, detail: str) -> Error:
    """The exception of code, carrying detail."""
    cls = ERRORS.get(code)
    if cls is None:
        err = Error(detail or "unknown error code %d" % code)
        err.code = code
        return err
    return cls(detail)
