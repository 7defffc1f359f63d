"""labkit.advise: a workload in, the ranked advice out."""
from __future__ import annotations

from labkit.errors import ParameterError
from labkit.lab.advising import cold, evidence, hazards, inputs, model, present, taxonomy


def advise(work="0ns", suspensions=1, alive=None, stack_in_use=0, fp="none", *,
           stack_size=None, rate=None, connections=None, designs=None, bundle=None,
           data_dir=None, quick: bool = False, status=None):
    """Advice for a workload: `work` between suspensions ("20us", "100cycles", or ns),
    `suspensions` per request (each a switch out and back in), `alive` coroutines (or
    `connections`), `stack_in_use` at a switch ("1KiB" or bytes), `fp` "none", "control" or
    "vector", an optional fixed `stack_size`, request `rate` per second. `designs` limits
    the designs judged (default: all); `bundle` reads another machine's bundle instead of
    this machine's data/. Returns an Advice (`.frame`, `.records()`, an HTML view)."""
    w = inputs.workload(work, suspensions, alive, stack_in_use, fp, stack_size, rate,
                       connections)
    if designs is None:
        chosen = taxonomy.names()
    else:
        if isinstance(designs, str) or not hasattr(designs, "__iter__"):
            raise TypeError("designs must be a list of design names")
        chosen = [taxonomy.check(d) for d in designs]
        if not chosen:
            raise ParameterError("designs", "must name at least one design")
    if not isinstance(quick, bool):
        raise TypeError(f"quick must be True or False, not {type(quick).__name__}")
    ev = evidence.load(bundle, data_dir, quick=quick, status=status)
    since = len(ev.measured_now)
    if ev.local:  # what is missing, measured in one set of processes
        cold.measure_cold(ev, [n for d in chosen if (n := cold.cold_need(d, w, ev))])
    preds = []
    for d in chosen:
        p = model.predict_full(d, w, ev)
        p["hazards"] = hazards.of(ev, d, w, p)
        preds.append(p)
    return present.Advice(w, present.rank(preds), ev, since)
