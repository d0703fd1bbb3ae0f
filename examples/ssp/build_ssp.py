"""Build ``BeltDriveSystem.ssp``: the belt drive co-simulating with an engine, a water pump
and an alternator with its electrical load.

Builds the four FMUs (the belt drive of the built-in layout with its first alternator as a
port, with :func:`belt_fmu.build.build_fmu`; the power unit, the water pump and the
alternator from the PythonFMU slave scripts beside this file), checks ``SystemStructure.ssd`` and ``parameters.ssv`` against the
official SSP 1.0 XML schemas and against the FMUs' variables, and packs them into an SSP
archive: ``SystemStructure.ssd`` at its root, the FMUs and one parameter set per component in
``resources/`` (``<component>.ssv``: the parameters of ``parameters.ssv`` that its FMU has,
so that no component is handed names it lacks)::

    python examples/ssp/build_ssp.py [-o BeltDriveSystem.ssp] [--set NAME=VALUE ...]

``--set`` changes a value of ``parameters.ssv`` in the packed copy (SI units, names as in that
file), e.g. ``--set speed_setpoint=125.66`` for 1200 rpm.

The SSP 1.0 schemas are the Modelica Association's normative XSD files that FMPy ships
(``fmpy/ssp/schema``); lxml, an FMPy dependency, validates against them.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

from ssp_file import NS

HERE = Path(__file__).resolve().parent
SSD = HERE / "SystemStructure.ssd"
SSV = HERE / "parameters.ssv"
#: PythonFMU slave scripts of this example: FMU file name -> script
SLAVE_SCRIPTS = {"PowerUnit.fmu": HERE / "power_unit.py", "WaterPump.fmu": HERE / "water_pump.py",
                 "Alternator.fmu": HERE / "alternator.py"}
BELT_FMU = "BeltDrive.fmu"
#: the accessory of the built-in layout that the belt FMU drives from outside (``load =
#: "input"``): its port alternator1_torque / alternator1_speed meets the alternator FMU
ALTERNATOR_PORT = "alternator1"

#: SI base-unit exponents of the units the example's FMUs use beyond belt_fmu's own
EXTRA_UNITS = {
    "kg.m2": {"kg": 1, "m": 2},
    "N.m.s2/rad2": {"kg": 1, "m": 2, "rad": -2},
    "W": {"kg": 1, "m": 2, "s": -3},
    "V": {"kg": 1, "m": 2, "s": -3, "A": -1},
    "A": {"A": 1},
}
FMI_ORDER = ("CoSimulation", "ModelExchange", "UnitDefinitions", "TypeDefinitions", "LogCategories",
             "DefaultExperiment", "VendorAnnotations", "ModelVariables", "ModelStructure")


# ------------------------------------------------------------------------------------ FMUs
def build_python_fmu(script: Path, output: Path) -> Path:
    """Pack a PythonFMU slave script of this example into the FMU ``output``.

    The script goes in as module ``ssp_<name>_<hash of its text>``: PythonFMU imports the
    module named in the FMU once per process, so a changed script must not share the name of
    one already loaded. The modelDescription then gets the units (the script's ``UNITS``),
    UnitDefinitions and InitialUnknowns that PythonFMU leaves out, and the linux64 binary
    belt_fmu's native loader (:func:`belt_fmu.build.native.install_loader`; the scripts need
    no package beyond pythonfmu), so that native hosts load it without set-up.
    """
    from belt_fmu.build import native

    from pythonfmu.builder import FmuBuilder

    text = script.read_text()
    module = f"ssp_{script.stem}_{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    output = Path(output)
    with tempfile.TemporaryDirectory(prefix="belt_fmu_ssp_") as tmp:
        staged = Path(tmp) / f"{module}.py"
        staged.write_text(text)
        try:
            packed = FmuBuilder.build_FMU(staged, dest=Path(tmp) / "out" / output.name,
                                          canGetAndSetFMUstate=True, canSerializeFMUstate=True)
            units = importlib.import_module(module).UNITS
        finally:
            sys.modules.pop(module, None)
            sys.path[:] = [p for p in sys.path if p != str(staged.parent)]
        final = Path(tmp) / "final.fmu"
        with zipfile.ZipFile(packed) as src, zipfile.ZipFile(final, "w", zipfile.ZIP_DEFLATED) as dst:
            for item in src.infolist():
                content = src.read(item.filename)
                if item.filename == "modelDescription.xml":
                    content = complete_model_description(content, units)
                dst.writestr(item, content)
        try:
            native.install_loader(final, Path(tmp) / "native.fmu", packages=())
            final = Path(tmp) / "native.fmu"
        except native.NoCompiler as err:
            print(f"build_ssp: {output.name} keeps PythonFMU's binary: {err}", file=sys.stderr)
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(final, output)
    return output


def complete_model_description(xml_text: bytes, units: dict) -> bytes:
    """Add ``unit`` to every Real variable (name -> unit), the UnitDefinitions they need and
    the InitialUnknowns (the outputs) that FMI 2.0 asks for and PythonFMU leaves out; the
    same completion :func:`belt_fmu.build.model_description.complete` gives the belt FMU."""
    from belt_fmu.build.model_description import UNITS

    table = {**UNITS, **EXTRA_UNITS}
    root = ET.fromstring(xml_text)
    used, outputs = set(), []
    for index, var in enumerate(root.find("ModelVariables").findall("ScalarVariable"), start=1):
        real = var.find("Real")
        if real is not None:
            real.set("unit", units[var.get("name")])
            used.add(units[var.get("name")])
        if var.get("causality") == "output":
            outputs.append(index)
    definitions = ET.Element("UnitDefinitions")
    for unit in sorted(used):
        ET.SubElement(ET.SubElement(definitions, "Unit", name=unit), "BaseUnit",
                      {k: str(v) for k, v in table[unit].items()})
    structure = root.find("ModelStructure")
    for child in list(structure):
        structure.remove(child)
    for tag in ("Outputs", "InitialUnknowns"):
        listing = ET.SubElement(structure, tag)
        for index in outputs:
            ET.SubElement(listing, "Unknown", index=str(index))
    position = next(i for i, child in enumerate(root)
                    if FMI_ORDER.index(child.tag) > FMI_ORDER.index("UnitDefinitions"))
    root.insert(position, definitions)
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True)


def belt_layout(folder) -> Path:
    """The belt drive's layout file, written into ``folder``: the built-in layout with the
    accessory :data:`ALTERNATOR_PORT` taking its load torque from an input instead of its
    torque table (docs/layout-format.md, ``load = "input"``)."""
    from belt_fmu.layout import load_layout, load_layout_data

    data = load_layout().to_data()
    pulley = next(p for p in data["pulleys"] if p["name"] == ALTERNATOR_PORT)
    pulley["load"] = "input"
    pulley.pop("torque_table_speed_rad_per_s", None)
    pulley.pop("torque_table_Nm", None)
    return load_layout_data(data, "belt_fmu default layout with an alternator port").write(
        Path(folder) / "belt_layout.toml", overwrite=True)


def build_fmus(folder, *, kernels: bool = True) -> dict[str, Path]:
    """Build the system's four FMUs into ``folder``; returns FMU file name -> path. The belt
    FMU is :func:`belt_fmu.build.build_fmu` of the built-in layout with an alternator port
    (:func:`belt_layout`; with its compiled kernels unless ``kernels`` is False)."""
    from belt_fmu.build import build_fmu

    folder = Path(folder)
    fmus = {name: build_python_fmu(script, folder / name) for name, script in SLAVE_SCRIPTS.items()}
    fmus[BELT_FMU] = build_fmu(belt_layout(folder), folder / BELT_FMU, kernels=kernels)
    return fmus


# ----------------------------------------------------------------------------- SSD and SSV
def schema_problems(xml_bytes: bytes, schema: str) -> list[str]:
    """Problems of an SSP document against the SSP 1.0 XSD ``schema`` (file name in FMPy's
    copy of the normative schemas); empty when valid."""
    import fmpy
    from lxml import etree

    xsd = etree.XMLSchema(file=str(Path(fmpy.__file__).parent / "ssp" / "schema" / schema))
    if xsd.validate(etree.fromstring(xml_bytes)):
        return []
    return [f"line {e.line}: {e.message}" for e in xsd.error_log]


def read_parameters(ssv_bytes: bytes) -> dict[str, tuple[float, str | None]]:
    """The Real parameters of a parameter set: name -> (value, unit)."""
    root = ET.fromstring(ssv_bytes)
    values = {}
    for parameter in root.iter(f"{{{NS['ssv']}}}Parameter"):
        real = parameter.find("ssv:Real", NS)
        values[parameter.get("name")] = (float(real.get("value")), real.get("unit"))
    return values


def set_parameters(ssv_bytes: bytes, changes: dict[str, float]) -> bytes:
    """``ssv_bytes`` with the values of the named Real parameters replaced (KeyError for a
    name the file does not hold). Namespace prefixes are kept: libcosim matches them."""
    from lxml import etree

    root = etree.fromstring(ssv_bytes)
    for name, value in changes.items():
        found = root.xpath("ssv:Parameters/ssv:Parameter[@name=$name]/ssv:Real", namespaces=NS, name=name)
        if not found:
            raise KeyError(f"parameter {name!r} is not in the parameter set; it holds "
                           f"{', '.join(read_parameters(ssv_bytes))}")
        found[0].set("value", repr(float(value)))
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def component_fmus(ssd_bytes: bytes) -> dict[str, str]:
    """The SSD's components: name -> FMU file name (in ``resources/``)."""
    ssd = ET.fromstring(ssd_bytes)
    return {c.get("name"): c.get("source").removeprefix("resources/") for c in ssd.iter(f"{{{NS['ssd']}}}Component")}


def parameter_names(fmu: Path) -> set[str]:
    from fmpy import read_model_description

    return {v.name for v in read_model_description(str(fmu)).modelVariables if v.causality == "parameter"}


def parameter_set_for(ssv_bytes: bytes, names: set[str]) -> bytes:
    """``ssv_bytes`` with only the parameters named in ``names`` (one component's set)."""
    from lxml import etree

    root = etree.fromstring(ssv_bytes)
    for parameter in root.xpath("ssv:Parameters/ssv:Parameter", namespaces=NS):
        if parameter.get("name") not in names:
            parameter.getparent().remove(parameter)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def consistency_problems(ssd_bytes: bytes, fmus: dict[str, Path], ssv_bytes: bytes) -> list[str]:
    """Problems between the SSD, the FMUs it references and the parameter set: every
    connector must be a variable of its FMU with the same causality and unit, every
    parameter a parameter of some FMU with the same unit, and each component must bind the
    parameter set packed for it (``resources/<component>.ssv``)."""
    from fmpy import read_model_description

    problems, parameters = [], {}
    ssd = ET.fromstring(ssd_bytes)
    for component in ssd.iter(f"{{{NS['ssd']}}}Component"):
        name, source = component.get("name"), component.get("source")
        bindings = [b.get("source") for b in component.iter(f"{{{NS['ssd']}}}ParameterBinding")]
        if bindings != [f"resources/{name}.ssv"]:
            problems.append(f"component {name}: binds {bindings}; it must bind resources/{name}.ssv, the parameter "
                            "set packed for it")
        fmu = fmus.get(source.removeprefix("resources/"))
        if fmu is None:
            problems.append(f"component {name}: no FMU {source}")
            continue
        variables = {v.name: v for v in read_model_description(str(fmu)).modelVariables}
        parameters.update({n: v for n, v in variables.items() if v.causality == "parameter"})
        for connector in component.iter(f"{{{NS['ssd']}}}Connector"):
            var = variables.get(connector.get("name"))
            unit = connector.find("ssc:Real", NS).get("unit")
            if var is None:
                problems.append(f"{name}.{connector.get('name')}: no such variable in {source}")
            elif (var.causality, var.unit or "1") != (connector.get("kind"), unit):
                problems.append(f"{name}.{var.name}: connector {connector.get('kind')} [{unit}], "
                                f"FMU {var.causality} [{var.unit}]")
    for name, (_, unit) in read_parameters(ssv_bytes).items():
        var = parameters.get(name)
        if var is None or (var.unit or "1") != unit:
            problems.append(f"parameter {name} [{unit}]: no FMU parameter of that name and unit")
    return problems


def pack_ssp(output, fmus: dict[str, Path], parameters: dict[str, float] | None = None) -> Path:
    """Write the SSP archive ``output`` from ``SystemStructure.ssd``, ``parameters.ssv`` (with
    ``parameters`` name -> value changed; each component gets its share as
    ``resources/<component>.ssv``) and the FMUs (file name -> path, as
    :func:`build_fmus` returns). Raises ValueError if the SSD or the parameter set fails the
    SSP 1.0 schema or does not match the FMUs. Written atomically."""
    ssd = SSD.read_bytes()
    ssv = set_parameters(SSV.read_bytes(), parameters or {})
    problems = [f"SystemStructure.ssd {p}" for p in schema_problems(ssd, "SystemStructureDescription.xsd")]
    problems += [f"parameters.ssv {p}" for p in schema_problems(ssv, "SystemStructureParameterValues.xsd")]
    problems += consistency_problems(ssd, fmus, ssv)
    if problems:
        raise ValueError("the system description is not valid:\n  " + "\n  ".join(problems))
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=output.name + ".", suffix=".tmp")
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as ssp:
            ssp.writestr("SystemStructure.ssd", ssd)
            for component, fmu in component_fmus(ssd).items():
                ssp.writestr(f"resources/{component}.ssv", parameter_set_for(ssv, parameter_names(fmus[fmu])))
            for name, path in fmus.items():
                ssp.write(path, f"resources/{name}")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, output)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return output


def _assignment(text: str) -> tuple[str, float]:
    name, _, value = text.partition("=")
    try:
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with a number, got {text!r}") from None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default="BeltDriveSystem.ssp", help="SSP archive to write")
    parser.add_argument("--set", dest="changes", type=_assignment, action="append", default=[],
                        metavar="NAME=VALUE", help="change a value of parameters.ssv (SI units)")
    args = parser.parse_args(argv)
    try:
        set_parameters(SSV.read_bytes(), dict(args.changes))  # names checked before the build
        with tempfile.TemporaryDirectory(prefix="belt_fmu_ssp_") as tmp:
            output = pack_ssp(args.output, build_fmus(tmp), dict(args.changes))
    except (KeyError, ValueError) as err:
        print(f"build_ssp: {err.args[0]}", file=sys.stderr)
        return 2
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
