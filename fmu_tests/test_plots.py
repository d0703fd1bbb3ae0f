"""Figures say what they show: the operating point and the model in the title, captions true
for the model, a tensioner panel that does not magnify a still arm, no filter end spikes,
spans of equal tension grouped, speeds in rpm, the sweep's excitation in its title. Read from
the matplotlib objects the plotting functions return (no pixel comparison)."""
from __future__ import annotations


import numpy as np
import pytest

from belt_fmu.layout import load_layout
from belt_fmu.model.outputs import pulley_output_name, span_output_name, spans
from belt_fmu.plots import TENSIONER_MIN_SPAN_DEG, plot_results, plot_sweep
from belt_fmu.postprocess import drive_polygon_frequency, filter_settling_time
from belt_fmu.simulation import simulate
from belt_fmu.units import RPM


def layout_of(model):
    layout = load_layout()
    return layout.with_drive(model=model)


@pytest.fixture(scope="module", params=["discretized", "lumped"])
def run(request):
    """A 0.15 s run of the built-in drive at 800 rpm and 2 N.m, by each model."""
    layout = layout_of(request.param)
    results = simulate(layout, rpm=800.0, water_pump_torque=2.0, t_end=0.15, output_interval=1e-4)
    return request.param, layout, results, plot_results(results, layout)


def texts(fig):
    return [ax.get_title() for ax in fig.axes] + [t.get_text() for ax in fig.axes for t in ax.texts]


def test_title_gives_drive_operating_point_and_model(run):
    model, layout, _, fig = run
    title = fig.axes[0].get_title()
    assert layout.drive.name in title and "crank 800 rpm" in title and "water-pump torque 2 N.m" in title
    assert f"{model} model" in title


def test_captions_are_true_for_the_model(run):
    """Only the discretized model has a polygon ripple to filter; the lumped model's figure
    does not claim a filter."""
    model, _, _, fig = run
    says_polygon = any("polygon" in text for text in texts(fig))
    assert says_polygon == (model == "discretized")


def test_tensioner_panel_spans_at_least_its_minimum(run):
    _, _, results, fig = run
    low, high = fig.axes[0].get_ylim()
    angle = np.degrees(results["tensioner_angle_rel"])
    assert high - low >= TENSIONER_MIN_SPAN_DEG - 1e-12
    assert low <= angle.min() and angle.max() <= high  # the trace stays inside


def test_filtered_forces_have_no_end_spikes(run):
    """The drawn filtered traces leave out the filter's settling time at both ends and stay
    within the raw signal's range (an end effect overshoots it)."""
    model, layout, results, fig = run
    if model != "discretized":
        pytest.skip("the lumped model is drawn unfiltered")
    t = results["time"]
    settle = filter_settling_time(0.5 * drive_polygon_frequency(layout, 800 * RPM))
    labelled = {line.get_label(): line for line in fig.axes[1].lines if not line.get_label().startswith("_")}
    for pulley in layout.pulleys:
        y = np.asarray(labelled[pulley.name].get_ydata(), dtype=float)
        raw = results[pulley_output_name("hub_force", pulley.name)]
        assert np.all(np.isnan(y[t < t[0] + settle - 1e-9])) and np.all(np.isnan(y[t > t[-1] - settle + 1e-9]))
        kept = y[np.isfinite(y)]
        assert kept.size > 0.5 * len(t)
        assert raw.min() <= kept.min() and kept.max() <= raw.max(), pulley.name


def test_spans_of_equal_tension_share_one_legend_entry(run):
    """Grouped spans: each legend entry a chain of spans in a row whose mean tensions agree
    within 1 %; neighbouring entries differ by more. On the built-in drive the idlers and the
    tensioner carry the belt on with the same tension: 4 levels of 7 spans."""
    _, layout, results, fig = run
    names = [p.name for p in layout.pulleys]
    mean = {f"{a} -> {b}": results[span_output_name("span_tension", a, b)].mean() for a, b in spans(names)}
    labels = fig.axes[2].get_legend_handles_labels()[1]
    assert len(labels) == 4
    covered = []
    levels = []
    for label in labels:
        chain = label.split(" -> ")
        members = [f"{a} -> {b}" for a, b in zip(chain, chain[1:])]
        covered += members
        values = [mean[m] for m in members]
        assert max(values) - min(values) <= 0.01 * max(values), label
        levels.append(values[0])
    assert covered == list(mean)  # every span once, in belt order
    assert all(abs(a - b) > 0.01 * max(a, b) for a, b in zip(levels, levels[1:]))


def test_speeds_in_rpm(run):
    _, layout, _, fig = run
    ax = fig.axes[3]
    assert "[rpm]" in ax.get_ylabel()
    crank = next(line for line in ax.lines if line.get_label() == layout.pulleys[layout.crank_index].name)
    np.testing.assert_allclose(crank.get_ydata(), 800.0, rtol=1e-6)


def test_sweep_title_names_the_excitation_and_the_model():
    """A table of two runs (metrics made up: the title reads the run settings)."""
    from belt_fmu.sweep import RunSettings, SweepTable, plan

    layout = load_layout()
    study = plan(layout, [800.0, 1500.0], RunSettings(order=3.0, irregularity_rpm=25.0))
    rows = [study.row(run, {"status": "ok", **{m.name: 1.0 for m in study.metrics}}) for run in study.runs]
    fig = plot_sweep(SweepTable(list(study.columns), rows), layout)
    title = fig.axes[0].get_title()
    assert "order 3 speed irregularity +-25 rpm" in title and "discretized model" in title
    assert "bearing force of idler1" in title
