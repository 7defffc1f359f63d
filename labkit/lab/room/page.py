"""The room's page: a workshop room's bundles published to a registry, and one offline
HTML page of the room's machines only: each claim's tally across them and, when the
learners wrote predictions before measuring (labkit.lab.registry.predictions), who
predicted what and how the predictions came out on the room's machines."""
from __future__ import annotations

from pathlib import Path

from labkit.core.results import atomic_path
from labkit.lab.registry import gallery, predictions, publish, query
from labkit.lab.registry import store as stores

PAGE = "room.html"


def publish_one(folder, registry) -> str:
    """Publish one room bundle: 'stored as ...', 'already in the registry' or the refusal."""
    try:
        return "stored as " + publish.publish(folder, registry)["stored_as"]
    except publish.Refused as exc:
        return "already in the registry" if exc.duplicate else str(exc)


def room_rows(registry, machine_ids, *, quick: bool = False):
    """query.claims restricted to the room's machines."""
    rows = query.claims(registry, quick=quick)
    if rows.empty:
        return rows
    return rows[rows.machine.isin([str(m) for m in machine_ids])].reset_index(drop=True)


def summary(rows, preds=None) -> list[dict]:
    """Per claim: the room's tally and, with predictions, who predicted what and the
    outcomes over (learner, machine) pairs."""
    judged = predictions.judge_all(preds, rows) if preds is not None else None
    out = []
    for t in query.tally(rows) if not rows.empty else []:
        item = {"claim_id": t["claim_id"], "tally": t["line"], "predicted": {}, "outcomes": {}}
        if preds is not None:
            mine = preds[preds.claim_id == t["claim_id"]]
            item["predicted"] = {p: sorted(g.learner) for p, g in mine.groupby("predicted")}
            j = judged[judged.claim_id == t["claim_id"]]
            item["outcomes"] = {k: int(v) for k, v in j.outcome.value_counts().items()}
        out.append(item)
    return out


def render(items: list[dict], machines, registry: str, preds=None) -> str:
    e = gallery._e
    rows = []
    for it in items:
        said = "; ".join(f"{e(p)}: {len(who)} ({e(', '.join(who))})"
                         for p, who in it["predicted"].items()) or "—"
        came = ", ".join(f"{e(k)} {v}" for k, v in it["outcomes"].items()) or "—"
        rows.append(f'<tr class="claim" id="c-{e(it["claim_id"])}"><th>{e(it["claim_id"])}</th>'
                    f'<td>{e(it["tally"].split(": ", 1)[1])}</td><td class="pred">{said}</td>'
                    f'<td class="out">{came}</td></tr>')
    who = ""
    if preds is not None:
        who = (f"<p>{preds.learner.nunique()} learners wrote {len(preds)} predictions before "
               "measuring; each is judged on every machine of the room that measured its "
               "claim (a range with the claims' own decision rule at the machine's interval)."
               "</p>")
    names = ", ".join(e(m) for m in machines)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>labkit room</title><style>{gallery.CSS}</style></head>
<body><h1>The room: claims on its machines</h1>
<p>{len(machines)} machines ({names}), from the registry {e(registry)}.</p>{who}
<table class="grid room"><thead><tr><th>claim</th><th>tally across the room</th>
<th>predicted (learners)</th><th>predictions came out</th></tr></thead>
<tbody>{''.join(rows)}</tbody></table></body></html>
"""


def build(registry, machine_ids, out, *, predictions_file=None, quick: bool = False) -> Path:
    """Write OUT/room.html for the room's machines; returns its path."""
    store = stores.open_store(registry)
    rows = room_rows(store, machine_ids, quick=quick)
    preds = predictions.read(predictions_file) if predictions_file is not None else None
    labels = sorted(set(rows.label)) if not rows.empty else []
    page = render(summary(rows, preds), labels, gallery.shown(store), preds)
    out = Path(out)
    with atomic_path(out / PAGE) as tmp:
        tmp.write_text(page, encoding="utf-8")
    return out / PAGE
