"""Complete PythonFMU's modelDescription.xml: units, ranges, structure, default experiment.

PythonFMU 0.7.0 writes variables without units and a ModelStructure that ``fmpy validate``
rejects (outputs with ``initial="calculated"`` need InitialUnknowns). This module adds, per
FMI 2.0 (section 2.2):

* ``UnitDefinitions`` with the SI base-unit exponents of every unit used and the display
  units people read (deg for rad, rpm for rad/s), ``unit`` on every Real variable and
  ``displayUnit`` on those that have one;
* ``min``/``max`` on the inputs (the ranges the slave accepts) and on the parameters (the
  layout rules' bounds);
* ``InitialUnknowns`` listing the outputs, which depend on all inputs and parameters;
* a ``DefaultExperiment``.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

#: exponents of the SI base units (and rad) of each unit string the FMU uses
UNITS = {
    "N": {"kg": 1, "m": 1, "s": -2},
    "N.m": {"kg": 1, "m": 2, "s": -2},
    "N.m/rad": {"kg": 1, "m": 2, "s": -2, "rad": -1},
    "N.m.s/rad": {"kg": 1, "m": 2, "s": -1, "rad": -1},
    "rad": {"rad": 1},
    "rad/s": {"rad": 1, "s": -1},
    "m": {"m": 1},
    "m/s": {"m": 1, "s": -1},
    "s": {"s": 1},
    "1": {},
}

#: display units (FMI 2.0 section 2.2.2: value in the display unit = factor * value + offset) of
#: a unit, the first one each such variable is shown in: angles in degrees, speeds in rpm
DISPLAY_UNITS = {
    "rad": (("deg", 180.0 / math.pi),),
    "rad/s": (("rpm", 60.0 / (2.0 * math.pi)),),
}

# FMI 2.0 order of the children of fmiModelDescription
_ORDER = ["CoSimulation", "ModelExchange", "UnitDefinitions", "TypeDefinitions", "LogCategories",
          "DefaultExperiment", "VendorAnnotations", "ModelVariables", "ModelStructure"]


def complete(xml_text: bytes, units: dict, ranges: dict, description: str, step_size: float,
             stop_time: float) -> bytes:
    """Return ``xml_text`` with units (name -> unit), ranges (name -> (min, max), either may be
    None), the model description text, InitialUnknowns and a DefaultExperiment added."""
    root = ET.fromstring(xml_text)
    root.set("description", description)
    variables = root.find("ModelVariables")
    used = set()
    outputs = []
    for index, var in enumerate(variables.findall("ScalarVariable"), start=1):
        name = var.get("name")
        real = var.find("Real")
        if real is not None:
            if name not in units:
                raise KeyError(f"no unit declared for FMU variable {name!r}")
            real.set("unit", units[name])
            if units[name] in DISPLAY_UNITS:
                real.set("displayUnit", DISPLAY_UNITS[units[name]][0][0])
            used.add(units[name])
            low, high = ranges.get(name, (None, None))
            if low is not None:
                real.set("min", repr(float(low)))
            if high is not None:
                real.set("max", repr(float(high)))
        if var.get("causality") == "output":
            outputs.append(index)

    for old in root.findall("UnitDefinitions") + root.findall("DefaultExperiment"):
        root.remove(old)
    unit_defs = ET.Element("UnitDefinitions")
    for unit in sorted(used):
        node = ET.SubElement(unit_defs, "Unit", name=unit)
        exponents = UNITS[unit]
        if exponents:
            ET.SubElement(node, "BaseUnit", {k: str(v) for k, v in exponents.items()})
        for display, factor in DISPLAY_UNITS.get(unit, ()):
            ET.SubElement(node, "DisplayUnit", name=display, factor=repr(factor))
    experiment = ET.Element("DefaultExperiment", startTime="0.0", stopTime=repr(stop_time),
                            stepSize=repr(step_size))
    _insert(root, unit_defs)
    _insert(root, experiment)

    structure = root.find("ModelStructure")
    for child in list(structure):
        structure.remove(child)
    if outputs:
        declared = ET.SubElement(structure, "Outputs")
        initial = ET.SubElement(structure, "InitialUnknowns")
        for index in outputs:
            ET.SubElement(declared, "Unknown", index=str(index))
            ET.SubElement(initial, "Unknown", index=str(index))
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True)


def _insert(root: ET.Element, element: ET.Element) -> None:
    """Insert ``element`` among the children of ``root`` where FMI 2.0 wants it."""
    rank = _ORDER.index(element.tag)
    for position, child in enumerate(list(root)):
        if child.tag in _ORDER and _ORDER.index(child.tag) > rank:
            root.insert(position, element)
            return
    root.append(element)



def documentation_html(xml_text: bytes) -> str:
    """``documentation/index.html`` of the FMU (FMI 2.0 section 2.1: the documentation's entry
    point): the model description and one table row per variable (name, causality,
    variability, unit, display unit, range, start, meaning), from the completed model
    description ``xml_text``, so that the page says what the FMU declares."""
    from html import escape

    root = ET.fromstring(xml_text)
    rows = []
    for var in root.find("ModelVariables").findall("ScalarVariable"):
        typed = next(iter(var), None)
        attrs = typed.attrib if typed is not None else {}
        low, high = attrs.get("min"), attrs.get("max")
        span = f"{low or '-inf'} to {high or 'inf'}" if (low or high) else ""
        cells = [var.get("name"), var.get("causality", "local"), var.get("variability", "continuous"),
                 attrs.get("unit", ""), attrs.get("displayUnit", ""), span, attrs.get("start", ""),
                 var.get("description", "")]
        rows.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    title = escape(root.get("modelName", "FMU"))
    header = "".join(f"<th>{h}</th>" for h in ("variable", "causality", "variability", "unit", "display unit",
                                                "range", "start", "meaning"))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif}} table{{border-collapse:collapse}} td,th{{border:1px solid #999;padding:2px 6px;text-align:left}}</style>
</head><body>
<h1>{title}</h1>
<p>{escape(root.get("description", ""))}</p>
<p>FMI {escape(root.get("fmiVersion", ""))} co-simulation FMU generated by {escape(root.get("generationTool", ""))}.
SI units; angles in rad (shown in deg), speeds in rad/s (shown in rpm). Inputs are held over each
communication step; parameters are fixed: set them before initialization. Sign conventions: speeds and
torques are positive in each pulley's running direction, a load torque against its rotation, the
crank torque against the crank's rotation; angles counter-clockwise in the drawing of the layout
(resources/layout.toml).</p>
<table><tr>{header}</tr>
{chr(10).join(rows)}
</table></body></html>
"""
