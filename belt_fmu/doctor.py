"""``belt-fmu doctor [FMU]``: can this machine run a belt_fmu FMU in a native FMI host?

Checks what docs/native-hosts.md lists: the platform has a binary in the FMU; the C library
(glibc) and C++ library (libstdc++) are new enough for the FMU's linux64 binaries; a Python
the FMU's native loader would choose (the same candidates in the same order, asked the same
way: the loader's probe script) exists and has a shared libpython and the packages; whether
the FMU's compiled kernels fit that Python and this processor (else its first load compiles
them); and, for building FMUs with the loader, a C compiler. Without an FMU the checks are for an FMU that
``belt-fmu build`` would make here (recorded interpreter: the one running this command).

Each check is a :class:`Check`; :func:`run_checks` gives them all, :func:`report` the text.
"""
from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from . import kernel_cache
from .build import native
from .build.slave_script import KERNELS, REQUIRED_PACKAGES

MINIMUM_PYTHON = (3, 10)


@dataclasses.dataclass(frozen=True)
class Check:
    what: str
    ok: bool | None  # None: information only
    detail: str


@dataclasses.dataclass
class FmuFacts:
    """What the checks need to know of an FMU."""

    platforms: list[str]  # binaries/<platform> folders
    loader: bool  # the linux64 binary is belt_fmu's native loader
    linux_binaries: dict[str, bytes]  # name -> content
    recorded_python: str | None
    packages: tuple[str, ...]
    kernels: dict | None = None  # the FMU's compiled kernels (kernel_cache.SHIPPED_INFO), if any


def fmu_facts(path: Path) -> FmuFacts:
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        platforms = sorted({n.split("/")[1] for n in names if n.startswith("binaries/") and n.count("/") >= 2})
        linux = {Path(n).name: z.read(n) for n in names if n.startswith("binaries/linux64/") and n.endswith(".so")}
        settings = {}
        if f"resources/{native.SETTINGS_RESOURCE}" in names:
            for line in z.read(f"resources/{native.SETTINGS_RESOURCE}").decode().splitlines():
                key, _, value = line.partition("=")
                if not line.startswith("#") and value:
                    settings[key.strip()] = value.strip()
        info = f"resources/{KERNELS}/{kernel_cache.SHIPPED_INFO}"
        kernels = json.loads(z.read(info)) if info in names else None
    return FmuFacts(platforms, native.PYTHONFMU_LIBRARY in linux, linux, settings.get("python"),
                    tuple(settings.get("packages", " ".join(REQUIRED_PACKAGES)).split()), kernels)


def built_here() -> FmuFacts:
    """An FMU as ``belt-fmu build`` would make it on this machine (PythonFMU's installed
    binaries, the loader compiled now if a compiler is there)."""
    import pythonfmu

    binaries = Path(pythonfmu.__file__).parent / "resources" / "binaries"
    linux = {native.PYTHONFMU_LIBRARY: (binaries / "linux64" / "libpythonfmu-export.so").read_bytes()}
    loader = False
    if native.compiler() is not None:
        with tempfile.TemporaryDirectory(prefix="belt_fmu_doctor_") as tmp:
            try:
                linux["BeltDrive.so"] = native.compile_loader(Path(tmp) / "loader.so").read_bytes()
                loader = True
            except native.NoCompiler:
                pass
    return FmuFacts(["linux64", "win64"], loader, linux, sys.executable, REQUIRED_PACKAGES)


def probe(python: str, packages: tuple[str, ...]) -> dict[str, str] | str:
    """What the loader's probe script says of ``python`` (key -> value), or why it failed."""
    try:
        run = subprocess.run([python, "-E", str(native.PROBE_SOURCE), *packages], capture_output=True, text=True,
                             timeout=60)
    except OSError as err:
        return f"cannot run it ({err.strerror})"
    except subprocess.TimeoutExpired:
        return "it did not answer within 60 s"
    answer = dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)
    return answer if "version" in answer else f"it did not answer as a Python does (exit status {run.returncode})"


def python_candidates(recorded: str | None) -> list[tuple[str, str | None]]:
    """The loader's candidates in its order: (what, path or None)."""
    candidates = [("$BELT_FMU_PYTHON", os.environ.get("BELT_FMU_PYTHON") or None),
                  ("the interpreter recorded when the FMU was built", recorded)]
    for name in ("python3", "python"):
        candidates.append((f"{name} on PATH", shutil.which(name, path=os.environ.get("PATH") or os.defpath)))
    return candidates


def python_checks(facts: FmuFacts) -> tuple[list[Check], str | None]:
    """The checks of the loader's Python candidates, and the one it chooses (None: none fits)."""
    checks, chosen = [], None
    for what, path in python_candidates(facts.recorded_python):
        if path is None:
            checks.append(Check(f"Python: {what}", None, "not set" if what.startswith("$") else "none"))
            continue
        answer = probe(path, facts.packages)
        if isinstance(answer, str):
            checks.append(Check(f"Python: {what} = {path}", None, answer))
            continue
        version = tuple(int(x) for x in answer["version"].split(".")[:2])
        problems = []
        if version < MINIMUM_PYTHON:
            problems.append(f"Python {answer['version']}, needs >= {'.'.join(map(str, MINIMUM_PYTHON))}")
        if not answer.get("libpython") and sys.platform.startswith("linux"):
            problems.append("no shared libpython (a Python built without --enable-shared; install your "
                            f"distribution's libpython{version[0]}.{version[1]})")
        if answer.get("missing"):
            problems.append(f"lacks {answer['missing']}: {path} -m pip install {answer['missing']}")
        if not problems and chosen is None:
            chosen = path
            checks.append(Check(f"Python: {what} = {path}", True, f"Python {answer['version']}, "
                                f"{answer['libpython'] or 'python3.dll'}: the FMU will use it"))
        else:  # the loader passes over it: information, not a missing need
            detail = "; ".join(problems) or f"Python {answer['version']}: usable (an earlier candidate is chosen)"
            checks.append(Check(f"Python: {what} = {path}", None, ("skipped: " if problems else "") + detail))
    if chosen is None:
        checks.append(Check("a Python for the FMU", False,
                            f"none of the candidates fits: install {' '.join(facts.packages)} into one "
                            f"(python3 -m pip install {' '.join(facts.packages)}) or set BELT_FMU_PYTHON to "
                            "the python of an environment that has them"))
    return checks, chosen


def kernel_check(facts: FmuFacts, python: str) -> Check:
    """Whether the FMU's compiled kernels fit ``python`` (the one the FMU will use) on this
    machine: loaded at once, or compiled at the first load (kernel_cache.fit)."""
    what = "compiled kernels"
    compiles = (f"the first load on this machine compiles them (about {kernel_cache.PARTS['discretized'][1]:.0f} s), "
                "later loads use them")
    if facts.kernels is None:
        return Check(what, None, f"the FMU carries none: {compiles}")
    try:
        run = subprocess.run([python, "-E", "-c", kernel_cache.host_target_script()], capture_output=True, text=True,
                             timeout=60)
        host = json.loads(run.stdout.splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return Check(what, None, f"{python} could not say which processor numba compiles for")
    level, why = kernel_cache.fit(facts.kernels, host)
    if level is None:
        return Check(what, None, f"{why}: {compiles}")
    return Check(what, True, f"{why}: the FMU starts without compiling")


def library_path(name: str) -> str | None:
    """Where the dynamic linker finds library ``name`` (loaded into this process to see)."""
    try:
        ctypes.CDLL(name)
    except OSError:
        return None
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if Path(path).name.startswith(name.split(".so")[0] + ".so"):
                return path
    return None


def linux_library_checks(facts: FmuFacts) -> list[Check]:
    glibc, cxx = {}, {}  # binary -> newest version it needs
    for name, binary in facts.linux_binaries.items():
        needs = native.required_versions(binary)
        glibc[name] = native.newest([v for versions in needs.values() for v in versions], "GLIBC_")
        cxx[name] = native.newest(needs.get("libstdc++.so.6", []), "GLIBCXX_")
    checks = []
    glibc_needed = native.newest([v for v in glibc.values() if v], "GLIBC_")
    have = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    if glibc_needed:
        per_binary = ", ".join(f"{name} {v.removeprefix('GLIBC_')}" for name, v in glibc.items() if v)
        if have and have.startswith("glibc "):
            ok = _version(have.split()[1]) >= _version(glibc_needed.removeprefix("GLIBC_"))
            checks.append(Check("C library", ok, f"{have}; the FMU's linux64 binaries need glibc >= "
                                                 f"{glibc_needed.removeprefix('GLIBC_')} ({per_binary})"))
        else:
            checks.append(Check("C library", False, f"not glibc ({have}); the binaries need glibc >= "
                                                    f"{glibc_needed.removeprefix('GLIBC_')} ({per_binary})"))
    cxx_needed = native.newest([v for v in cxx.values() if v], "GLIBCXX_")
    if cxx_needed:
        path = library_path("libstdc++.so.6")
        if path is None:
            checks.append(Check("C++ library", False, f"no libstdc++.so.6; PythonFMU's binary needs {cxx_needed} "
                                                      "(Debian/Ubuntu: apt install libstdc++6)"))
        elif cxx_needed.encode() + b"\0" in Path(path).read_bytes():
            checks.append(Check("C++ library", True, f"{path} provides {cxx_needed}, which PythonFMU's binary needs"))
        else:
            checks.append(Check("C++ library", False, f"{path} lacks {cxx_needed}, which PythonFMU's binary needs: "
                                                      "install the C++ runtime of GCC >= 12 (libstdc++6)"))
    return checks


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(".") if x.isdigit())


def run_checks(fmu: str | None = None) -> list[Check]:
    facts = fmu_facts(Path(fmu)) if fmu else built_here()
    system, machine = platform.system(), platform.machine().lower()
    here = {("Linux", "x86_64"): "linux64", ("Windows", "amd64"): "win64"}.get((system, machine))
    checks = [Check("platform", here in facts.platforms,
                    f"{system} {machine}" + (f": the FMU has a {here} binary" if here in facts.platforms else
                                             f": the FMU has binaries for {', '.join(facts.platforms)} only"))]
    if here == "linux64":
        checks.append(Check("native loader", facts.loader,
                            "the FMU finds its Python by itself in any FMI host" if facts.loader else
                            "the FMU was built without the native loader (no C compiler at build time): native "
                            "hosts need LD_PRELOAD of libpython and the right Python on PATH; build it again where "
                            "cc is installed"))
        checks += linux_library_checks(facts)
    elif here == "win64":
        checks.append(Check("Windows", None, "the win64 binary is PythonFMU's own: it needs python3.dll of a "
                                             "Python >= 3.10 with the packages on PATH, and the Microsoft Visual "
                                             "C++ 2015-2022 runtime"))
    found, chosen = python_checks(facts)
    checks += found
    if fmu is not None and chosen is not None:
        checks.append(kernel_check(facts, chosen))
    if fmu is None:
        cc = native.compiler()
        checks.append(Check("C compiler (to build FMUs with the native loader)", cc is not None,
                            cc or "none: install gcc (Debian/Ubuntu: apt install gcc) or set CC"))
    return checks


def report(checks: list[Check]) -> str:
    mark = {True: "ok     ", False: "MISSING", None: "       "}
    lines = [f"{mark[c.ok]} {c.what}: {c.detail}" for c in checks]
    missing = [c for c in checks if c.ok is False]
    lines.append("")
    lines.append("this machine can run the FMU in native hosts" if not missing else
                 f"{len(missing)} need{'' if len(missing) == 1 else 's'} not met (MISSING above)")
    return "\n".join(lines)
