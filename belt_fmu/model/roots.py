"""Root of a scalar function in a bracket: Brent's method.

The initialization solves a few one-dimensional closure conditions (unstretched length,
tension level, tensioner arm angle). This is Brent's method (R. P. Brent, *Algorithms for
Minimization without Derivatives*, Prentice-Hall 1973, ch. 4; the ``zeroin`` of Forsythe,
Malcolm and Moler, *Computer Methods for Mathematical Computations*, 1977): inverse
quadratic interpolation or secant steps while they shrink the bracket fast enough, bisection
otherwise, so it converges superlinearly on smooth functions and never slower than bisection.

It is written here rather than taken from ``scipy.optimize`` because the FMU's runtime must
not import scipy: ``scipy.optimize`` loads scipy's ``_uarray`` extension, whose C++ static
objects hold Python references that are released twice when a native FMI host's process
exits with the interpreter still alive (docs/native-hosts.md, "Why the process crashed").
"""
from __future__ import annotations

from typing import Callable

EPS = 2.220446049250313e-16  # float64 machine epsilon


def brent_root(func: Callable[[float], float], a: float, b: float, xtol: float = 2e-12, rtol: float = 4 * EPS,
               max_iterations: int = 100) -> float:
    """A root of ``func`` in [a, b], where ``func(a)`` and ``func(b)`` differ in sign, to
    within ``xtol + rtol |x|``.

    Raises ValueError if the signs at the ends do not differ, RuntimeError if it has not
    converged after ``max_iterations`` evaluations (it converges in at most about
    log2((b - a) / xtol) bisections).
    """
    fa, fb = func(a), func(b)
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    if (fa > 0.0) == (fb > 0.0):
        raise ValueError(f"no sign change in the bracket: f({a:.9g}) = {fa:.3g}, f({b:.9g}) = {fb:.3g}")
    c, fc = a, fa
    step = previous = b - a
    for _ in range(max_iterations):
        if (fb > 0.0) == (fc > 0.0):  # keep the root between b and c
            c, fc = a, fa
            step = previous = b - a
        if abs(fc) < abs(fb):  # b is the best estimate so far
            a, b, c = b, c, b
            fa, fb, fc = fb, fc, fb
        tol = 0.5 * (xtol + rtol * abs(b))
        half = 0.5 * (c - b)
        if abs(half) <= tol or fb == 0.0:
            return b
        if abs(previous) >= tol and abs(fa) > abs(fb):
            s = fb / fa
            if a == c:  # secant
                p, q = 2.0 * half * s, 1.0 - s
            else:  # inverse quadratic interpolation through a, b, c
                q, r = fa / fc, fb / fc
                p = s * (2.0 * half * q * (q - r) - (b - a) * (r - 1.0))
                q = (q - 1.0) * (r - 1.0) * (s - 1.0)
            if p > 0.0:
                q = -q
            else:
                p = -p
            # accept the interpolation only if it stays well inside the bracket and the
            # steps keep shrinking; bisect otherwise
            if 2.0 * p < min(3.0 * half * q - abs(tol * q), abs(previous * q)):
                previous, step = step, p / q
            else:
                step = previous = half
        else:
            step = previous = half
        a, fa = b, fb
        b += step if abs(step) > tol else (tol if half > 0.0 else -tol)
        fb = func(b)
    raise RuntimeError(f"no convergence in {max_iterations} evaluations; bracket [{b:.17g}, {c:.17g}]")
