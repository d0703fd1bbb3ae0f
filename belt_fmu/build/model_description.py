"""Complete PythonFMU's modelDescription.xml: units, ranges, structure, default experiment.

PythonFMU 0.7.0 writes variables without units and a ModelStructure that ``fmpy validate``
rejects (outputs with ``initial="calculated"`` need InitialUnknowns). This module adds, per
FMI 2.0 (section 2.2):

* ``UnitDefinitions`` with the SI base-unit exponents of every unit used, and ``unit`` on
  every Real variable;
* ``min``/``max`` on the inputs (the ranges the slave accepts) and on the parameters (the
  layout rules' bounds);
* ``InitialUnknowns`` listing the outputs, which depend on all inputs and parameters;
* a ``DefaultExperiment``.
"""
from __future__ import annotations

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

