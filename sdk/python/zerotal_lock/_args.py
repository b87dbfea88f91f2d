"""Python arguments to C ones, checked here: seconds to milliseconds, keys to
UTF-8, configurations to JSON. Bad input raises InvalidArgumentError naming
the argument before anything reaches C, where it could wrap, be cut short at
a NUL or be rewritten."""

from __future__ import annotations

import json
import math
import os
from typing import Any

from ._abi_gen import (
    CONFIG_DEFAULT_ENVIRONMENT,
    CONFIG_ENVIRONMENT,
    DEFAULT,
    Config,
    InvalidArgumentError,
    zl_options,
)

Seconds = int | float
"""A duration in seconds: an int or a float (bool is refused)."""

_INT64_MAX = (1 << 63) - 1
_MAX_TTL_MS = 365 * 24 * 3600 * 1000


def ms(seconds: Seconds | None, name: str, default_ok: bool = True) -> int:
    """Seconds to whole milliseconds, checked so that nothing wraps or turns
    into a placeholder on its way to C. None means the default (DEFAULT)
    where default_ok."""
    if seconds is None:
        if default_ok:
            return DEFAULT
        raise InvalidArgumentError("%s: want a number of seconds, got None" % name)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise InvalidArgumentError("%s: want a number of seconds, got %s" % (name, type(seconds).__name__))
    if isinstance(seconds, float) and not math.isfinite(seconds):
        raise InvalidArgumentError("%s: %r is not a duration" % (name, seconds))
    if seconds < 0:
        raise InvalidArgumentError("%s: %r is negative" % (name, seconds))
    millis = round(seconds * 1000)
    if millis > _INT64_MAX:
        raise InvalidArgumentError("%s: %r seconds is too long" % (name, seconds))
    return int(millis)


def ttl(seconds: Seconds) -> int:
    """A TTL in seconds to milliseconds: 1 ms to 365 days, as everywhere."""
    millis = ms(seconds, "ttl", default_ok=False)
    if seconds * 1000 < 1:
        raise InvalidArgumentError("ttl: %r seconds is under the minimum of 0.001 (1 ms)" % (seconds,))
    if millis > _MAX_TTL_MS:
        raise InvalidArgumentError("ttl: %r seconds is over the maximum of 365 days" % (seconds,))
    return millis


def key(k: str) -> bytes:
    """A key as the NUL-terminated UTF-8 the C ABI takes."""
    if not isinstance(k, str):
        raise InvalidArgumentError("key: want a str, got %s" % type(k).__name__)
    if "\x00" in k:
        # C strings end at NUL: "a\0b" would lock "a".
        raise InvalidArgumentError("key: must not contain NUL characters")
    try:
        return k.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidArgumentError(
            "key: is not valid Unicode text (a lone surrogate at position %d)" % e.start
        ) from None


def config_from_environment() -> dict[str, Any]:
    """The configuration Go's ConfigFromEnv reads, from os.environ as it is
    now. The library's Go runtime copied the environment when it was loaded
    and never sees later changes (os.environ assignments, .env loaders), so
    the client reads it itself."""
    config: dict[str, Any] = {}
    for path, variable in CONFIG_ENVIRONMENT.items():
        value = os.environ.get(variable)
        if value:
            _set(config, path, value)
    return config


def _set(config: dict[str, Any], path: tuple[str, ...], value: str) -> None:
    for name in path[:-1]:
        config = config.setdefault(name, {})
    config[path[-1]] = value


def _get(config: dict[str, Any], path: tuple[str, ...]) -> Any:
    for name in path[:-1]:
        inner = config.get(name)
        if not isinstance(inner, dict):
            return None if inner is None else inner
        config = inner
    return config.get(path[-1])


def _with_environment_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """config with the members whose default is an environment variable
    (redis.url: $REDIS_URL) filled from os.environ when it does not set them,
    for the reason config_from_environment gives."""
    filled: dict[str, Any] | None = None
    for path, variable in CONFIG_DEFAULT_ENVIRONMENT.items():
        value = os.environ.get(variable)
        if not value or _get(config, path) not in (None, ""):
            continue
        if filled is None:
            filled = json.loads(json.dumps(config))  # a deep copy: the caller's dict is not ours
        _set(filled, path, value)
    return config if filled is None else filled


def config_json(config: Config | str | None) -> bytes:
    """The configuration as the JSON zl_open takes: a dict, a JSON string, or
    None for the environment. Its strings are checked here: text that is not
    valid Unicode would reach the library rewritten."""
    if config is None:
        obj: Any = config_from_environment()
    elif isinstance(config, str):
        try:
            obj = json.loads(config)
        except ValueError as e:
            raise InvalidArgumentError("config: is not valid JSON: %s" % e) from None
    elif isinstance(config, dict):
        obj = config
    else:
        raise InvalidArgumentError("config: want a dict, a JSON string or None, got %s" % type(config).__name__)
    if isinstance(obj, dict):
        obj = _with_environment_defaults(obj)
    _check_text(obj, [])
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def _check_text(value: object, path: list[str]) -> None:
    if isinstance(value, dict):
        for name, member in value.items():
            _check_text(name, path)
            _check_text(member, path + [str(name)])
    elif isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidArgumentError(
                "config member %r: is not valid Unicode text (a lone surrogate at position %d)"
                % (".".join(path), e.start)
            ) from None


def options(
    timeout: Seconds | None = None,
    retry_delay: Seconds | None = None,
    refresh: bool = False,
    refresh_every: Seconds | None = None,
) -> zl_options:
    """The zl_options of a run: None leaves an option at its default."""
    o = zl_options()
    if timeout is not None:
        o.timeout_ms = ms(timeout, "timeout")
        o.timeout_set = 1
    if retry_delay is not None:
        o.retry_delay_ms = ms(retry_delay, "retry_delay")
    o.refresh = 1 if refresh else 0
    if refresh_every is not None:
        o.refresh_every_ms = ms(refresh_every, "refresh_every")
    return o
