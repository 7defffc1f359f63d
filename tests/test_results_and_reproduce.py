"""Nothing finished is lost: atomic writes, a failing notebook reported while others run,
verdict rules applied as written."""
import math
import os

import pandas as pd
import pytest

from labkit.lab import cli
from labkit.lab.judging import claims, verdicts
from labkit.lab.running import notebook_run, reproduce, status_line

from labkit.core import results


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    return tmp_path


def test_failed_write_keeps_the_previous_file(results_dir):
    good = pd.DataFrame({"a": [1, 2, 3]})
    path = results.save_csv(good, "x")

    class Boom(pd.DataFrame):
        def to_csv(self, *a, **k):
            with open(a[0], "w") as f:
                f.write("half a fi")
            raise OSError("disk full")

    with pytest.raises(OSError):
        results.save_csv(Boom({"a": [9]}), "x")
    assert pd.read_csv(path).equals(good)
    assert [p.name for p in path.parent.iterdir()] == ["x.csv"]  # no temp file left


def test_bad_names_are_refused(results_dir):
    with pytest.raises(ValueError, match="name"):
        results.save_csv(pd.DataFrame(), "../escape")


def test_parts_are_saved_as_one_tidy_file(results_dir):
    path = results.save_parts("nb", {"a": pd.DataFrame({"x": [1, 2]}),
                                     "b": pd.DataFrame({"x": [3], "y": [4.5]})})
    back = pd.read_csv(path)
    assert list(back.part) == ["a", "a", "b"] and list(back.x) == [1, 2, 3]
    assert back.y.isna().sum() == 2
    with pytest.raises(TypeError, match="parts"):
        results.save_parts("nb", [pd.DataFrame()])


def test_older_data_names_its_parts_experiment_and_reads_as_part(tmp_path):
    """data/ written before the glossary called a notebook's parts `experiment`; a claims
    frame's `experiment` (the record a claim belongs to) keeps its name."""
    old = tmp_path / "old.csv"
    pd.DataFrame({"experiment": ["ring", "pingpong"], "ns_per_switch": [1.0, 2.0]}).to_csv(
        old, index=False)
    assert list(results.read_csv(old).part) == ["ring", "pingpong"]
    claims_like = pd.DataFrame({"claim_id": ["C000.1"], "experiment": ["04_latency_ladder"]})
    assert list(results.current_columns(claims_like).columns) == ["claim_id", "experiment"]


def test_failing_notebook_is_reported_not_raised(tmp_path):
    src = tmp_path / "99_fails.py"
    src.write_text('# %% tags=["parameters"]\nquick = False\n\n# %%\n'
                   'raise RuntimeError("this notebook fails on purpose")\n')
    out = notebook_run.run_notebook(src, quick=True, out_dir=tmp_path / "ex",
                                 results_dir=tmp_path)
    assert not out.ok
    assert "fails on purpose" in out.error
    assert (tmp_path / "ex" / "99_fails.failed.ipynb").exists()
    assert not (tmp_path / "ex" / "99_fails.ipynb").exists()


def test_unknown_notebook_names_are_refused(capsys):
    with pytest.raises(ValueError, match="only"):
        reproduce.notebook_sources(["no_such_notebook"])
    # From the command line: a usage error (status 2), before anything is locked or run, in
    # one line that names the option, without the usage block above it.
    with pytest.raises(SystemExit) as exit_:
        cli.main(["reproduce", "--quick", "--only", "no_such_notebook"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "error: --only must name notebooks" in err and "no_such_notebook" in err
    assert "usage:" not in err


def test_claims_registry_has_every_claim_once():
    import re
    from pathlib import Path

    claims_md = Path(__file__).resolve().parents[2] / "shared" / "CLAIMS.md"
    c = claims.registry()
    assert c.claim_id.is_unique
    if claims_md.exists():
        ids = set(re.findall(r"^\| (C\d{3}\.\d+) \|", claims_md.read_text(), re.M))
        # CLAIMS.md's ids, plus the rows of the articles' tables (C000.2a ...) under them.
        assert ids == {i for i in c.claim_id if re.fullmatch(r"C\d{3}\.\d+", i)}
        assert all(re.fullmatch(r"(C\d{3}\.\d+)[a-z]", i) and i[:-1] in ids
                   for i in c.claim_id if i not in ids)
    for col in ("source", "claim", "claimed_value", "reproduced_if", "contradicted_if",
                "experiment"):
        assert (c[col].str.len() > 0).all(), col


def test_verdict_rules_as_written():
    # C002.3: reproduced if x >= 2; contradicted if x < 1.2.
    assert verdicts.judge("C002.3", 3.0, low=2.5, high=3.5)["verdict"] == "reproduced"
    assert verdicts.judge("C002.3", 1.0, low=0.9, high=1.1)["verdict"] == "contradicted"
    # A spread that straddles a bound is too noisy to judge.
    assert verdicts.judge("C002.3", 2.1, low=1.8, high=2.4)["verdict"] == "inconclusive"
    # Noise is flagged in the row; it does not veto a verdict (tests/test_verdicts.py).
    assert verdicts.judge("C002.3", 3.0, noisy=True)["noisy"] is True
    assert verdicts.judge("C003.1", 1.0)["verdict"] == "not-applicable-here"
    with pytest.raises(ValueError, match="claim_id"):
        verdicts.judge("C999.9", 1.0)
    with pytest.raises(TypeError, match="claim_id"):
        verdicts.judge(2.3, 1.0)
    with pytest.raises(TypeError, match="value"):
        verdicts.judge("C002.3", "3x")
    with pytest.raises(TypeError, match="low"):
        verdicts.judge("C002.3", 3.0, low=True, high=3.5)


def test_ratio_interval_with_no_bound_can_never_decide():
    # A denominator at or below zero gives no bound at all (tests/test_verdicts.py has
    # the bootstrap interval itself): no ratio is a missing value, not a verdict.
    r, lo, hi = verdicts.ratio_with_spread([4, 5, 6], [-1, 0, 1])
    assert math.isnan(r) and (lo, hi) == (-math.inf, math.inf)
    assert verdicts.judge("C002.3", 5.0, low=lo, high=hi)["verdict"] == "inconclusive"
    assert verdicts.judge("C002.3", math.nan, low=lo, high=hi)["verdict"] == "not-measured"


def test_results_are_readable_by_others(results_dir):
    import stat

    umask = os.umask(0o022)
    try:
        path = results.save_csv(pd.DataFrame({"a": [1]}), "shared")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_same_figure_same_bytes(results_dir):
    # No date and no random ids in the SVG: rerunning on the same data leaves git clean.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def draw():
        fig, ax = plt.subplots()
        ax.errorbar([1, 2, 3], [3, 1, 2], yerr=[0.1, 0.2, 0.3], marker="o", label="asm")
        ax.legend()
        ax.set_clip_on(True)
        paths = results.save_figure(fig, "determinism")
        plt.close(fig)
        return {p.suffix: p.read_bytes() for p in paths}

    first, second = draw(), draw()
    assert first[".svg"] == second[".svg"] and first[".png"] == second[".png"]
    assert b"<dc:date>" not in first[".svg"]


def test_progress_line_reads_the_sweeps_file(tmp_path):
    import io
    import json
    import time

    progress = tmp_path / "p.json"
    line = status_line.StatusLine(progress, total=3, stream=io.StringIO())
    line.notebook(2, "04_latency_ladder")
    assert line.text().startswith("[2/3] 04_latency_ladder") and "point" not in line.text()
    progress.write_text(json.dumps({"desc": "kernels", "done": 4, "total": 10,
                                    "started": time.time() - 8}))
    text = line.text()
    assert "kernels: point 5/10" in text and "ETA 0:1" in text and "elapsed" in text
