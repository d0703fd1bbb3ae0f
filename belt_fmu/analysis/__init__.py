"""Linear analysis of a drive about its steady running state: the operating point
(:mod:`~belt_fmu.analysis.operating_point`), the discretized model linearized about it
(:mod:`~belt_fmu.analysis.linearization`), its natural modes (:mod:`~belt_fmu.analysis.modes`),
the Campbell diagram over engine speed (:mod:`~belt_fmu.analysis.campbell`), the steady
harmonic response over engine speed (:mod:`~belt_fmu.analysis.response`) with the tensioner
arm's friction as its describing function (:mod:`~belt_fmu.analysis.arm_friction`), and the lumped
rotational model of the classical literature as an independent reference
(:mod:`~belt_fmu.analysis.rotational`). docs/modes.md explains what the modes mean."""
