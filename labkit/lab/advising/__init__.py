"""The design advisor: for a workload, every design's predicted time per request and
memory, from this machine's measurements, with the hazards that apply and a ranking.

    import labkit
    labkit.advise(work="20us", suspensions=2, alive=10_000, stack_in_use="1KiB")

Modules: advice (labkit.advise); inputs (what a user states); taxonomy (one record per
design); evidence (where numbers come from); the model's terms, switch_terms (the switch
itself), cold (many contexts: the cold resumption and the touch of the bytes in use) and
memory; model (the prediction that adds them); model_error (the calibration grid's error
it carries); hazards; present; grid (the calibration grid: predictions beside the
workload experiment's measurements, docs/advisor_calibration.md); holdout (the held-out
workloads).
"""
