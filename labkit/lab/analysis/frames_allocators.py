"""Notebook 07a's analysis: C++20 frame sizes by build, the allocation pairs' sweep and
ratios, the pools' leak check, the notes beside its verdicts, the closing note, and the
allocation rows of 001's table from this notebook's own runs (the article's figures read
from data/claims.csv).

    from labkit.lab.analysis import frames_allocators as fa
    fa.claimed_ns()            # {'pool': 10.0, 'heap': 100.0}
    fa.frame_table(frames.frame_sizes())
"""
from __future__ import annotations

import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from labkit.core import plots, stats
from labkit.core.systems import colours
from labkit.experiments import frames
from labkit.lab.analysis import article_part, findings
from labkit.lab.experiment import FRAMES_AND_ALLOCATORS
from labkit.lab.judging import claims, verdicts
from labkit.lab.report import articles
from labkit.lab.report.articles.measured import S001
from labkit.lab.running.sweep import for_notebook

NOTEBOOK = FRAMES_AND_ALLOCATORS.name
# The lab's sweep for the experiments' sweeps (labkit.experiments.frames), checkpointed
# under this notebook's name.
sweep = for_notebook(NOTEBOOK)
PATTERNS = ("one block", "many live")
# C001.2 is judged on 256-byte blocks, the frame size the article's gateway used.
JUDGED_BLOCK = 256


def claimed_ns() -> dict:
    """C001.2's two figures from its claim in data/claims.csv ('... ~10 ns against
    ~100 ns for the heap'): ns per allocation from the pool and from the heap."""
    pool, heap = (float(x) for x in re.findall(r"~([0-9.]+) ns", claims.claim("C001.2")["claim"]))
    return {"pool": pool, "heap": heap}


# ---------------------------------------------------------------- frame sizes

def by_build(sizes):
    """Frame bytes, variant by build (frames.VARIANTS' order, the builds as measured)."""
    builds = list(dict.fromkeys(sizes.build))
    return sizes.pivot(index="variant", columns="build", values="frame_bytes").loc[
        list(frames.VARIANTS), builds]


def _o2(sizes):
    return sizes[sizes.build == "O2"].set_index("variant")


def frame_table(sizes):
    """What each body does, its live bytes, its frame at every build and at -O2 over
    'suspend'; and a line with the compiler, sizeof(promise) and whether any build elided
    the allocation."""
    b, o2 = by_build(sizes), _o2(sizes)
    table = pd.DataFrame({
        "what the body does": [frames.VARIANTS[v] for v in b.index],
        "live_bytes": o2.live_bytes.loc[b.index],
        **{f"-{c}": b[c] for c in b.columns},
        "-O2 minus 'suspend'": b["O2"] - o2.frame_bytes["suspend"],
    }, index=b.index)
    line = (f"{sizes.compiler.iloc[0]}; sizeof(promise) = {o2.promise_bytes.iloc[0]} B; "
            f"elided at any level: {bool(sizes.elided.any())}")
    return table, line


def sizes_finding(sizes) -> str:
    """What the frame sizes show, one sentence from this run's -O2 build: what the array
    adds alive across the suspension and dead before it, beside the article's (C004.3)."""
    said = claims.claim("C004.3")["claimed_value"]
    return (f"At -O2 a {plots.bytes_label(frames.ARRAY_BYTES)} array alive across the "
            f"suspension adds {plots.bytes_label(added(sizes, 'array_alive'))} to the frame "
            f"(the article: {plots.bytes_label(float(said))}); last used before it, in the "
            f"same scope, it adds {plots.bytes_label(added(sizes, 'array_dead'))}; in a called "
            f"function, {plots.bytes_label(added(sizes, 'array_callee'))}.")


def sizes_figure(sizes):
    """Frame bytes per variant at -O0 and -O2, 'suspend' + the array marked, sizes_finding
    as the title (figures/07a_frames_and_allocators-sizes)."""
    b = by_build(sizes)
    base = _o2(sizes).frame_bytes["suspend"]
    fig, ax = plt.subplots(figsize=(10, 5))
    findings.title(fig, sizes_finding(sizes), 100)
    shown = [c for c in ("O0", "O2") if c in b.columns]
    y = np.arange(len(b))
    h = 0.8 / len(shown)
    palette = colours(f"g++ -{c}" for c in shown)
    for i, c in enumerate(shown):
        plots.dots(ax, y + i * h, b[c], horizontal=True, marker="os"[i % 2],
                   color=palette[f"g++ -{c}"], label=f"g++ -{c}")
        for yy, v in zip(y + i * h, b[c]):
            ax.text(v * 1.08, yy, f"{v:,}", va="center", fontsize=7)
    ax.set_yticks(y + h * (len(shown) - 1) / 2, b.index)
    ax.invert_yaxis()
    plots.log_axis(ax, "x", base=2)
    ax.set_xlim(16, 2 ** 19)
    ax.axvline(base + frames.ARRAY_BYTES, color="grey", ls=":", lw=1,
               label=f"'suspend' + {plots.bytes_label(frames.ARRAY_BYTES)}")
    ax.set_xlabel("frame bytes (the promise's operator new argument)")
    ax.set_title("C++20 coroutine frame sizes")
    ax.legend(fontsize="small", loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    return plots.finish(fig, f"{NOTEBOOK}-sizes")


def added(sizes, variant: str, build: str = "O2") -> int:
    """Frame bytes a variant adds over 'suspend' at one build."""
    f = sizes[sizes.build == build].set_index("variant").frame_bytes
    return int(f[variant] - f["suspend"])


# ---------------------------------------------------------------- allocation

def blocks(sizes) -> list[int]:
    """The block sizes measured: 192 B, 256 B and every frame size at -O2."""
    return sorted({192, 256} | set(int(b) for b in _o2(sizes).frame_bytes if b > 0))


def alloc_summary(alloc):
    """ns_shown's median and quartiles per allocator, block and pattern."""
    return stats.summarize(alloc, by=["allocator", "block", "pattern"], value="ns_shown")


def _baseline(alloc):
    """The many-live baseline loop (no allocator) per block: median ns per pair."""
    return alloc[alloc.pattern == "many live"].groupby("block").baseline_ns_per_pair.median()


def alloc_table(alloc, al):
    """Median ns per pair, pattern and block by allocator, the many-live baseline beside;
    and the noise warnings and the count of runs floored at 0."""
    base = _baseline(alloc)
    shown = al.pivot(index=["pattern", "block"], columns="allocator", values="median")[
        list(frames.ALLOCATORS)]
    shown["baseline (many live)"] = [f"{base[b]:.2f}" if p == "many live" else "(subtracted)"
                                     for p, b in shown.index]
    lines = stats.noise_warnings(al) + [
        f"{int(alloc.below_resolution.sum())} of {len(alloc)} runs were no slower than their "
        "baseline loop (net floored at 0)"]
    return shown.round(2), "\n".join(lines)


def alloc_finding(alloc) -> str:
    """What the allocation figure shows at the judged block, one sentence from this run:
    a heap pair against a pool pair (one block), their ratio with its interval, beside the
    article's two figures (C001.2)."""
    sel = alloc[(alloc.block == JUDGED_BLOCK) & (alloc.pattern == "one block")]
    heap, pool = (sel[sel.allocator == a].ns_shown for a in ("heap", "pool"))
    if heap.empty or pool.empty:
        return f"This run did not time the heap and the pool on {JUDGED_BLOCK} B blocks."
    c = claimed_ns()
    return (f"On {JUDGED_BLOCK} B blocks, one at a time, an allocate+free pair costs "
            f"{plots.ns_label(heap.median())} from the heap and {plots.ns_label(pool.median())} "
            f"from the pool, heap/pool {findings.times(*verdicts.ratio_with_spread(heap, pool))}"
            f"; the article saw ~{c['heap']:g} against ~{c['pool']:g} ns "
            f"({findings.times(c['heap'] / c['pool'])}).")


def alloc_figure(alloc, al, *, live_blocks: int):
    """ns per pair against block size, one block (net) and many live (raw, the baseline
    loop beside), the article's two figures marked (figures/07a_frames_and_allocators-alloc).
    The blocks are evenly spaced, not to scale: two of them are 16 bytes apart."""
    sizes = sorted(set(alloc.block))
    position = {b: i for i, b in enumerate(sizes)}
    base, claimed = _baseline(alloc), claimed_ns()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
    findings.title(fig, alloc_finding(alloc))
    for ax, pattern in zip(axes, PATTERNS):
        at = al[al.pattern == pattern].assign(x=al.block.map(position))
        plots.errorbars(ax, at, x="x", hue="allocator", palette=colours(frames.ALLOCATORS))
        ax.get_legend().remove()
        if pattern == "many live":
            ax.plot([position[b] for b in base.index], base.values, color="grey", ls="-", lw=2,
                    alpha=0.5, label="baseline loop, no allocator (many live)")
        plots.log_axis(ax, "y")
        ax.set_ylim(0.5, 1000)
        ax.set_xticks(range(len(sizes)), [f"{b:,}" for b in sizes], rotation=30)
        ax.set_xlabel("block bytes")
        ax.axhline(claimed["heap"], color="grey", ls=":", lw=1,
                   label=f"claimed heap (~{claimed['heap']:g} ns)")
        ax.axhline(claimed["pool"], color="grey", ls="--", lw=1,
                   label=f"claimed pool (~{claimed['pool']:g} ns)")
    axes[0].set_ylabel("ns per allocate+free pair (median, IQR bars)")
    axes[0].set_title("one block (net of the loop)")
    axes[1].set_title(f"many live ({live_blocks:,} live, fewer for 64 KiB blocks): raw")
    handles, labels = axes[1].get_legend_handles_labels()
    axes[1].legend(handles, labels, loc="upper left", ncol=2, fontsize="small")
    return plots.finish(fig, f"{NOTEBOOK}-alloc")


def _spread_text(lo, hi) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "unbounded (a net below resolution)"
    return f"{lo:.1f} .. {hi:.1f}"


def ratios(alloc):
    """heap over each pool, per pattern and block, of what the table shows (net for one
    block, raw for many live), with the spread of labkit.lab.judging.verdicts.ratio_with_spread."""
    rows = []
    for pattern in PATTERNS:
        for b in sorted(set(alloc.block)):
            sel = alloc[(alloc.block == b) & (alloc.pattern == pattern)]
            row = {"pattern": pattern, "block": b}
            for a in ("pool", "tlpool", "atomic"):
                r, lo, hi = verdicts.ratio_with_spread(sel[sel.allocator == "heap"].ns_shown,
                                                       sel[sel.allocator == a].ns_shown)
                row[f"heap / {a}"] = r
                row[f"heap / {a} spread"] = _spread_text(lo, hi)
            rows.append(row)
    return pd.DataFrame(rows)


def shown_ratios(r):
    """The ratios for display: two decimals, an infinite ratio named as such."""
    return r.round(2).replace([np.inf, -np.inf], "unbounded")


# ---------------------------------------------------------------- leak check

POOL_COLUMNS = ["pool_allocs", "pool_frees", "pool_in_use", "pool_carved", "pool_free_blocks",
                "pool_chunks"]


def cycle_table(df):
    """The leak check's table; the heap keeps no counters of its own, and its row says so
    instead of showing blanks."""
    shown = df[["allocator", "n", "batch", *POOL_COLUMNS, "rss_growth_kb",
                "every block back"]].astype(object)
    heap = df.allocator == "heap"
    for c in POOL_COLUMNS:
        shown[c] = [f"{int(v):,}" if not h else "-" for v, h in zip(df[c], heap)]
    shown.loc[heap, "every block back"] = "n/a: the heap keeps no pool counters"
    return shown


# ---------------------------------------------------------------- notes

def c001_2_note(alloc, r) -> str:
    """What C001.2's verdict row adds to its note: the lock-free pool, and the many-live
    pattern (heap over pool and over the lock-free pool), at the judged block size."""
    sel = alloc[(alloc.block == JUDGED_BLOCK) & (alloc.pattern == "one block")]
    atomic = sel[sel.allocator == "atomic"].ns_per_pair.median()
    at = r[r.block == JUDGED_BLOCK].set_index("pattern")
    return (f"; lock-free pool {atomic:.1f} ns (heap/atomic "
            f"{at.loc['one block', 'heap / atomic']:.1f}); many live blocks: heap/pool "
            f"{at.loc['many live', 'heap / pool']:.1f}, heap/atomic "
            f"{at.loc['many live', 'heap / atomic']:.1f}")


def c004_3_note(sizes) -> str:
    """C004.3's note: what the array adds when it is not alive across the suspension."""
    return (f"not alive across the suspension: same scope +{added(sizes, 'array_dead'):,} B, "
            f"closed block +{added(sizes, 'array_scoped'):,} B, in a called function "
            f"+{added(sizes, 'array_callee'):,} B (GCC places every local whose scope holds a "
            "suspension point, alive or not)")


def closing_note(sizes, alloc, al, r, cycles_df) -> str:
    """This run's numbers, written out: frame sizes, the allocation pairs against the
    article's figures, the leak check (markdown)."""
    b = by_build(sizes)
    o0, o2 = b["O0"], b["O2"]
    one = r[r.pattern == "one block"].set_index("block")
    many = r[r.pattern == "many live"].set_index("block")
    med = al.set_index(["allocator", "block", "pattern"])["median"]
    base, claimed, k = _baseline(alloc), claimed_ns(), JUDGED_BLOCK
    note = [
        f"**Frame sizes** ({sizes.compiler.iloc[0]}, bytes, -O0 / -O2): "
        + "; ".join(f"{v} {o0[v]:,} / {o2[v]:,}" for v in frames.VARIANTS)
        + (". The levels never differ" if (b.nunique(axis=1) == 1).all()
           else ". The levels differ (see the table)")
        + ("; an allocation was elided" if sizes.elided.any() else "; no allocation was elided")
        + f". A 64 KiB array adds {added(sizes, 'array_alive'):,} B alive across the "
          f"suspension, {added(sizes, 'array_dead'):,} B dead before it, "
          f"{added(sizes, 'array_scoped'):,} B in a closed block and "
          f"{added(sizes, 'array_callee'):,} B in a called function.",
        f"**Allocation, {k} B blocks, one block:** heap {med[('heap', k, 'one block')]:.1f} ns, "
        f"pool {med[('pool', k, 'one block')]:.2f} ns, "
        f"tlpool {med[('tlpool', k, 'one block')]:.2f} ns, "
        f"lock-free {med[('atomic', k, 'one block')]:.1f} ns per pair: heap/pool "
        f"{one.loc[k, 'heap / pool']:.1f}, heap/tlpool {one.loc[k, 'heap / tlpool']:.1f}, "
        f"heap/atomic {one.loc[k, 'heap / atomic']:.1f}. With many live blocks: heap "
        f"{med[('heap', k, 'many live')]:.1f} ns, pool {med[('pool', k, 'many live')]:.1f} ns "
        f"raw, beside {base[k]:.1f} ns for the loop without an allocator "
        f"(heap/pool {many.loc[k, 'heap / pool']:.1f}). At 192 B: heap/pool "
        f"{one.loc[192, 'heap / pool']:.1f} (one block), {many.loc[192, 'heap / pool']:.1f} "
        f"(many live). The claimed ~{claimed['heap']:g} ns heap is "
        f"{claimed['heap'] / med[('heap', k, 'one block')]:.0f}x this run's heap; the claimed "
        f"~{claimed['pool']:g} ns pool is {claimed['pool'] / med[('pool', k, 'one block')]:.0f}x "
        "this run's pool.",
        f"**Leak check:** after {int(cycles_df.n.max()):,} create/destroy cycles every pool had "
        f"every block back: {bool(cycles_df['every block back'].dropna().all())}; RSS grew by "
        f"at most {cycles_df.rss_growth_kb.max():,} kB.",
    ]
    return "\n\n".join(note)


# ---------------------------------------------------------------- the article's table

def article_table(alloc, judged) -> articles.ArticleTable:
    """The allocation rows of 001's table (heap and pool, 256-byte blocks, one block)
    from this run, beside the article's figures, with C001.2's verdict from `judged`.
    The table's io_uring and plain-coroutine rows are notebook 09's, shown there."""
    sel = alloc[(alloc.pattern == "one block") & (alloc.block == JUDGED_BLOCK)]
    heap = sel[sel.allocator == "heap"].ns_per_pair.to_numpy()
    pool = sel[sel.allocator == "pool"].ns_per_pair.to_numpy()
    claimed = claimed_ns()
    r = verdicts.ratio_with_spread(heap, pool)
    cell = article_part.verdict_cell(judged, ["C001.2"])
    t = articles.ArticleTable("t08", S001, "Allocation: the heap against a pool", NOTEBOOK,
                              reference="as claimed", ylabel="the ratio of each row")
    t.frame = pd.DataFrame([
        ["frame allocation, heap", f"~{claimed['heap']:g} ns",
         article_part.span(*stats.quartiles(heap), unit=" ns"),
         f"heap/pool {claimed['heap'] / claimed['pool']:g}", article_part.span(*r), cell],
        ["frame allocation, pool", f"~{claimed['pool']:g} ns",
         article_part.span(*stats.quartiles(pool), unit=" ns"), "", "", cell],
    ], columns=["row", "article", f"here ({articles.SWEEP})", "ratio, article",
                f"ratio, here ({articles.SWEEP})", articles.VERDICT_COLUMN])
    t.points = [("heap/pool", claimed["heap"] / claimed["pool"], *r)]
    t.note = (f"Allocate+free pairs of a {JUDGED_BLOCK}-byte block, one block at a time, net "
              "of the loop. The table's io_uring and plain-coroutine rows are notebook 09's "
              "echo servers, which run after this notebook: they are shown there, with the "
              "whole table.")
    return t
