"""Notebook 07b's analysis: a million suspended coroutines and stackful contexts, their
sweeps, the per-object tables, the figures, the closing note, and the memory columns of
004's table from this notebook's own runs (the article's figures from
labkit.lab.report.articles.STRATEGIES).

    from labkit.lab.analysis import coroutine_memory as cm
    coros = frames.coroutine_runs(cm.sweep, n=100_000, repeats=1, build="O2",
                                  memory_budget=2 << 30)
    cm.per_coroutine(coros)
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from labkit.core import plots, procfs, stats
from labkit.core.systems import colours
from labkit.core.units import MiB
from labkit.experiments import frames
from labkit.lab.analysis import article_part, findings
from labkit.lab.experiment import COROUTINE_MEMORY
from labkit.lab.judging import verdicts
from labkit.lab.report import articles
from labkit.lab.report.articles.measured import S004
from labkit.lab.running.sweep import for_notebook

NOTEBOOK = COROUTINE_MEMORY.name
# The lab's sweep for the experiments' sweeps (labkit.experiments.frames), checkpointed
# under this notebook's name.
sweep = for_notebook(NOTEBOOK)
# The article's memory for a million coroutines, MB, by strategy (004's table).
CLAIMED_MB = {s[0]: s[4] for s in articles.STRATEGIES}
DEFAULT, REUSE = articles.STRATEGIES[0][0], "coroutine-pool reuse"


def environment(info) -> str:
    """Page size, transparent huge pages, vm.max_map_count, overcommit and memory."""
    return (f"page size {info['page_size']} B; transparent huge pages: "
            f"{procfs.transparent_hugepages()}; vm.max_map_count {procfs.max_map_count()}; "
            f"vm.overcommit_memory {procfs.sysctl('vm.overcommit_memory', 'unknown')}; "
            f"memory {info['memory_bytes'] / 2**30:.1f} GiB")


def kernel_rss_mib() -> float:
    """This process's VmRSS, MiB: in a notebook, the Jupyter kernel's, not the worker's."""
    return procfs.status_kb("VmRSS") / 1024


# ---------------------------------------------------------------- stackless

def per_coroutine(coros):
    """Per kind: frame bytes, resident bytes and page tables per coroutine, the total,
    create and destroy times, what stays after destroying, and per million (medians)."""
    cs = (coros.groupby(["variant", "allocator"], sort=False)
          .agg(n=("n", "first"), frame_bytes=("frame_bytes", "first"),
               bytes_per_coroutine=("bytes_per_object", "median"),
               page_tables_per_coroutine=("pte_bytes_per_object", "median"),
               total_mib=("rss_total_mib", "median"),
               create_ns=("ns_create_per_object", "median"),
               destroy_ns=("ns_destroy_per_object", "median"),
               left_after_destroy_mib=("rss_left_after_free_kb", lambda v: v.median() / 1024))
          .reset_index())
    cs["per_million_mib"] = cs.bytes_per_coroutine * 1e6 / MiB
    cs["resident / frame"] = cs.bytes_per_coroutine / cs.frame_bytes
    return cs


def pool_check(coros) -> str:
    """The pools once all their coroutines are destroyed: blocks in use, and whether
    every block carved is back on a free list."""
    p = coros[coros.allocator != "heap"]
    return (f"pools after destroying all their coroutines: in use "
            f"{sorted(set(p.pool_in_use.astype(int)))} | free blocks == carved: "
            f"{bool((p.pool_free_blocks == p.pool_carved).all())}")


def per_pool(reuse, coros):
    """Per pool size: frames allocated, connections served, resident MiB against what
    n records and P frames should take, per million, and the ratio to default new."""
    ratios = pd.DataFrame([frames.pool_reuse_ratio(reuse, coros, pool_size=p)
                           for p in sorted(set(reuse.pool_size))])
    rs = (reuse.groupby("pool_size")
          .agg(n=("n", "first"), frame_bytes=("frame_bytes", "first"),
               connection_bytes=("connection_bytes", "first"),
               frames_allocated=("pool_allocs", "first"), served=("served", "first"),
               mib_total=("bytes_total", lambda v: v.median() / MiB),
               bytes_per_connection=("bytes_per_connection", "median"),
               expected_mib=("records_bytes", lambda v: v.iloc[0] / MiB))
          .reset_index())
    rs["expected_mib"] += rs.pool_size * rs.frame_bytes / MiB
    rs["per_million_mib"] = rs.bytes_per_connection * 1e6 / MiB
    rs = rs.merge(ratios[["pool_size", "ratio", "low", "high"]], on="pool_size")
    return rs.rename(columns={"ratio": "reuse / default", "low": "ratio low",
                              "high": "ratio high"})


def _default_mib(cs) -> float:
    return float(cs.set_index(["variant", "allocator"]).per_million_mib[("conn256", "heap")])


def reuse_finding(rs, cs) -> str:
    """What the reuse figure shows, one sentence from this run: resident memory per
    million connections at the smallest and largest pool against default new, the
    smallest's ratio with its interval, beside the article's pooled reuse (C004.1d)."""
    if rs.empty:
        return "This run served no connection from a pool."
    rs = rs.sort_values("pool_size")
    lo, hi = rs.iloc[0], rs.iloc[-1]
    default = _default_mib(cs)
    art = CLAIMED_MB[REUSE] / CLAIMED_MB[DEFAULT]
    return (f"A million connections served by a pool of {int(lo.pool_size):,} coroutines hold "
            f"{lo.per_million_mib:.3g} MiB, "
            f"{findings.times(lo['reuse / default'], lo['ratio low'], lo['ratio high'])} default "
            f"new's {default:.3g} MiB; with {int(hi.pool_size):,} they hold "
            f"{hi.per_million_mib:.3g} MiB. The article's pooled reuse held "
            f"{findings.times(art)} default new's.")


def reuse_figure(rs, cs):
    """Resident MiB per million connections against P, beside default new and the
    article's pooled-reuse memory, reuse_finding as the title
    (figures/07b_coroutine_memory-reuse)."""
    fig, ax = plt.subplots(figsize=(7, 4.8))
    findings.title(fig, reuse_finding(rs, cs), 75)
    palette = colours(["measured", "default new"])
    ax.plot(rs.pool_size, rs.per_million_mib, marker="o", color=palette["measured"],
            label="measured (per million connections)")
    ax.plot(rs.pool_size, rs.expected_mib * 1e6 / rs.n, ls="--", color="grey",
            label="records + P frames (expected)")
    default = _default_mib(cs)
    ax.axhline(default, color=palette["default new"], ls=":",
               label=f"default new, one 256-B frame per "
               f"connection ({default:.0f} MiB)")
    ax.axhline(CLAIMED_MB[REUSE] * 1e6 / MiB, color="k", ls="-.", lw=1,
               label=f"claimed ~{CLAIMED_MB[REUSE]:g} MB (pooled reuse)")
    plots.log_axis(ax, "x")
    ax.set_yscale("log")
    ax.set_xlabel("P: reused coroutines in the pool")
    ax.set_ylabel("resident MiB per million connections")
    ax.set_title(f"{int(rs.n.iloc[0]):,} connections served by a pool of P coroutines")
    ax.legend(fontsize="small")
    return plots.finish(fig, f"{NOTEBOOK}-reuse")


# ---------------------------------------------------------------- stackful

def per_context(stacks):
    """The stackful runs' table, and the plan's notes (a scaled-down n says why)."""
    notes = "\n".join(f"note: {n}" for n in sorted(set(stacks.plan_note) - {""}))
    return notes, stacks[["stack", "touched", "n_requested", "n", "scaled", "bytes_per_object",
                          "pte_bytes_per_object", "used_bytes", "rss_total_mib",
                          "pte_total_mib", "per_million_gib", "ns_create_per_object"]].round(1)


def _by_touch(stacks):
    return (stacks[~stacks.touched].set_index("stack_size"),
            stacks[stacks.touched].set_index("stack_size"))


def stacks_text(stacks, guard) -> str:
    """Per stack size, untouched and touched: resident bytes, page tables and a million's
    worth; then what guard pages cost (markdown)."""
    untouched, touched = _by_touch(stacks)
    lines = []
    for s in sorted(untouched.index):
        u, t = untouched.loc[s], touched.loc[s]
        lines.append(
            f"- **{plots.bytes_label(s)}** stacks: untouched {u.bytes_per_object:,.0f} B "
            f"resident + {u.pte_bytes_per_object:,.0f} B of page tables per context "
            f"(the suspended context uses {u.used_bytes:.0f} B of its stack); touched "
            f"{t.bytes_per_object:,.0f} B + {t.pte_bytes_per_object:,.0f} B. For a million: "
            f"{(u.bytes_per_object + u.pte_bytes_per_object) * 1e6 / 2**30:.2f} GiB untouched, "
            f"{(t.bytes_per_object + t.pte_bytes_per_object) * 1e6 / 2**30:.2f} GiB touched"
            + (f" (measured on {int(t.n):,}, scaled to fit the budget)" if t.scaled else "")
            + ".")
    g = guard.set_index("guard")
    lines.append(
        f"- Guard pages are `PROT_NONE` and never written: {int(g.n.iloc[0]):,} 64 KiB stacks "
        f"cost {g.bytes_per_object[False]:,.0f} B each without a guard and "
        f"{g.bytes_per_object[True]:,.0f} B with one. They cost VMAs instead (two per "
        f"stack): a million of them would need vm.max_map_count above 2,000,000; it is "
        f"{procfs.max_map_count():,} here.")
    return "\n".join(lines)


def _conn256_heap(cs) -> float:
    return float(cs.set_index(["variant", "allocator"]).bytes_per_coroutine[("conn256", "heap")])


def memory_finding(cs, stacks) -> str:
    """What the memory figure shows, one sentence from this run: a suspended coroutine's
    resident bytes with default new beside the article's frame, and a stackful context's
    at the smallest and largest stack, untouched."""
    said = (f"A suspended C++20 coroutine with default new holds "
            f"{plots.bytes_label(_conn256_heap(cs))} resident (the article: "
            f"{plots.bytes_label(CLAIMED_MB[DEFAULT])})")
    untouched, touched = _by_touch(stacks)
    if not untouched.empty:
        small, big = untouched.index.min(), untouched.index.max()
        said += (f"; a stackful context holds "
                 f"{plots.bytes_label(untouched.loc[small, 'bytes_per_object'])} with a "
                 f"{plots.bytes_label(small)} stack and "
                 f"{plots.bytes_label(untouched.loc[big, 'bytes_per_object'])} with a "
                 f"{plots.bytes_label(big)} one, untouched")
        if big in touched.index:
            said += (f", {plots.bytes_label(touched.loc[big, 'bytes_per_object'])} with the "
                     f"{plots.bytes_label(big)} one touched")
    return said + "."


def memory_figure(cs, stacks):
    """Resident bytes per suspended C++20 coroutine by kind, with the article's figures;
    and per stackful context against its stack size, VmRSS and page tables
    (figures/07b_coroutine_memory-memory)."""
    cxx = cs.assign(label=cs.variant + " / " + cs.allocator)
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [1.1, 1]})
    findings.title(fig, memory_finding(cs, stacks))
    ax = axes[0]
    palette = colours(["measured", "untouched", "touched", "C++20 conn256 / heap"])
    plots.dots(ax, range(len(cxx)), cxx.bytes_per_coroutine, color=palette["measured"],
               label="measured")
    ax.scatter(range(len(cxx)), cxx.frame_bytes, marker="_", s=400, color="k", zorder=3,
               label="frame bytes (operator new)")
    for i, v in enumerate(cxx.bytes_per_coroutine):
        ax.text(i, v * 1.05, f"{v:.0f}", ha="center", fontsize=7)
    # One line per claimed memory figure: MB for a million is bytes per coroutine.
    claimed = {}
    for name, mb in CLAIMED_MB.items():
        claimed.setdefault(mb, []).append(name)
    for (mb, names), style in zip(sorted(claimed.items(), reverse=True), (":", "--", "-.")):
        ax.axhline(mb, color="grey", ls=style, lw=1,
                   label=f"claimed {mb:g} B ({', '.join(names)}, {mb:g} MB / 1M)")
    ax.set_xticks(range(len(cxx)), cxx.label, rotation=30, ha="right")
    plots.log_axis(ax, "y")
    ax.set_ylim(20, 600)
    ax.set_ylabel("resident bytes per suspended coroutine")
    ax.set_title(f"C++20 coroutines (n = {int(cxx.n.iloc[0]):,})")
    ax.legend(fontsize=7, loc="lower left")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax = axes[1]
    for is_touched, d in zip((False, True), _by_touch(stacks)):
        d = d.sort_index()
        name = "touched" if is_touched else "untouched"
        ax.plot(d.index, d.bytes_per_object, marker="o", color=palette[name],
                label=f"{name}: VmRSS")
        ax.plot(d.index, d.pte_bytes_per_object, color=palette[name],
                marker="x" if is_touched else "+",
                ms=9 if is_touched else 13, ls="--" if is_touched else ":",
                label=f"{name}: page tables (VmPTE)")
    heap = _conn256_heap(cs)
    ax.axhline(heap, color=palette["C++20 conn256 / heap"], ls=":", lw=1,
               label=f"C++20 conn256 / heap ({heap:.0f} B)")
    sizes = sorted(set(stacks.stack_size))
    plots.log_axis(ax, "x", base=2)
    ax.set_yscale("log", base=2)
    ticks = [2 ** k for k in range(3, 24, 3)]
    ax.set_yticks(ticks, [plots.bytes_label(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xticks(sizes, [plots.bytes_label(s) for s in sizes])
    ax.set_xlabel("stack size per context")
    ax.set_ylabel("bytes per suspended context")
    ax.set_title("stackful contexts (Boost.Context fcontext, mmaped stacks)")
    ax.legend(fontsize="small")
    return plots.finish(fig, f"{NOTEBOOK}-memory")


# ---------------------------------------------------------------- copy stacks

def copy_table(copies):
    """The copy-stack runs as the notebook shows them."""
    return copies[["stack_in_use", "n_requested", "n", "saved_bytes_per_object",
                   "bytes_per_object", "bookkeeping_bytes", "per_million_mib",
                   "rss_total_mib"]].round(1)


def copy_text(copies, stacks, cs) -> str:
    """The smallest copy-stack coroutine beside the smallest untouched stack and a
    256-byte C++20 frame (markdown)."""
    c0 = copies.set_index("stack_in_use").iloc[0]
    untouched, _ = _by_touch(stacks)
    return (f"A suspended copy-stack coroutine with {int(c0.name)} B in use keeps "
            f"{c0.saved_bytes_per_object:.0f} B of stack and {c0.bytes_per_object:.0f} B "
            f"resident ({c0.per_million_mib:.0f} MiB per million), against "
            f"{untouched.sort_index().bytes_per_object.iloc[0]:,.0f} B for the smallest "
            f"untouched stack above and {_conn256_heap(cs):.0f} B for a 256-byte C++20 frame: "
            "its memory is its used stack, not a reserved one.")


def kernel_text(rss, coros, stacks) -> str:
    """This kernel's VmRSS at the start, before and after the million runs (rss: those
    three, MiB), beside what the worker held."""
    start, before, after = rss
    return (f"this kernel: VmRSS {start:.0f} MiB at the start, {before:.0f} MiB before the "
            f"million runs, {after:.0f} MiB after them (the worker held up to "
            f"{coros.rss_total_mib.max():.0f} MiB of coroutines and "
            f"{(stacks.rss_total_mib + stacks.pte_total_mib).max():.0f} MiB of stacks and "
            "their page tables)")


# ---------------------------------------------------------------- closing

def closing_note(cs, rs, stacks, page: int) -> str:
    """This run's numbers, written out: bytes per suspended coroutine against the
    article's rows, the pooled-reuse design, bytes per stackful context (markdown)."""
    bpc = cs.set_index(["variant", "allocator"])
    mib = bpc.per_million_mib
    untouched, touched = _by_touch(stacks)
    sizes = sorted(untouched.index)
    smallest = untouched.loc[sizes[0], "bytes_per_object"]
    judged = frames.judged_pool_size(int(rs.n.iloc[0]))
    reuse_mb = CLAIMED_MB[REUSE]
    records = rs.connection_bytes.iloc[0] * 1e6   # a million connections' records, bytes
    most_p = max(0, (reuse_mb * 1e6 - records) / rs.frame_bytes.iloc[0])
    note = [
        f"**Bytes per suspended coroutine** (n = {int(cs.n.iloc[0]):,}): "
        + "; ".join(f"{v}/{a} {bpc.loc[(v, a), 'bytes_per_coroutine']:.0f} B "
                    f"({mib[(v, a)]:.0f} MiB per million)"
                    for v, a in zip(cs.variant, cs.allocator))
        + ". The article's rows: "
        + "; ".join(f"{name} -> {mib[kind]:.0f} MiB per million (claimed ~{CLAIMED_MB[name]:g} MB)"
                    for name, kind, *_ in articles.STRATEGIES if name != REUSE)
        + f"; pooled reuse, claimed ~{reuse_mb:g} MB, is {reuse_mb:g} B per coroutine: the size "
          f"of an empty frame here. Pooled 192-byte frames can only take {reuse_mb:g} MB if "
          f"about {reuse_mb * 1e6 / 192:,.0f} of them are alive, not a million.",
        f"**Pooled reuse** ({int(rs.n.iloc[0]):,} connections, records of "
        f"{int(rs.connection_bytes.iloc[0])} B, frames of {int(rs.frame_bytes.iloc[0])} B): "
        + "; ".join(f"P = {int(r.pool_size):,}: {r.per_million_mib:.1f} MiB per million "
                    f"({r['reuse / default']:.3f} of default new, spread "
                    f"{r['ratio low']:.3f} .. {r['ratio high']:.3f})" for _, r in rs.iterrows())
        + f". At the P judged for the article's row (n / {round(1 / frames.REUSE_POOL_SHARE)} "
          f"= {judged:,}): {rs.set_index('pool_size').loc[judged, 'reuse / default']:.3f} of "
          f"default new. Memory follows the pool: the claimed ~{reuse_mb:g} MB holds while P "
          f"frames and the records fit in it, that is for P up to about "
          f"{most_p:,.0f} per million connections.",
        "**Bytes per stackful context** (VmRSS + page tables): "
        + "; ".join(f"{plots.bytes_label(s)} untouched {untouched.loc[s, 'bytes_per_object']:,.0f}"
                    f" + {untouched.loc[s, 'pte_bytes_per_object']:,.0f} B, touched "
                    f"{touched.loc[s, 'bytes_per_object']:,.0f} + "
                    f"{touched.loc[s, 'pte_bytes_per_object']:,.0f} B" for s in sizes)
        + f". Untouched stacks commit one {page} B page each, whatever their size; a stackless "
          f"frame of {_conn256_heap(cs):.0f} B is {smallest / _conn256_heap(cs):.0f}x smaller "
          "than the smallest stackful context.",
    ]
    return "\n\n".join(note)


# ---------------------------------------------------------------- the article's table

def _mem(coros, kind):
    sel = coros[(coros.variant == kind[0]) & (coros.allocator == kind[1])]
    return (sel.bytes_per_object * 1e6 / MiB).to_numpy(), sel.frame_bytes


def article_table(coros, reuse, judged) -> articles.ArticleTable:
    """The frame and memory columns of 004's table (articles.STRATEGIES) from this run:
    the article's figure beside the median measured here and its spread, memory over
    default new, and each row's claim with its verdict in `judged`. Its TPS column is
    measured by notebook 09, which shows the whole table."""
    t = articles.ArticleTable("t11", S004,
                              "Five coroutine-frame strategies: frame and memory for 1M",
                              NOTEBOOK, reference=DEFAULT)
    at = reuse[reuse.pool_size == frames.judged_pool_size(int(reuse.n.iloc[0]))]
    base, _ = _mem(coros, articles.STRATEGIES[0][1])
    rows = []
    for name, kind, _, art_frame, art_mb, _, claim, _ in articles.STRATEGIES:
        mem, frame = _mem(coros, kind)
        if name == REUSE and len(at):
            mem, frame = (at.bytes_per_connection * 1e6 / MiB).to_numpy(), at.frame_bytes
        q = stats.quartiles(mem) if len(mem) else (float("nan"),) * 3
        r = (verdicts.ratio_with_spread(mem, base) if len(mem) and len(base)
             else (float("nan"),) * 3)
        rows.append([name, art_frame, f"{frame.median():g}" if len(frame) else "-", art_mb,
                     article_part.span(*q), f"{art_mb / CLAIMED_MB[DEFAULT]:.3g}",
                     article_part.span(*r), article_part.verdict_cell(judged, [claim])])
        t.points.append((f"{name} memory", art_mb / CLAIMED_MB[DEFAULT], *r))
    t.frame = pd.DataFrame(rows, columns=[
        "strategy", "frame B, article", "frame B, here", "MB for 1M, article",
        "MiB for 1M, here", "memory / default, article", "memory / default, here",
        articles.VERDICT_COLUMN])
    t.note = ("Memory: resident bytes per suspended coroutine x 1,000,000, in MiB, with all "
              "of a run's coroutines suspended at once; the reuse row is the reuse design "
              "(section 1b) at P = n / 100. The TPS column of the article's table is "
              "measured by notebook 09's echo servers and shown there, with the whole table.")
    return t

