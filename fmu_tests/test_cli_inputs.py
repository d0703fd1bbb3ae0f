"""The command line's inputs and co-simulation settings: ``--input NAME=VALUE|NAME=FILE.csv``
on ``simulate`` and ``cosim``, ``cosim --param`` and ``--output-interval``, the aliasing
warning, and ``doctor`` on a file that is not an FMU (docs/cli.md)."""
from __future__ import annotations

import csv
import math
import zipfile

import numpy as np
import pytest

from belt_fmu.cli import EXIT_USAGE, main
from belt_fmu.layout import load_layout, load_layout_text
from belt_fmu.model.geometry import BeltPath, cord_radius
from belt_fmu.simulation import simulate
from belt_fmu.units import RPM
from test_ports import STARTUP

# STARTUP: a torque-driven crank driving one accessory port, both kinds of torque input (the
# discretized model's: the lumped one has neither)


def run_cli(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    return status, out, err


def read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return {name.rpartition(" [")[0]: np.array([float(r[i]) for r in rows[1:]]) for i, name in enumerate(rows[0])}


@pytest.fixture
def startup_file(tmp_path):
    path = tmp_path / "startup.toml"
    path.write_text(STARTUP)
    return path


def test_simulate_takes_engine_torque_from_a_file_and_a_port_torque_as_a_constant(startup_file, tmp_path, capsys):
    """An engine-torque ramp from a CSV (header with units, a comment) and a constant port
    torque: the run equals the Python API fed with the same functions (linear interpolation
    of the file, held at its ends) to the CSV's 9 digits, and the input columns are the
    interpolated values at the sample times."""
    torque_file = tmp_path / "engine.csv"
    torque_file.write_text("# engine torque ramp\ntime [s],engine_torque [N.m]\n0,10\n0.02,30\n0.03,30\n")
    out_file = tmp_path / "r.csv"
    status, out, _ = run_cli(capsys, "simulate", startup_file, "--t-end", "0.05", "--output-interval", "1e-3",
                             "--input", f"engine_torque={torque_file}", "--input", "driven_torque=12.5",
                             "--out", out_file)
    assert status == 0
    assert f"engine_torque {torque_file} (3 rows, t = 0 to 0.03 s, linear)" in out and "driven_torque 12.5 N.m" in out
    got = read_csv(out_file)
    t = got["time"]
    expected_torque = np.interp(t, [0.0, 0.02, 0.03], [10.0, 30.0, 30.0])
    np.testing.assert_allclose(got["engine_torque_input"], expected_torque, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(got["driven_torque_input"], 12.5)
    reference = simulate(load_layout_text(STARTUP), rpm=800.0, t_end=0.05, output_interval=1e-3,
                         inputs={"engine_torque": lambda s: float(np.interp(s, [0.0, 0.02, 0.03], [10.0, 30.0, 30.0])),
                                 "driven_torque": 12.5})
    for name in ("speed_driver", "speed_driven", "crank_torque", "span_tension_driver_driven"):
        np.testing.assert_allclose(got[name], reference[name], rtol=1e-8, atol=1e-9, err_msg=name)
    assert got["speed_driver"][-1] > got["speed_driver"][0]  # 30 N m against 12.5: the drive speeds up


@pytest.mark.parametrize("text, lines, expected", [
    ("foo=3", None, "'foo' is not an input of this drive; its inputs: engine_torque, water_pump_torque, driven_torque"),
    ("engine_torque", None, "give NAME=VALUE or NAME=FILE.csv"),
    ("engine_torque=1e5", None, "engine_torque = 100000 N.m is outside the allowed range [-10000, 10000] N.m"),
    ("engine_torque=FILE", "0,1\n0.2,2\n0.1,3\n", "line 3: time 0.1 s does not follow 0.2 s; times must increase"),
    ("engine_torque=FILE", "0,1\n0.1,x\n", "line 2: '0.1,x' is not two numbers (time [s], engine_torque [N.m])"),
    ("engine_torque=FILE", "time [ms],engine_torque [N.m]\n0,1\n", "column 'time [ms]' is in 'ms'; this column must be in s"),
    ("engine_torque=FILE", "time [s],engine_torque\n", "has no rows of time [s], engine_torque [N.m]"),
    ("engine_torque=FILE", "0,nan\n", "'0,nan' is not finite"),
    ("engine_torque=nowhere.csv", None, "nowhere.csv is neither a number nor an existing file"),
])
def test_bad_inputs_are_usage_errors_naming_the_input_and_what_is_allowed(startup_file, tmp_path, capsys, text,
                                                                          lines, expected):
    if lines is not None:
        (tmp_path / "signal.csv").write_text(lines)
        text = text.replace("FILE", str(tmp_path / "signal.csv"))
    status, out, err = run_cli(capsys, "simulate", startup_file, "--t-end", "0.01", "--input", text)
    assert status == EXIT_USAGE and out == ""
    assert f"argument --input: {text!r}: " in err and expected in err
    assert len([line for line in err.splitlines() if "error" in line]) == 1


def test_cosim_takes_parameters_inputs_and_an_output_interval(fmu, tmp_path, capsys):
    """cosim --param model=lumped --param belt_pretension=450, a water-pump torque from a file,
    outputs every 2 steps: the table equals the Python model of the FMU's layout with the
    same pretension, fed the same inputs over the same steps, to 1e-7 (the CSV's 9 digits)."""
    torque_file = tmp_path / "pump.csv"
    torque_file.write_text("0,1\n0.01,4\n")
    out_file = tmp_path / "r.csv"
    status, out, _ = run_cli(capsys, "cosim", fmu, "--rpm", "1200", "--t-end", "0.02", "--step", "1e-3",
                             "--output-interval", "2e-3", "--param", "model=lumped", "--param", "belt_pretension=450",
                             "--input", f"water_pump_torque={torque_file}", "--out", out_file)
    assert status == 0
    assert "parameters: model = lumped, belt_pretension = 450" in out and "lumped model" in out
    got = read_csv(out_file)
    np.testing.assert_allclose(got["time"], np.arange(11) * 2e-3, atol=1e-12)
    pump = lambda s: float(np.interp(s, [0.0, 0.01], [1.0, 4.0]))  # noqa: E731
    held = [pump(max(0.0, s - 1e-3)) for s in got["time"]]  # a row has the input of the step that ended there
    np.testing.assert_allclose(got["water_pump_torque_input"], held, rtol=1e-12)
    data = load_layout().to_data()
    data["drive"]["model"] = "lumped"
    data["belt"]["pretension_N"] = 450.0
    from belt_fmu.layout import load_layout_data

    reference = simulate(load_layout_data(data), rpm=1200.0, water_pump_torque=pump, t_end=0.02,
                         output_interval=1e-3)
    for name in ("bearing_force", "crank_torque", "span_tension_crank_tensioner", "speed_water_pump"):
        np.testing.assert_allclose(got[name], reference[name][::2], rtol=1e-7, err_msg=name)


@pytest.mark.parametrize("argv, expected", [
    (["--param", "foo=3"], "argument --param: 'foo=3': 'foo' is not a parameter of this FMU; its parameters: "
                           "belt_pretension, "),
    (["--param", "belt_pretension=-3"], "argument --param: 'belt_pretension=-3': belt_pretension must be a number >= 0 N"),
    (["--param", "n_elements=many"], "argument --param: 'n_elements=many': n_elements takes an integer"),
    (["--output-interval", "1.5e-4"], "argument --output-interval: 0.00015 s is not a whole number of communication "
                                      "steps of 0.0001 s"),
    (["--input", "engine_torque=3"], "'engine_torque' is not an input of this drive; its inputs: crank_speed, "
                                     "water_pump_torque"),
])
def test_cosim_refuses_unknown_parameters_and_intervals_that_are_no_whole_steps(fmu, capsys, argv, expected):
    status, out, err = run_cli(capsys, "cosim", fmu, "--t-end", "0.001", *argv)
    assert status == EXIT_USAGE and out == ""
    assert expected in err


def polygon_hz(rpm: float) -> float:
    """R w n / l of the built-in drive [Hz], the belt elements passing the crank pulley per
    second (belt speed R w over the element length l / n; docs/model.md)."""
    layout = load_layout()
    return (cord_radius(layout, layout.crank_index) * rpm * RPM * layout.belt.n_elements
            / BeltPath.from_layout(layout).length)


def test_cosim_warns_when_instantaneous_outputs_alias(fmu, capsys):
    """At 2000 rpm the polygon frequency of the built-in drive is about 2 kHz: 1 ms steps
    sample it below twice that frequency (the warning names both), 0.2 ms steps do not, and
    the lumped model (no polygon) never warns. The FMU's outputs are averaged unless the
    parameter output_mode says "sample"."""
    hz = polygon_hz(2000.0)
    assert 1900.0 < hz < 2100.0 and 1e-3 > 0.5 / hz > 2e-4
    sample = ("--output-mode", "sample")
    status, out, err = run_cli(capsys, "cosim", fmu, "--rpm", "2000", "--t-end", "0.004", "--step", "1e-3", *sample)
    assert status == 0, err
    assert f"below twice the polygon frequency ({hz:.4g} Hz at 2000 rpm)" in out
    # the FMU's own log says it too, at its first step, for any host
    assert (f"[WARNING] communication steps of 0.001 s sample the outputs at 1000 Hz, below twice the polygon "
            f"frequency ({hz:.4g} Hz at 2000 rpm)") in err
    status, out, err = run_cli(capsys, "cosim", fmu, "--rpm", "2000", "--t-end", "0.004", "--step", "2e-4", *sample)
    assert status == 0 and "polygon frequency" not in out + err
    status, out, err = run_cli(capsys, "cosim", fmu, "--rpm", "2000", "--t-end", "0.004", "--step", "1e-3",
                               "--param", "model=lumped", *sample)
    assert status == 0 and "polygon frequency" not in out + err
    # averaged over each 1 ms step (two polygon periods: the default) the ripple does not
    # alias: the FMU does not warn, the command says averaging is on and how much of the
    # ripple is left
    status, out, err = run_cli(capsys, "cosim", fmu, "--rpm", "2000", "--t-end", "0.004", "--step", "1e-3")
    assert status == 0 and "polygon frequency" not in out + err
    assert "note: averaging is on (output mode average): each output is its mean over the 0.001 s before it" in out
    assert f"at most {100.0 / (math.pi * hz * 1e-3):.2g} % of the polygon ripple ({hz:.4g} Hz at 2000 rpm)" in out


def test_simulate_warns_when_its_output_interval_aliases(capsys):
    """Sampled outputs alias at 1 ms and 2000 rpm (the warning says so and what to do);
    averaged ones, the default, do not."""
    status, out, _ = run_cli(capsys, "simulate", "--rpm", "2000", "--t-end", "0.002", "--output-interval", "1e-3",
                             "--output-mode", "sample")
    assert status == 0 and f"below twice the polygon frequency ({polygon_hz(2000.0):.4g} Hz" in out
    assert "average them over each interval (--output-mode average)" in out
    status, out, _ = run_cli(capsys, "simulate", "--rpm", "2000", "--t-end", "0.002", "--output-interval", "1e-3")
    assert status == 0 and "polygon frequency" not in out and "note: averaging is on" in out


@pytest.mark.parametrize("make, expected", [
    (lambda p: p.write_text("# a README\n"), "is not an FMU (an FMU is a zip archive"),
    (lambda p: zipfile.ZipFile(p, "w").writestr("notes.txt", "x"), "is a zip archive but not an FMU: it has no "
                                                                   "modelDescription.xml"),
])
def test_doctor_on_something_that_is_not_an_fmu_is_one_line_and_exit_2(tmp_path, capsys, make, expected):
    path = tmp_path / "thing.fmu"
    make(path)
    status, out, err = run_cli(capsys, "doctor", path)
    assert status == EXIT_USAGE and out == ""
    assert err.splitlines() == [f"belt-fmu doctor: error: {path} {expected}" + err.split(expected, 1)[1].rstrip()]


def test_cosim_runs_a_torque_driven_fmu_with_its_engine_torque_from_a_file(startup_file, tmp_path, capsys):
    """An FMU whose crank is torque-driven (input engine_torque, no crank_speed input) is a
    belt_fmu FMU too: cosim starts it at --rpm (its initial_crank_speed) and feeds the engine
    torque from a file and the port a constant; the outputs equal simulate's of the same
    layout with the same inputs, to the CSV's 9 digits."""
    from belt_fmu.build import build_fmu

    fmu = build_fmu(startup_file, tmp_path / "Startup.fmu")
    torque_file = tmp_path / "engine.csv"
    torque_file.write_text("0,10\n0.02,30\n")
    out_file = tmp_path / "r.csv"
    status, out, err = run_cli(capsys, "cosim", fmu, "--rpm", "300", "--t-end", "0.03", "--step", "1e-4",
                               "--input", f"engine_torque={torque_file}", "--input", "driven_torque=12.5",
                               "--out", out_file)
    assert status == 0, err
    assert "crank 300 rpm at the start (torque-driven)" in out
    got = read_csv(out_file)
    reference = simulate(load_layout_text(STARTUP), rpm=300.0, t_end=0.03, output_interval=1e-4,
                         inputs={"engine_torque": lambda s: float(np.interp(s, [0.0, 0.02], [10.0, 30.0])),
                                 "driven_torque": 12.5})
    for name in ("speed_driver", "speed_driven", "crank_torque", "span_tension_driver_driven"):
        np.testing.assert_allclose(got[name], reference[name], rtol=1e-8, atol=1e-9, err_msg=name)
