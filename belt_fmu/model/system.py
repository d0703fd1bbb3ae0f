"""``BeltDrive``: the belt-drive model object that owns state and parameters.

It turns a :class:`~belt_fmu.layout.Layout` into the compiled kernels' arrays
(:mod:`belt_fmu.model.state`), builds the initial state (:mod:`belt_fmu.model.initialization`),
advances it (:mod:`belt_fmu.model.integrator`) and reports outputs
(:mod:`belt_fmu.model.outputs`). The FMU slave and ``simulate`` are thin users of it.

Typical use::

    drive = BeltDrive(load_layout())
    drive.reset(crank_speed=83.8)               # steady running state at 800 rpm
    drive.advance(0.01, crank_speed=83.8, water_pump_torque=2.0)
    drive.outputs()["bearing_force"]
"""
from __future__ import annotations

import math

import numpy as np

from . import initialization as init
from .geometry import BeltPath, cord_radius, crank_sense, wrap_senses
from .drive import table_torque
from .integrator import NOT_FINITE, OK, OVERSTRETCHED, report, run
from .outputs import output_specs
from .state import (DRIVE, FRICTION_LAW, FRICTION_LAWS, LAW_TANH, PULLEY, buffer_sizes, friction_slots,
                    unpack_arrays, unpack_state)

#: fraction of the stability limit used as time step
STEP_SAFETY = 0.8
#: accuracy bound on the time step [s]: the implicit axial part damps modes with
#: w dt ~ 1 numerically, so keep w dt < 0.1 up to ~800 Hz (polygon frequencies are higher)
MAX_STEP = 2.0e-5
#: Inputs the model accepts: the crank turns forwards (the initialization builds a running
#: state in the running direction) and below 1500 rad/s (14 300 rpm; belt speeds beyond that
#: are outside any automotive drive); water-pump torque magnitudes up to 1 kN m.
CRANK_SPEED_RANGE = (0.0, 1500.0)  # [rad/s]
WATER_PUMP_TORQUE_RANGE = (-1000.0, 1000.0)  # [N m]
#: [rad/s] a load torque resisting rotation reaches 99.9 % of its value at this speed
LOAD_SPEED_THRESHOLD = 0.1
#: time [s] the reset lets the drive run at its initial inputs to settle (dynamic relaxation)
SETTLE_TIME = 0.15


class DivergenceError(RuntimeError):
    """The integration produced non-finite values or tore the belt apart."""


def stable_time_step(drive, contact_law, max_step: float = MAX_STEP) -> float:
    """Time step [s]: :data:`STEP_SAFETY` times the stability limit of the explicit part,
    at most ``max_step``.

    Symplectic Euler on an oscillator of frequency w is stable for ``w dt < 2``; with
    damping of ratio z, for ``w dt < 2 (sqrt(1 + z^2) - z)``. The belt's axial stiffness is
    implicit (:func:`belt_fmu.model.integrator.implicit_axial_correction`), so the fastest
    explicit modes are a node rotating against its neighbours' bending stiffness
    (``w = 2 sqrt(4 EI / (l0 J))``), shearing between them (``2 sqrt(12 EI / (l0^3 m))``),
    bouncing on its contact spring, and the bristle spring.
    """
    m = drive["node_mass"]
    l0 = drive["rest_length"]
    ei = drive["bending_stiffness"]
    k_rot = 4.0 * ei / l0
    w_rot = 2.0 * math.sqrt(k_rot / drive["node_inertia"])
    z_rot = drive["bending_damping"] / l0 * 4.0 * w_rot / (2.0 * k_rot)
    w_shear = 2.0 * math.sqrt(12.0 * ei / (l0 ** 3 * m))
    k_contact = drive["contact_c2"] + 2.0 * drive["contact_c1"] * 1e-3  # at 1 mm penetration
    w_contact = math.sqrt(k_contact / m)
    z_contact = drive["contact_damping"] / (2.0 * math.sqrt(k_contact * m))
    modes = [(w_rot, z_rot), (w_shear, 0.0), (w_contact, z_contact)]
    if contact_law["bristle_stiffness"] > 0.0:
        modes.append((math.sqrt(contact_law["bristle_stiffness"] / m), 0.0))
    limit = min(2.0 * (math.sqrt(1 + z * z) - z) / w for w, z in modes)
    return min(STEP_SAFETY * limit, max_step)


class BeltDrive:
    """A belt drive built from a layout: reset it, advance it, read its outputs.

    Inputs: ``crank_speed`` [rad/s] in the crank's running direction and
    ``water_pump_torque`` [N m] opposing the water pump's rotation.
    """

    def __init__(self, layout):
        self.layout = layout
        self.pulley_names = [p.name for p in layout.pulleys]
        belt = layout.belt
        n = belt.n_elements
        self.geometry = self._geometry(layout)
        if belt.pretension_N is not None:
            rest_length = init.solve_rest_length(self.geometry, belt.pretension_N)
        else:
            rest_length = belt.unstretched_length_m / n
        self.rest_length = rest_length
        self.drive = self._drive_record(layout, self.geometry, rest_length)
        self.pulleys, table = self._pulley_records(layout, self.geometry)
        contact_law, arm_law, load_law = self._friction_laws(layout, self.drive[0])
        p = len(layout.pulleys)
        k = friction_slots(contact_law)
        n_state, n_work, n_index = buffer_sizes(n, p, k)
        self.y = np.zeros(n_state)  # the state vector
        self.work = np.zeros(n_work)  # diagnostics and scratch (ModelArrays)
        self.index_work = np.zeros(n_index, dtype=np.int64)
        # the arrays the compiled entries take, and named views of the same memory
        self._kernel_args = (self.y, self.work, self.index_work, self.drive, contact_law, arm_law, load_law,
                             self.pulleys, table)
        self.views = unpack_state(self.y, n, p, k)
        self.arrays = unpack_arrays(self.drive, contact_law, arm_law, load_law, self.pulleys, table, self.work,
                                    self.index_work)
        self.dt = stable_time_step(self.drive[0], contact_law[0])
        self.time = 0.0
        self.specs = output_specs(self.pulley_names, layout.headline_pulley_name)
        self.output_names = [spec.name for spec in self.specs]
        self.output_values = np.zeros(len(self.specs))

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _geometry(layout) -> init.DriveGeometry:
        p = len(layout.pulleys)
        t = layout.tensioner_index
        centers = np.array([pl.center_m for pl in layout.pulleys], dtype=float)
        pivot = np.array(layout.tensioner.pivot_m, dtype=float) if t is not None else np.zeros(2)
        arm = centers[t] - pivot if t is not None else np.array([1.0, 0.0])
        return init.DriveGeometry(
            centers=centers,
            radii=np.array([cord_radius(layout, j) for j in range(p)]),
            senses=wrap_senses(layout),
            mu=np.array([_effective_mu(layout, pl) for pl in layout.pulleys]),
            crank=layout.crank_index,
            tensioner=-1 if t is None else t,
            pivot=pivot,
            arm_length=float(np.hypot(*arm)),
            arm_installed=float(np.arctan2(arm[1], arm[0])),
            n_elements=layout.belt.n_elements,
            axial_stiffness=layout.belt.axial_stiffness_N,
            mass_per_length=layout.belt.mass_per_length_kg_per_m,
            contact_c1=layout.contact.stiffness_quadratic_N_per_m3,
            contact_c2=layout.contact.stiffness_linear_N_per_m2,
        )

    @staticmethod
    def _drive_record(layout, geom, l0) -> np.ndarray:
        belt, contact = layout.belt, layout.contact
        d = np.zeros(1, DRIVE)
        r = d[0]
        r["n_nodes"] = belt.n_elements
        r["n_pulleys"] = len(layout.pulleys)
        r["rest_length"] = l0
        r["node_mass"] = belt.mass_per_length_kg_per_m * l0
        r["node_inertia"] = belt.mass_per_length_kg_per_m * l0 * (l0 ** 2 + belt.thickness_m ** 2) / 12.0
        r["axial_stiffness"] = belt.axial_stiffness_N
        r["axial_damping"] = belt.axial_damping_Ns
        r["bending_stiffness"] = belt.bending_stiffness_Nm2
        r["bending_damping"] = belt.bending_damping_Nm2s
        r["transverse_damping"] = belt.transverse_damping_Ns_per_m2 * l0
        r["contact_c1"] = contact.stiffness_quadratic_N_per_m3 * l0
        r["contact_c2"] = contact.stiffness_linear_N_per_m2 * l0
        r["contact_damping"] = contact.damping_Ns_per_m2 * l0
        r["crank"] = layout.crank_index
        r["headline"] = [p.name for p in layout.pulleys].index(layout.headline_pulley_name)
        r["water_pump"] = -1 if layout.water_pump_index is None else layout.water_pump_index
        r["crank_sense"] = crank_sense(layout)
        r["tensioner"] = geom.tensioner
        r["stop_min"] = -np.inf
        r["stop_max"] = np.inf
        if geom.tensioner >= 0:
            ten = layout.tensioner
            r["pivot_x"], r["pivot_y"] = geom.pivot
            r["arm_length"] = geom.arm_length
            r["arm_inertia"] = ten.arm_inertia_kgm2
            r["arm_installed"] = geom.arm_installed
            moment = geom.hub_moment(geom.arm_installed, np.full(len(layout.pulleys), 1.0), 0.0)
            r["spring_sense"] = -math.copysign(1.0, moment)
            if ten.preload_Nm is not None:
                r["spring_preload"] = ten.preload_Nm
            else:  # seed 000 eqs. 12.23-12.24: balance the pretension at the installed angle
                pre = np.full(len(layout.pulleys), belt.pretension_N)
                r["spring_preload"] = abs(geom.hub_moment(geom.arm_installed, pre, 0.0))
            r["spring_rate"] = ten.spring_rate_Nm_per_rad
            r["arm_damping"] = ten.damping_Nms_per_rad
            # "away from the belt" is against the spring
            r["arm_friction_away"] = ten.friction_torque_Nm
            r["arm_friction_toward"] = ten.friction_torque_return_Nm
            r["stop_min"] = geom.arm_installed + ten.stop_min_rad
            r["stop_max"] = geom.arm_installed + ten.stop_max_rad
            r["stop_stiffness"] = ten.stop_stiffness_Nm_per_rad
            r["stop_damping"] = ten.stop_damping_Nms_per_rad
        return d

    @staticmethod
    def _friction_laws(layout, drive) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """FRICTION_LAW records of the belt-pulley contacts, the tensioner arm pivot and the
        pulley load torques (a load resists rotation; below ~0.1 rad/s it fades smoothly)."""
        friction = layout.friction
        contact = np.zeros(1, FRICTION_LAW)
        c = contact[0]
        c["law"] = FRICTION_LAWS.index(friction.law)
        c["slip_peak"] = friction.slip_peak
        c["slip_saturation"] = friction.slip_saturation
        c["saturation_ratio"] = friction.saturation_ratio
        c["reference_speed"] = friction.reference_speed_m_per_s
        c["velocity_threshold"] = friction.velocity_threshold_m_per_s
        c["dahl_stiffness"] = friction.dahl_stiffness_per_m
        c["static_ratio"] = friction.static_ratio
        c["stribeck_velocity"] = friction.stribeck_velocity_m_per_s
        c["lugre_stiffness"] = friction.lugre_stiffness_per_m
        c["lugre_damping"] = friction.lugre_damping_s_per_m
        c["lugre_viscous"] = friction.lugre_viscous_s_per_m
        c["gms_count"] = len(friction.gms_weights)
        c["gms_weight"][:len(friction.gms_weights)] = friction.gms_weights
        c["gms_stiffness"][:len(friction.gms_stiffness_per_m)] = friction.gms_stiffness_per_m
        c["gms_attraction"] = friction.gms_attraction_per_s
        if friction.law == "bristle":
            k = friction.bristle_stiffness_N_per_m2 * drive["rest_length"]
            c["bristle_stiffness"] = k
            # half-critical damping of a node on its bristle spring: no ringing in stick
            c["bristle_damping"] = math.sqrt(k * drive["node_mass"])
        arm = np.zeros(1, FRICTION_LAW)
        arm[0]["law"] = LAW_TANH
        arm[0]["velocity_threshold"] = (layout.tensioner.friction_velocity_threshold_rad_per_s
                                        if layout.tensioner is not None else 1.0)
        load = np.zeros(1, FRICTION_LAW)
        load[0]["law"] = LAW_TANH
        load[0]["velocity_threshold"] = LOAD_SPEED_THRESHOLD
        return contact, arm, load

    @staticmethod
    def _pulley_records(layout, geom):
        p = len(layout.pulleys)
        rec = np.zeros(p, PULLEY)
        rows = []
        for j, pl in enumerate(layout.pulleys):
            rec[j]["x"], rec[j]["y"] = geom.centers[j]
            rec[j]["radius"] = geom.radii[j]
            rec[j]["sense"] = geom.senses[j]
            rec[j]["inertia"] = pl.inertia_kgm2 if pl.role != "crankshaft" else 1.0
            rec[j]["bearing_damping"] = pl.bearing_damping_Nms_per_rad
            rec[j]["mu"] = geom.mu[j]
            rec[j]["table_start"] = len(rows)
            if pl.torque_table_speed_rad_per_s is not None:
                rows += list(zip(pl.torque_table_speed_rad_per_s, pl.torque_table_Nm))
            rec[j]["table_stop"] = len(rows)
        table = np.array(rows, dtype=float).reshape(-1, 2) if rows else np.zeros((0, 2))
        return rec, table

    # ------------------------------------------------------------------ running
    def load_torques(self, speeds: np.ndarray, water_pump_torque: float) -> np.ndarray:
        """Steady load torque of every pulley at running speeds ``speeds`` [N m]."""
        torques = np.zeros(len(speeds))
        for j, rec in enumerate(self.pulleys):
            if j == self.layout.crank_index:
                continue
            torques[j] = rec["bearing_damping"] * speeds[j]
            if j == self.drive[0]["water_pump"]:
                torques[j] += water_pump_torque
            if rec["table_stop"] > rec["table_start"]:
                torques[j] += table_torque(self.arrays.table, rec["table_start"], rec["table_stop"], abs(speeds[j]))
        return torques

    def reset(self, crank_speed: float = 0.0, water_pump_torque: float = 0.0, settle_time: float = SETTLE_TIME):
        """Start at time 0 from the steady running state for these inputs.

        The state is first built analytically (:mod:`belt_fmu.model.initialization`) and
        then relaxed by running the model itself for ``settle_time`` [s] at these inputs, so
        that the run starts from the model's own equilibrium without a start-up transient.
        """
        check_inputs(crank_speed, water_pump_torque)
        geom = self.geometry
        crank = geom.crank
        # belt speed from the crank, running speeds by radius ratio (eq. 12.20)
        belt_speed = abs(crank_speed) * geom.radii[crank]
        speeds = belt_speed / geom.radii
        centrifugal = geom.mass_per_length * belt_speed ** 2
        path = BeltPath.from_circles(geom.centers, geom.radii, geom.senses)
        loaded = init.span_tension_offsets(path, crank, self.load_torques(speeds, water_pump_torque))
        try:
            psi, span, march = self._running_state(loaded, centrifugal)
        except init.InitializationError:
            # the loads need tensions the belt cannot carry (it will slip): start unloaded
            # and let the dynamics apply them
            psi, span, march = self._running_state(np.zeros_like(loaded), centrifugal)
        self._place(psi, span, march, crank_speed)
        self.arrays.rebuild_countdown[0] = 0
        self.time = 0.0
        if settle_time > 0.0:
            self.advance(settle_time, crank_speed, water_pump_torque)
            self.time = 0.0
        else:
            self.evaluate_outputs()

    def _running_state(self, offsets, centrifugal):
        geom = self.geometry
        d = self.drive[0]
        if geom.tensioner < 0:
            return init.solve_running_state(geom, self.rest_length, offsets, centrifugal)

        def spring_torque(psi):
            return d["spring_sense"] * d["spring_preload"] - d["spring_rate"] * (psi - d["arm_installed"])

        return init.solve_running_state(geom, self.rest_length, offsets, centrifugal, spring_torque,
                                        (d["stop_min"], d["stop_max"]))

    def _place(self, psi, span, march, crank_speed):
        path, sampler, nodes, index = march
        geom = self.geometry
        s = self.views
        ea = geom.axial_stiffness
        self.y[:] = 0.0
        tangent = sampler.tangent[index]
        tension = sampler.tension[index]
        s.q[:, 0:2] = nodes
        s.q[:, 2] = np.unwrap(np.arctan2(tangent[:, 1], tangent[:, 0]))
        crank = geom.crank
        # mass flow: v / (1 + eps) is the same everywhere; the belt adheres at a wrap's entry
        flux = abs(crank_speed) * path.radii[crank] / (1.0 + span[crank - 1] / ea)
        speed = flux * (1.0 + tension / ea)
        s.u[:, 0:2] = speed[:, None] * tangent
        on = sampler.pulley[index]
        wrapped = on >= 0
        s.u[wrapped, 2] = geom.senses[on[wrapped]] * speed[wrapped] / path.radii[on[wrapped]]
        for j in range(len(geom.radii)):
            s.omega[j] = geom.senses[j] * flux * (1.0 + span[j - 1] / ea) / path.radii[j]
        s.omega[crank] = self.drive[0]["crank_sense"] * crank_speed
        s.arm[0] = psi

    def advance(self, interval: float, crank_speed: float, water_pump_torque: float) -> None:
        """Advance by ``interval`` [s] with constant inputs (internal steps of at most ``dt``)."""
        check_inputs(crank_speed, water_pump_torque)
        if not (interval >= 0.0 and math.isfinite(interval)):
            raise ValueError(f"interval must be a finite time >= 0 s, got {interval!r}")
        if interval == 0.0:
            return
        n_steps = max(1, math.ceil(interval / self.dt - 1e-9))
        dt = interval / n_steps
        omega = self.drive[0]["crank_sense"] * crank_speed
        status, taken = run(*self._kernel_args, n_steps, dt, omega, water_pump_torque, self.output_values)
        if status != OK:
            when = self.time + taken * dt
            what = {NOT_FINITE: "non-finite state values", OVERSTRETCHED: "an element stretched beyond "
                    f"{100 * 0.25:.0f} % (the belt would have broken)"}[status]
            raise DivergenceError(f"integration diverged at t = {when:.6g} s: {what}; "
                                  f"inputs crank_speed={crank_speed!r} rad/s, water_pump_torque="
                                  f"{water_pump_torque!r} N.m, step {dt:.3g} s")
        self.time += interval

    # ------------------------------------------------------------------ outputs
    def current_path(self) -> BeltPath:
        """Nominal cord path for the current tensioner position."""
        return BeltPath.from_circles(self.arrays.centers, self.geometry.radii, self.geometry.senses)

    def outputs(self) -> dict:
        """Current values of every output in :attr:`specs` (SI units), by name."""
        return dict(zip(self.output_names, self.output_values.tolist()))

    def evaluate_outputs(self) -> np.ndarray:
        """Recompute :attr:`output_values` (outputs in :attr:`specs` order) from the state;
        :meth:`advance`, :meth:`reset` and :meth:`set_state` keep them current already."""
        report(*self._kernel_args, self.output_values)
        return self.output_values

    # ------------------------------------------------------------------ state
    def get_state(self) -> np.ndarray:
        """Everything needed to continue exactly: time, state vector and the diagnostics
        of the last step (outputs are computed from them)."""
        return np.concatenate([[self.time], self.y, self.work])

    def set_state(self, saved: np.ndarray) -> None:
        expected = 1 + self.y.size + self.work.size
        saved = np.asarray(saved, dtype=float)
        if saved.shape != (expected,):
            raise ValueError(f"state vector has {saved.size} values, this drive needs {expected}")
        self.time = float(saved[0])
        self.y[:] = saved[1:1 + self.y.size]
        self.work[:] = saved[1 + self.y.size:]
        self.arrays.rebuild_countdown[0] = 0  # neighbour lists are rebuilt from the state
        self.evaluate_outputs()


def _effective_mu(layout, pulley) -> float:
    """Friction coefficient of a contact: poly-V ribs wedge, mu / sin(phi/2) (seed 001)."""
    if pulley.side == "ribbed":
        return layout.friction.mu / math.sin(0.5 * layout.belt.groove_angle_rad)
    return layout.friction.mu_back


def check_inputs(crank_speed, water_pump_torque) -> None:
    """Refuse inputs the model is not made for, naming the input, the value and the range."""
    for name, value, (low, high), unit in (("crank_speed", crank_speed, CRANK_SPEED_RANGE, "rad/s"),
                                           ("water_pump_torque", water_pump_torque, WATER_PUMP_TORQUE_RANGE, "N.m")):
        if not isinstance(value, (int, float, np.floating)) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        if not low <= value <= high:
            raise ValueError(f"{name} = {value:.6g} {unit} is outside the allowed range [{low:g}, {high:g}] {unit}")
