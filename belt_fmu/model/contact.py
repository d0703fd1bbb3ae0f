"""Normal contact between a belt node and a pulley: a penalty (elastogap) law.

Seed 002 eq. 2.8 (= seed 004 eq. 24), after Cepon et al. 2010:

    N = c1 p^2 + c2 p + b dp/dt,     p = rho - |r|,     N >= 0

with ``r`` the vector from the pulley centre to the node, ``rho`` the cord-line radius at
which contact begins and ``p`` the penetration. The force acts along ``r / |r|`` on the node
(seed 000 eq. 4.1 is the linear case). Contact never pulls: the damping term may reduce the
force to zero on separation but not below (seed 000 eq. 4.2 for p <= 0).
The coefficients here are per node: the layout gives them per unit belt length and the
model multiplies by the element length, so that refining the mesh keeps the contact pressure.
"""
from numba import njit


@njit(cache=True, inline="always")
def normal_force(penetration, penetration_rate, c1, c2, damping):
    """Contact normal force [N] on a node (seed 002 eq. 2.8), zero out of contact."""
    if penetration <= 0.0:
        return 0.0
    force = (c1 * penetration + c2) * penetration + damping * penetration_rate
    return force if force > 0.0 else 0.0


@njit(cache=True)
def build_candidates(q, centers, radii, margin, candidates, counts, pair_states, friction_states):
    """Neighbour lists: for each pulley j, the nodes within ``radii[j] + margin`` of its centre.

    ``candidates`` (p, n) receives node indices, ``counts`` (p,) their number. Contact can
    only begin for a listed node until some node has moved ``margin``, so the lists are
    rebuilt well before that (a Verlet list, as in molecular dynamics). Every per-pair
    array in ``pair_states`` (each (n, p)) and the friction states (n, p, k) are zeroed for
    the pairs not listed: a node that left a pulley has no contact state.
    """
    n = q.shape[0]
    p = centers.shape[0]
    for j in range(p):
        reach = radii[j] + margin
        reach2 = reach * reach
        count = 0
        for i in range(n):
            rx = q[i, 0] - centers[j, 0]
            ry = q[i, 1] - centers[j, 1]
            if rx * rx + ry * ry < reach2:
                candidates[j, count] = i
                count += 1
            else:
                for state in pair_states:
                    state[i, j] = 0.0
                friction_states[i, j, :] = 0.0
        counts[j] = count
