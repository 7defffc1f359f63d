# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: labkit (Python 3)
#     language: python
#     name: labkit
# ---

# %% [markdown]
# # 08 · How often can a coroutine switch before switching eats the CPU?
#
# **Claim tested** (its id from `data/claims.csv`, the article in `docs/sources.md`):
# **C000.7** (`000_dc0f0e0d023658f3.txt`, the author's case study):
# in a pool of coroutines doing compute tasks with 1 MB stacks, each coroutine yielded
# after about 100 CPU cycles of work, and `jump_fcontext` took about 15% of the CPU time
# (by `perf`). With 64 KB stacks, batches of 32 tasks per yield and per-coroutine local
# queues, it fell under 3% and throughput rose by 40%.
#
# The experiment: a scheduler resumes N = 64 coroutines in turn with labkit's
# `asm_fpu` kernel (what `jump_fcontext` saves). Each resumption runs one task, or a batch
# of 32, then yields back. A task is W ticks of a calibrated busy loop, for W from 0 to
# 100,000. The same tasks are also run with no switching at all, interleaved with each
# timed run (work-only, switching, switching, work-only, half the tasks each: the
# work-only baseline), so that for every run
#
# - **share of time switching** = (total time - work-only time) / total time, and
# - **throughput** = tasks / total time.
#
# W counts cycle-counter (TSC) ticks. On this VM the TSC runs at a fixed rate (printed
# below), not at the core clock, so "100 cycles" here means 100 TSC ticks, close to but
# not exactly 100 core cycles.
#
# The verdict rule for C000.7 was written in `data/claims.csv` before measuring.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("08_switch_frequency"). By hand, set one in the call:
# resolve(..., quick=quick, repeats=11).
from labkit.lab.running import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(cpu, coroutines, rounds, repeats, loop_seconds, work_cycles, judge_work) = params.resolve(
    "08_switch_frequency", quick=quick).values()

# %%
import labkit
from labkit.core import results
from labkit.experiments import frequency
from labkit.lab.analysis import findings, switch_frequency as sf
from labkit.lab.experiment import SWITCH_FREQUENCY as exp
from labkit.lab.judging import designs
from labkit.lab.report import articles
findings.placeholder(exp.name)

info = labkit.machine_info()
print(sf.setting(info))

# %% [markdown]
# ## The sweep
#
# Every point runs the same number of tasks for its W in all four set-ups (about
# `loop_seconds` of work, and at least one batch of 32 for every coroutine, so that every
# stack is in play). The loops are kept short because this machine is shared: a loop
# the OS preempts gains milliseconds, and the shorter the loop, the fewer runs that
# happens to (`preemptions` counts the runs it happened to; they are kept, as every
# repeat is). The busy loop is calibrated in the worker before each point; the
# tasks form one dependency chain (each starts from the value the previous one left),
# so a task takes its W ticks whether it runs alone or in a batch. The counters of every
# run are checked: the switches the loop made, the switches both sides counted, and the
# tasks the coroutines ran must all agree, or the run raises `SwitchCountError`.
#
# The sweep runs `rounds` times over, one whole pass after the other, so that every
# point is measured at several moments and the set-ups compared by the verdict see the
# same mixture of whatever else the machine was doing (`rotation` says which pass a
# row comes from). The spread of each point pools all its runs.

# %%
tasks = sf.tasks(work_cycles, seconds=loop_seconds, coroutines=coroutines, tsc_ghz=info["tsc_ghz"])
runs = frequency.sweep_runs(sf.sweep, work_cycles, rounds=rounds, tasks=tasks, coroutines=coroutines,
                            repeats=repeats, cpu=cpu)
# The same set-ups at W = 0 and at the claim's W with independent work, which fills the
# core's issue width: beside it a switch has no idle slot to hide in (see the W = 100
# section). Kept apart from `runs`, which the figures and the verdict read.
indep = frequency.sweep_runs(sf.sweep, sorted({0, judge_work}), rounds=rounds, tasks=tasks,
                             coroutines=coroutines, repeats=repeats, cpu=cpu, work="independent")
share, speed, warnings = sf.summaries(runs)
print("\n".join([sf.load_text("after"), *warnings]))
sf.share_table(share)

# %% [markdown]
# The table above is the median share of time switching, in percent. Below: what one
# task costs with no switching (the calibration check: it should sit at W plus a few
# ticks for the call), and how many switches each task pays for: two per resumption,
# so 2 with one task per switch and 2/32 with batches of 32. These are counts. Then the
# runs the OS preempted, and the page faults inside the timed loops (the warm-up takes
# the stacks' first touches).

# %%
checks = sf.checks(runs)
checks.pivot(index="work_cycles", columns="setup",
             values=["work_ticks_per_task", "switches_per_task"]).round(3)

# %%
checks.pivot(index="work_cycles", columns="setup", values=["preempted_runs", "page_faults"])

# %%
sf.share_figure(share, judge_work=judge_work, coroutines=coroutines,
               independent=sf.share_of(indep));

# %% [markdown]
# How to read it. The stack size should not matter here: a switch touches only the top
# of a stack (the saved registers and the coroutine's own frame), and with stacks of
# 64 KiB and 1 MiB alike every top sits at the start of a page, so the two sizes put
# the same lines in the same cache sets (notebook 01 measures where stack tops collide).
# Batching divides the number of switches by 32 for the same tasks. One run's share is
# floored at zero: a run with almost no switching can come out a little below its
# work-only baseline (the two loops are different code, placed differently), and that
# says "too small to see", not a negative cost. The runs this happened to are counted
# in `below_resolution`; the W = 100 section gives the net with its interval.

# %% [markdown]
# ## Throughput
#
# Tasks per microsecond (millions per second) and, on the right, each set-up's throughput
# over the author's starting point (1 MB stacks, one task per switch) at the same W,
# with the widest spread the quartiles allow.

# %%
sf.throughput_figure(runs, speed, judge_work=judge_work);

# %% [markdown]
# ## At W = 100: the author's numbers beside this machine's
#
# `ns per switch` is what each switch adds to the elapsed time: the median over repeats
# of (total - work-only) / switches, each pair measured one right after the other in the
# same coroutine, with the quartiles of those differences as its interval. Where the
# interval reaches zero the table says "below resolution (< X)": the switch costs less
# than X there, and no sign or digit beyond that is known. The share of time switching
# is given the same way, within [0, 100%].
#
# Compare it with W = 0, where there is no work for the core to run beside the switch:
# with work in flight, an out-of-order core runs much of the switch in the shadow of the
# work's dependency chain (the dependent busy loop is one chain of multiplies and adds,
# which leaves most execution ports idle), so a switch costs less elapsed time than
# alone, sometimes nothing this subtraction can see. The independent work (six add
# chains side by side, more than the core issues in a cycle) leaves it no idle slot.
# When the independent work's ns per switch lies wholly above the dependent work's
# interval, the row says "hidden by out-of-order overlap": the dependent share then
# bounds what switching costs from below, and the independent share from above. The
# last column estimates the share if nothing overlapped, from what the switches cost
# per task at W = 0 (c₀): c₀ / (work + c₀).
#
# How much is hidden is fragile. On this 2-CPU VM, runs made while another benchmark
# ran on the other CPU found two to three times the share that quiet runs found at
# W = 100, close to that no-overlap estimate, while the work-only time per task stayed
# the same. Read the share with the load averages printed at the top, and with the
# second table: the median share of each pass over the sweep.

# %%
# The article's row claim C000.7a reads these beside the dependent-work runs.
results.save_csv(indep, exp.part("independent"))
sf.at_w(runs, indep, judge_work=judge_work)

# %%
sf.by_rotation(runs, judge_work=judge_work)

# %% [markdown]
# Two things to read the claim by. First, a share of time switching bounds the gain that
# removing it can bring: with the same work per task, total = work / (1 - share), so
# going from share s₀ to s₁ speeds things up by (1 - s₁) / (1 - s₀). The author's 15% ->
# under 3% gives 0.97 / 0.85 = 1.14 to 1 / 0.85 = 1.18, not 1.40: the +40% must have
# come from elsewhere too (the local queues, fewer cache misses in the work itself), or
# the 15% undercounted what switching cost. The table compares that with the gain
# measured here.
#
# Second, this experiment has one scheduler on one thread, so the author's third change,
# per-coroutine local queues instead of a shared one, has nothing to act on: no lock, no
# contention, no remote memory. It is left out, and the claim's rule does not name it.

# %%
author, hidden_note = sf.author_beside_here(runs, indep, judge_work=judge_work)
if hidden_note:
    print(hidden_note)
author

# %% [markdown]
# ## Verdict
#
# The rule compares, at W = 100, 1 MB stacks with one task per switch (before) against
# 64 KB stacks with batches of 32 (after): `share_after / share_before` and the
# throughput gain. Both set-ups, with dependent and with independent work, are measured
# again over fresh worker processes: each process runs the four four times (quick mode: twice) in ABBA order,
# leading with a random one, and gives one share and one throughput per entry. The
# intervals are taken over processes, at the looks of its schedule
# (`labkit.core.sequential`), and each spans both kinds of work: the work between two
# switches lies somewhere between a dependent chain (in whose shadow the core can hide a
# switch) and independent chains (which leave it no slot). C000.7a, the share before, is
# judged on the same runs. The original rule asked for a gain of at least 1.2, above the
# 1 / (1 - s) ceiling that removing a share s of switching allows at the article's own
# 15% (1.18); the amended rule (`data/claims_amendments.csv`) judges the share cut and
# the direction of the gain, and the original verdict stays beside it.

# %%
verdict_runs, judged = designs.run(exp, sf.verdict_entries(
    judge_work, tasks=tasks, coroutines=coroutines, cpu=cpu), quick=quick)
results.save_csv(runs, exp.data)
table = designs.verdict_table(exp, judged, notes={"C000.7": f"; {coroutines} asm_fpu coroutines"})
findings.and_verdicts(exp.name, table, [
    sf.share_finding(share, sf.share_of(indep), judge_work=judge_work)])

# %% [markdown]
# <a id="08_switch_frequency-article-table"></a>
# ## The article's table beside ours
#
# Here: the case study of `000_dc0f0e0d023658f3.txt`: share of time switching before and
# after, and the throughput gain. The article's own rows and columns, its number beside
# the median measured here with its spread, the relative column it uses, and the claim
# that judges each row (`labkit.lab.report.articles`, built from the data this notebook just
# saved). The row claims without a verdict above are judged here by their rules in
# `data/claims.csv`.

# %%
articles.section(exp)
