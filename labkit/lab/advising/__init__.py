"""The design advisor: for a workload, every design's predicted time per request and
memory, from this machine's measurements, with the hazards that apply and a ranking.

    import labkit
    labkit.advise(work="20us", suspensions=2, alive=10_000, stack_in_use="1KiB")

Modules: advice (labkit.advise), evidence (where numbers come from), model (the
prediction), hazards, present, grid (the calibration grid: predictions beside the workload
experiment's measurements, docs/advisor_calibration.md).
"""
