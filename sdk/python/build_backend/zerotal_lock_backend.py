"""zerotal_lock_backend: builds the zerotal-lock wheel with the standard
library alone, bundling libzerotal_lock.so.

It is the PEP 517 backend pyproject.toml names (pip wheel, pip install),
and a command for the Makefile (make wheel):

    python3 build_backend/zerotal_lock_backend.py --library PATH [--out DIR]

Why a backend of our own: the wheel is a zip of the package, one shared
library and four metadata files, which the standard library writes in a
hundred lines; setuptools would have to come from PyPI (unreachable where
this builds) or from the distribution, in whatever version it ships, and
would still need a custom step to put a library built by Go in the wheel.

The wheel is tagged py3-none-<platform>: the package is pure Python for any
Python 3 and uses no Python C API, so only the library's platform matters,
read from its ELF header. The tag is the plain linux_<machine> one: a
manylinux tag promises a glibc baseline that only auditwheel-style checks
can vouch for. The wheel is reproducible: its entries are sorted and dated
SOURCE_DATE_EPOCH (default 1980-01-01), so the same inputs give the same
bytes.
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)  # sdk/python
REPOSITORY = os.path.dirname(os.path.dirname(PROJECT))
PACKAGE = "zerotal_lock"
LIBRARY = "libzerotal_lock.so"
BUNDLED = PACKAGE + "/_lib/" + LIBRARY  # where zerotal_lock/_library.py looks first

# The [project] keys this backend writes into METADATA; any other is an
# error, so that pyproject.toml never claims what the wheel does not have.
_PROJECT_KEYS = {
    "name",
    "dynamic",
    "description",
    "readme",
    "requires-python",
    "dependencies",
    "keywords",
    "classifiers",
    "urls",
}

# ELF (e_machine, class, data) to the machine name of a platform tag.
_MACHINES = {
    (62, 2, 1): "x86_64",
    (183, 2, 1): "aarch64",
    (3, 1, 1): "i686",
    (40, 1, 1): "armv7l",
    (21, 2, 1): "ppc64le",
    (22, 2, 2): "s390x",
    (243, 2, 1): "riscv64",
}


class UnsupportedOperation(Exception):
    """PEP 517's answer to a hook this backend cannot serve."""


class BuildError(Exception):
    """The wheel cannot be built; the message says why and what to do."""


# PEP 517 hooks.


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """Build the wheel into wheel_directory and return its file name. The
    library is config_settings["library"] (pip: --config-settings
    library=PATH), or one built from sdk/cshared with Go."""
    library = (config_settings or {}).get("library")
    if library:
        return write_wheel(wheel_directory, os.path.abspath(library))
    with tempfile.TemporaryDirectory(prefix="zerotal-lock-build-") as tmp:
        return write_wheel(wheel_directory, build_library(tmp))


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    raise UnsupportedOperation(
        "zerotal-lock has no source distribution: its library is built from the "
        "Go modules of the whole repository; build a wheel instead (make wheel)"
    )


# The wheel.


def build_library(directory: str) -> str:
    """Build libzerotal_lock.so from sdk/cshared into directory, as make
    cshared does, and return its path."""
    source = os.path.join(REPOSITORY, "sdk", "cshared")
    go = shutil.which("go")
    if go is None or not os.path.isdir(source):
        raise BuildError(
            "no library to bundle: pass one (pip: --config-settings library=PATH; "
            "make wheel does) or build from a checkout of the repository with Go on the PATH"
        )
    out = os.path.join(directory, LIBRARY)
    print("zerotal_lock_backend: building %s with %s" % (LIBRARY, go), file=sys.stderr)
    subprocess.run(
        [go, "build", "-buildmode=c-shared", "-ldflags=-s -w", "-o", out, "."],
        cwd=source,
        check=True,
        stdout=sys.stderr,
    )
    return out


def write_wheel(directory: str, library: str) -> str:
    """Write the wheel bundling library into directory; return its file
    name."""
    project = read_project()
    version = read_version()
    check_library(library)
    tag = "py3-none-" + platform(library)
    dist = re.sub(r"[-_.]+", "_", project["name"]).lower()
    dist_info = "%s-%s.dist-info" % (dist, version)

    files: list[tuple[str, bytes, int]] = []  # name, content, mode
    for name in package_files():
        with open(os.path.join(PROJECT, name), "rb") as f:
            files.append((name, f.read(), 0o644))
    files.append((PACKAGE + "/VERSION", (version + "\n").encode(), 0o644))
    with open(library, "rb") as f:
        files.append((BUNDLED, f.read(), 0o755))
    files.append((dist_info + "/METADATA", metadata(project, version).encode("utf-8"), 0o644))
    files.append((dist_info + "/WHEEL", wheel_file(tag).encode(), 0o644))
    files.append((dist_info + "/top_level.txt", (PACKAGE + "\n").encode(), 0o644))
    record = "".join("%s,sha256=%s,%d\n" % (name, digest(data), len(data)) for name, data, _ in files)
    record += dist_info + "/RECORD,,\n"
    files.append((dist_info + "/RECORD", record.encode(), 0o644))

    name = "%s-%s-%s.whl" % (dist, version, tag)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    partial = path + ".partial"
    stamp = time.gmtime(max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800))[:6]
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for entry, data, mode in files:
            info = zipfile.ZipInfo(entry, date_time=stamp)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(partial, path)
    return name


def package_files() -> list[str]:
    """The package's files, relative to sdk/python, sorted: its modules and
    py.typed; never a library or bytecode left in the tree."""
    out = []
    for root, dirs, names in os.walk(os.path.join(PROJECT, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "_lib"))
        for n in names:
            if n.endswith(".py") or n == "py.typed":
                out.append(os.path.relpath(os.path.join(root, n), PROJECT).replace(os.sep, "/"))
    if PACKAGE + "/py.typed" not in out:
        raise BuildError("%s/py.typed is missing: the package would not be typed" % PACKAGE)
    return sorted(out)


def read_project() -> dict[str, Any]:
    """pyproject.toml's [project] table, checked to hold only what this
    backend writes."""
    try:
        import tomllib
    except ImportError:
        raise BuildError("building the wheel needs Python 3.11 or later (tomllib); the wheel installs on 3.10 and later") from None
    with open(os.path.join(PROJECT, "pyproject.toml"), "rb") as f:
        project: dict[str, Any] = tomllib.load(f)["project"]
    unknown = sorted(set(project) - _PROJECT_KEYS)
    if unknown:
        raise BuildError("pyproject.toml: [project] keys this backend does not write: %s" % ", ".join(unknown))
    if project.get("dynamic") != ["version"]:
        raise BuildError('pyproject.toml: the version comes from VERSION: want dynamic = ["version"]')
    if project.get("dependencies"):
        raise BuildError("pyproject.toml: the package has no dependencies, and this backend writes none")
    return project


def read_version() -> str:
    """The repository's VERSION (v1.2.3, v1.2.3-rc.1) as a Python version
    (1.2.3, 1.2.3rc1)."""
    with open(os.path.join(REPOSITORY, "VERSION"), encoding="utf-8") as f:
        raw = f.read().strip()
    m = re.fullmatch(r"v?(\d+\.\d+\.\d+)(?:-(alpha|beta|rc)\.(\d+))?", raw)
    if m is None:
        raise BuildError("VERSION: %r is not vMAJOR.MINOR.PATCH[-alpha.N|-beta.N|-rc.N]" % raw)
    release, pre, n = m.groups()
    return release + ({"alpha": "a", "beta": "b", "rc": "rc"}[pre] + n if pre else "")


def platform(library: str) -> str:
    """The platform tag of library, from its ELF header."""
    with open(library, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        raise BuildError("%s is not an ELF file: the wheel bundles a Linux shared library" % library)
    elf_class, data = head[4], head[5]
    e_type, e_machine = struct.unpack("<HH" if data == 1 else ">HH", head[16:20])
    if e_type != 3:
        raise BuildError("%s is not a shared library (ELF type %d)" % (library, e_type))
    machine = _MACHINES.get((e_machine, elf_class, data))
    if machine is None:
        raise BuildError("%s: no platform tag for ELF machine %d" % (library, e_machine))
    return "linux_" + machine


def check_library(library: str) -> None:
    """Refuse a library whose C ABI is not the one the package's prototypes
    were generated for. It is loaded to ask, when it runs here."""
    with open(os.path.join(PROJECT, PACKAGE, "_abi_gen.py"), encoding="utf-8") as f:
        m = re.search(r"^ABI_VERSION = (\d+)$", f.read(), re.M)
    if m is None:
        raise BuildError("%s/_abi_gen.py has no ABI_VERSION: run make generate" % PACKAGE)
    want = int(m.group(1))
    if not os.path.isfile(library):
        raise BuildError("%s: no such library (make cshared builds one)" % library)
    if platform(library) != "linux_" + os.uname().machine:
        return  # built for another machine: it cannot be loaded here
    got = ctypes.CDLL(library).zl_abi_version()
    if got != want:
        raise BuildError("%s implements C ABI version %d; the package needs %d: rebuild it" % (library, got, want))


def metadata(project: dict[str, Any], version: str) -> str:
    """The METADATA file (core metadata 2.1) of project."""
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + project["name"],
        "Version: " + version,
        "Summary: " + project["description"],
    ]
    if project.get("keywords"):
        lines.append("Keywords: " + ",".join(project["keywords"]))
    for label, url in sorted(project.get("urls", {}).items()):
        lines.append("Project-URL: %s, %s" % (label, url))
    lines += ["Classifier: " + c for c in project.get("classifiers", [])]
    if project.get("requires-python"):
        lines.append("Requires-Python: " + project["requires-python"])
    body = ""
    readme = project.get("readme")
    if readme:
        with open(os.path.join(PROJECT, readme), encoding="utf-8") as f:
            body = f.read()
        lines.append("Description-Content-Type: " + ("text/markdown" if readme.endswith(".md") else "text/plain"))
    return "\n".join(lines) + "\n\n" + body


def wheel_file(tag: str) -> str:
    return "Wheel-Version: 1.0\nGenerator: zerotal_lock_backend\nRoot-Is-Purelib: false\nTag: %s\n" % tag


def digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the zerotal-lock wheel, bundling libzerotal_lock.so.")
    parser.add_argument("--library", help="the library to bundle (default: build one from sdk/cshared with Go)")
    parser.add_argument("--out", default=os.path.join(PROJECT, "dist"), help="the directory to write the wheel to")
    args = parser.parse_args(argv)
    try:
        name = build_wheel(args.out, {"library": args.library} if args.library else None)
    except (BuildError, OSError, subprocess.CalledProcessError) as e:
        print("zerotal_lock_backend: %s" % e, file=sys.stderr)
        return 1
    print(os.path.join(args.out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
