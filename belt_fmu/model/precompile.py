"""Load, or compile once, every kernel an FMU of a layout may run: what ``belt-fmu build``
runs in fresh processes for each target level before it packs the kernels into the FMU
(:mod:`belt_fmu.build.fmu`, :mod:`belt_fmu.kernel_cache`).

The kernels fall in two groups (:data:`GROUPS`) that share little code, so that two
processes compile them at once: the discretized model with its native step, and the lumped
model with its own."""
from __future__ import annotations

from ..layout import LayoutError
from .inputs import has_native_step, input_specs
from .system import BeltDrive

#: a crank speed [rad/s] and pump torque [N m] the drives are exercised at (any would do)
SPEED, TORQUE = 80.0, 1.0
#: the groups of kernels a process can compile on its own (:func:`compile_all`)
GROUPS = ("discretized", "lumped")


def compile_all(layout, crank_speed: float | None = SPEED, water_pump_torque: float = TORQUE,
                groups: tuple[str, ...] = GROUPS) -> list[str]:
    """Run each model of ``groups`` an FMU of ``layout`` may use (the discretized model and
    its native step; the lumped model and its native step where the layout allows them) for
    a moment, from the steady running state at ``crank_speed`` [rad/s] (None: :data:`SPEED`)
    and ``water_pump_torque`` [N m], so that their kernels are in the kernel folder; returns
    the parts run (kernel_cache.PARTS). InitializationError or DivergenceError if the
    discretized model cannot start there."""
    parts = []
    native = has_native_step(input_specs(layout))
    if "discretized" in groups:
        drive = BeltDrive(layout)
        start = SPEED if crank_speed is None else crank_speed
        drive.reset(start, water_pump_torque)
        drive.advance(1e-4, None if drive.torque_driven_crank else start, water_pump_torque)
        drive.output_values
        parts.append("discretized")
        if native:
            drive.native_step()
            parts.append("discretized native step")
    if "lumped" in groups and native:
        from .lumped_system import LumpedDrive

        try:
            lumped = LumpedDrive(layout)
        except LayoutError:
            return parts  # a layout the lumped model does not take
        lumped.reset(SPEED, TORQUE, settle_time=1e-3)
        lumped.advance(1e-3, SPEED, TORQUE)
        lumped.native_step()
        parts += ["lumped", "lumped native step"]
    return parts
