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


def test_the_documented_fmpy_examples_sample_the_polygon_ripple():
    """The fmpy examples of docs/fmu.md and docs/hosts.md give fmpy its communication step
    (``output_interval``; fmpy does not use ``step_size`` for a co-simulation FMU, and without
    an interval doubles the FMU's default step up to 0.8 ms for 0.5 s), at most half the
    polygon period at the crank speed they run: the built-in drive's R w n / l."""
    import re
    from pathlib import Path

    from belt_fmu.layout import load_layout
    from belt_fmu.model.geometry import drive_polygon_frequency

    docs = Path(__file__).resolve().parent.parent / "docs"
    for page in ("fmu.md", "hosts.md"):
        text = (docs / page).read_text()
        calls = re.findall(r"simulate_fmu\((.*?)\)\n", text, re.S)
        assert calls, page
        for call in calls:
            interval = float(re.search(r"output_interval=([0-9.e-]+)", call).group(1))
            speed = float(re.search(r'"crank_speed": ([0-9.]+)', call).group(1))
            assert interval * 2.0 * drive_polygon_frequency(load_layout(), speed) <= 1.0, (page, call)
