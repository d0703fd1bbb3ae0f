"""Engine-speed sweeps and parameter studies ([Scania thesis] section 5.2, Figs. 5.4-5.5; the
polygon filter of section 7, docs/references.md R6).

The runs here are short (2 settling and 1 evaluated engine cycle, speeds from 800 rpm up) so
the file runs in well under a minute on two cores; the physics they check holds for any
length.
"""
import math

import numpy as np
import pytest

from belt_fmu import LayoutError, load_layout
from belt_fmu.cli import EXIT_MODEL, EXIT_USAGE, main
from belt_fmu.postprocess import (FILTER_SETTLING_PERIODS, cycle_metric_specs, cycle_metrics, polygon_filter,
                                  polygon_frequency)
from belt_fmu.simulation import Results
from belt_fmu.sweep import RunSettings, SweepTable, parse_variation, plan, sweep
from belt_fmu.units import RPM

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SHORT = ["--settle-cycles", "2", "--cycles", "1", "--no-progress"]


def tone_amplitudes(t, signal, frequencies):
    """Least-squares amplitudes of sines at ``frequencies`` [Hz] (and the mean) in ``signal``:
    exact for a sum of such tones, whatever the window length."""
    basis = [np.ones_like(t)]
    for f in frequencies:
        basis += [np.sin(2 * np.pi * f * t), np.cos(2 * np.pi * f * t)]
    coef = np.linalg.lstsq(np.column_stack(basis), signal, rcond=None)[0]
    return coef[0], [math.hypot(coef[1 + 2 * k], coef[2 + 2 * k]) for k in range(len(frequencies))]


@pytest.mark.parametrize("rpm, polygon_speed", [(500, 1.0), (500, 460 / 500), (2300, 1.0)])
def test_polygon_filter_removes_the_polygon_tone_and_keeps_the_engine_order(rpm, polygon_speed):
    """A bearing-force-like signal: 300 N mean, a 2nd-order tone of 50 N, a 100 N polygon tone
    at f = R w n / l of the built-in drive (497 Hz at 500 rpm), or at the slowest crank speed
    of a +-40 rpm irregularity at 500 rpm (0.92 f, the hardest case: 1.84 times the cutoff).
    Sampled as a sweep run samples (1e-4 s) and read a filter-settling time away from the
    ends, the polygon tone must lose more than 40 dB (a 4th-order Butterworth applied
    forwards and backwards gives 48 dB at twice its cutoff, 42 dB at 1.84 times) while the
    engine order (16.7 Hz, 0.07 times the cutoff) and the mean keep their size within 1 %."""
    layout = load_layout()
    (run,) = plan(layout, [rpm]).runs
    f_poly = run.polygon_frequency
    f_engine = 2 * rpm / 60
    f_tone = polygon_speed * f_poly
    t = np.arange(4 * run.cycle_samples) * run.output_interval
    signal = 300.0 + 50.0 * np.sin(2 * np.pi * f_engine * t + 0.4) + 100.0 * np.sin(2 * np.pi * f_tone * t + 1.1)
    filtered = polygon_filter(signal, run.output_interval, f_poly)
    margin = FILTER_SETTLING_PERIODS / (0.5 * f_poly)
    inside = (t > margin) & (t < t[-1] - margin)
    mean, (engine, polygon) = tone_amplitudes(t[inside], filtered[inside], [f_engine, f_tone])
    assert 20 * math.log10(100.0 / polygon) > 40.0
    assert engine == pytest.approx(50.0, rel=0.01)
    assert mean == pytest.approx(300.0, rel=0.01)


def test_cycle_metrics_of_known_signals():
    """Metrics of a synthetic run at 500 rpm whose every output is a known periodic signal plus
    a polygon tone: amplitudes, extremes and means come out as the engine-order part alone,
    within the polygon residual (40 dB of the tone, see the filter test), and a periodic
    signal's cycle-to-cycle change is nil."""
    layout = load_layout()
    (run,) = plan(layout, [500], RunSettings(settle_cycles=2, cycles=2)).runs
    n = (2 + 2) * run.cycle_samples + run.margin_samples + 1
    t = np.arange(n) * run.output_interval
    omega = 2 * 500 * RPM  # 2nd order
    f_poly = run.polygon_frequency
    # crank cord radius 0.0862 m, 150 elements, installed cord length 1.3607 m (belt-fmu layout)
    assert f_poly == pytest.approx(polygon_frequency(0.0862, 500 * RPM, 150, 1.3607), rel=1e-4)

    def signal(mean, amplitude, ripple):
        return mean + amplitude * np.sin(omega * t + 0.3) + ripple * np.sin(2 * np.pi * f_poly * t)

    names = [p.name for p in layout.pulleys]
    columns = {"time": t, "tensioner_angle": signal(-2.0, 0.03, 0.003),
               "tensioner_angle_rel": signal(0.01, 0.03, 0.003), "bearing_force": signal(250.0, 60.0, 100.0),
               "crank_torque": signal(15.0, 40.0, 10.0)}
    for a, b in zip(names, [*names[1:], names[0]]):
        columns[f"span_tension_{a}_{b}"] = signal(450.0, 150.0, 50.0)
    for name in names:
        columns[f"slip_{name}"] = signal(0.005, 0.002, 0.001)
    results = Results(columns, {name: "" for name in columns})
    metrics = cycle_metrics(results, layout, 500 * RPM, 2 * run.cycle_samples, run.cycle_samples, 2)

    assert [m.name for m in cycle_metric_specs(layout)] == list(metrics)
    assert metrics["filter_cutoff"] == 0.5 * metrics["polygon_frequency"] == 0.5 * f_poly
    assert metrics["tensioner_amplitude"] == pytest.approx(0.03, abs=0.01 * 0.003)
    assert metrics["tensioner_amplitude_deg"] == pytest.approx(math.degrees(metrics["tensioner_amplitude"]))
    assert metrics["tensioner_angle_rel_mean"] == pytest.approx(0.01, abs=0.01 * 0.003)
    assert metrics["tensioner_cycle_change"] < 0.01 * 0.003 / 0.03
    assert metrics["bearing_force_max"] == pytest.approx(310.0, abs=1.0)
    assert metrics["bearing_force_min"] == pytest.approx(190.0, abs=1.0)
    assert metrics["bearing_force_mean"] == pytest.approx(250.0, abs=1.0)
    assert (metrics["crank_torque_min"], metrics["crank_torque_max"]) == pytest.approx((-25.0, 55.0), abs=0.1)
    assert metrics["span_tension_crank_tensioner_max"] == pytest.approx(600.0, abs=0.5)
    assert metrics["slip_alternator1_mean"] == pytest.approx(0.005, abs=1e-5)
    assert "slip_crank_mean" not in metrics  # the crankshaft is the reference


def test_short_sweep_writes_table_and_plot_and_amplitudes_grow_with_the_excitation(tmp_path, capsys):
    """Three speeds (800, 1500, 2300 rpm) at irregularities 0, 20 and 40 rpm on two local
    processes. The table holds one row per run with the metrics and their units, the plot is
    written. Without irregularity the arm hardly moves (polygon residue, 0.01-0.02 deg); with it
    the amplitude is positive and grows at least in proportion to the irregularity (within
    5 %: the drive responds nearly linearly and the arm's Coulomb friction, which a small
    motion must first overcome, only adds to the growth), and the bearing-force range grows
    with it."""
    csv, figure = tmp_path / "sweep.csv", tmp_path / "sweep.png"
    status = main(["sweep", "--rpm", "800,1500,2300", "--vary", "irregularity_rpm=0,20,40", "--workers", "2",
                   "--out", str(csv), "--plot", str(figure), *SHORT])
    out = capsys.readouterr().out
    assert status == 0
    assert "ran 9 runs" in out and "irregularity_rpm=40:" in out
    assert out.count("note: the wraps of tensioner (1.7 nodes)") == 1  # the built-in drive's (docs/model.md, "Small wraps")
    table = SweepTable.read(csv)
    for column in ("rpm", "irregularity [rpm]", "status", "tensioner_amplitude [rad]", "tensioner_amplitude_deg [deg]",
                   "bearing_force_max [N]", "bearing_force_min [N]", "span_tension_idler2_crank_min [N]",
                   "slip_alternator1_mean [1]", "polygon_frequency [Hz]", "filter_cutoff [Hz]"):
        assert column in table.columns
    assert len(table.rows) == 9 and {row["status"] for row in table.rows} == {"ok"}
    assert figure.read_bytes().startswith(PNG_SIGNATURE)

    cases = dict(table.cases())
    assert list(cases) == ["irregularity_rpm=0", "irregularity_rpm=20", "irregularity_rpm=40"]
    still, small, large = (table.number(cases[f"irregularity_rpm={a}"], "tensioner_amplitude_deg [deg]")
                           for a in (0, 20, 40))
    assert np.all(still < 0.05)
    assert np.all(small > 0.0) and np.all(large >= 2.0 * 0.95 * small)

    def force_range(rows):
        return table.number(rows, "bearing_force_max [N]") - table.number(rows, "bearing_force_min [N]")

    assert np.all(force_range(cases["irregularity_rpm=40"]) > force_range(cases["irregularity_rpm=20"]))


@pytest.fixture(scope="module")
def study():
    """Two pretensions at 1800 and 2300 rpm: four short runs."""
    variations = [parse_variation("belt.pretension_N=350,550")]
    return plan(load_layout(), [1800, 2300], RunSettings(settle_cycles=2, cycles=1), variations)


def test_results_agree_serially_on_local_processes_and_on_a_dask_cluster(study):
    """A run is a pure function of its layout and parameters and the model is deterministic,
    so the tables of worker processes, which load the cached kernels, agree to the last bit
    (compared as the full-precision text the CSV holds) whichever executor ran them; only
    the wall times differ. The serial run uses this process's kernels, which it may have
    compiled itself: after a cold compile they have differed from the cached ones in the
    last bits, so it agrees within 1e-9 relative. The idler's mean hub load grows
    with the pretension, as the span tensions that make it do: 57 % more pretension gives at
    least 20 % more hub load (42-46 % here; the load-dependent parts of the span tensions and
    the centrifugal term do not scale with the pretension)."""
    from distributed import LocalCluster  # the test extra installs it

    def table_of(**executor):
        rows = sweep(study, **executor).table.rows
        return [{k: v for k, v in row.items() if k != "wall_time [s]"} for row in rows]

    serial = table_of(workers=1)
    processes = table_of(workers=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert table_of(scheduler=cluster.scheduler_address) == processes
    assert [row.keys() for row in processes] == [row.keys() for row in serial]
    for row, reference in zip(processes, serial):
        for key, value in row.items():
            try:
                assert float(value) == pytest.approx(float(reference[key]), rel=1e-9, abs=1e-12), key
            except ValueError:  # a text column
                assert value == reference[key], key
    assert {row["status"] for row in serial} == {"ok"}
    by_pretension = {}
    for row in serial:
        by_pretension.setdefault(row["rpm"], {})[row["belt.pretension_N"]] = float(row["bearing_force_mean [N]"])
    for forces in by_pretension.values():
        assert forces["550.0"] > 1.2 * forces["350.0"]


def test_resume_runs_only_what_is_missing_and_never_overwrites_silently(tmp_path, capsys):
    csv = tmp_path / "sweep.csv"
    assert main(["sweep", "--rpm", "2000,2300", "--out", str(csv), "--workers", "1", *SHORT]) == 0
    first = SweepTable.read(csv)
    capsys.readouterr()

    text = csv.read_text()
    assert main(["sweep", "--rpm", "2000,2300", "--out", str(csv), *SHORT]) == EXIT_USAGE
    assert "exists; pass --resume" in capsys.readouterr().err
    assert csv.read_text() == text

    # a sweep killed while writing its last row: that row is dropped and run again
    csv.write_text(text[:-20])
    assert main(["sweep", "--rpm", "2300,1800,2000", "--out", str(csv), "--resume", "--workers", "1", *SHORT]) == 0
    assert "ran 2 runs in" in capsys.readouterr().out  # 1800 rpm and the cut 2300 rpm
    resumed = SweepTable.read(csv)
    assert [row["rpm"] for row in resumed.rows] == ["1800.0", "2000.0", "2300.0"]  # sorted at the end
    rows = {row["rpm"]: row for row in resumed.rows}
    assert rows["2000.0"] == first.rows[0]  # kept as it was
    assert {k: v for k, v in rows["2300.0"].items() if k != "wall_time [s]"} == \
        {k: v for k, v in first.rows[1].items() if k != "wall_time [s]"}  # run again: the same result

    assert main(["sweep", "--rpm", "2300", "--vary", "belt.pretension_N=400", "--out", str(csv), "--resume",
                 *SHORT]) == EXIT_USAGE
    assert "its columns differ" in capsys.readouterr().err


def test_the_small_wraps_note_follows_a_varied_mesh(tmp_path, capsys):
    """A study of the belt's mesh names the small wraps of the variant that has them: 150
    elements put 1.7 nodes on the tensioner pulley's wrap, 300 put 3.4 (docs/model.md, "Small
    wraps"); a study of both models names them once, for the discretized variant, even from
    a lumped layout."""
    assert main(["sweep", "--rpm", "2300", "--vary", "belt.n_elements=150,300", "--out", str(tmp_path / "s.csv"),
                 *SHORT]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the note wraps its lines
    assert out.count("note: the wraps of") == 1 and "of the belt's 150 nodes" in out

    assert main(["sweep", "--rpm", "2300", "--vary", "belt.n_elements=300", "--out", str(tmp_path / "t.csv"),
                 *SHORT]) == 0
    assert "note: the wraps of" not in capsys.readouterr().out

    # the lumped model has no nodes: its variant of a study of both models says nothing
    assert main(["sweep", "--model", "lumped", "--rpm", "2300", "--vary", "drive.model=lumped,discretized",
                 "--out", str(tmp_path / "u.csv"), *SHORT]) == 0
    assert capsys.readouterr().out.count("note: the wraps of") == 1


def test_a_failed_run_is_recorded_with_its_parameters_and_the_others_kept(tmp_path, capsys):
    """A water-pump torque beyond the model's input range fails that run at its start; the
    other run's row is complete and the exit status says a run failed."""
    csv, figure = tmp_path / "sweep.csv", tmp_path / "sweep.png"
    status = main(["sweep", "--rpm", "2300", "--vary", "water_pump_torque_Nm=0.2,2000", "--out", str(csv),
                   "--plot", str(figure), "--workers", "2", *SHORT])
    assert status == EXIT_MODEL
    assert figure.read_bytes().startswith(PNG_SIGNATURE)  # the failed run marked on it
    err = capsys.readouterr().err
    assert "run rpm=2300.0, water_pump_torque_Nm=2000.0: ValueError: water_pump_torque" in err
    rows = {row["water_pump_torque_static [N.m]"]: row for row in SweepTable.read(csv).rows}
    assert rows["2000.0"]["status"] == "failed" and "outside the allowed range" in rows["2000.0"]["error"]
    assert rows["2000.0"]["tensioner_amplitude [rad]"] == ""
    assert rows["0.2"]["status"] == "ok" and float(rows["0.2"]["tensioner_amplitude [rad]"]) > 0.0


def test_parameter_study_edits_and_validates_the_layout():
    """--vary edits layout keys (numbers converted to the key's type) and run settings; every
    variant is validated as a layout file is, before anything runs."""
    layout = load_layout()
    variations = [parse_variation(text) for text in ("belt.pretension_N=350:550:3", "belt.n_elements=100,150",
                                                     "pulleys.alternator1.inertia_kgm2=0.004", "order=3")]
    runs = plan(layout, [800, 1600], variations=variations).runs
    assert len(runs) == 3 * 2 * 1 * 1 * 2
    assert sorted({r.layout.belt.pretension_N for r in runs}) == [350.0, 450.0, 550.0]
    assert {r.layout.belt.n_elements for r in runs} == {100, 150}
    assert all(isinstance(r.layout.belt.n_elements, int) for r in runs)
    assert {r.layout.pulley("alternator1").inertia_kgm2 for r in runs} == {0.004}
    assert {r.settings.order for r in runs} == {3.0}
    assert runs[0].label == "rpm=800.0, belt.pretension_N=350.0, belt.n_elements=100, " \
                            "pulleys.alternator1.inertia_kgm2=0.004, order=3.0"

    with pytest.raises(LayoutError, match="belt.pretension_N: -5.0 must be > 0"):
        plan(layout, [800], variations=[parse_variation("belt.pretension_N=-5")])
    with pytest.raises(ValueError, match="did you mean 'spring_rate_Nm_per_rad'"):
        plan(layout, [800], variations=[parse_variation("tensioner.spring_rate=30")])
    with pytest.raises(ValueError, match="order: 2.3 must be a multiple of 0.5"):
        plan(layout, [800], variations=[parse_variation("order=2.3")])
    with pytest.raises(ValueError, match="would stop the crank"):
        plan(layout, [30], RunSettings(irregularity_rpm=40))


def test_sweep_options_are_checked_before_anything_runs(tmp_path, capsys):
    assert main(["sweep", "--rpm", "800", "--resume"]) == EXIT_USAGE
    assert "give the table with --out" in capsys.readouterr().err
    assert main(["sweep", "--rpm", "800:900"]) == EXIT_USAGE
    assert "START:STOP:COUNT" in capsys.readouterr().err
    assert main(["sweep", "--workers", "2", "--scheduler", "tcp://localhost:8786"]) == EXIT_USAGE
    assert "not allowed with argument" in capsys.readouterr().err
    assert main(["sweep", "--vary", "belt.nope=3"]) == EXIT_USAGE
    assert "belt.nope: unknown key" in capsys.readouterr().err
    assert main(["sweep", "--settle-cycles", "1"]) == EXIT_USAGE
    assert "must be >= 2" in capsys.readouterr().err


def test_every_column_with_a_unit_names_it_in_brackets():
    """One header convention, the results table's: ``name [unit]``. The run settings once
    carried their unit in the name (``water_pump_torque_Nm`` next to the derived
    ``water_pump_torque [N.m]``). Columns without a unit: the speed (named by its unit),
    the layout key paths of a study (the layout file's names), the digest, the layout file,
    the status, the error and the scaling's name."""
    import re

    study = plan(load_layout(), [800.0], RunSettings(), [parse_variation("belt.pretension_N=400,500")])
    unitless = {"rpm", "belt.pretension_N", "layout_sha256", "layout", "status", "error", "irregularity_scaling"}
    suffix = re.compile(r"_(Nm|Nms2|rpm|s|N|deg|rad|Hz)$")  # a unit written into a name
    for column in study.columns:
        if column in unitless or column.startswith("tensioner_amplitude_deg"):  # a metric of its own (the deg one)
            continue
        name, unit = re.fullmatch(r"([a-z0-9_]+) \[([^\]]+)\]", column).groups()
        assert not suffix.search(name), column
    assert "water_pump_torque_static [N.m]" in study.columns and "water_pump_torque [N.m]" in study.columns


def test_lumped_runs_share_a_drive_and_each_is_a_pure_function_of_its_run():
    """The lumped model's runs in one process reuse its drive (executors.drive_for: its
    reset rebuilds the whole state): a run's metrics are the same to the last bit after
    another run, at another speed, as on a fresh drive."""

    from belt_fmu.sweep import executors

    layout = load_layout()
    layout = layout.with_drive(model="lumped")
    runs = plan(layout, [1800, 2300], RunSettings(settle_cycles=2, cycles=1)).runs
    executors._last_lumped = None
    fresh = executors.run_point(runs[0])
    drive = executors.drive_for(runs[0].layout)
    executors.run_point(runs[1])
    assert executors.drive_for(runs[0].layout) is drive
    assert executors.run_point(runs[0]) == fresh


def test_a_short_lumped_sweep_runs_in_this_process_and_a_long_one_on_the_cores(monkeypatch):
    """Local workers take seconds to start and a lumped run hundredths of a second: by
    default a lumped sweep runs in this process unless the cores save more than the workers'
    start (executors.default_workers); a discretized sweep always goes to the cores."""
    from belt_fmu.sweep import default_workers, executors

    monkeypatch.setattr(executors.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    layout = load_layout()
    lumped = layout.with_drive(model="lumped")
    break_even = executors.WORKER_START_SECONDS / (executors.LUMPED_RUN_SECONDS * 0.5)  # 2 cores
    few = plan(lumped, np.linspace(800, 3000, int(break_even) - 1)).runs
    many = plan(lumped, np.linspace(800, 3000, int(break_even) + 2)).runs
    assert default_workers(few) == 1
    assert default_workers(many) == 2
    assert default_workers(plan(layout, [800, 900]).runs) == 2
    assert default_workers() == 2
