"""Linear analysis of a drive about its steady running state: the operating point
(:mod:`~belt_fmu.analysis.operating_point`), the discretized model linearized about it
(:mod:`~belt_fmu.analysis.linearization`), its natural modes (:mod:`~belt_fmu.analysis.modes`),
the Campbell diagram over engine speed (:mod:`~belt_fmu.analysis.campbell`), and the lumped
rotational model of the classical literature as an independent reference
(:mod:`~belt_fmu.analysis.rotational`). docs/modes.md explains what the modes mean."""
