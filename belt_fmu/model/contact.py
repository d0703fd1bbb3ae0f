"""Normal contact between a belt node and a pulley: a penalty (elastogap) law.

[Kubas 2017] eq. 2.8 (= [Kubas and Harlecki 2021] eq. 24), after Cepon et al. 2010:

    N = c1 p^2 + c2 p + b dp/dt,     p = rho - |r|,     N >= 0

with ``r`` the vector from the pulley centre to the node, ``rho`` the cord-line radius at
which contact begins and ``p`` the penetration. The force acts along ``r / |r|`` on the node
([Scania thesis] eq. 4.1 is the linear case). Contact never pulls: the damping term may reduce the
force to zero on separation but not below ([Scania thesis] eq. 4.2 for p <= 0).
The coefficients here are per node: the layout gives them per unit belt length and the
model multiplies by the element length, so that refining the mesh keeps the contact pressure.
"""
import numpy as np
from numba import njit

from .drive import update_pulley_centers

#: The contact law per node: the layout's per-length coefficients times the element length.
CONTACT = np.dtype(
    [
        ("stiffness_quadratic", "f8"),  # c1 l0 [N/m^2]
        ("stiffness_linear", "f8"),  # c2 l0 [N/m]
        ("damping", "f8"),  # b l0 [N s/m]
    ]
)


#: neighbour lists hold the nodes within this many unstretched element lengths of a cord
#: circle: half an element, so that a node at most half an element from contact is listed
#: (the lists are rebuilt before any node can have moved that far)
NEIGHBOUR_MARGIN_ELEMENTS = 0.5
#: ... and at least this distance [m] (one and a half elements of the built-in 150-element
#: belt): the lists are rebuilt every margin / (4 v) seconds, so a margin shrinking with the
#: elements (the step does not, belt.implicit_belt_correction) would rebuild a fine belt's
#: lists every step or two. A rebuild checks every node against every pulley (0.9 us for the
#: built-in drive, 3.3 us with 600 elements), a listed node out of contact costs one distance
#: check per step (5 ns) and is treated as if it were not listed, so the results do not
#: depend on the margin (bit for bit) but the cost does: 4e-3 m rebuilt the lists every 7
#: steps at 800 rpm and every 2 at 3000 rpm; from 6e-3 m on the cost is flat within 1 %
NEIGHBOUR_MARGIN_MIN = 12e-3
#: the lists are rebuilt when the fastest node, at this multiple of its current speed, could
#: have closed half the margin: a node accelerating hard may outrun its current speed
SPEED_ALLOWANCE = 2.0
#: ... and at least every this long [s], whatever the speeds (a drive at rest)
MAX_REBUILD_INTERVAL = 0.02


@njit(cache=True, _nrt=False, inline="always")
def normal_force(contact, penetration, penetration_rate):
    """Contact normal force [N] on a node ([Kubas 2017] eq. 2.8) from the CONTACT record,
    zero out of contact."""
    if penetration <= 0.0:
        return 0.0
    force = ((contact.stiffness_quadratic * penetration + contact.stiffness_linear) * penetration
             + contact.damping * penetration_rate)
    return force if force > 0.0 else 0.0


@njit(cache=True, _nrt=False, inline="always")
def normal_contact(p, s, w):
    """Normal contact forces of the listed nodes (explicit), and this step's contact list.

    For each pulley j and each node i of its neighbour list inside the cord circle, the
    normal force acts along the unit vector from the centre to the node; it is added to the
    node's load ``w.node_force`` and, opposite, to the pulley's ``w.hub_force`` (which this
    starts for the step, as it does ``w.belt_torque``). The contacts found, with their normal
    direction and distance, form the list ``w.contact_node/pulley/frame[:contact_count[0]]``
    the friction works on, pulley by pulley
    (:func:`belt_fmu.model.friction.pulley_contacts`). A listed node out of
    contact loses its friction state.
    """
    contact = p.contact[0]
    pulleys = p.pulleys
    w.hub_force[:, :] = 0.0
    w.belt_torque[:] = 0.0
    n_contacts = 0
    for j in range(pulleys.shape[0]):
        rho = pulleys[j].radius
        w.contact_start[j] = n_contacts
        cx = w.centers[j, 0]
        cy = w.centers[j, 1]
        for k in range(w.candidate_count[j]):
            i = w.candidates[j, k]
            rx = s.q[i, 0] - cx
            ry = s.q[i, 1] - cy
            dist2 = rx * rx + ry * ry
            force = 0.0
            if dist2 < rho * rho:
                dist = np.sqrt(dist2)
                nx = rx / dist
                ny = ry / dist
                rvx = s.u[i, 0] - w.center_velocity[j, 0]
                rvy = s.u[i, 1] - w.center_velocity[j, 1]
                force = normal_force(contact, rho - dist, -(rvx * nx + rvy * ny))
            w.normal_force[i, j] = force
            if force == 0.0:
                s.friction[i, j, :] = 0.0
                s.slip[i, j] = 0.0
                s.friction_force[i, j] = 0.0
                continue
            w.node_force[i, 0] += force * nx
            w.node_force[i, 1] += force * ny
            w.hub_force[j, 0] -= force * nx
            w.hub_force[j, 1] -= force * ny
            w.contact_node[n_contacts] = i
            w.contact_pulley[n_contacts] = j
            w.contact_frame[n_contacts, 0] = nx
            w.contact_frame[n_contacts, 1] = ny
            w.contact_frame[n_contacts, 2] = dist
            n_contacts += 1
    w.contact_count[0] = n_contacts


@njit(cache=True, _nrt=False)
def neighbour_margin(belt):
    """Distance [m] beyond a cord circle within which nodes are listed as contact candidates."""
    return max(NEIGHBOUR_MARGIN_ELEMENTS * belt.rest_length, NEIGHBOUR_MARGIN_MIN)


@njit(cache=True, _nrt=False)
def build_candidates(p, s, w, margin):
    """Neighbour lists: for each pulley j, the nodes within its cord radius + ``margin`` of its
    centre ``w.centers[j]``, into ``w.candidates[j, :w.candidate_count[j]]``.

    Contact can only begin for a listed node until some node has moved ``margin``, so the
    lists are rebuilt well before that (a Verlet list, as in molecular dynamics).

    A pair left off holds no contact state (normal and friction force, slip, friction
    states: zero) without being cleared here: :func:`normal_contact` clears a listed pair at
    the first step that starts with its node off the pulley, and a node stays listed until
    it is ``margin`` beyond the cord circle, far more than it moves in a step; a reset or a
    restored state starts from such a state (BeltDrive.reset and set_state clear the
    normal forces, which are not state). Clearing every pair off the lists was 13.3 us of a
    rebuild's 16.6 at 600 elements, 3.0 of 3.9 at 150."""
    q = s.q
    n = q.shape[0]
    for j in range(p.pulleys.shape[0]):
        reach = p.pulleys[j].radius + margin
        reach2 = reach * reach
        count = 0
        for i in range(n):
            rx = q[i, 0] - w.centers[j, 0]
            ry = q[i, 1] - w.centers[j, 1]
            if rx * rx + ry * ry < reach2:
                w.candidates[j, count] = i
                count += 1
        w.candidate_count[j] = count


@njit(cache=True, _nrt=False)
def rebuild_neighbour_lists(p, s, w):
    """Rebuild the neighbour lists (:func:`build_candidates`) for the current pulley centres
    and set ``w.lists_valid_for[0]`` to the time [s] until the next rebuild: until a node at
    :data:`SPEED_ALLOWANCE` times the fastest node's speed (plus the tensioner pulley's)
    could have closed half the margin, at most :data:`MAX_REBUILD_INTERVAL`.

    A time rather than a count of steps, so that it holds whatever the length of the steps
    that follow: a count set at a 1e-9 s communication step held for 1000 steps of 2e-5 s,
    20 ms in which nodes entered contact unlisted."""
    update_pulley_centers(p, s, w)
    margin = neighbour_margin(p.belt[0])
    build_candidates(p, s, w, margin)
    vmax = 0.0
    for i in range(s.u.shape[0]):
        v = s.u[i, 0] * s.u[i, 0] + s.u[i, 1] * s.u[i, 1]
        if v > vmax:
            vmax = v
    vmax = np.sqrt(vmax)
    if p.roles[0].tensioner >= 0:
        vmax += abs(s.arm[1]) * p.tensioner[0].arm_length
    w.lists_valid_for[0] = min(MAX_REBUILD_INTERVAL, 0.5 * margin / (SPEED_ALLOWANCE * vmax + 1e-300))


@njit(cache=True, _nrt=False, inline="always")
def update_neighbour_lists(p, s, w, dt):
    """Rebuild the neighbour lists (:func:`rebuild_neighbour_lists`) unless they stay valid
    over a step of ``dt`` [s] (``w.lists_valid_for``); the caller counts the step off."""
    if w.lists_valid_for[0] < dt:
        rebuild_neighbour_lists(p, s, w)
