"""One compiled copy of the model's numba kernels per machine and version.

numba caches a compiled kernel beside its source file (or under ``NUMBA_CACHE_DIR`` by the
source's path), so the same code compiled again for each copy of it: the installed package,
the source tree the tests import and the copy inside an FMU. Here the kernels of this
package go instead to one folder per *content* of the package::

    <cache root>/kernels/belt_fmu-<package hash>/py<major><minor>-numba<version>/<subfolder>/

(:func:`kernel_folder`), where the cache root is ``$BELT_FMU_CACHE``, else
``$XDG_CACHE_HOME/belt_fmu``, else ``~/.cache/belt_fmu`` (:func:`cache_root`) and the package
hash covers every file an FMU ships (:data:`RUNTIME_FILES`, :func:`package_hash`). Every copy
of the same code therefore finds the same kernels, whatever its path, and a change to any of
those files starts a new folder: numba does not notice that a kernel's callee in another
module changed, the package hash does. The FMU ships such a folder
(:mod:`belt_fmu.build.fmu`) and seeds the per-user one with it.

numba keys each kernel in the folder by its signature and the machine it was compiled for
(CPU name and features), so one folder holds the kernels of several target levels.

The locator is numba's own extension point (``CacheImpl._locator_classes``), installed when
:mod:`belt_fmu.model` is imported, before any kernel is decorated; where the folder cannot be
written, numba's default places apply.

Compiling is announced (:func:`compiling`): a part of the model (:data:`PARTS`) whose kernels
this machine has not compiled yet says so before it compiles, with an estimate, and reports the
time after, through :data:`notify` (the command line prints it on stderr, the FMU slave gives
it to the host's logger). A part counts as compiled once a marker file for it and this
machine's target (:func:`target_key`) is in the kernel folder; the marker of a compile holds
the seconds it took, which scale the estimates of later compiles on the same machine
(:func:`estimate`).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
#: the package's files an FMU runs (the command line, plots, analysis and the builder stay behind)
RUNTIME_FILES = ("__init__.py", "kernel_cache.py", "inlining.py", "call_typing.py", "linking.py", "layout.py",
                 "slave.py", "fast_path.py", "simulation.py", "postprocess.py", "units.py", "files.py", "model/*.py")

#: the parts of the model compiled separately: what they are, and the seconds each took to
#: compile on the slower of the machines of docs/performance.md (the estimate said before
#: compiling on a machine that has compiled none yet: :func:`estimate`)
PARTS = {
    "discretized": ("the discretized belt model", 60.0),
    "discretized native step": ("the discretized model's native step", 7.0),
    "lumped": ("the lumped model", 29.0),
    "lumped native step": ("the lumped model's native step", 3.0),
    "analysis": ("the linear analysis", 20.0),
}

logger = logging.getLogger(__name__)


def _log(message: str) -> None:
    logger.info(message)


#: where announcements go, a function of the message: this module's logger at level INFO
#: (the command line prints it on stderr; the FMU slave warns the host itself)
notify = _log


def cache_root() -> Path:
    """The per-user cache folder: ``$BELT_FMU_CACHE``, else ``$XDG_CACHE_HOME/belt_fmu``, else
    ``~/.cache/belt_fmu``."""
    configured = os.environ.get("BELT_FMU_CACHE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "belt_fmu"


def runtime_sources(root: Path = PACKAGE_ROOT) -> list[Path]:
    """The package's runtime files (:data:`RUNTIME_FILES`) under ``root``, in a fixed order."""
    files = []
    for pattern in RUNTIME_FILES:
        files += sorted(root.glob(pattern))
    return files


@functools.lru_cache(maxsize=None)
def package_hash(root: Path = PACKAGE_ROOT) -> str:
    """12 hex digits of the SHA-256 of the runtime files' relative paths and contents."""
    digest = hashlib.sha256()
    for path in runtime_sources(root):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def version_folder_name() -> str:
    """``py<major><minor>-numba<version>``: kernels of one Python and numba version."""
    import numba

    return f"py{sys.version_info[0]}{sys.version_info[1]}-numba{numba.__version__}"


def kernel_folder() -> Path:
    """This package's kernel folder for this Python and numba (module docstring). The
    package's import name is part of it: numba records the types of the kernels' arguments
    by module name, so a copy imported under another name has kernels of its own."""
    top = __name__.split(".")[0]
    return cache_root() / "kernels" / f"{top}-{package_hash()}" / version_folder_name()


@functools.lru_cache(maxsize=None)
def _file_stamp(py_file: str) -> str:
    path = Path(py_file).resolve()
    if path in set(runtime_sources()):
        return package_hash()
    digest = hashlib.sha256(package_hash().encode())
    for sibling in sorted(path.parent.glob("*.py")):  # a kernel outside the runtime files and its neighbours
        digest.update(sibling.name.encode())
        digest.update(sibling.read_bytes())
    return digest.hexdigest()[:12]


def _locator_class():
    from numba.core import caching

    class KernelCacheLocator(caching._CacheLocator):
        """numba cache locator of this package's kernels: :func:`kernel_folder`, by content."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            relative = Path(py_file).resolve().parent.relative_to(PACKAGE_ROOT)
            self._cache_path = str(kernel_folder() / relative)

        def get_cache_path(self):
            return self._cache_path

        def get_source_stamp(self):
            return _file_stamp(self._py_file)

        def get_disambiguator(self):
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                Path(py_file).resolve().relative_to(PACKAGE_ROOT)
            except ValueError:
                return None  # not this package's: numba's own places
            locator = cls(py_func, py_file)
            try:
                locator.ensure_cache_path()
            except OSError:
                return None  # not writable: numba's own places
            return locator

    return KernelCacheLocator


def install() -> None:
    """Put this package's locator first in numba's list (once per process and package), make
    cache saves take turns between processes (:func:`_take_turns_saving`), and make numba
    compile for :func:`default_level` unless the process chose its target (numba's
    ``NUMBA_CPU_NAME``, or code compiled already)."""
    from numba.core import caching, config

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    if not any(getattr(cls, "_belt_fmu_root", None) == PACKAGE_ROOT for cls in impl._locator_classes):
        locator = _locator_class()
        locator._belt_fmu_root = PACKAGE_ROOT
        impl._locator_classes.insert(0, locator)
        _take_turns_saving(caching.IndexDataCacheFile)
        if config.CPU_NAME is None and not _codegen_started():
            select_target(default_level(host_target()["features"]))


#: the lock file in a kernel folder's subfolder that its cache saves take in turn
SAVE_LOCK = ".save.lock"


def _take_turns_saving(index_file_class) -> None:
    """numba saves a kernel to its cache by reading the source file's index, adding the
    kernel's entry and data file name, and writing both back: two processes saving kernels
    of one source file at once (``belt-fmu build`` compiles in several) could each drop the
    other's entry, or pair an entry with the other's data. Here a save first locks
    :data:`SAVE_LOCK` in the folder (POSIX ``flock``; elsewhere, or where the lock cannot be
    made, numba saves as it does)."""
    try:
        import fcntl
    except ImportError:
        return
    if getattr(index_file_class, "_belt_fmu_locked", False):
        return
    numba_save = index_file_class.save

    def save(self, key, data):
        try:
            lock = open(os.path.join(self._cache_path, SAVE_LOCK), "a")
        except OSError:
            return numba_save(self, key, data)
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            numba_save(self, key, data)

    index_file_class.save = save
    index_file_class._belt_fmu_locked = True


def target_key() -> str:
    """The machine numba compiles for in this process: its CPU name and features, hashed."""
    from numba.core.registry import cpu_target

    triple, cpu, features = cpu_target.target_context.codegen().magic_tuple()
    return hashlib.sha256(f"{triple}|{cpu}|{features}".encode()).hexdigest()[:12]


def marker_stem(part: str) -> str:
    """The start of ``part``'s marker files' names in a kernel folder's ``compiled`` folder
    (each ends in the target key it was compiled for)."""
    return part.replace(" ", "-")


def _marker(part: str) -> Path:
    return kernel_folder() / "compiled" / f"{marker_stem(part)}.{target_key()}"


def is_compiled(part: str) -> bool:
    """Whether this machine's kernel folder holds ``part``'s kernels (:data:`PARTS`)."""
    return _marker(part).exists()


def estimate(part: str) -> float:
    """[s] How long ``part`` (:data:`PARTS`) will take to compile here: its figure in
    :data:`PARTS` times the median ratio of measured to listed seconds of the compiles this
    machine's target has recorded in any kernel folder of the cache (an earlier version's
    compiles tell this machine's speed); the listed figure where it has recorded none."""
    parts = {marker_stem(name): name for name in PARTS}
    key = target_key()
    ratios = []
    for marker in (cache_root() / "kernels").glob(f"*/*/compiled/*.{key}"):
        name = parts.get(marker.name[:-len(key) - 1])
        try:
            seconds = float(marker.read_text() or "nan")
        except (OSError, ValueError):
            continue
        if name is not None and seconds > 0.0:
            ratios.append(seconds / PARTS[name][1])
    return PARTS[part][1] * (statistics.median(ratios) if ratios else 1.0)


@contextlib.contextmanager
def compiling(part: str, *, detect: bool = True):
    """Around code that loads or compiles ``part``'s kernels (:data:`PARTS`).

    With ``detect``, the compile is announced when numba starts one (its ``numba:compile``
    event, which loads from the cache do not raise); without (numba's ``cfunc``, which raises
    no event), whenever the part is not marked compiled. Either way the time follows when
    something compiled, and the part is marked compiled after it succeeded; a compile numba's
    event showed records its seconds in the marker (:func:`estimate`)."""
    from numba.core import event

    what = PARTS[part][0]
    started = []

    def announce():
        if not started:
            notify(f"compiling {what} for this machine, once: about {estimate(part):.0f} s")
            started.append(time.perf_counter())

    class Listener(event.Listener):
        def on_start(self, ev):
            announce()

        def on_end(self, ev):
            pass

    marked = is_compiled(part)
    if not (detect or marked):
        announce()
    with event.install_listener("numba:compile", Listener()) if detect else contextlib.nullcontext():
        yield
    seconds = time.perf_counter() - started[0] if started else None
    if seconds is not None:
        notify(f"compiled {what} in {seconds:.0f} s")
    if not marked:
        with contextlib.suppress(OSError):
            marker = _marker(part)
            marker.parent.mkdir(parents=True, exist_ok=True)
            # only a compile numba's event showed: without it, a load from the cache counts too
            marker.write_text(f"{seconds:.1f}" if detect and seconds is not None else "")


# -- kernels shipped in an FMU -------------------------------------------------------------

#: the portable target level the FMU's kernels are also compiled for: x86-64-v3 (AVX2, FMA;
#: x86-64 processors since 2013-2015), with the LLVM features a machine needs to run it
PORTABLE_CPU = "x86-64-v3"
PORTABLE_FEATURES = ("avx", "avx2", "bmi", "bmi2", "cx16", "f16c", "fma", "lzcnt", "movbe", "popcnt", "sse3",
                     "sse4.1", "sse4.2", "ssse3", "xsave")
#: the file that describes an FMU's kernels, beside their version folder
SHIPPED_INFO = "kernels.json"


def host_target() -> dict:
    """This process's Python and numba versions and the processor numba compiles for by
    default (LLVM's name and features): what :func:`fit` compares an FMU's kernels with."""
    import llvmlite.binding as llvm
    import numba
    from numba.core.codegen import get_host_cpu_features

    return {"python": f"{sys.version_info[0]}.{sys.version_info[1]}", "numba": numba.__version__,
            "cpu": llvm.get_host_cpu_name(), "features": get_host_cpu_features()}


def host_target_script() -> str:
    """:func:`host_target` as a script printing it (JSON), for another interpreter (``belt-fmu doctor``)."""
    import inspect

    return f"import json, sys\n{inspect.getsource(host_target)}\nprint(json.dumps(host_target()))\n"


def missing_portable_features(features: str) -> set[str]:
    """The features of :data:`PORTABLE_FEATURES` that a processor with LLVM's ``features``
    string (``"+avx2,-avx512f,..."``) lacks: it cannot run the portable kernels if any."""
    return set(PORTABLE_FEATURES) - {item[1:] for item in features.split(",") if item.startswith("+")}


def default_level(features: str) -> str:
    """The target level a processor with LLVM's ``features`` compiles the kernels for:
    ``"portable"`` where it runs that level and has no wider vectors (no AVX-512), since the
    processor's own tuning measured no faster there (docs/performance.md) and one level then
    serves ``simulate``, the tests and the FMU alike; ``"host"`` otherwise."""
    if missing_portable_features(features) or "+avx512f" in features.split(","):
        return "host"
    return "portable"


def _codegen_started() -> bool:
    from numba.core.registry import cpu_target

    return "_toplevel_target_context" in vars(cpu_target)


def select_target(level: str) -> None:
    """Make numba compile for ``level`` in this process: ``"portable"`` (:data:`PORTABLE_CPU`)
    or ``"host"`` (numba's default). Only before numba has compiled anything here."""
    from numba.core import config

    cpu, features = (PORTABLE_CPU, "") if level == "portable" else (None, None)
    if (config.CPU_NAME, config.CPU_FEATURES) == (cpu, features):
        return
    if _codegen_started():
        raise RuntimeError("numba has compiled in this process already: its target cannot change")
    config.CPU_NAME, config.CPU_FEATURES = cpu, features


#: why this process compiles the kernels an FMU shipped (set by :func:`use_shipped_kernels`)
compile_reason: str | None = None


def fit(info: dict, host: dict) -> tuple[str | None, str]:
    """Which of an FMU's shipped target levels (its :data:`SHIPPED_INFO` ``info``) runs on
    the machine and interpreter ``host`` (:func:`host_target`): ``("host", why)`` the build
    machine's own (shipped where its :func:`default_level` was ``"host"``: ``tuned``),
    ``("portable", why)``, or ``(None, why not)``."""
    if (info.get("python"), info.get("numba")) != (host["python"], host["numba"]):
        return None, (f"its kernels are for Python {info.get('python')} with numba {info.get('numba')}, "
                      f"this is Python {host['python']} with numba {host['numba']}")
    if info.get("tuned", True) and (info.get("cpu"), info.get("features")) == (host["cpu"], host["features"]):
        return "host", f"its kernels were compiled for this processor ({host['cpu']})"
    missing = missing_portable_features(host["features"])
    if info.get("portable") and not missing:
        return "portable", f"its portable kernels ({PORTABLE_CPU}) run on this processor ({host['cpu']})"
    if info.get("portable"):
        return None, f"this processor ({host['cpu']}) lacks {', '.join(sorted(missing))} for its portable kernels"
    return None, f"its kernels are for another processor ({info.get('cpu')}), this is {host['cpu']}"


def use_shipped_kernels(shipped: Path) -> str | None:
    """Seed this package's kernel folder from an FMU's ``shipped`` kernels (files it does not
    have yet) and make numba compile for the level that fits this machine (:func:`fit`).
    Returns None when the shipped kernels fit, else why they do not (the kernels then
    compile, once, on first use); also kept in :data:`compile_reason`."""
    global compile_reason
    try:
        info = json.loads((shipped / SHIPPED_INFO).read_text())
    except (OSError, ValueError):
        compile_reason = "the FMU carries no compiled kernels"
        return compile_reason
    level, why = fit(info, host_target())
    if level is not None:
        try:
            select_target(level)
        except RuntimeError:
            level, why = None, "the host has compiled numba code in this process already, for another target"
    if level is not None:
        source = shipped / version_folder_name()
        target = kernel_folder()
        with contextlib.suppress(OSError):
            for path in source.rglob("*"):
                destination = target / path.relative_to(source)
                if path.is_file() and not destination.exists():
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    partial = destination.with_name(destination.name + f".{os.getpid()}.part")
                    shutil.copyfile(path, partial)
                    os.replace(partial, destination)  # a concurrent reader sees all of it or nothing
    compile_reason = None if level is not None else why
    return compile_reason
