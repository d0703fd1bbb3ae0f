"""``belt-fmu build``: pack a layout and the model into an FMI 2.0 co-simulation FMU.

The FMU carries, in its resources: the model package (``belt_fmu_<hash>``, runtime modules
only), the generated slave script (:mod:`belt_fmu.build.slave_script`), the layout as
``layout.json`` (what the slave reads: no TOML parser needed on the target) and
``layout.toml`` (for people), and the inputs' start values. PythonFMU contributes its
Python-facing module and its native wrapper. The target machine needs a Python >= 3.10 with
numpy and numba.

After packing, the modelDescription is completed (:mod:`belt_fmu.build.model_description`),
the FMU written atomically, and, unless disabled, the model's numba kernels are compiled once
into the per-user cache the FMU uses, so that loading it starts within seconds.
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

from .. import __version__
from ..layout import Layout, load_layout
from ..model.inputs import input_specs
from ..slave import INPUTS_RESOURCE, LAYOUT_RESOURCE, PARAMETERS, fmu_outputs
from . import model_description, native
from .slave_script import REQUIRED_PACKAGES, TEMPLATE

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
#: package files the FMU runs (the command line, plots and this builder stay behind)
RUNTIME_FILES = ("__init__.py", "layout.py", "slave.py", "fast_path.py", "simulation.py", "postprocess.py", "units.py", "files.py",
                 "model/*.py")
CLASS_NAME = "BeltDrive"  # FMI modelIdentifier: binaries/<platform>/BeltDrive.so
DEFAULT_STEP = 1e-4  # [s] DefaultExperiment step size
DOCUMENTATION = "documentation/index.html"  # every variable with its unit and meaning


class NativeLoaderWarning(UserWarning):
    """The FMU was built without the native loader (no C compiler): native hosts then need
    LD_PRELOAD of libpython (docs/native-hosts.md)."""


def runtime_sources() -> list[Path]:
    files = []
    for pattern in RUNTIME_FILES:
        files += sorted(PACKAGE_ROOT.glob(pattern))
    return files


def package_name() -> str:
    """``belt_fmu_<hash>``: the model package's name inside FMUs, unique per code version."""
    digest = hashlib.sha256()
    for path in runtime_sources():
        digest.update(path.relative_to(PACKAGE_ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return f"belt_fmu_{digest.hexdigest()[:12]}"


def fmu_layout_data(layout: Layout) -> dict:
    """Layout data for the FMU: the tensioner preload made explicit ([Scania thesis] eqs. 12.23-12.24
    from the pretension), so that it is an FMU parameter with its value as start."""
    data = layout.to_data()
    if layout.tensioner is not None and layout.tensioner.preload_Nm is None:
        from ..model.system import BeltDrive

        data["tensioner"]["preload_Nm"] = float(BeltDrive(layout).parameters.tensioner[0]["spring_preload"])
    return data


def build_fmu(layout_path=None, output="BeltDrive.fmu", *, crank_speed: float = 800 * 2 * 3.141592653589793 / 60,
              water_pump_torque: float = 0.0, warm_cache: bool = True, torques: dict | None = None) -> Path:
    """Build the FMU of the layout file ``layout_path`` (None: the built-in layout) at
    ``output``. ``crank_speed`` [rad/s] and ``water_pump_torque`` [N m] are the inputs' start
    values, ``torques`` those of the layout's torque inputs by name (``engine_torque``,
    ``{pulley}_torque``; 0 where not given; :func:`belt_fmu.model.inputs.input_specs`); a
    torque-driven crank starts at the layout's ``initial_crank_speed_rad_per_s``. Returns the FMU's path. Raises LayoutError for a bad layout; never overwrites the
    layout file.

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
    package = package_name()
    fingerprint = hashlib.sha256(json.dumps([package, data], sort_keys=True).encode()).hexdigest()[:12]
    module = f"belt_fmu_slave_{fingerprint}"

    with tempfile.TemporaryDirectory(prefix="belt_fmu_build_") as tmp:
        stage = Path(tmp) / "stage"
        stage.mkdir()
        for source in runtime_sources():
            target = stage / package / source.relative_to(PACKAGE_ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        (stage / LAYOUT_RESOURCE).write_text(json.dumps(data, indent=1))
        (stage / "layout.toml").write_text(layout.to_toml())
        (stage / INPUTS_RESOURCE).write_text(json.dumps(starts))
        script = stage / f"{module}.py"
        script.write_text(TEMPLATE.format(layout_name=layout.drive.name, version=__version__, package=package,
                                          class_name=CLASS_NAME, required=REQUIRED_PACKAGES))
        packed = FmuBuilder.build_FMU(
            script, dest=Path(tmp) / "out" / "raw.fmu",
            project_files=[stage / package, stage / LAYOUT_RESOURCE, stage / "layout.toml", stage / INPUTS_RESOURCE],
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
    if warm_cache:
        warm_jit_cache(output)
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
            ranges[p.name] = (p.rule.gt if p.rule.gt is not None else p.rule.ge,
                              p.rule.lt if p.rule.lt is not None else p.rule.le)
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


def warm_jit_cache(fmu: Path) -> None:
    """Compile the FMU's kernels into the per-user cache it uses, in a fresh process (the
    package copy and its numba cache are what the FMU's slave script finds later)."""
    with tempfile.TemporaryDirectory(prefix="belt_fmu_warm_") as tmp:
        with zipfile.ZipFile(fmu) as z:
            z.extractall(tmp)
        resources = Path(tmp) / "resources"
        module = (resources / "slavemodule.txt").read_text().strip()
        code = (
            "import importlib, sys\n"
            f"sys.path.insert(0, {str(resources)!r})\n"
            f"slave = importlib.import_module({module!r})\n"
            "pkg = sys.modules[slave.PACKAGE + '.slave']\n"
            "layout = pkg.load_layout_data(__import__('json').loads(open(sys.argv[1]).read()))\n"
            "drive = pkg.BeltDrive(layout)\n"
            "drive.reset(80.0, 1.0, settle_time=1e-3)\n"
            "drive.advance(1e-4, None if drive.torque_driven_crank else 80.0, 1.0)\n"
            "drive.output_values\n"
            "if not (layout.torque_driven_crank or layout.port_pulleys):  # the native step; the lumped model\n"
            "    drive.native_step()  # the native loader's fast path (belt_fmu/fast_path.py)\n"
            "    lumped = importlib.import_module(slave.PACKAGE + '.model.lumped_system').LumpedDrive(layout)\n"
            "    lumped.reset(80.0, 1.0, settle_time=1e-3)\n"
            "    lumped.advance(1e-3, 80.0, 1.0)\n"
            "    lumped.native_step()  # the native loader's fast path (belt_fmu/fast_path.py)\n"
        )
        subprocess.run([sys.executable, "-c", code, str(resources / LAYOUT_RESOURCE)], check=True)
