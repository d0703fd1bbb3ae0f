"""The compiled kernels: one kernel folder per package content (belt_fmu.kernel_cache), the
kernels an FMU ships, and what a machine that cannot use them is told.

The FMU tests load a copy of the session's FMU in a fresh process that cannot import an
installed belt_fmu, with an empty per-user cache (BELT_FMU_CACHE), as on a colleague's
machine, and watch numba's compile events (``numba:compile``, raised only when a kernel is compiled, not
when it is loaded from a cache)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from belt_fmu import kernel_cache

#: run in a fresh process: load the FMU with fmpy, initialize it (with the model parameter
#: argv[2] if given), take a 1 ms step; print the log messages and compile events in order.
#: With argv[3] = "stop", the process ends as the model's first kernel starts compiling.
FRESH_HOST = r"""
import json, os, sys
from numba.core import event


class NoBeltFmuHere:
    # a machine without belt_fmu installed: the FMU runs its own copy of the package
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "belt_fmu":
            raise ModuleNotFoundError("no belt_fmu in this host's environment")
        return None


sys.meta_path.insert(0, NoBeltFmuHere)

events = []


def finish(**more):
    print(json.dumps({"events": events, **more}), flush=True)
    os._exit(0)  # PythonFMU's instance is not freed: the process ends here, as a host's would


class Compiles(event.Listener):
    def on_start(self, ev):
        events.append(["compile", ev.data["dispatcher"].py_func.__module__])
        if sys.argv[3] == "stop" and events[-1][1].startswith("belt_fmu"):
            finish(stopped=True)

    def on_end(self, ev):
        pass


event.register("numba:compile", Compiles())
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave, defaultCallbacks, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE

path, model = sys.argv[1], sys.argv[2]
description = read_model_description(path)
vr = {v.name: v.valueReference for v in description.modelVariables}


def logger(component, instance, status, category, message):
    events.append(["log", status, message.decode()])


callbacks = fmi2CallbackFunctions()
callbacks.logger = fmi2CallbackLoggerTYPE(logger)
callbacks.allocateMemory, callbacks.freeMemory = defaultCallbacks.allocateMemory, defaultCallbacks.freeMemory
fmu = FMU2Slave(guid=description.guid, unzipDirectory=extract(path),
                modelIdentifier=description.coSimulation.modelIdentifier, instanceName="fresh")
fmu.instantiate(callbacks=callbacks, loggingOn=True)
fmu.setupExperiment(startTime=0.0)
fmu.enterInitializationMode()
if model:
    fmu.setString([vr["model"]], [model])
fmu.exitInitializationMode()
fmu.doStep(currentCommunicationPoint=0.0, communicationStepSize=1e-3)
torque = fmu.getReal([vr["crank_torque"]])[0]
native = sys.modules.get("belt_fmu.model.discretized_native")
finish(crank_torque=torque, native_cache_hits=None if native is None else native.advance.cache_hits)
"""


def run_fresh_host(fmu, cache, model: str = "", stop: bool = False) -> dict:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("PYTHON", "NUMBA_"))}
    env["BELT_FMU_CACHE"] = str(cache)
    run = subprocess.run([sys.executable, "-c", FRESH_HOST, str(fmu), model, "stop" if stop else "run"],
                         capture_output=True, text=True,
                         env=env, cwd=cache.parent, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def with_kernel_info(fmu, copy, **changes):
    """A copy of ``fmu`` whose kernels.json has ``changes`` (as if built elsewhere)."""
    info_name = "resources/kernels/" + kernel_cache.SHIPPED_INFO
    with zipfile.ZipFile(fmu) as source, zipfile.ZipFile(copy, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            content = source.read(item.filename)
            if item.filename == info_name:
                content = json.dumps({**json.loads(content), **changes}).encode()
            target.writestr(item, content)
    return copy


@pytest.mark.parametrize("built_on", ["this processor", "another processor"])
def test_shipped_kernels_load_in_an_empty_cache_without_compiling(fmu, tmp_path, built_on):
    """The session's FMU on "another machine" with an empty cache: built on this processor
    (its own kernels are loaded), or on another (its portable x86-64-v3 kernels are, and
    run here): nothing of the model compiles, the native step's C function comes from the
    shipped cache, and the host hears of no compile. Without the shipped kernels (or with a
    locator that missed them) the discretized model's kernels would compile here."""
    copy = tmp_path / "Copy.fmu"
    if built_on == "this processor":
        shutil.copy(fmu, copy)
    else:
        missing = kernel_cache.missing_portable_features(kernel_cache.host_target()["features"])
        if missing:
            pytest.skip(f"this processor lacks {', '.join(sorted(missing))}: it cannot run x86-64-v3 code")
        with_kernel_info(fmu, copy, cpu="another-cpu")
    result = run_fresh_host(copy, tmp_path / "cache")
    compiles = [e for e in result["events"] if e[0] == "compile" and e[1].startswith("belt_fmu")]
    assert compiles == []
    assert result["native_cache_hits"] == 1  # the fast path's cfunc, loaded, not compiled
    assert not [e for e in result["events"] if e[0] == "log" and "compiling" in e[2]]
    assert 0.0 < result["crank_torque"] < 100.0  # N m: the built-in drive at 800 rpm runs
    assert (tmp_path / "cache" / "kernels").is_dir()  # seeded from the FMU


@pytest.mark.parametrize("model", ["", "lumped"])
def test_kernels_that_do_not_fit_compile_after_the_host_is_told(fmu, tmp_path, model):
    """An FMU whose kernels are for another numba (as on a machine with another version):
    the host is warned that the model it chose will compile and why (at fmi2Instantiate for
    the start values' model, and again at fmi2SetString when it chooses the lumped one), and
    the model's kernels then start compiling (at initialization; the host stops
    there, the compile itself is the benchmark's)."""
    copy = with_kernel_info(fmu, tmp_path / "Other.fmu", numba="0.0.1")
    result = run_fresh_host(copy, tmp_path / "cache", model=model, stop=True)
    assert result.get("stopped")  # a kernel of the model started compiling
    events = result["events"]
    first_compile = next(i for i, e in enumerate(events) if e[0] == "compile" and e[1].startswith("belt_fmu"))
    told = [i for i, e in enumerate(events[:first_compile]) if e[0] == "log" and "compiling" in e[2]]
    what, estimate = kernel_cache.PARTS[model or "discretized"]
    assert len(told) == (2 if model else 1)
    assert events[told[-1]][2].startswith(f"compiling {what} for this machine, once, when initialization ends: "
                                          f"about {estimate:.0f} s")
    assert all(events[i][1] == 1 for i in told)  # fmi2Warning: hosts show it even with logging off
    assert "numba 0.0.1" in events[told[-1]][2]  # the reason


def test_fit_chooses_the_build_machines_kernels_the_portable_ones_or_none():
    """kernel_cache.fit on the machines it distinguishes (a host as host_target gives it)."""
    host = {"python": "3.11", "numba": "0.68.1", "cpu": "znver3",
            "features": "+64bit," + ",".join("+" + f for f in kernel_cache.PORTABLE_FEATURES) + ",-avx512f"}
    built_here = {**host, "portable": True}
    assert kernel_cache.fit(built_here, host)[0] == "host"
    assert kernel_cache.fit({**built_here, "cpu": "znver5"}, host)[0] == "portable"
    old = {**host, "cpu": "sandybridge", "features": host["features"].replace("+avx2", "-avx2")}
    level, why = kernel_cache.fit({**built_here, "cpu": "znver5"}, old)
    assert level is None and "avx2" in why
    level, why = kernel_cache.fit(built_here, {**host, "python": "3.12"})
    assert level is None and "Python 3.11" in why and "Python 3.12" in why
    assert kernel_cache.fit({**built_here, "cpu": "znver5", "portable": False}, host)[0] is None
    assert kernel_cache.fit({**built_here, "tuned": False}, host)[0] == "portable"  # built here, portable only


def test_processors_without_wider_vectors_compile_the_portable_level():
    """kernel_cache.default_level: the portable level where it runs and the processor has no
    AVX-512 (one level then serves simulate, the tests and the FMU); the processor's own
    where it has AVX-512, or lacks a feature of the portable level."""
    avx2 = "+64bit," + ",".join("+" + f for f in kernel_cache.PORTABLE_FEATURES)
    assert kernel_cache.default_level(avx2 + ",-avx512f") == "portable"
    assert kernel_cache.default_level(avx2 + ",+avx512f") == "host"
    assert kernel_cache.default_level(avx2.replace("+avx2", "-avx2")) == "host"


def test_copies_of_the_package_share_one_kernel_folder(tmp_path):
    """The kernel folder follows the runtime files' content, not their place: a copy of the
    package elsewhere (as an FMU carries it) has the same package hash; a changed file
    gives another."""
    copies = {name: tmp_path / name / "belt_fmu" for name in ("same", "changed")}
    for copy in copies.values():
        for source in kernel_cache.runtime_sources():
            target = copy / source.relative_to(kernel_cache.PACKAGE_ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    belt = copies["changed"] / "model" / "belt.py"
    belt.write_text(belt.read_text() + "\n# changed\n")
    assert kernel_cache.package_hash(copies["same"]) == kernel_cache.package_hash()
    assert kernel_cache.package_hash(copies["changed"]) != kernel_cache.package_hash()


@pytest.mark.parametrize("part", list(kernel_cache.PARTS))
def test_compiling_is_announced_with_an_estimate(part, monkeypatch, tmp_path):
    """compiling() without event detection (numba's cfunc raises none) announces a part not
    yet marked compiled, with its estimate, and reports the time after."""
    said = []
    monkeypatch.setattr(kernel_cache, "notify", said.append)
    monkeypatch.setattr(kernel_cache, "cache_root", lambda: tmp_path / "cache")  # no compile recorded
    monkeypatch.setattr(kernel_cache, "_marker", lambda name: tmp_path / name)
    with kernel_cache.compiling(part, detect=False):
        pass
    assert (tmp_path / part).exists()  # marked compiled: said once per machine
    what, estimate = kernel_cache.PARTS[part]
    assert said[0] == f"compiling {what} for this machine, once: about {estimate:.0f} s"
    assert said[1].startswith(f"compiled {what} in ")


def test_estimates_scale_with_the_compiles_this_machine_recorded(monkeypatch, tmp_path):
    """A compile numba's event showed records its seconds in its marker; the estimates of
    later compiles on the same target scale by the median ratio of recorded to listed
    seconds, over every kernel folder of the cache (an earlier version's included), and
    leave out other targets' records, empty markers (loads) and unknown parts."""
    from numba.core import event

    monkeypatch.setattr(kernel_cache, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(kernel_cache, "target_key", lambda: "host")
    listed = {part: seconds for part, (_, seconds) in kernel_cache.PARTS.items()}
    assert kernel_cache.estimate("lumped") == listed["lumped"]  # nothing recorded yet
    older = tmp_path / "kernels" / "belt_fmu-older" / "py311-numba0.68.1" / "compiled"
    older.mkdir(parents=True)
    (older / "discretized.host").write_text(f"{0.5 * listed['discretized']:.1f}")
    (older / "analysis.host").write_text(f"{0.4 * listed['analysis']:.1f}")
    (older / "lumped-native-step.host").write_text(f"{0.6 * listed['lumped native step']:.1f}")
    (older / "lumped.host").write_text("")  # loaded from the cache: no time
    (older / "lumped.other").write_text(f"{3.0 * listed['lumped']:.1f}")  # another target
    (older / "unknown.host").write_text("1000")
    assert kernel_cache.estimate("lumped") == pytest.approx(0.5 * listed["lumped"], rel=1e-3)

    current = tmp_path / "current"
    monkeypatch.setattr(kernel_cache, "_marker", lambda name: current / name)
    said = []
    monkeypatch.setattr(kernel_cache, "notify", said.append)
    with kernel_cache.compiling("lumped"):
        event.start_event("numba:compile", data={"dispatcher": None, "args": None, "return_type": None})
        event.end_event("numba:compile", data={"dispatcher": None, "args": None, "return_type": None})
    assert said[0] == f"compiling the lumped model for this machine, once: about {0.5 * listed['lumped']:.0f} s"
    assert float((current / "lumped").read_text()) >= 0.0  # its seconds recorded


def test_cache_saves_take_turns_between_processes(tmp_path):
    """A kernel's cache save waits for the folder's save lock (another process saving a
    kernel of the same source file: ``belt-fmu build`` compiles in several), then saves."""
    import fcntl
    import threading

    from numba.core.caching import IndexDataCacheFile

    cache = IndexDataCacheFile(str(tmp_path), "kernel", "stamp")
    with open(tmp_path / kernel_cache.SAVE_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another open file: flock makes it wait as another process would
        saver = threading.Thread(target=cache.save, args=(("signature",), "code"))
        saver.start()
        saver.join(0.5)
        assert saver.is_alive(), "the save did not wait for the lock"
        assert cache.load(("signature",)) is None
    saver.join(30)
    assert not saver.is_alive()
    assert cache.load(("signature",)) == "code"


def test_the_compile_groups_run_every_part_between_them():
    """``belt-fmu build`` compiles precompile.GROUPS in separate processes: between them
    they run every part one process runs, and a layout with inputs beyond crank_speed and
    water_pump_torque has neither native step nor lumped model."""
    from belt_fmu.layout import load_layout
    from belt_fmu.model.inputs import has_native_step, input_specs
    from belt_fmu.model.precompile import GROUPS, compile_all

    layout = load_layout()
    assert sum((compile_all(layout, groups=(group,)) for group in GROUPS), []) == compile_all(layout)
    assert compile_all(layout) == list(kernel_cache.PARTS)[:4]
    torque_driven = layout.with_drive(crank_input="torque")
    assert has_native_step(input_specs(layout)) and not has_native_step(input_specs(torque_driven))
    assert compile_all(torque_driven, groups=("lumped",)) == []


def test_no_kernel_is_compiled_for_a_constant_argument(fmu):
    """numba compiles a kernel called from another kernel anew for each constant (literal)
    argument value it is given: ``step`` compiled a second time for its ``resolved`` given
    as ``True``, the state's view helpers once per table index. The kernel folder, after
    the session's FMU build compiled both models, holds no kernel compiled for a literal
    argument (numba's cache index lists each kernel's signatures)."""
    import pickle

    literal = []
    for index in kernel_cache.kernel_folder().rglob("*.nbi"):
        with open(index, "rb") as f:
            pickle.load(f)  # numba's version
            _, overloads = pickle.loads(f.read())
        literal += [f"{index.name}: {key[0]}" for key in overloads if "Literal[" in str(key[0])]
    assert not literal
