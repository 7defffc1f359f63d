"""Notebook 09's analysis: the echo servers' runs summarised, its sweeps over connections
and read modes, its figures and tables, and the notes beside its verdicts.

    from labkit.lab.analysis import echo_servers as es
    ms = es.summary(runs)                 # per server: QPS quartiles, p99, allocations, CPU
    es.ordering(runs, ["cxx20_pool_sym", "callback_epoll", "cxx20_new"])
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from labkit.core import plots, results, stats
from labkit.core.systems import colours
from labkit.experiments import echo
from labkit.lab.analysis import findings
from labkit.lab.experiment import ECHO_SERVERS
from labkit.lab.judging import rules, verdicts
from labkit.lab.judging.claims import claim
from labkit.lab.report.articles.measured import STRATEGIES
from labkit.lab.running.sweep import for_notebook

NOTEBOOK = ECHO_SERVERS.name
# The lab's sweep for the experiments' sweeps (labkit.experiments.echo), checkpointed under
# this notebook's name.
sweep = for_notebook(NOTEBOOK)
# The servers C001.1 names, claimed fastest first: optimised coroutines, callbacks, plain.
CLAIMED_ORDER = list(rules.ECHO_ORDER)
SERVER_COLUMNS = ["server", "style", "frames", "transfer", "backend", "available", "why_not"]


def summary(df, by=("server",), value: str = "qps"):
    """Per group: the median and quartiles of `value` over repeats and pyperf's noise flag
    (labkit.core.stats.summarize), with the medians of p99, allocations/s and per message,
    waits and reads per message, RSS and the server's CPU beside it."""
    s = stats.summarize(df, by=list(by), value=value)
    extra = df.groupby(list(by), sort=False).agg(
        p99_us=("p99_us", "median"), p999_us=("p999_us", "median"),
        allocs_per_s=("allocs_per_s", "median"), allocs_per_msg=("allocs_per_msg", "median"),
        read_waits_per_msg=("read_waits_per_msg", "median"),
        reads_per_msg=("reads_per_msg", "median"),
        dispatches_per_msg=("dispatches_per_msg", "median"),
        rss_kb=("rss_kb", "median"), server_cpu_util=("server_cpu_util", "median"),
        client_cpu_util=("client_cpu_util", "median"),
        server_cpu_us_per_msg=("server_cpu_us_per_msg", "median"),
        server_preempted_per_s=("server_preempted_per_s", "median"),
        client_preempted_per_s=("client_preempted_per_s", "median")).reset_index()
    spread = stats.group_quartiles(df, by, SPREAD)
    return s.merge(extra, on=list(by)).merge(spread, on=list(by))


# The columns a figure draws with their quartiles beside the median.
SPREAD = ("p99_us", "allocs_per_s", "rss_kb", "server_cpu_us_per_msg")


def _iqr(frame, col: str, scale: float):
    return plots.bars(frame, col, f"{col}_q1", f"{col}_q3", scale)


def ordering(df, order: list[str], value: str = "qps", by: str = "server") -> tuple[float, str]:
    """For a claimed ordering order[0] > order[1] > ...: 1 if every neighbour pair holds
    with non-overlapping interquartile ranges, 0 if some pair is reversed beyond them (the
    claimed-larger one's q3 below the other's q1), 0.5 otherwise (no verdict either way);
    and a line saying what was compared."""
    if not isinstance(order, (list, tuple)) or len(order) < 2 \
            or not all(isinstance(n, str) for n in order):
        raise TypeError(f"order must be a list of two or more server names, claimed largest "
                        f"first; got {order!r}")
    q = {}
    for name in order:
        v = df.loc[df[by] == name, value].astype(float)
        if v.empty:
            raise ValueError(f"order names {name!r}, which has no rows in df")
        q[name] = v.quantile([0.25, 0.5, 0.75]).to_numpy()
    holds, reversed_ = [], []
    for hi_name, lo_name in zip(order, order[1:]):
        hi, lo = q[hi_name], q[lo_name]
        holds.append(hi[0] > lo[2])
        reversed_.append(hi[2] < lo[0])
    x = 1.0 if all(holds) else 0.0 if any(reversed_) else 0.5
    detail = " > ".join(f"{n} {q[n][1]:,.0f} [{q[n][0]:,.0f}, {q[n][2]:,.0f}]" for n in order)
    return x, detail


def _in_order(servers) -> list[str]:
    """The servers given, in the order of echo's table."""
    have = set(servers)
    return [n for n in echo.SERVER_NAMES if n in have]


def servers():
    """The servers' table as the notebook shows it: what each is, and here or why not."""
    return echo.servers()[SERVER_COLUMNS]


# ---------------------------------------------------------------- the bad clients

def survived(robust):
    """Case by server: whether each server passed each case."""
    return robust.pivot(index="case", columns="server", values="ok").loc[
        robust.case.unique(), _in_order(robust.server)]


def failures(robust) -> str:
    """The cases a server failed, or a line saying there are none."""
    bad = robust[~robust.ok]
    return "every server passed every case" if bad.empty else f"FAILURES:\n{bad.to_string()}"


# ---------------------------------------------------------------- the main load

def conditions(main, ms) -> str:
    """pyperf's noise warnings on the main runs' summary, and what else the machine was
    doing during them: the load average and the pinned sides' preemptions."""
    return "\n".join(stats.noise_warnings(ms) + [
            f"load average before the runs: median {main.load_avg_1min.median():.2f}, "
            f"max {main.load_avg_1min.max():.2f} (this notebook's own two processes make ~2); "
            f"involuntary switches/s of the pinned sides, median: server "
            f"{main.server_preempted_per_s.median():.0f}, client "
            f"{main.client_preempted_per_s.median():.0f}"])


def load_table(ms):
    """The per-server summary of the main runs, QPS named as such."""
    cols = ["server", "median", "q1", "q3", "noisy", "p99_us", "allocs_per_s",
            "allocs_per_msg", "rss_kb", "server_cpu_us_per_msg", "server_cpu_util",
            "client_cpu_util", "server_preempted_per_s", "client_preempted_per_s"]
    return ms[cols].rename(columns={"median": "qps", "q1": "qps_q1", "q3": "qps_q3"}).round(2)


def _kqps(v) -> str:
    return f"{v / 1e3:.3g}k"


def table_finding(ms) -> str:
    """What the main load shows, one sentence from its summary: the fastest and slowest
    server with their quartiles, and the servers C001.1 orders beside the article's QPS."""
    if ms.empty:
        return "No server ran the main load here."
    m = ms.set_index("server").sort_values("median")
    def said(s):
        return (f"{s} {_kqps(m.loc[s, 'median'])} "
                f"{findings.quartiles(_kqps(m.loc[s, 'q1']), _kqps(m.loc[s, 'q3']))}")

    text = (f"Requests per second here: fastest {said(m.index[-1])}, slowest "
            f"{said(m.index[0])}.")
    named = [s for s in CLAIMED_ORDER if s in m.index]
    if len(named) == len(CLAIMED_ORDER):
        text += (f" The article's order, {' > '.join(CLAIMED_ORDER)}, had "
                 f"{claim('C001.1')['claimed_value']}; here "
                 f"{', '.join(_kqps(m.loc[s, 'median']) for s in named)}.")
    return text


def table_figure(ms, *, connections: int, message_bytes: int, where: str):
    """Four bars per server: QPS, p99, allocations/s, RSS, table_finding as the title
    (figures/09_echo_servers-table)."""
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.6))
    order = ms.sort_values("median").server.tolist()
    msx = ms.set_index("server").loc[order]
    y = np.arange(len(order))
    # One colour per quantity, none an entry's: the bars are servers, not entries.
    tint = list(colours(["throughput", "p99", "allocations", "RSS"]).values())
    axes[0].barh(y, msx["median"] / 1e3, xerr=plots.bars(msx, scale=1e3), capsize=3,
                 color=tint[0])
    axes[0].set_xlabel("thousand requests/s (median, IQR bars)")
    axes[1].barh(y, msx.p99_us / 1e3, xerr=_iqr(msx, "p99_us", 1e3), capsize=3,
                 color=tint[1])
    axes[1].set_xlabel("p99 latency, ms (median of runs, IQR bars)")
    axes[2].barh(y, msx.allocs_per_s / 1e3, xerr=_iqr(msx, "allocs_per_s", 1e3), capsize=3,
                 color=tint[2])
    axes[2].set_xlabel("thousand heap allocations/s in the server\n(median, IQR bars)")
    axes[3].barh(y, msx.rss_kb / 1024, xerr=_iqr(msx, "rss_kb", 1024), capsize=3,
                 color=tint[3])
    axes[3].set_xlabel(f"server RSS, MiB, {connections} connections open\n(median, IQR bars)")
    for ax in axes:
        ax.set_yticks(y, order if ax is axes[0] else [""] * len(order))
        ax.grid(True, axis="x", alpha=0.3)
    findings.title(fig, f"{table_finding(ms)}\nEcho servers, {connections} connections, "
                   f"{message_bytes} B messages, closed loop on loopback ({where}).", 150)
    return plots.finish(fig, f"{NOTEBOOK}-table")


# ---------------------------------------------------------------- connections

def connection_summary(conn_runs, main):
    """The connection sweep with the main runs as its largest point, summarised per server
    and connections."""
    return summary(pd.concat([conn_runs, main], ignore_index=True), by=["server", "connections"])


def connections_finding(by) -> str:
    """What the connection sweep shows, one sentence from its medians (summary by server
    and connections): each end's throughput change from the fewest connections to the
    most, and the fastest server at the most."""
    few, many = by.connections.min(), by.connections.max()
    every = by.pivot(index="server", columns="connections", values="median")
    q = every[[few, many]].dropna()
    if q.empty or few == many:
        return "The sweep measured one number of connections only."
    gain = (q[many] / q[few]).sort_values()
    best = q[many].idxmax()
    # Where most servers peak, when that is not the end of the sweep.
    peak = every.idxmax(axis=1).mode().iloc[0]
    return (f"From {few:,} to {many:,} connections, throughput changes "
            f"{findings.times(gain.iloc[0])} ({gain.index[0]}) to "
            f"{findings.times(gain.iloc[-1])} ({gain.index[-1]})"
            + (f", most servers peaking at {peak:,}" if peak != many else "")
            + f"; at {many:,}, {best} serves the most ({_kqps(q.loc[best, many])} requests/s).")


def connections_figure(conn_runs, main):
    """Throughput and server CPU per message against connections (the main runs are the
    largest point), connections_finding as the title; figures/09_echo_servers-connections.
    Returns QPS by connections."""
    by = connection_summary(conn_runs, main)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    findings.title(fig, connections_finding(by))
    palette = colours([*echo.SERVER_NAMES, *by.server])

    def draw(ax, **kw):
        for server in _in_order(by.server):
            plots.errorbars(ax, by[by.server == server], x="connections", hue="server",
                            palette=palette, **kw)

    draw(axes[0])
    plots.log_axis(axes[0], "x")
    axes[0].set_ylabel("requests/s (median, IQR bars)")
    axes[0].set_title("throughput")
    draw(axes[1], y="server_cpu_us_per_msg", lo="server_cpu_us_per_msg_q1",
         hi="server_cpu_us_per_msg_q3")
    plots.log_axis(axes[1], "x")
    axes[1].set_ylabel("server CPU µs per message\n(median, IQR bars)")
    axes[1].set_title("what a message costs the server")
    for ax in axes:
        ax.set_xlabel("connections (one request in flight on each)")
    plots.finish(fig, f"{NOTEBOOK}-connections")
    return by.pivot(index="connections", columns="server", values="median").round(0)


# ---------------------------------------------------------------- whole or read_some

def _hows(c15) -> list[str]:
    some = sorted(set(c15.loc[c15.read_mode == "some", "chunk"]))
    return ["whole"] + [f"some {c // 1024} KiB" for c in some]


def reads_finding(c15) -> str:
    """What the read modes show, one sentence from the runs' medians: the range of
    suspensions per message over servers, read whole and with the smallest read_some
    chunk, beside the article's (C001.5)."""
    waits = c15.groupby(["server", "read_mode", "chunk"]).read_waits_per_msg.median()
    whole = waits.xs("whole", level="read_mode")
    some = waits.xs("some", level="read_mode") if "some" in set(c15.read_mode) else None
    if whole.empty or some is None or some.empty:
        return "This run did not read both whole and with read_some."
    chunk = some.index.get_level_values("chunk").min()
    some = some.xs(chunk, level="chunk")

    def span(w):
        return f"{w.min():.2g}" if w.min() == w.max() else f"{w.min():.2g} to {w.max():.2g}"

    return (f"Per message, a whole read suspends a server {span(whole)} times; a read_some "
            f"loop of {plots.bytes_label(chunk)} suspends it {span(some)} times (the article: "
            f"{claim('C001.5')['claimed_value']}).")


def reads_figure(c15, *, message_bytes: int, connections: int):
    """Suspensions, read calls and loop dispatches per message, server by read mode, as
    heat maps (figures/09_echo_servers-reads). Returns the suspensions' table."""
    names, hows = _in_order(c15.server), _hows(c15)
    how = np.where(c15.read_mode == "whole", "whole",
                   "some " + (c15.chunk // 1024).astype(str) + " KiB")
    cols = ("read_waits_per_msg", "reads_per_msg", "dispatches_per_msg")
    c15 = c15.assign(how=how)
    susp = c15.groupby(["server", "how"]).agg(
        **{c: (c, "median") for c in cols}, qps=("qps", "median")).reset_index().merge(
        stats.group_quartiles(c15, ["server", "how"], cols), on=["server", "how"])
    panels = [("read_waits_per_msg", "suspensions: waits for input"),
              ("reads_per_msg", "read calls (asio: completions)"),
              ("dispatches_per_msg", "loop dispatches")]
    fig, axes = plt.subplots(1, 3, figsize=(15, 0.45 * len(names) + 1.8), sharey=True)
    def cells(c):
        return susp.pivot(index="server", columns="how", values=c).loc[names, hows]

    def num(v):
        return f"{v:.2f}" if v < 10 else f"{v:.0f}"

    for ax, (col, title) in zip(axes, panels):
        grid_ = cells(col)
        q1, q3 = cells(f"{col}_q1").to_numpy(), cells(f"{col}_q3").to_numpy()
        ax.imshow(np.log2(grid_.to_numpy().astype(float) + 1 / 16), cmap="viridis",
                  aspect="auto")
        for (i, j), v in np.ndenumerate(grid_.to_numpy()):
            ax.text(j, i, f"{num(v)}\n[{num(q1[i, j])}, {num(q3[i, j])}]", ha="center",
                    va="center", color="white" if v < 2 else "black", fontsize=7)
        ax.set_xticks(range(len(hows)), hows, rotation=30)
        ax.set_yticks(range(len(names)), names)
        ax.set_title(f"{title} per message", fontsize=10)
    findings.title(fig, f"{reads_finding(c15)}\nReading a {message_bytes // 1024} KiB frame "
                   f"whole or with a read_some loop ({connections} connections; medians, "
                   "[quartiles] of the runs).", 150)
    plots.finish(fig, f"{NOTEBOOK}-reads")
    return cells("read_waits_per_msg").round(2)


def reads_table(c15, *, chunk: int):
    """Per server: median suspensions per message whole, with read_some of `chunk`
    bytes, and their ratio (C001.5's numbers)."""
    def waits(server, mode, chunk=None):
        sel = (c15.server == server) & (c15.read_mode == mode)
        if chunk is not None:
            sel &= c15.chunk == chunk
        return c15.loc[sel, "read_waits_per_msg"].astype(float)

    rows = []
    for name in _in_order(c15.server):
        w, s = waits(name, "whole"), waits(name, "some", chunk)
        rows.append({"server": name, "whole": w.median(), f"some ({chunk} B)": s.median(),
                     "some/whole": s.median() / w.median()})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- what the data says

def _qps(main, server):
    return main.loc[main.server == server, "qps"]


def c001_1_text(main, ms) -> str:
    """C001.1's numbers: the claimed QPS ordering checked on interquartile ranges
    (ordering), the allocations per second and the p99 of the three servers."""
    x, detail = ordering(main, CLAIMED_ORDER)
    m = ms.set_index("server")
    allocs = m.allocs_per_s
    return (f"interquartile check (ordering): {detail} -> {x:g}; allocations/s callback "
            f"{allocs['callback_epoll']:,.0f}, plain {allocs['cxx20_new']:,.0f}, optimised "
            f"{allocs['cxx20_pool_sym']:,.0f}; p99 ms "
            + ", ".join(f"{s} {m.loc[s, 'p99_us'] / 1e3:.1f}" for s in CLAIMED_ORDER))


def twins(main, ms):
    """Each io_uring server over its epoll twin (echo.TWINS): QPS ratio with its spread,
    and the ratio of the server's CPU per message."""
    cpu = ms.set_index("server").server_cpu_us_per_msg
    rows = []
    for uring, epoll in echo.TWINS.items():
        if uring in cpu.index and epoll in cpu.index:
            r, lo, hi = verdicts.ratio_with_spread(_qps(main, uring), _qps(main, epoll))
            rows.append({"io_uring": uring, "epoll twin": epoll, "QPS ratio": r, "low": lo,
                         "high": hi, "CPU us/msg ratio": cpu[uring] / cpu[epoll]})
    return pd.DataFrame(rows, columns=["io_uring", "epoll twin", "QPS ratio", "low", "high",
                                       "CPU us/msg ratio"])


def c001_1_note(main, ms, connections: int, message_bytes: int, where: str) -> str:
    """What C001.1's verdict row adds to its note: c001_1_text and the load."""
    return (f"; {c001_1_text(main, ms)}; {connections} connections, {message_bytes} B, "
            f"{where}")


def c001_3_note(main, ms, connections: int) -> str:
    """What C001.3's verdict row adds to its note: every twin pair's QPS ratio (twins)."""
    tw = twins(main, ms)
    return "".join(f"; {t['io_uring']} / {t['epoll twin']} = {t['QPS ratio']:.3f} "
                   f"[{t['low']:.3f}, {t['high']:.3f}]" for _, t in tw.iterrows()) \
        + f"; {connections} connections"


def _some_over_whole(reads, but: str = "") -> str:
    return ", ".join(f"{r.server} {r['some/whole']:.2f}" for _, r in reads.iterrows()
                     if r.server != but)


def c001_5_note(c15, chunk: int, message_bytes: int, connections: int) -> str:
    """What C001.5's verdict row adds to its note: the other servers' some/whole
    (reads_table at `chunk`)."""
    reads = reads_table(c15, chunk=chunk)
    return (f"; others, some/whole: {_some_over_whole(reads, but='asio_epoll')}; "
            f"{message_bytes // 1024} KiB messages, {connections} connections")


def _missing(servers) -> str:
    return "; ".join(f"{s}: {echo.availability(s)[1]}" for s in servers
                     if not echo.availability(s)[0])


def why_not(claim_id: str, c15=None, chunk: int | None = None) -> str:
    """Why a claim of notebook 09 cannot be judged here: the servers it needs that do
    not run (C001.5: and the lab's servers' some/whole, reads_table of c15 at chunk)."""
    if claim_id == "C001.1":
        return "missing here: " + _missing(CLAIMED_ORDER)
    if claim_id == "C001.3":
        return "no io_uring server runs here: " + _missing(echo.TWINS)
    if claim_id == "C001.5":
        return (f"asio is missing here ({echo.availability('asio_epoll')[1]}); the lab's "
                f"servers, some/whole: "
                f"{_some_over_whole(reads_table(c15, chunk=chunk))}")
    raise ValueError(f"claim_id must be one of C001.1, C001.3, C001.5; got {claim_id!r}")


def c004_table(main, ms):
    """C004.1's TPS column beside the claim: each strategy's server (articles.STRATEGIES)
    over cxx20_new, the claimed and the measured ratio with its spread (saved as
    09_echo_servers_c004)."""
    base_tps = STRATEGIES[0][5]
    base = STRATEGIES[0][2]
    have = set(main.server)
    rows = []
    for step, _, server, _, _, tps, _, _ in STRATEGIES if base in have else []:
        if server not in have:
            continue
        r, lo, hi = verdicts.ratio_with_spread(_qps(main, server), _qps(main, base))
        rows.append({"server": server, "article's step": step, "claimed TPS": tps,
                     "claimed ratio": tps / base_tps, "measured QPS": _qps(main, server).median(),
                     "measured ratio": r, "low": lo, "high": hi,
                     "allocs/msg": ms.set_index("server").loc[server, "allocs_per_msg"]})
    c004 = pd.DataFrame(rows)
    results.save_csv(c004, ECHO_SERVERS.part("c004"))
    return c004.round(3)


def closing_table(ms):
    """The table per server at the main load (saved as 09_echo_servers_table)."""
    closing = ms[["server", "median", "q1", "q3", "p99_us", "allocs_per_s", "allocs_per_msg",
                  "rss_kb", "server_cpu_us_per_msg", "noisy"]].rename(columns={
        "median": "QPS", "q1": "QPS q1", "q3": "QPS q3", "p99_us": "p99 µs",
        "allocs_per_s": "allocs/s", "allocs_per_msg": "allocs/msg", "rss_kb": "RSS KiB",
        "server_cpu_us_per_msg": "server CPU µs/msg"}).set_index("server")
    closing = closing.loc[_in_order(closing.index)]
    results.save_csv(closing.reset_index(), ECHO_SERVERS.part("table"))
    return closing.round(1)


def save(*, main, connections, reads, robust):
    """The notebook's tidy runs (09_echo_servers, one experiment column) and the bad
    clients' table (09_echo_servers_robustness)."""
    results.save_parts(NOTEBOOK, {"main": main, "connections": connections,
                                        "reads": reads})
    results.save_csv(robust, ECHO_SERVERS.part("robustness"))


def verdict_notes(main, ms, c15, names, *, connections: int, message_bytes: int, where: str,
                  chunk: int, c15_message_bytes: int, c15_connections: int) -> dict:
    """What each claim's verdict row adds to its note (labkit.lab.judging.designs
    .verdict_table), for the claims whose servers run here."""
    notes = {"C001.3": c001_3_note(main, ms, connections)}
    if all(s in names for s in CLAIMED_ORDER):
        notes["C001.1"] = c001_1_note(main, ms, connections, message_bytes, where)
    if ECHO_SERVERS.sides.ASIO_EPOLL in names:
        notes["C001.5"] = c001_5_note(c15, chunk, c15_message_bytes, c15_connections)
    return notes
