"""The analysis of notebooks 07a, 07b, 08 and 09 (labkit.lab.analysis) on small made-up
frames: the statistics give what the rows say, and a bad argument names itself."""
import numpy as np
import pandas as pd
import pytest

from labkit.lab.analysis import article_part, echo_servers, frames_allocators, switch_frequency
from labkit.lab.judging import verdicts


def _runs(qps: dict) -> pd.DataFrame:
    return pd.DataFrame([{"server": s, "qps": q} for s, values in qps.items() for q in values])


def test_ordering_holds_is_reversed_or_says_nothing():
    order = ["a", "b", "c"]
    assert echo_servers.ordering(_runs({"a": [30, 31, 32], "b": [20, 21, 22],
                                        "c": [10, 11, 12]}), order)[0] == 1.0
    assert echo_servers.ordering(_runs({"a": [10, 11, 12], "b": [20, 21, 22],
                                        "c": [5, 6, 7]}), order)[0] == 0.0
    assert echo_servers.ordering(_runs({"a": [20, 25, 30], "b": [22, 23, 24],
                                        "c": [10, 11, 12]}), order)[0] == 0.5
    with pytest.raises(ValueError, match="'d'"):
        echo_servers.ordering(_runs({"a": [1]}), ["a", "d"])


def test_the_c004_table_reads_the_articles_strategies(monkeypatch):
    saved = {}
    monkeypatch.setattr(echo_servers.results, "save_csv",
                        lambda df, name: saved.update({name: df}))
    main = _runs({"cxx20_new": [100, 100, 100], "cxx20_pool": [200, 200, 200]})
    ms = pd.DataFrame({"server": ["cxx20_new", "cxx20_pool"], "allocs_per_msg": [2.0, 0.0]})
    t = echo_servers.c004_table(main, ms)
    assert list(t.server) == ["cxx20_new", "cxx20_pool"]
    assert t.set_index("server").loc["cxx20_pool", "measured ratio"] == 2.0
    assert t.set_index("server").loc["cxx20_pool", "claimed ratio"] == 3.5  # 350k / 100k
    assert "09_echo_servers_c004" in saved


def test_heap_over_pool_ratios_per_pattern_and_block():
    rows = [{"allocator": a, "block": 256, "pattern": p, "ns_shown": v}
            for p in frames_allocators.PATTERNS
            for a, v in (("heap", 20.0), ("pool", 2.0), ("tlpool", 4.0), ("atomic", 10.0))
            for _ in range(5)]
    r = frames_allocators.ratios(pd.DataFrame(rows))
    assert list(r.pattern) == list(frames_allocators.PATTERNS)
    assert np.allclose(r["heap / pool"], 10.0) and np.allclose(r["heap / atomic"], 2.0)


def test_the_gain_over_before_is_one_at_before():
    before, after = switch_frequency.BEFORE, switch_frequency.AFTER
    label = switch_frequency.frequency.setup_label
    runs = pd.DataFrame([{"setup": label(*s), "stack_size": s[0], "batch": s[1],
                          "work_cycles": 100, "throughput_mtasks_s": t}
                         for s, t in ((before, 10.0), (after, 15.0)) for _ in range(5)])
    g = switch_frequency.gains(runs).set_index("setup")["median"]
    assert g[label(*before)] == 1.0 and g[label(*after)] == 1.5


def test_article_rows_say_what_was_judged():
    t = verdicts.table([verdicts.judge("C002.3", 3.0, low=2.5, high=3.5)])
    # Each verdict with the value it stands on; a claim with no row is not measured.
    assert article_part.verdict_cell(t, ["C002.3", "C001.2"]) == \
        f"C002.3: reproduced on {t.measured_value.iloc[0]} (exact count); C001.2: not-measured"
    t.loc[0, ["processes", "method"]] = [16, "rci"]
    assert article_part.verdict_cell(t, ["C002.3"]).endswith("[2.5, 3.5] over 16 processes")
    assert article_part.span(1.234, 1.0, 2.0, " ns") == "1.23 [1, 2] ns"
    assert article_part.span(5.0, 1.0, float("inf")) == "5"
    assert article_part.span(float("nan")) == "not measured"


def test_switch_frequency_share_finding_puts_both_works_beside_the_author():
    import pandas as pd

    from labkit.experiments import frequency
    from labkit.lab.analysis import switch_frequency as sf

    label = frequency.setup_label(*sf.BEFORE)
    dep = pd.DataFrame({"setup": [label, label], "work_cycles": [0, 100],
                        "median": [0.7, 0.04]})
    ind = pd.DataFrame({"setup": [label], "work_cycles": [100], "median": [0.13]})
    said = sf.share_finding(dep, ind, judge_work=100)
    assert "takes 4% of the time beside dependent work and 13% beside independent" in said
    assert said.endswith(f"the author measured {100 * sf.claimed()['share_before']:.0f}%.")
    assert "beside independent" not in sf.share_finding(dep, None, judge_work=100)
