"""What the FMU tells a host's user: display units (deg for angles, rpm for speeds) and the
documentation page listing every variable with its unit and meaning."""
from __future__ import annotations

import math
from html import escape
import xml.etree.ElementTree as ET
import zipfile


def test_angles_show_in_degrees_and_speeds_in_rpm(fmu):
    root = ET.fromstring(zipfile.ZipFile(fmu).read("modelDescription.xml"))
    units = {u.get("name"): {d.get("name"): float(d.get("factor")) for d in u.findall("DisplayUnit")}
             for u in root.find("UnitDefinitions")}
    assert units["rad"]["deg"] == math.degrees(1.0)
    assert units["rad/s"]["rpm"] * 2.0 * math.pi / 60.0 == 1.0
    by_unit = {}
    for var in root.find("ModelVariables"):
        real = var.find("Real")
        if real is not None:
            by_unit.setdefault(real.get("unit"), set()).add(real.get("displayUnit"))
    assert by_unit["rad"] == {"deg"} and by_unit["rad/s"] == {"rpm"}
    assert by_unit["N"] == {None}


def test_documentation_lists_every_variable_with_unit_and_meaning(fmu):
    with zipfile.ZipFile(fmu) as archive:
        page = archive.read("documentation/index.html").decode()
        root = ET.fromstring(archive.read("modelDescription.xml"))
    for var in root.find("ModelVariables"):
        real = var.find("Real")
        unit = real.get("unit") if real is not None else ""
        assert f"<td>{var.get('name')}</td>" in page
        assert f"<td>{escape(var.get('description') or '')}</td>" in page
        if unit:
            assert f"<td>{unit}</td>" in page
