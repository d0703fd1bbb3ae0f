"""``belt-fmu build``: pack a layout and the model into an FMI 2.0 co-simulation FMU.

The FMU carries, in its resources: the model package (``belt_fmu``, runtime modules only),
its compiled kernels (``kernels``), the generated slave script
(:mod:`belt_fmu.build.slave_script`), the layout as ``layout.json`` (what the slave reads:
no TOML parser needed on the target) and ``layout.toml`` (for people), and the inputs'
start values. PythonFMU contributes its Python-facing module and its native wrapper. The
target machine needs a Python >= 3.10 with numpy and numba.

The kernels are those of every model the FMU may run (:func:`belt_fmu.model.precompile.
compile_all`), compiled (or found compiled) in the per-user kernel folder by fresh
processes at once, one per target level and group of kernels
(:data:`belt_fmu.model.precompile.GROUPS`): the portable level
:data:`belt_fmu.kernel_cache.PORTABLE_CPU` for any x86-64 machine with AVX2, and this
machine's own processor where it has wider vectors (:func:`shipped_levels`). A host with the same
Python and numba versions then loads them instead of compiling
(:func:`belt_fmu.kernel_cache.use_shipped_kernels`). The modelDescription is completed
(:mod:`belt_fmu.build.model_description`) and the FMU written atomically.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

from .. import __version__, kernel_cache
from ..layout import Layout, field_bounds, load_layout
from ..model.inputs import input_specs
from ..slave import INPUTS_RESOURCE, LAYOUT_RESOURCE, PARAMETERS, fmu_outputs
from . import model_description, native
from .slave_script import KERNELS, PACKAGE, REQUIRED_PACKAGES, TEMPLATE

CLASS_NAME = "BeltDrive"  # FMI modelIdentifier: binaries/<platform>/BeltDrive.so
DEFAULT_STEP = 1e-4  # [s] DefaultExperiment step size
DOCUMENTATION = "documentation/index.html"  # every variable with its unit and meaning


class NativeLoaderWarning(UserWarning):
    """The FMU was built without the native loader (no C compiler): native hosts then need
    LD_PRELOAD of libpython (docs/native-hosts.md)."""


def fmu_layout_data(layout: Layout) -> dict:
    """Layout data for the FMU: the tensioner preload made explicit ([Scania thesis] eqs. 12.23-12.24
    from the pretension), so that it is an FMU parameter with its value as start."""
    data = layout.to_data()
    if layout.tensioner is not None and layout.tensioner.preload_Nm is None:
        from ..model.parameters import translate

        data["tensioner"]["preload_Nm"] = float(translate(layout)[0].tensioner[0]["spring_preload"])
    return data


def build_fmu(layout_path=None, output="BeltDrive.fmu", *, crank_speed: float = 800 * 2 * 3.141592653589793 / 60,
              water_pump_torque: float = 0.0, kernels: bool = True, torques: dict | None = None) -> Path:
    """Build the FMU of the layout file ``layout_path`` (None: the built-in layout) at
    ``output``. ``crank_speed`` [rad/s] and ``water_pump_torque`` [N m] are the inputs' start
    values, ``torques`` those of the layout's torque inputs by name (``engine_torque``,
    ``{pulley}_torque``; 0 where not given; :func:`belt_fmu.model.inputs.input_specs`); a
    torque-driven crank starts at the layout's ``initial_crank_speed_rad_per_s``. ``kernels``:
    ship the compiled kernels (module docstring), for which the model runs from its steady
    running state at the start inputs; without them the FMU compiles them at its first load
    on each machine, and the start is not tried here. Returns the FMU's path. Raises
    LayoutError for a bad layout, InitializationError (DivergenceError) for a model that
    cannot start at its start inputs, as ``simulate`` would; never overwrites the layout file.

    The linux64 binary is the native loader (:mod:`belt_fmu.build.native`), compiled here with
    the C compiler; without one the FMU keeps PythonFMU's binary and a
    :class:`NativeLoaderWarning` says what that means."""
    from pythonfmu.builder import FmuBuilder

    layout = load_layout(layout_path)
    output = Path(output)
    if output.suffix != ".fmu":
        raise ValueError(f"output {output} must end in .fmu")
    if layout_path is not None and output.resolve() == Path(layout_path).resolve():
        raise ValueError(f"output {output} would overwrite the layout file")
    from ..model.system import check_inputs

    check_inputs(crank_speed, water_pump_torque)
    starts = {spec.name: 0.0 for spec in input_specs(layout)}
    starts.update({"crank_speed": crank_speed, "water_pump_torque": water_pump_torque})
    for name, value in (torques or {}).items():
        spec = next((spec for spec in input_specs(layout) if spec.name == name and spec.pulley is not None), None)
        if spec is None:
            raise ValueError(f"{name} is not a torque input of this layout; its torque inputs: "
                             + (", ".join(s.name for s in input_specs(layout) if s.pulley is not None) or "none"))
        if (problem := spec.problem(value)) is not None:
            raise ValueError(problem)
        starts[name] = float(value)
    starts = {spec.name: starts[spec.name] for spec in input_specs(layout)}
    data = fmu_layout_data(layout)
    package_hash = kernel_cache.package_hash()
    fingerprint = hashlib.sha256(json.dumps([package_hash, data], sort_keys=True).encode()).hexdigest()[:12]
    module = f"belt_fmu_slave_{fingerprint}"

    with tempfile.TemporaryDirectory(prefix="belt_fmu_build_") as tmp:
        stage = Path(tmp) / "stage"
        stage.mkdir()
        for source in kernel_cache.runtime_sources():
            target = stage / PACKAGE / source.relative_to(kernel_cache.PACKAGE_ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        (stage / LAYOUT_RESOURCE).write_text(json.dumps(data, indent=1))
        (stage / "layout.toml").write_text(layout.to_toml())
        (stage / INPUTS_RESOURCE).write_text(json.dumps(starts))
        project_files = [stage / PACKAGE, stage / LAYOUT_RESOURCE, stage / "layout.toml", stage / INPUTS_RESOURCE]
        if kernels:
            compile_kernels(stage, stage / LAYOUT_RESOURCE, stage / KERNELS)
            project_files.append(stage / KERNELS)
        script = stage / f"{module}.py"
        script.write_text(TEMPLATE.format(layout_name=layout.drive.name, version=__version__, package=PACKAGE,
                                          package_hash=package_hash, kernels=KERNELS, class_name=CLASS_NAME,
                                          required=REQUIRED_PACKAGES))
        packed = FmuBuilder.build_FMU(
            script, dest=Path(tmp) / "out" / "raw.fmu", project_files=project_files,
            canGetAndSetFMUstate=True, canSerializeFMUstate=True,
        )
        sys.modules.pop(module, None)
        final = Path(tmp) / "final.fmu"
        _rewrite(packed, final, layout, data)
        try:
            native.install_loader(final, Path(tmp) / "native.fmu", REQUIRED_PACKAGES)
            final = Path(tmp) / "native.fmu"
        except native.NoCompiler as err:
            warnings.warn(f"{err}; the FMU's linux64 binary is PythonFMU's own, which native FMI hosts load "
                          "only with LD_PRELOAD of libpython (docs/native-hosts.md); fmpy and other Python "
                          "hosts are not affected", NativeLoaderWarning, stacklevel=2)
        output.parent.mkdir(parents=True, exist_ok=True)
        os.replace(_same_dir_copy(final, output), output)
    return output


def _same_dir_copy(source: Path, output: Path) -> Path:
    """A copy of ``source`` beside ``output`` (os.replace must not cross file systems)."""
    fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=output.name + ".", suffix=".tmp")
    os.close(fd)
    shutil.copyfile(source, tmp)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; an FMU is not
    return Path(tmp)


def _rewrite(packed: Path, final: Path, layout: Layout, data: dict) -> None:
    """Copy the FMU zip with its modelDescription completed."""
    inputs = input_specs(layout)
    units = {spec.name: spec.unit for spec in inputs}
    units.update({s.name: s.unit for s in fmu_outputs(layout)})
    units.update({p.name: p.unit for p in PARAMETERS if p.kind is float})
    ranges = {spec.name: (spec.low, spec.high) for spec in inputs}
    for p in PARAMETERS:
        if p.kind is float:  # the layout rule's bounds (an open bound is given as closed: FMI has no other)
            bounds = field_bounds(p.table, p.key)
            ranges[p.name] = (bounds.low, bounds.high)
    description = f"{layout.drive.name}: belt-drive dynamics from belt_fmu {__version__}"
    with zipfile.ZipFile(packed) as src, zipfile.ZipFile(final, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            content = src.read(item.filename)
            if item.filename == "modelDescription.xml":
                content = model_description.complete(content, units, ranges, description, DEFAULT_STEP, 1.0)
                completed = content
            if item.filename != DOCUMENTATION:
                dst.writestr(item, content)
        dst.writestr(DOCUMENTATION, model_description.documentation_html(completed))


#: what a fresh process runs to compile a staged package's kernels for one target level
#: (argv: stage, level, note, layout.json, "compile" or "record", inputs.json, the groups of
#: precompile.GROUPS joined by commas); "record" runs them again, all loaded from the kernel
#: folder, and lists the cache files it loaded: those the FMU needs. The models start at the
#: FMU's start inputs: a drive that cannot start there ends the process with status 3 and
#: the reason (the FMU would fail to initialize)
COMPILE_SCRIPT = """
import json, logging, sys
sys.dont_write_bytecode = True  # nothing written into the staged package
sys.path.insert(0, sys.argv[1])
logging.basicConfig(level=logging.INFO, format="belt-fmu build: %(message)s" + sys.argv[3])
from belt_fmu import kernel_cache
kernel_cache.select_target(sys.argv[2])
loaded = []
if sys.argv[5] == "record":
    from numba.core.caching import IndexDataCacheFile
    load_data = IndexDataCacheFile._load_data

    def recorded(self, name):
        loaded.append(self._data_path(name))
        return load_data(self, name)

    IndexDataCacheFile._load_data = recorded
from belt_fmu.layout import load_layout_data
from belt_fmu.model.initialization import InitializationError
from belt_fmu.model.precompile import compile_all
from belt_fmu.model.system import DivergenceError
starts = json.loads(open(sys.argv[6]).read())
try:
    parts = compile_all(load_layout_data(json.loads(open(sys.argv[4]).read())), starts.get("crank_speed"),
                        starts.get("water_pump_torque", 0.0), tuple(sys.argv[7].split(",")))
except (InitializationError, DivergenceError) as err:
    print(json.dumps({"cannot_start": str(err)}))
    sys.exit(3)
print(json.dumps({"folder": str(kernel_cache.kernel_folder()), "parts": parts, "loaded": loaded,
                  **kernel_cache.host_target()}))
"""


class KernelCompileError(RuntimeError):
    """Compiling the FMU's kernels failed (the compiling process said why on stderr)."""


def shipped_levels() -> tuple[str, ...]:
    """The target levels an FMU built here carries: the portable one, and this processor's
    own where it compiles for that by default (:func:`belt_fmu.kernel_cache.default_level`:
    a processor with wider vectors than the portable level)."""
    if kernel_cache.default_level(kernel_cache.host_target()["features"]) == "host":
        return ("host", "portable")
    return ("portable",)


def _run_levels(stage: Path, layout_json: Path, mode: str, levels: tuple[str, ...]) -> dict:
    """COMPILE_SCRIPT for the target ``levels``, in fresh processes whose stderr (the
    compile's announcements) goes to this one's, as many at once as the machine has cores:
    one per level and group of kernels (:data:`belt_fmu.model.precompile.GROUPS`) to
    compile, one per level for all of them to record; their results by level. Raises
    InitializationError (or DivergenceError) when the model cannot start at the FMU's start
    inputs, as simulate would."""
    from concurrent.futures import ThreadPoolExecutor

    from ..model.precompile import GROUPS

    notes = {"host": "", "portable": f" (portable {kernel_cache.PORTABLE_CPU} code, for other machines)"
             if len(levels) > 1 else ""}
    jobs = [(level, group) for group in (GROUPS if mode == "compile" else (",".join(GROUPS),)) for level in levels]

    def run(job):
        level, group = job
        return subprocess.run([sys.executable, "-c", COMPILE_SCRIPT, str(stage), level, notes[level], str(layout_json),
                               mode, str(stage / INPUTS_RESOURCE), group], stdout=subprocess.PIPE, text=True)

    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        finished = list(pool.map(run, jobs))
    results = {}
    for (level, _), done in zip(jobs, finished):
        if done.returncode == 3:
            from ..model.initialization import InitializationError

            reason = json.loads(done.stdout.splitlines()[-1])["cannot_start"]
            raise InitializationError(f"the FMU's model cannot start at its start inputs: {reason}")
        if done.returncode != 0:
            raise KernelCompileError(f"compiling the FMU's kernels for the {level} level failed (exit status "
                                     f"{done.returncode}; its messages are above)")
        results[level] = json.loads(done.stdout.splitlines()[-1])
    return results


def compile_kernels(stage: Path, layout_json: Path, target: Path) -> None:
    """Compile the kernels of the package staged in ``stage`` for the :func:`shipped_levels`
    (in fresh processes at once, :func:`_run_levels`, in the per-user kernel folder, where
    they stay for this machine), then copy to ``target`` those a fresh process loads (numba
    also caches every callee, which a loaded entry carries compiled in), with their description
    :data:`belt_fmu.kernel_cache.SHIPPED_INFO`."""
    levels = shipped_levels()
    _run_levels(stage, layout_json, "compile", levels)
    results = _run_levels(stage, layout_json, "record", levels)
    host = results[levels[0]]
    source = Path(host["folder"])
    version_folder = target / source.name
    needed = {Path(path) for result in results.values() for path in result["loaded"]}
    needed |= {index for path in needed for index in path.parent.glob(path.name.split(".py")[0] + ".py*.nbi")}
    needed |= {marker for part in host["parts"] for marker in (source / "compiled").glob(kernel_cache.marker_stem(part) + ".*")}
    for path in sorted(needed):
        destination = version_folder / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    info = {key: host[key] for key in ("python", "numba", "cpu", "features", "parts")}
    info.update(portable=True, tuned="host" in levels, package=source.parent.name)
    (target / kernel_cache.SHIPPED_INFO).write_text(json.dumps(info, indent=1))
