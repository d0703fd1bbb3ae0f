"""The slave's side of the native fast path: the exchange block the FMU's loader reads.

A communication step of the lumped model takes about a microsecond of physics, and each FMI
call that enters Python through PythonFMU costs 3-5 us (a doStep of the discretized model,
with its output reads, about 60 us beyond its physics). So the loader
(``belt_fmu/build/native_loader/loader.c``) answers the calls of every step in C when it
can: ``fmi2SetReal`` of the inputs, ``fmi2GetReal`` of outputs and inputs, and ``fmi2DoStep``,
which calls the compiled step of the model (:class:`belt_fmu.model.lumped_system.NativeStep`,
:class:`belt_fmu.model.system.NativeStep`) on the model's own arrays; ``fmi2GetReal`` of
outputs calls it with 0 steps first when the model computes its outputs lazily (the
discretized one). Everything else, and any of those calls the loader is not sure
about (a value out of range, a refused step, a diverging step), goes to the slave as before:
the slave stays the authority over phases, checks, messages, states and status codes.

The exchange. The slave owns one :class:`Block` (a C struct, mirrored as ``FastBlock`` in
``loader.c``) for its whole life. The loader reads its address through ``fmi2GetString`` of
the internal variable :data:`EXCHANGE_VARIABLE` (value reference recorded at build time in
``resources/native.cfg``) right after ``fmi2Instantiate`` and ``fmi2Reset`` (which makes a
new slave); that read also tells the slave a loader is there. Then, around every FMI call
that reaches the slave (:func:`belt_fmu.slave.fmi_call`):

* before it, :meth:`FastPath.pull`: if the loader changed anything (``touched``), the slave
  takes the inputs, its time and the model's time from the block;
* after it, :meth:`FastPath.publish`: ``usable`` is set only while the model is stepping
  without failure, has taken its first step through the slave (which checks the step size
  against the polygon frequency) and has a native step (the lumped model, and the discretized
  one with the inputs ``crank_speed`` and ``water_pump_torque`` only), with the block
  describing it: the
  inputs (value references, values, allowed ranges), the value reference -> slot table of
  the real variables the loader may read, the model's outputs, the arrays a step changes
  (which the loader copies before a step and restores after a failed one) and its step
  function. Otherwise it is cleared, and the loader forwards everything.

FMI allows no concurrent calls on one instance, so the loader and the slave never use one
block at the same time. ``BELT_FMU_NATIVE_FAST_PATH=0`` in the environment makes the loader
skip the fast path (it then never reads the block).
"""
from __future__ import annotations

import ctypes

import numpy as np

#: the internal String variable whose value is the block's address (hexadecimal); not for users
EXCHANGE_VARIABLE = "_native_fast_path"
EXCHANGE_DESCRIPTION = ("internal: the address of the native loader's fast-path exchange block "
                        "(belt_fmu/fast_path.py); not for users, do not connect")
#: the block's first word: "beltfp" and the layout's version
MAGIC = 0x62656C7466700002
MAX_INPUTS = 8
#: vr -> slot table: no fast slot; else an output's index (>= 0) or input k as INPUT_SLOT - k
NO_SLOT = -1
INPUT_SLOT = -2


class Block(ctypes.Structure):
    """The exchange block (``FastBlock`` in loader.c: same fields, same order, 8-byte words)."""

    _fields_ = [
        ("magic", ctypes.c_uint64),  # MAGIC
        ("usable", ctypes.c_int64),  # slave: 1 when the loader may answer the step's calls
        ("touched", ctypes.c_int64),  # loader: 1 after it changed inputs, time or the model
        ("time", ctypes.c_double),  # the FMU's time [s]
        ("time_tolerance", ctypes.c_double),  # belt_fmu.slave.TIME_TOLERANCE
        ("drive_time", ctypes.c_double),  # the model's time [s] (drive.time)
        ("max_step", ctypes.c_double),  # the model's longest internal step [s]
        ("crank_sense", ctypes.c_double),  # crank_omega = crank_sense * crank_speed
        ("n_inputs", ctypes.c_int64),
        ("crank_input", ctypes.c_int64),  # index of crank_speed among the inputs
        ("pump_input", ctypes.c_int64),  # index of water_pump_torque
        ("input_vr", ctypes.c_int64 * MAX_INPUTS),
        ("input_value", ctypes.c_double * MAX_INPUTS),
        ("input_low", ctypes.c_double * MAX_INPUTS),
        ("input_high", ctypes.c_double * MAX_INPUTS),
        ("n_vr", ctypes.c_int64),  # size of the slot table
        ("slot", ctypes.c_void_p),  # int64[n_vr]: value reference -> slot (NO_SLOT, output index, input)
        ("outputs", ctypes.c_void_p),  # float64[n_outputs]: the model's output values
        ("n_outputs", ctypes.c_int64),
        ("n_saved", ctypes.c_int64),
        ("saved", ctypes.c_void_p),  # int64[2 n_saved]: (address, bytes) of each array a step changes
        ("report_outputs", ctypes.c_int64),  # 1: call the kernel with 0 steps before reading outputs
        ("kernel", ctypes.c_void_p),  # the step function (lumped_native.advance, discretized_native.advance)
        ("kernel_arguments", ctypes.c_void_p),  # its argument words
    ]


class FastPath:
    """A slave's exchange block and what keeps the memory it points to alive."""

    def __init__(self, slave):
        self.block = Block(magic=MAGIC)
        self.attached = False  # a loader read the block's address
        self.step = None  # the NativeStep the block describes
        self._saved = None  # the block's saved table (int64 pairs)
        inputs = slave.inputs
        self._names = [spec.name for spec in inputs]
        self._fits = len(inputs) <= MAX_INPUTS and self._names[:2] == ["crank_speed", "water_pump_torque"]
        if self._fits:
            b = self.block
            b.n_inputs = len(inputs)
            b.crank_input, b.pump_input = 0, 1
            for k, spec in enumerate(inputs):
                b.input_vr[k] = slave._vr[spec.name]
                b.input_low[k], b.input_high[k] = spec.low, spec.high
        self._slots = np.full(max(slave._kind, default=-1) + 1, NO_SLOT, dtype=np.int64)
        for vr, (role, what, _) in slave._kind.items():
            if role == "output":
                self._slots[vr] = what
            elif role == "input" and self._fits:
                self._slots[vr] = INPUT_SLOT - self._names.index(what.name)
        self.block.n_vr = self._slots.size
        self.block.slot = self._slots.ctypes.data

    def disable(self) -> None:
        """Leave every call to the slave from now on (the block stays: the loader holds it)."""
        self._fits = False
        self.step = None
        self.block.usable = 0

    def address(self) -> str:
        """The block's address, as the exchange variable gives it; the loader is then attached."""
        self.attached = True
        return hex(ctypes.addressof(self.block))

    def pull(self, slave) -> None:
        """Take what the loader changed: inputs, the FMU's time, the model's time."""
        b = self.block
        if not b.touched:
            return
        for k, name in enumerate(self._names):
            setattr(slave, name, b.input_value[k])
        slave.time = b.time
        slave.drive.time = b.drive_time
        b.touched = 0

    def publish(self, slave, tolerance: float) -> None:
        """Describe the slave's model to the loader, or withdraw it (module docstring)."""
        b = self.block
        b.usable = 0
        if not self.attached:
            return
        drive = slave.drive
        if not (self._fits and slave.phase == "stepping" and slave.failure is None and drive is not None
                and hasattr(drive, "native_step") and slave._sampling_checked):  # the first step: the slave's
            self.step = None
            return
        if self.step is None or self.step.drive is not drive:
            self.step = drive.native_step()
            s = self.step
            b.outputs, b.n_outputs = s.outputs.ctypes.data, s.outputs.size
            self._saved = np.array([(a.ctypes.data, a.nbytes) for a in s.saved], dtype=np.int64)
            b.n_saved, b.saved = len(s.saved), self._saved.ctypes.data
            b.report_outputs = int(s.report_outputs)
            b.kernel, b.kernel_arguments = s.address, s.arguments.ctypes.data
            b.max_step, b.crank_sense = s.max_step, s.crank_sense
        for k, name in enumerate(self._names):
            b.input_value[k] = getattr(slave, name)
        b.time, b.drive_time, b.time_tolerance = slave.time, drive.time, tolerance
        b.touched = 0
        b.usable = 1
