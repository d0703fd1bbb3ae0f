"""The error contract (docs/cli.md, "Exit status"): every entry point answers bad input with one
message naming the field or option, the value and what is allowed, with the documented exit
status, and never a traceback. One test per row of issue 14's table, then the fuzz of the
layout loader."""
from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from belt_fmu.cli import EXIT_INTERNAL, EXIT_LAYOUT, EXIT_MODEL, EXIT_OUTPUT, EXIT_USAGE, main
from belt_fmu.layout import LayoutError, load_layout, load_layout_text

DEFAULT = (Path(__file__).resolve().parent.parent / "belt_fmu" / "layouts" / "default.toml").read_text()


def run_cli(capsys, *argv):
    """(exit status, stdout, stderr) of the command line; asserts no traceback."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    return status, out, err


def layout_with(tmp_path, old, new, name="drive.toml"):
    text = DEFAULT.replace(old, new)
    assert text != DEFAULT, old
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- inputs
@pytest.mark.parametrize("argv, option, value", [
    (["simulate", "--rpm", "20000"], "--rpm", "20000"),
    (["simulate", "--water-pump-torque", "5000"], "--water-pump-torque", "5000"),
    (["sweep", "--rpm", "800,20000"], "--rpm", "20000"),
])
def test_input_outside_the_models_range_is_a_usage_error(capsys, argv, option, value):
    status, _, err = run_cli(capsys, *argv)
    assert status == EXIT_USAGE
    assert f"argument {option}" in err and value in err
    assert "14323.9" in err or "[-1000, 1000]" in err  # the allowed range


def test_misspelt_option_suggests_the_right_one(capsys):
    status, _, err = run_cli(capsys, "simulate", "--rmp", "900")
    assert status == EXIT_USAGE
    assert "unrecognized arguments: --rmp" in err and "did you mean --rpm" in err


def test_api_refuses_inputs_naming_input_value_and_range():
    from belt_fmu.model.inputs import check_inputs

    with pytest.raises(ValueError, match=r"crank_speed = 2094.4 rad/s is outside the allowed range \[0, 1500\]"):
        check_inputs(20000 * 2 * math.pi / 60, 0.0)
    with pytest.raises(ValueError, match="water_pump_torque must be a finite number"):
        check_inputs(80.0, float("nan"))


# --------------------------------------------------------------------------- FMU files
def test_cosim_of_a_layout_file_says_it_is_no_fmu(capsys):
    layout = Path(load_layout().source)
    status, _, err = run_cli(capsys, "cosim", str(layout))
    assert status == EXIT_USAGE
    assert f"argument FMU: {layout} is not an FMU (an FMU is a zip archive" in err


def test_cosim_of_another_fmu_says_it_is_no_belt_fmu(tmp_path, capsys):
    other = tmp_path / "WaterPump.fmu"
    with zipfile.ZipFile(other, "w") as archive:  # a valid FMI 2.0 co-simulation model description
        archive.writestr("modelDescription.xml", """<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="WaterPump" guid="{0}" numberOfEventIndicators="0">
  <CoSimulation modelIdentifier="WaterPump"/>
  <ModelVariables>
    <ScalarVariable name="speed" valueReference="0" causality="input" variability="continuous"><Real start="0"/></ScalarVariable>
    <ScalarVariable name="torque" valueReference="1" causality="output" variability="continuous"><Real/></ScalarVariable>
  </ModelVariables>
  <ModelStructure><Outputs><Unknown index="2"/></Outputs></ModelStructure>
</fmiModelDescription>""")
    status, _, err = run_cli(capsys, "cosim", str(other))
    assert status == EXIT_USAGE
    assert "(model 'WaterPump') is not a belt_fmu FMU: it lacks input crank_speed or engine_torque, water_pump_torque" in err


@pytest.mark.parametrize("step, t_end, expected", [
    ("1", "0.01", "choose --t-end 1"),  # a step longer than the run: it ran no step at all
    ("0.003", "0.01", "choose --t-end 0.009 or 0.012"),  # it stopped at 0.009 s
])
def test_cosim_run_that_is_no_whole_number_of_steps_is_refused(fmu, capsys, step, t_end, expected):
    """Fixed communication steps must end at --t-end: refused before the FMU is loaded,
    naming the options and the run lengths that would do."""
    status, out, err = run_cli(capsys, "cosim", str(fmu), "--step", step, "--t-end", t_end)
    assert status == 2 and out == ""
    assert f"argument --step: {float(t_end):g} s is not a whole number of communication steps of {float(step):g} s" in err
    assert expected in err


@pytest.mark.parametrize("argv, options, fits", [
    (["simulate", "--t-end", "1e9"], "--t-end / --output-interval", "or run 235.5 s or less"),  # 1e13 samples
    (["simulate", "--t-end", "0.01", "--output-interval", "1e-9"], "--t-end / --output-interval",
     "sample every 4.25e-09 s or more"),
    (["cosim", "FMU", "--t-end", "1e5"], "--t-end / --step", "or run 231.4 s or less"),
])
def test_run_whose_results_would_not_fit_in_memory_is_refused(fmu, capsys, argv, options, fits):
    """A results table beyond 1 GiB is refused before the run, naming the options and what
    fits (the built-in drive: 57 columns from simulate, 58 from cosim, whose FMU also gives
    water_pump_speed); it was an allocation failure of 72.8 TiB, or hours of stepping and
    swapping."""
    status, out, err = run_cli(capsys, *[str(fmu) if a == "FMU" else a for a in argv])
    assert status == EXIT_USAGE and out == ""
    assert f"argument {options}: " in err and "beyond the 1 GiB a run's results may take in memory" in err
    assert fits in err


def test_api_refuses_a_run_whose_results_would_not_fit_in_memory():
    from belt_fmu.simulation import simulate

    with pytest.raises(ValueError, match=r"makes 1e\+07 rows of 57 columns \(4.56 GB\)"):
        simulate(rpm=800.0, t_end=1e4, output_interval=1e-3)


def test_cosim_input_beyond_range_is_refused_before_the_fmu_runs(fmu, capsys):
    status, _, err = run_cli(capsys, "cosim", str(fmu), "--rpm", "20000")
    assert status == EXIT_USAGE and "argument --rpm: '20000'" in err


def test_failing_fmu_call_is_an_fmu_error_with_the_fmus_messages(fmu):
    from belt_fmu.cosim import FmuError, cosimulate

    with pytest.raises(FmuError, match=r"initialization failed .*crank_speed"):
        cosimulate(fmu, crank_speed=5000.0, t_end=1e-3)  # beyond the FMU input's max: fmi2Error


# --------------------------------------------------------------------------- output files
def test_out_mat_writes_matlab_and_unknown_extension_is_refused(tmp_path, capsys):
    from scipy.io import loadmat

    keep = tmp_path / "results.h5"
    keep.write_text("the user's data")
    status, _, err = run_cli(capsys, "simulate", "--t-end", "0.002", "--out", str(keep))
    assert status == EXIT_USAGE
    assert "unknown table format '.h5'; use a name ending in .csv, .mat" in err
    assert keep.read_text() == "the user's data"
    mat = tmp_path / "results.mat"
    status, _, _ = run_cli(capsys, "simulate", "--t-end", "0.002", "--output-interval", "1e-3", "--out", str(mat))
    assert status == 0
    data = loadmat(mat)
    assert data["time"].ravel() == pytest.approx([0.0, 1e-3, 2e-3])
    assert data["units"]["tensioner_angle"][0, 0][0] == "rad"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.h5", "results.mat"]  # no temporary left


def test_sweep_out_must_be_csv(tmp_path, capsys):
    status, _, err = run_cli(capsys, "sweep", "--rpm", "800", "--out", str(tmp_path / "s.mat"))
    assert status == EXIT_USAGE and "use a name ending in .csv" in err


def test_build_into_an_unwritable_place_is_an_output_error(capsys):
    status, _, err = run_cli(capsys, "build", "-o", "/proc/b.fmu", "--no-kernels")
    assert status == EXIT_OUTPUT
    assert "belt-fmu build: error: -o /proc/b.fmu: cannot write" in err


# --------------------------------------------------------------------------- the run itself
def test_gross_slip_is_a_warning_in_the_summary(capsys):
    status, out, _ = run_cli(capsys, "simulate", "--t-end", "0.05", "--water-pump-torque", "60")
    assert status == 0
    warning = [line for line in out.splitlines() if line.startswith("warning: gross slip of pulley water_pump")]
    assert warning and "from t = 0 s" in warning[0] and "up to 99" in warning[0]


def test_no_slip_warning_for_a_normal_run(capsys):
    status, out, _ = run_cli(capsys, "simulate", "--t-end", "0.05", "--water-pump-torque", "2")
    assert status == 0 and "warning" not in out


def test_runaway_pulley_is_reported_as_divergence(capsys):
    """-1000 N m drives the pump away already while the drive settles to its operating point,
    before the run: the message says so, and its time is before the run's start (the settling
    runs up to t = 0), not a time beyond a run of 0.1 s."""
    status, _, err = run_cli(capsys, "simulate", "--t-end", "0.1", "--water-pump-torque", "-1000")
    assert status == EXIT_MODEL
    assert "pulley water_pump ran away" in err and "water_pump_torque=-1000.0" in err
    assert ("while settling to the operating point (crank 800 rpm, water-pump torque -1000 N.m) before the run "
            "starts at t = 0: pulley water_pump ran away by t = -") in err


def test_unexpected_error_is_one_line_and_a_request_to_report(monkeypatch, capsys):
    import belt_fmu.simulation

    def broken(*args, **kwargs):
        raise KeyError("something the code did not expect")

    monkeypatch.setattr(belt_fmu.simulation, "simulate", broken)
    status, _, err = run_cli(capsys, "simulate", "--t-end", "0.01")
    assert status == EXIT_INTERNAL
    assert err.startswith("belt-fmu simulate: internal error: KeyError:") and "please report it" in err
    assert "--debug" in err and len(err.strip().splitlines()) == 2
    status = main(["simulate", "--t-end", "0.01", "--debug"])
    assert status == EXIT_INTERNAL and "Traceback" in capsys.readouterr().err


# --------------------------------------------------------------------------- layouts
@pytest.mark.parametrize("old, new, expected", [
    ("n_elements = 150", "n_elements = 1000000000", "belt.n_elements: 1000000000 must be an integer in [12, 2000]"),
    ("n_elements = 150", "n_elements = 4611686018427387904", "belt.n_elements: 4611686018427387904 must be an integer"),
    ("pivot_m = [0.21, 0.165]", "pivot_m = [1e30, 0]", "tensioner.pivot_m: [1e+30, 0] must be [x, y], two numbers in "
                                                      "[-10, 10] m"),
    ("mass_per_length_kg_per_m = 0.115", "mass_per_length_kg_per_m = 1.2e-7",
     "contact: the stable time step would be 6e-11 s, set by the belt's contact mode"),
    ("damping_Ns_per_m2 = 4.0e3", "damping_Ns_per_m2 = 1e30", "contact.damping_Ns_per_m2 = 1e+30"),
    ("bending_damping_Nm2s = 1.0e-7", "bending_damping_Nm2s = 1e30", "belt's bending rotation mode"),
    ("damping_Nms_per_rad = 1.0 ", "damping_Nms_per_rad = 1e30 ", "tensioner.damping_Nms_per_rad: 1e+30 is too large"),
])
def test_layout_magnitudes_are_bounded_naming_the_field(tmp_path, capsys, old, new, expected):
    path = layout_with(tmp_path, old, new)
    start = time.perf_counter()
    status, _, err = run_cli(capsys, "simulate", str(path), "--t-end", "0.01")
    assert status == EXIT_LAYOUT and expected in err
    assert time.perf_counter() - start < 30.0  # refused up front, no hang


@pytest.mark.parametrize("length, expected", [(1e6, "far too long"), (0.01, "far too short")])
def test_unstretched_length_far_from_the_path(length, expected):
    text = DEFAULT.replace("pretension_N = 450.0", f"unstretched_length_m = {length!r}").replace(
        "spring_rate_Nm_per_rad = 40.0", "spring_rate_Nm_per_rad = 40.0\npreload_Nm = 5.0")
    with pytest.raises(LayoutError, match=f"belt.unstretched_length_m: {length!r} m is {expected} for the installed "
                                          r"cord path of 1.36\d+ m; must be in"):
        load_layout_text(text)


def test_tensioner_without_equilibrium_names_the_stops_as_the_layout_gives_them():
    from belt_fmu.model.initialization import InitializationError
    from belt_fmu.model.system import BeltDrive

    text = DEFAULT.replace("pretension_N = 450.0", "unstretched_length_m = 1.3").replace(
        "spring_rate_Nm_per_rad = 40.0", "spring_rate_Nm_per_rad = 40.0\npreload_Nm = 5.0")
    with pytest.raises(InitializationError, match=r"tensioner.stop_min_rad = -0.35 and stop_max_rad = 0.35 rad from "
                                                  "the installed angle: at the installed angle the belt is too short"):
        BeltDrive(load_layout_text(text)).reset(80.0, settle_time=0.0)


def test_build_of_a_drive_that_cannot_start_is_refused(tmp_path, capsys):
    """As simulate refuses it: a layout whose tensioner finds no equilibrium is refused at
    build with the reason, exit 3, and no FMU is written (it built, and the FMU failed at
    its initialization, before)."""
    text = DEFAULT.replace("pretension_N = 450.0", "unstretched_length_m = 1.3").replace(
        "spring_rate_Nm_per_rad = 40.0", "spring_rate_Nm_per_rad = 40.0\npreload_Nm = 5.0")
    layout = tmp_path / "short_belt.toml"
    layout.write_text(text)
    status, out, err = run_cli(capsys, "build", str(layout), "-o", str(tmp_path / "Short.fmu"))
    assert status == EXIT_MODEL
    assert "the FMU's model cannot start at its start inputs" in err and "the belt is too short" in err
    assert not (tmp_path / "Short.fmu").exists()


def test_pretension_bound_and_six_percent_prestretch(two_pulley_layout):
    """A 6 % pre-stretch (an elastic belt) starts: span tensions at the pretension (within
    the 1 % that the contact penetration and the discretization change it by); beyond 15 %
    of EA the layout check refuses it naming the bound."""
    from belt_fmu.model.system import BeltDrive

    ea = 1.2e5
    layout = two_pulley_layout(pretension=0.06 * ea, ea=ea)
    drive = BeltDrive(layout)
    drive.reset(0.0, 0.0, settle_time=0.0)
    out = drive.outputs()
    for name in ("span_tension_driver_driven", "span_tension_driven_driver"):
        assert out[name] == pytest.approx(0.06 * ea, rel=0.01)
    with pytest.raises(LayoutError, match=r"belt.pretension_N: 19200.0 N would stretch the belt by 16 % "
                                          r"\(axial_stiffness_N = 120000 N\); must be <= 18000 N \(15 % of EA\)"):
        two_pulley_layout(pretension=0.16 * ea, ea=ea)


# --------------------------------------------------------------------------- sweep workers
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killing_the_sweeps_main_process_ends_its_workers(tmp_path):
    """kill -9 of the sweep's main process: its workers, forkserver and resource tracker end
    within a few seconds (each worker watches the main process)."""
    process = subprocess.Popen([sys.executable, "-m", "belt_fmu.cli", "sweep", "--rpm", "800:3000:12",
                                "--workers", "2", "--no-progress"], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def descendants(pid):
        children = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(entry.name))
        found, todo = [], [pid]
        while todo:
            for child in children.get(todo.pop(), []):
                found.append(child)
                todo.append(child)
        return found

    try:
        deadline = time.monotonic() + 120.0
        while len(descendants(process.pid)) < 4 and time.monotonic() < deadline:  # tracker, server, 2 workers
            time.sleep(0.2)
        family = descendants(process.pid)
        assert len(family) >= 4, "the sweep did not start its workers"
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    deadline = time.monotonic() + 10.0
    alive = family
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pid for pid in family if Path(f"/proc/{pid}").exists()
                 and "Z" not in (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:1] or ["Z"])]
    for pid in alive:  # leave nothing behind even when failing
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"{len(alive)} of the sweep's processes outlived its main process"


def test_outputs_are_valid_right_after_a_reset_without_settling():
    """Span tensions right after reset(settle_time=0) are the built state's: the tension
    rises across each driven pulley by its load torque / cord radius (steady torque balance,
    docs/references.md), here the two alternators' table torque at their speed."""
    from belt_fmu.model.system import BeltDrive

    layout = load_layout()
    drive = BeltDrive(layout)
    drive.reset(800 * 2 * math.pi / 60, 0.0, settle_time=0.0)
    out = drive.outputs()
    spans = [name for name in out if name.startswith("span_tension_")]
    assert all(out[name] > 100.0 for name in spans)
    rise = out["span_tension_alternator1_idler1"] - out["span_tension_tensioner_alternator1"]
    radius = drive.geometry.radii[[p.name for p in layout.pulleys].index("alternator1")]
    torque = drive.load_torques(np.abs(drive.views.omega), 0.0)[2]
    assert rise == pytest.approx(torque / radius, rel=0.02)  # the 2 %: element-wise sampling of the wrap


def test_bristle_damping_is_a_layout_value_defaulting_to_half_critical(two_pulley_layout):
    """friction.bristle_damping_Ns_per_m2: per node l0 times the given value; unset, sqrt(k m)
    of a node (half the critical damping 2 sqrt(k m) of a node on its bristle spring)."""
    import dataclasses

    from belt_fmu.model.parameters import translate

    layout = two_pulley_layout(law="bristle")
    params, _ = translate(layout)
    belt, law = params.belt[0], params.friction[0]
    assert law["bristle_damping"] == pytest.approx(math.sqrt(law["bristle_stiffness"] * belt["node_mass"]), rel=1e-12)
    given = dataclasses.replace(layout, friction=dataclasses.replace(layout.friction, bristle_damping_Ns_per_m2=123.0))
    params, _ = translate(given)
    assert params.friction[0]["bristle_damping"] == pytest.approx(123.0 * params.belt[0]["rest_length"], rel=1e-12)


def test_an_fmu_that_cannot_be_instantiated_is_an_fmu_error(fmu, tmp_path, capsys):
    """A belt_fmu FMU whose binary is damaged: exit 3 naming the FMU and the failed step."""
    damaged = tmp_path / "Damaged.fmu"
    with zipfile.ZipFile(fmu) as source, zipfile.ZipFile(damaged, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            target.writestr(item, b"not a shared library" if item.filename.startswith("binaries/") else data)
    status, _, err = run_cli(capsys, "cosim", str(damaged), "--t-end", "0.001")
    assert status == EXIT_MODEL
    assert f"{damaged}: instantiation failed" in err


def test_an_unstretched_length_six_percent_short_starts():
    """The other way to pre-stretch a belt by 6 %: an unstretched length 6 % short of the
    cord path on fixed centres. The span tension is then EA times the strain of the belt
    on its (loaded) path, within 1 % (the contact penetration shortens the path a little)."""
    from conftest import two_pulley_text

    from belt_fmu.model.geometry import BeltPath
    from belt_fmu.model.system import BeltDrive

    ea = 1.2e5
    text = two_pulley_text(pretension=1000.0, ea=ea)
    length = BeltPath.from_layout(load_layout_text(text)).length
    layout = load_layout_text(text.replace("pretension_N = 1000.0", f"unstretched_length_m = {length / 1.06!r}"))
    drive = BeltDrive(layout)
    drive.reset(0.0, 0.0, settle_time=0.0)
    assert drive.outputs()["span_tension_driver_driven"] == pytest.approx(0.06 * ea, rel=0.01)
