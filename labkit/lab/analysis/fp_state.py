"""Notebook 06's analysis: the ladder of what a switch saves, its instruction counts and
figure, the effects as ratios, and the FP/vector state sweep by component."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

import labkit
from labkit.core import plots
from labkit.core.systems import colour, colours
from labkit.experiments import callgrind, xstate
from labkit.lab.analysis import findings
from labkit.lab.judging import verdicts
from labkit.lab.judging.claims import claim

# What a switch saves, least first, and Boost's jump_fcontext beside them.
LADDER = ["asm", "asm_ret", "asm_fpu", "asm_fxsave", "asm_xsave", "boost_fcontext"]
# The kernels that load the FP control words: where "same" and "differ" can part.
FPU_LIKE = ["asm", "asm_fpu", "boost_fcontext", "asm_fxsave", "asm_xsave"]


def ladder_here():
    """(the LADDER kernels that run here, the catalogue indexed by kernel)."""
    catalogue = labkit.catalogue().set_index("entry")
    return [k for k in LADDER if catalogue.loc[k, "available"]], catalogue


def label_fp_control(runs):
    """The runs with a missing fp_control (a kernel that keeps the words as they are,
    whatever was asked) read "as-is"."""
    return runs.assign(fp_control=runs.fp_control.fillna("as-is"))


def summary(runs):
    """Median and quartiles per kernel and fp_control (noise warnings printed)."""
    s = labkit.summarize(runs, by=["entry", "fp_control"])
    plots.fold(labkit.noise_warnings(s), plots.NOISY)
    return s


def same_words(summary):
    """The same-control-words rows by kernel, with the ratio to asm_fpu."""
    same = summary[summary.fp_control.isin(["same", "as-is"])].set_index("entry")
    return same.assign(ratio_to_asm_fpu=same["median"] / same.loc["asm_fpu", "median"])[
        ["median", "q1", "q3", "median_ticks", "ratio_to_asm_fpu", "noisy"]]


def instruction_counts(ladder):
    """(callgrind's counts at -O2, one row per kernel, why they are missing or "")."""
    ok, why = callgrind.available()
    if ok:
        return callgrind.instructions_table(ladder, ["O2"]), why
    print("instruction counts skipped:", why)
    return pd.DataFrame(columns=["entry", "build", "loop", "base", "net", "why"]), why


def _samples(runs, a_kernel, a_mode, b_kernel, b_mode):
    return (runs[(runs.entry == a_kernel) & (runs.fp_control == a_mode)].ns_per_switch,
            runs[(runs.entry == b_kernel) & (runs.fp_control == b_mode)].ns_per_switch)


def _ratio(runs, *sides):
    """The ratio of medians with its interval, or None when a side has no rows."""
    a, b = _samples(runs, *sides)
    return verdicts.ratio_with_spread(a, b) if len(a) and len(b) else None


def ladder_finding(runs) -> str:
    """What the ladder shows, one sentence from this run: saving the x87/SSE registers
    (asm_fxsave over asm_fpu) beside the article's ratio (C002.3), and what differing
    control words cost asm_fpu."""
    said = []
    fx = _ratio(runs, "asm_fxsave", "same", "asm_fpu", "same")
    if fx:
        said.append(f"On this machine saving the x87/SSE registers makes a switch "
                    f"{findings.times(*fx)} one that saves only the control words "
                    f"(asm_fxsave over asm_fpu); the article saw "
                    f"{float(claim('C002.3')['claimed_value']):g}x")
    mx = _ratio(runs, "asm_fpu", "differ", "asm_fpu", "same")
    if mx:
        said.append(f"different MXCSR values in the two contexts make asm_fpu's switch "
                    f"{findings.times(*mx)} its time with the same")
    return ("; ".join(said) + ".") if said else "This run did not time asm_fpu beside asm_fxsave."


def ladder_figure(same, summary, ladder, finding: str | None = None):
    """What saving more costs (left) and same against different MXCSR (right); `finding`
    (ladder_finding) as its title."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    findings.title(fig, finding)
    order = same.loc[ladder].sort_values("median")
    for i, (entry, r) in enumerate(order.iterrows()):
        plots.dots(axes[0], [i], [r["median"]], [r["q1"]], [r["q3"]], horizontal=True,
                   color=colour(entry))
    axes[0].set_yticks(range(len(order)), order.index)
    plots.log_axis(axes[0], "x")
    axes[0].set_xlabel("ns per switch (median, IQR bars)")
    axes[0].set_title("what saving more costs (same control words)")
    fpu_like = [k for k in FPU_LIKE if k in ladder]
    width = 0.4
    for i, (mode, marker) in enumerate([("same", "o"), ("differ", "s")]):
        g = summary[summary.fp_control == mode].set_index("entry").loc[fpu_like]
        plots.dots(axes[1], [j + i * width for j in range(len(fpu_like))], g["median"],
                   g["q1"], g["q3"], color="k", marker=marker, label=f"control words {mode}")
    axes[1].set_xticks([j + width / 2 for j in range(len(fpu_like))], fpu_like)
    plots.log_axis(axes[1], "y")
    axes[1].set_ylabel("ns per switch (median, IQR bars)")
    axes[1].set_title("same vs different MXCSR in the two contexts")
    axes[1].legend(fontsize="small")
    return fig


def effects(runs, ladder):
    """Each effect as a ratio of medians measured in this run, with its spread."""
    def ratio(*sides):
        return verdicts.ratio_with_spread(*_samples(runs, *sides))

    boost = "boost_fcontext" in ladder
    found = [
        ("saving the x87/SSE state: asm_fxsave / asm_fpu",
         ratio("asm_fxsave", "same", "asm_fpu", "same")),
        ("saving every XCR0 component: asm_xsave / asm_fpu",
         ratio("asm_xsave", "same", "asm_fpu", "same")),
        ("MXCSR values differ / same, asm_fpu", ratio("asm_fpu", "differ", "asm_fpu", "same")),
        ("MXCSR values differ / same, asm_xsave",
         ratio("asm_xsave", "differ", "asm_xsave", "same")),
        *([("MXCSR values differ / same, Boost jump_fcontext",
            ratio("boost_fcontext", "differ", "boost_fcontext", "same"))] if boost else []),
        ("ret / pop+jmp: asm_ret / asm", ratio("asm_ret", "same", "asm", "same")),
        *([("Boost jump_fcontext / labkit asm_fpu",
            ratio("boost_fcontext", "same", "asm_fpu", "same"))] if boost else []),
    ]
    return pd.DataFrame([{"effect": e, "ratio": r, "low": lo, "high": hi}
                         for e, (r, lo, hi) in found])


def xstate_text(cpu_state) -> str:
    """XCR0, the bytes its area needs and the save instructions there, in one line."""
    return (f"XCR0 0x{cpu_state['xcr0']:x} ({xstate.names(cpu_state['xcr0'])}), "
            f"{cpu_state['enabled_bytes']} bytes for all of it (CPUID 0xD.0 EBX); "
            f"instructions: {', '.join(cpu_state['instructions'])}")


def xstate_finding(xs_summary) -> str:
    """What the component sweep shows, one sentence from its medians: a dirty xsave +
    xrstor from the narrowest component set to the widest, and the cheapest instruction on
    the widest set with clean registers."""
    steps = list(dict.fromkeys(xs_summary.step))
    ns = xs_summary.set_index(["instruction", "step", "state"])
    if ("xsave", steps[0], "dirty") not in ns.index or ("xsave", steps[-1], "dirty") not in ns.index:
        return "This run did not time a dirty xsave at both ends of the component sets."

    def at(insn, step, state):
        r = ns.loc[(insn, step, state)]
        return (f"{plots.ns_label(r.median_ns)} "
                f"{findings.quartiles(plots.ns_label(r.q1_ns), plots.ns_label(r.q3_ns))}")

    said = (f"A dirty xsave + xrstor costs {at('xsave', steps[0], 'dirty')} on {steps[0]} "
            f"({plots.bytes_label(ns.loc[('xsave', steps[0], 'dirty')].area_bytes)}) and "
            f"{at('xsave', steps[-1], 'dirty')} on {steps[-1]} "
            f"({plots.bytes_label(ns.loc[('xsave', steps[-1], 'dirty')].area_bytes)})")
    clean = xs_summary[(xs_summary.step == steps[-1]) & (xs_summary.state == "clean")]
    if not clean.empty:
        best = clean.loc[clean.median_ns.idxmin()]
        said += (f"; with clean registers, {best.instruction} is cheapest there, "
                 f"{at(best.instruction, steps[-1], 'clean')}")
    return said + " (medians)."


def xstate_figure(xs_summary, finding: str | None = None):
    """ns per save + xrstor against the component set, per instruction, dirty and clean;
    `finding` (xstate_finding) as its title."""
    steps = list(dict.fromkeys(xs_summary.step))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True)
    findings.title(fig, finding)
    # The instructions are not entries: the default colour cycle would draw them in entries'
    palette = colours(dict.fromkeys(xs_summary.instruction))
    for ax, state in zip(axes, ["dirty", "clean"]):
        for insn in palette:
            g = xs_summary[(xs_summary.instruction == insn) & (xs_summary.state == state)]
            ax.errorbar([steps.index(s) for s in g.step], g.median_ns,
                        yerr=[g.median_ns - g.q1_ns, g.q3_ns - g.median_ns],
                        marker="o", capsize=3, label=insn, color=palette[insn])
        ax.set_xticks(range(len(steps)), [f"{s}\n{b} B" for s, b in zip(
            steps, xs_summary.drop_duplicates("step").area_bytes)], fontsize="small")
        ax.set_title(f"registers {state}")
        ax.set_xlabel("component set (standard-form area bytes)")
        ax.legend(fontsize="small")
    axes[0].set_ylabel("ns per save + xrstor (net, median, IQR bars)")
    return fig


def xstate_reading(xs_summary, cpu_state) -> str:
    """Each instruction's cost per component (dirty), and what the init optimisation saves
    on all of XCR0 (clean against dirty), one line each."""
    lines = [f"{insn}, dirty: {xstate.cost_text(xstate.component_costs(xs_summary, insn))}"
             for insn in dict.fromkeys(xs_summary.instruction)]
    ns = xs_summary.set_index(["instruction", "mask", "state"]).median_ns
    full = f"0x{cpu_state['xcr0']:x}"
    lines += [f"{insn} on all of XCR0: clean {ns[insn, full, 'clean']:.1f} ns against "
              f"dirty {ns[insn, full, 'dirty']:.1f} ns, xsave dirty "
              f"{ns['xsave', full, 'dirty']:.1f} ns"
              for insn in ("xsaveopt", "xsavec") if insn in cpu_state["instructions"]]
    return "\n".join(lines)


def saved(runs, counts):
    """The rows the notebook saves: every timed run with its kernel's counts beside it."""
    return runs.merge(counts, on="entry", how="left", suffixes=("", "_cg"))
