"""The ``belt-fmu`` command line, run in-process through ``main([...])``."""
import importlib
import math

import pytest

from belt_fmu import DivergenceError, load_layout
from belt_fmu.cli import EXIT_INTERNAL, EXIT_LAYOUT, EXIT_MODEL, EXIT_USAGE, _factor, _parser, main
from belt_fmu.model.geometry import BeltPath

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def layout_file(tmp_path):
    """The built-in layout written to a file of its own."""
    return load_layout().write(tmp_path / "drive.toml")


def test_layout_prints_belt_length_and_wrap_angles_and_draws_the_drive(layout_file, tmp_path, capsys):
    figure = tmp_path / "layout.png"
    assert main(["layout", str(layout_file), "--plot", str(figure)]) == 0
    out = capsys.readouterr().out
    path = BeltPath.from_layout(load_layout(layout_file))
    assert f"belt length (cord line, installed): {path.length:.6g} m" in out
    for pulley, wrap in zip(load_layout(layout_file).pulleys, path.wrap_angle):
        line = next(row for row in out.splitlines() if row.startswith(pulley.name + " "))
        assert f"{wrap:.4f}" in line and f"{math.degrees(wrap):.1f}" in line
    assert "tensioner arm:" in out
    assert figure.read_bytes().startswith(PNG_SIGNATURE)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["drive.toml", "layout.png"]


def test_layout_and_operating_point_name_the_wraps_holding_fewer_than_four_nodes(layout_file, capsys):
    """Each wrap's nodes are its cord arc over the element length (the built-in drive: 1.36 m
    of belt in 150 elements); the back-side pulleys (cord radius 38.3 mm, 23-26 deg) hold
    1.7-1.9, and both commands name them (docs/model.md, "Small wraps"); a 300-element belt
    (3.4 nodes and up) gets no note."""
    layout = load_layout(layout_file)
    path = BeltPath.from_layout(layout)
    assert main(["layout", str(layout_file)]) == 0
    out = capsys.readouterr().out
    for j, pulley in enumerate(layout.pulleys):
        line = next(row for row in out.splitlines() if row.startswith(pulley.name + " "))
        assert line.endswith(f"{path.radii[j] * path.wrap_angle[j] * 150 / path.length:.1f}")
    named = "the wraps of tensioner (1.7 nodes), idler1 (1.7) and idler2 (1.9) hold fewer than 3"
    assert named in " ".join(out.split())
    assert main(["operating-point", str(layout_file)]) == 0
    assert named in " ".join(capsys.readouterr().out.split())
    layout_file.write_text(layout_file.read_text().replace("n_elements = 150", "n_elements = 300"))
    assert main(["layout", str(layout_file)]) == 0
    assert "note:" not in capsys.readouterr().out


def test_simulate_writes_a_csv_with_units_and_a_plot(tmp_path, capsys):
    csv, figure = tmp_path / "results.csv", tmp_path / "results.png"
    status = main(["simulate", "--rpm", "800", "--t-end", "0.01", "--water-pump-torque", "2.0",
                   "--out", str(csv), "--plot", str(figure)])
    assert status == 0
    out = capsys.readouterr().out
    header = csv.read_text().splitlines()[0].split(",")
    assert header[:3] == ["time [s]", "crank_speed_input [rad/s]", "water_pump_torque_input [N.m]"]
    assert "bearing_force [N]" in header and "tensioner_angle [rad]" in header
    assert len(csv.read_text().splitlines()) == 1 + 101  # header, t = 0 ... 0.01 s every 0.1 ms
    assert figure.read_bytes().startswith(PNG_SIGNATURE)
    for name in ("tensioner_angle", "bearing_force", "crank_torque", "span_tension_crank_tensioner",
                 "speed_water_pump", "slip_water_pump", "real-time factor"):
        assert name in out


@pytest.mark.parametrize("value, shown", [(2.434, "2.43"), (0.01234, "0.0123"), (999.4, "999"), (999.6, "1000"),
                                           (1147.3, "1147"), (math.inf, "inf")])
def test_real_time_factors_print_without_an_exponent(value, shown):
    """The printed real-time factor: three significant digits below 1000, whole numbers from
    there (a lumped run's 1147, not 1.15e+03)."""
    assert _factor(value) == shown


def test_invalid_layout_file_exits_2_naming_file_and_field(layout_file, capsys):
    layout_file.write_text(layout_file.read_text().replace("n_elements = 150", "n_elements = 5"))
    assert main(["layout", str(layout_file)]) == EXIT_LAYOUT
    err = capsys.readouterr().err
    assert f"{layout_file}: belt.n_elements: 5 must be an integer in [12, 2000]" in err
    assert "Traceback" not in err


def test_missing_layout_file_exits_2(tmp_path, capsys):
    missing = tmp_path / "nowhere.toml"
    assert main(["simulate", str(missing), "--t-end", "0.01"]) == EXIT_LAYOUT
    assert f"{missing}: no such layout file" in capsys.readouterr().err


@pytest.mark.parametrize("option, value", [("--t-end", "-1"), ("--t-end", "inf"), ("--rpm", "nan"),
                                           ("--rpm", "fast"), ("--output-interval", "0"),
                                           ("--water-pump-torque", "nan")])
def test_bad_values_are_argparse_errors_naming_the_option(option, value, capsys):
    assert main(["simulate", option, value]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"argument {option}:" in err and "Traceback" not in err


@pytest.mark.parametrize("option, value, accepted", [("--rpm", "1200", True), ("--rpm", "14000", True),
                                                     ("--rpm", "15000", False), ("--rpm", "-1", False),
                                                     ("--water-pump-torque", "999", True),
                                                     ("--water-pump-torque", "1001", False)])
def test_input_options_check_their_own_range(option, value, accepted):
    """Each input option is checked against its own documented range (crank speed 0 to
    14323.9 rpm, water-pump torque -1000 to 1000 N m): the speed's check once read the torque's
    range and refused 1200 rpm."""
    parser = _parser()
    if accepted:
        parser.parse_args(["simulate", option, value])
    else:
        with pytest.raises(SystemExit):
            parser.parse_args(["simulate", option, value])


@pytest.mark.parametrize("command, after_the_check", [("simulate", "belt_fmu.cli._load_layout"),
                                                     ("response", "belt_fmu.cli._load_layout"),
                                                     ("sweep", "belt_fmu.sweep.default_workers")])
def test_the_speed_range_an_error_states_is_accepted_at_its_end(capsys, monkeypatch, command, after_the_check):
    """The crank speed's upper bound is 1500 rad/s, 14323.94 rpm: the errors stated it rounded
    up to 14324 rpm, which the same check then refused. The bound each command states is
    accepted as typed: the command gets past its check (to a function stubbed to stop it
    there, before anything is simulated)."""
    import re

    class Reached(Exception):
        pass

    def stop(*args, **kwargs):
        raise Reached

    assert main([command, "--rpm", "20000"]) == EXIT_USAGE
    stated = re.search(r"([0-9.]+)\] rpm", capsys.readouterr().err).group(1)
    monkeypatch.setattr(after_the_check, stop)
    assert main([command, "--rpm", stated]) == EXIT_INTERNAL
    assert "Reached" in capsys.readouterr().err


def test_output_interval_longer_than_the_run_is_refused(capsys):
    assert main(["simulate", "--t-end", "0.01", "--output-interval", "0.02"]) == EXIT_USAGE
    assert "argument --output-interval:" in capsys.readouterr().err


def test_each_command_accepts_only_its_own_options(capsys):
    assert main(["layout", "--rpm", "800"]) == EXIT_USAGE
    assert "unrecognized arguments: --rpm" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--out", "--plot"])
def test_refuses_to_overwrite_the_layout_file(layout_file, option, capsys):
    before = layout_file.read_bytes()
    assert main(["simulate", str(layout_file), "--t-end", "0.01", option, str(layout_file)]) == EXIT_USAGE
    assert "refusing to overwrite" in capsys.readouterr().err
    assert layout_file.read_bytes() == before


def test_layout_plot_refuses_to_overwrite_the_layout_file(tmp_path, capsys):
    layout_file = load_layout().write(tmp_path / "drive.png")  # a layout with a figure's name
    assert main(["layout", str(layout_file), "--plot", str(layout_file)]) == EXIT_USAGE
    assert "refusing to overwrite" in capsys.readouterr().err


def test_divergence_exits_3_with_its_message(monkeypatch, capsys):
    def diverge(*args, **kwargs):
        raise DivergenceError("integration diverged at t = 0.001 s: non-finite state values")

    # the package's name `simulate` is the function; the module is only in sys.modules
    monkeypatch.setattr(importlib.import_module("belt_fmu.simulation"), "simulate", diverge)
    assert main(["simulate", "--t-end", "0.01"]) == EXIT_MODEL
    err = capsys.readouterr().err
    assert "integration diverged at t = 0.001 s" in err and "Traceback" not in err


def test_simulate_with_another_friction_law(capsys):
    status = main(["simulate", "--rpm", "800", "--t-end", "0.005", "--friction", "dahl", "--no-progress"])
    assert status == 0
    assert "friction law dahl" in capsys.readouterr().out
    assert main(["simulate", "--friction", "coulomb"]) == 2
    assert "invalid choice: 'coulomb'" in capsys.readouterr().err


def test_build_without_a_c_compiler_warns_and_keeps_pythonfmus_binary(tmp_path, monkeypatch, capsys):
    """No C compiler: the FMU is still written (PythonFMU's binary, fine for Python hosts) and
    the warning says what native hosts then need."""
    import zipfile

    monkeypatch.setenv("CC", "no-such-compiler")
    assert main(["build", "-o", str(tmp_path / "Plain.fmu"), "--no-kernels"]) == 0
    err = capsys.readouterr().err
    assert "belt-fmu build: warning: no C compiler found" in err
    assert "native FMI hosts load only with LD_PRELOAD of libpython" in err
    names = zipfile.ZipFile(tmp_path / "Plain.fmu").namelist()
    assert "binaries/linux64/BeltDrive.so" in names and "binaries/linux64/pythonfmu-export.so" not in names
