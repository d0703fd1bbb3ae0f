"""Reading an SSP archive of this example, and the signals both co-simulation runs record.

:func:`read_ssp` gives what a master needs from ``SystemStructure.ssd``: the components with
their FMU, connectors (kind, unit) and bound parameter values, the connections, and the
default experiment, including libcosim's fixed step from the OSP annotation. A component's
``parameters`` are all Real values of the parameter files bound to it; as SSP 1.0 defines
bindings on components, a master applies those that name a variable of the component's FMU
and ignores the others.
"""
from __future__ import annotations

import dataclasses
import math
import posixpath
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np

NS = {
    "ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
    "ssc": "http://ssp-standard.org/SSP1/SystemStructureCommon",
    "ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues",
    "osp": "http://opensimulationplatform.com/SSP/OSPAnnotations",
}

#: (component, variable) recorded by both runs; the table's columns are "component.variable"
RECORDED = (
    ("engine", "crank_speed"), ("engine", "crank_angle"), ("engine", "engine_torque"),
    ("belt", "crank_speed"), ("belt", "crank_torque"), ("belt", "tensioner_angle"), ("belt", "bearing_force"),
    ("belt", "water_pump_speed"), ("pump", "water_pump_torque"),
    ("belt", "alternator1_speed"), ("alternator", "alternator_torque"), ("alternator", "alternator_current"),
)


@dataclasses.dataclass
class Component:
    """An SSD component: an FMU with its connectors and bound parameter values."""

    name: str
    source: str  # path of the FMU inside the archive
    connectors: dict  # name -> (kind, unit)
    parameters: dict  # name -> value: the Real values of its parameter bindings


@dataclasses.dataclass
class SspSystem:
    """What a master needs from an SSP archive (:func:`read_ssp`)."""

    path: Path
    components: dict  # name -> Component, in SSD order
    connections: list  # (start element, start connector, end element, end connector)
    step_size: float | None  # [s] libcosim's fixed step (OSP annotation), if given
    stop_time: float | None  # [s] default experiment stop time, if given

    def unit(self, component: str, connector: str) -> str:
        return self.components[component].connectors[connector][1] or "1"


def read_ssp(path) -> SspSystem:
    """The system of the SSP archive at ``path`` (see the module docstring)."""
    path = Path(path)
    with zipfile.ZipFile(path) as archive:
        ssd = ET.fromstring(archive.read("SystemStructure.ssd"))
        components = {}
        for element in ssd.find("ssd:System/ssd:Elements", NS).findall("ssd:Component", NS):
            connectors = {c.get("name"): (c.get("kind"), c.find("ssc:Real", NS).get("unit"))
                          for c in element.iterfind("ssd:Connectors/ssd:Connector", NS)}
            parameters = {}
            for binding in element.iterfind("ssd:ParameterBindings/ssd:ParameterBinding", NS):
                parameter_set = ET.fromstring(archive.read(posixpath.normpath(binding.get("source"))))
                for parameter in parameter_set.iterfind("ssv:Parameters/ssv:Parameter", NS):
                    real = parameter.find("ssv:Real", NS)
                    if real is not None:
                        parameters[parameter.get("name")] = float(real.get("value"))
            components[element.get("name")] = Component(element.get("name"), element.get("source"), connectors,
                                                         parameters)
    connections = [(c.get("startElement"), c.get("startConnector"), c.get("endElement"), c.get("endConnector"))
                   for c in ssd.iterfind("ssd:System/ssd:Connections/ssd:Connection", NS)]
    experiment = ssd.find("ssd:DefaultExperiment", NS)
    fixed_step = ssd.find("ssd:DefaultExperiment/ssd:Annotations/ssc:Annotation/osp:Algorithm/osp:FixedStepAlgorithm",
                          NS)
    return SspSystem(
        path, components, connections,
        step_size=float(fixed_step.get("baseStepSize")) if fixed_step is not None else None,
        stop_time=float(experiment.get("stopTime")) if experiment is not None and experiment.get("stopTime") else None,
    )


def belt_layout(system: SspSystem, component: str = "belt"):
    """The layout the belt-drive FMU of ``component`` carries (its resources/layout.json)."""
    import io
    import json

    from belt_fmu.layout import load_layout_data

    with zipfile.ZipFile(system.path) as archive:
        fmu = zipfile.ZipFile(io.BytesIO(archive.read(system.components[component].source)))
    return load_layout_data(json.loads(fmu.read("resources/layout.json")), f"{system.path}: {component}")


def fixed_steps(system: SspSystem, t_end: float | None) -> tuple[int, int]:
    """(step [ns], number of steps) of a run of ``t_end`` [s] (None: the SSD's stop time) at
    the SSD's fixed step, which libcosim turns into whole nanoseconds by truncation.
    ValueError unless t_end is a positive multiple of the step."""
    t_end = t_end or system.stop_time
    if not (t_end and system.step_size):
        raise ValueError(f"{system.path}: the SSD gives no {'stop time' if not t_end else 'fixed step'}")
    step_ns = int(system.step_size * 1e9)
    n_steps = round(t_end * 1e9 / step_ns)
    if not (n_steps >= 1 and math.isclose(n_steps * step_ns, t_end * 1e9, rel_tol=1e-9)):
        raise ValueError(f"t_end = {t_end!r} s must be a positive multiple of the step {step_ns * 1e-9!r} s")
    return step_ns, n_steps


def filtered_bearing_force(results) -> tuple[np.ndarray, float]:
    """The bearing force of a run low-pass filtered at half the belt model's polygon
    frequency, as force signals are read (belt_fmu README, polygon effect), and that cutoff
    [Hz]. The polygon frequency is the crank's at the run's mean crank speed."""
    from belt_fmu.model.geometry import BeltPath, cord_radius
    from belt_fmu.postprocess import polygon_filter, polygon_frequency

    layout = belt_layout(results.system)
    polygon_hz = polygon_frequency(cord_radius(layout, layout.crank_index), float(np.mean(results["belt.crank_speed"])),
                                   layout.belt.n_elements, BeltPath.from_layout(layout).length)
    step = results["time"][1] - results["time"][0]
    return polygon_filter(results["belt.bearing_force"], step, polygon_hz), 0.5 * polygon_hz


def summary(results) -> str:
    """Mean, min and max of the main signals over the second half of a run (the bearing force
    also filtered, :func:`filtered_bearing_force`), and the parameter values the FMUs report."""
    t = results["time"]
    half = t >= 0.5 * t[-1]
    force, cutoff = filtered_bearing_force(results)
    signals = [(name, results[name], results.units[name]) for name in
               ("engine.crank_speed", "belt.crank_torque", "belt.tensioner_angle", "belt.bearing_force",
                "pump.water_pump_torque")]
    signals.insert(4, (f"  low-pass {cutoff:.0f} Hz", force, "N"))
    lines = [f"  {name:24s} mean {np.mean(x[half]):10.4g}  min {np.min(x[half]):10.4g}  max {np.max(x[half]):10.4g}"
             f"  [{unit}]" for name, x, unit in signals]
    lines.append("  parameters: " + ", ".join(f"{name} = {value:.6g}" for name, value in results.parameters.items()))
    return f"from {t[half][0]:.3g} s to {t[-1]:.3g} s:\n" + "\n".join(lines)


def results_table(system: SspSystem, times, values: dict, wall_time: float, parameters: dict):
    """A :class:`belt_fmu.simulation.Results` of the recorded signals (``values``: column ->
    samples at ``times``), with the SSD's connector units. Its attribute ``system`` is
    ``system``, ``parameters`` the bound parameter values the FMUs report ("component.name"
    -> value)."""
    from belt_fmu.simulation import Results

    columns = {"time": np.asarray(times, dtype=float)}
    units = {"time": "s"}
    for component, variable in RECORDED:
        name = f"{component}.{variable}"
        columns[name] = np.asarray(values[name], dtype=float)
        units[name] = system.unit(component, variable)
    results = Results(columns, units, {}, wall_time)
    results.system = system
    results.parameters = parameters
    return results
