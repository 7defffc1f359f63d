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
# # 09 · Echo servers: callbacks, coroutines, pooled coroutines; epoll and io_uring
#
# **Claims tested.** The ids are from `data/claims.csv`, and the articles are in
# `docs/sources.md`.
#
# - **C001.1** (the coroutine-server article, `001_22488c889cf00991.txt`): three versions
#   of an echo server.
#   - Callback style: 125,000 [QPS](../docs/glossary.md#qps),
#     [p99](../docs/glossary.md#p99) 12 ms, about 50,000 allocations/s.
#   - Plain C++20 coroutines: 108,000 QPS, p99 16 ms, about 1,200,000 allocations/s (24
#     times as many).
#   - Optimised coroutines (pooled frames, fewer suspensions): 138,000 QPS, p99 9 ms,
#     about 80,000 allocations/s.
# - **C001.3** (same article): switching asio's back end from epoll to io_uring gave about
#   8% more [throughput](../docs/glossary.md#throughput) under high load. (See [epoll and
#   io_uring](../docs/glossary.md#epoll-and-io_uring).)
# - **C001.5** (same article): one `async_read` of a message's whole length suspends the
#   coroutine once. A loop of `async_read_some` suspends it many times.
# - **C004.1**, the TPS column only (the coroutine-memory article,
#   `004_dfc61b1060864bf1.txt`). An echo server's coroutines did 100,000 TPS with default
#   `new` frames. They did 350,000 with a thread-local pool, 420,000 with symmetric
#   transfer, and 450,000 with pooled coroutine reuse. C004.1's
#   [rule](../docs/glossary.md#rule) judges its memory column, in notebook 07b. The TPS
#   column is measured here and shown beside the claim, without a verdict of its own.
#
# **How the authors got their numbers.** The author of `001` rewrote a gateway's I/O on
# asio with C++20 coroutines. It was load-tested with `wrk`: 1000 concurrent connections
# and small requests, on Linux 5.10, 8 cores, 16 GB. The allocation counts and the
# suspension argument come with no tool named. The author of `004` timed "a simple
# benchmark simulating an asynchronous echo server". Each connection's coroutine suspended
# on several reads and writes. No machine or load is given.
#
# **What we run.** Whole servers, each a child process of this notebook, on 127.0.0.1 and
# an ephemeral port. Each server is pinned to one CPU, with the lab's own load generator
# on the other. The load is a closed loop: one request in flight per connection. Every
# response is checked byte for byte. Every run is bounded in requests *and* in seconds.
#
# The protocol has a length header. A server reads each frame either whole, or with a
# `read_some` loop of a fixed buffer. Every server counts three things inside itself: its
# allocations (a counting `malloc` is linked into it), its read calls, and its
# [suspensions](../docs/glossary.md#suspension). A suspension is a time a connection's
# handler handed control back to the event loop, to wait for input.
#
# | server | style | frames | back end |
# |---|---|---|---|
# | `callback_epoll` | state machine per connection | none | epoll |
# | `callback_uring` | the same state machine | none | io_uring (its twin) |
# | `stackful_epoll` | one coroutine per connection, labkit's `asm_fpu` switch | a stack each | epoll |
# | `cxx20_new` | C++20 coroutines, a child coroutine per read and per write | global `new` | epoll |
# | `cxx20_pool` | the same | free-list pool | epoll |
# | `cxx20_lean` | `cxx20_new` with fewer live locals: awaiters in the connection's frame | global `new` | epoll |
# | `cxx20_pool_sym` | the same + symmetric transfer | free-list pool | epoll |
# | `cxx20_reuse` | pool + symmetric; one reader and one writer coroutine per connection, reused | free-list pool | epoll |
# | `asio_epoll` | asio `co_spawn`, one awaitable per connection | asio's recycler | epoll |
# | `asio_uring` | the same, `ASIO_HAS_IO_URING` | asio's recycler | io_uring (its twin) |
#
# Only orderings and ratios are judged. Absolute QPS on one loopback, with a one-core
# client, say little about the authors' machines. The rules are those written in
# `data/claims.csv` before measuring.

# %% tags=["parameters"]
# Each parameter's full and quick value, what it allows and what it means:
# params.describe("09_echo_servers"). By hand, set one in the call:
# resolve(..., quick=quick, duration=1.0).
from labkit.lab.running import params

quick = False  # True: small sweeps and few repeats (what CI runs)
(connections, message_bytes, duration, requests, sweep_connections,
 sweep_duration, sweep_repeats, c15_message_bytes, c15_chunks, c15_judge_chunk,
 c15_connections, c15_duration, c15_repeats, robustness_rounds) = params.resolve(
    "09_echo_servers", quick=quick).values()

# %%
from labkit.core import plots
from labkit.lab.headers import shown
from labkit.experiments import echo, echo_hostile
from labkit.lab.analysis import findings, echo_servers as es
from labkit.lab.experiment import ECHO_SERVERS as exp
from labkit.lab.judging import designs
from labkit.lab.report import articles
findings.placeholder(exp.name)

where, names = echo.placement()[2], echo.available()
print(plots.machine_caption(), where, sep="\n")
shown(es.servers())

# %% [markdown]
# ## Bad clients first
#
# A server that does not survive these has no throughput worth measuring. Each server
# meets them `robustness_rounds` times:
#
# - clients that disconnect in the middle of a header or a payload (cleanly or with a
#   reset);
# - a length header of 4 GiB;
# - 1 KiB of garbage;
# - a client that sends a 1 MiB message and leaves before reading the echo;
# - 32 pipelined frames in one write;
# - a frame sent 7 bytes at a time;
# - then a good client, with frames of 0 B to 1 MiB.
#
# Afterwards, the open descriptors and live heap allocations must be what they were after
# the first round. SIGTERM must end the server cleanly, with its counters. And no process
# of ours may be left.

# %%
robust = echo_hostile.robustness_of(names, rounds=robustness_rounds)
print(es.failures(robust))
shown(es.survived(robust))

# %% [markdown]
# ## The article's table: 1000 connections, small messages
#
# The runs come in rounds. Each round runs every server once, with a fresh server process
# per run. The order starts at a random server, and is mirrored every other round. So a
# slow minute of this machine falls on all servers alike.
#
# A round is the unit of replication. The verdicts take their
# [intervals](../docs/glossary.md#interval) over rounds, at the
# [looks](../docs/glossary.md#look) of its schedule. The runs stop at the first look where
# no interval [straddles](../docs/glossary.md#straddle) a bound. That is the [stopping
# rule](../docs/glossary.md#stopping-rule) (`labkit.core.sequential`), written before
# measuring.
#
# Each run has 1000 connections. Each connection first makes two
# [warm-up](../docs/glossary.md#warm-up) requests: connection set-up, buffers and pools
# grow there. Then comes the measured window. Allocations per second are the server's own
# count over that window.

# %%
main, echo_rows = designs.run_rounds(
    exp,
    lambda server, r: echo.run_load(
        server, connections=connections, requests=requests, duration=duration,
        message_bytes=message_bytes, read_mode="whole", seed=r + 1).assign(repeat=r),
    names, quick=quick)
ms = es.summary(main)
print(es.conditions(main, ms))
shown(es.load_table(ms))

# %% [markdown]
# *server CPU use* and *client CPU use* are the share of the window each side spent on
# its CPU. When both are near 1, neither side waits for the other. The QPS is then shared
# out between a server's cost and the client's. So *server CPU µs per message*, the server's
# CPU time per message, is the cleaner measure of what a server costs. When both are well
# below 1, something else had the CPUs. Two things say how much: the involuntary context
# switches of the two pinned processes (`*_preempted_per_s`), and the load average.

# %%
es.table_figure(ms, connections=connections, message_bytes=message_bytes, where=where);

# %% [markdown]
# ## Throughput against the number of connections
#
# With one connection, a run measures a round trip: two [cross-CPU
# wake-ups](../docs/glossary.md#cross-cpu-wake-up). With more, the server finds several
# sockets ready per `epoll_wait` (or several completions per `io_uring_enter`). The
# per-request cost then drops, until one side runs out of CPU.

# %%
conn_runs = echo.connection_sweep(es.sweep, names, sweep_connections, sweep_repeats,
                                  requests=requests, duration=sweep_duration,
                                  message_bytes=message_bytes)
es.connections_figure(conn_runs, main)

# %% [markdown]
# ## Suspensions per message: one whole read or a read_some loop (C001.5)
#
# The messages are 16 KiB. In whole mode, each server reads a frame as one operation. asio
# uses one `async_read`, whose completion condition reads the length from the header. The
# C++20 servers use one awaiter that keeps reading until the frame is whole. In some mode,
# the connection's code loops over reads of at most `chunk` bytes (asio:
# `async_read_some`).
#
# `read_waits_per_msg` counts the suspensions: the times the handler went back to the loop
# to wait for input. `reads_per_msg` counts the read calls (or, for asio, its read
# completions).

# %%
c15 = echo.reads_sweep(es.sweep, names, chunks=c15_chunks, repeats=c15_repeats,
                       connections=c15_connections, requests=requests, duration=c15_duration,
                       message_bytes=c15_message_bytes)
es.reads_figure(c15, message_bytes=c15_message_bytes, connections=c15_connections)

# %% [markdown]
# How to read the three panels. Some servers try the system call first, and wait only on
# EAGAIN: the callback and stackful servers, and `cxx20_pool_sym`. They wait for input
# about once per message, however small their read buffer. On loopback, the 16 KiB of a
# request arrive together, so every read after the first finds data.
#
# asio and the io_uring server hand every operation to the loop, and get control back
# through it. So their suspensions are their reads: a `read_some` loop of 1 KiB suspends
# 17 times per message. Some C++20 servers post a finished child's parent to the run queue
# (`cxx20_new`, `cxx20_pool`). They wait *less* than once per message. The trip through
# the queue gives the next request time to arrive. They pay for it in loop dispatches
# instead.
#
# ## What the data says
#
# Here are the numbers each claim is judged on, side by side. The noise warnings above use
# pyperf's rule: a standard deviation of 10% of the mean or more. If they fired, the
# verdict rows say so ([noisy](../docs/glossary.md#noisy)). The [bootstrap
# intervals](../docs/glossary.md#bootstrap-interval) carry that noise. On a shared
# machine, the spread between runs can be larger than the differences the claims are
# about.

# %%
have_order = all(s in names for s in es.CLAIMED_ORDER)
print("C001.1:", es.c001_1_text(main, ms) if have_order else "not all its servers run here")
shown(es.twins(main, ms).round(3))

# %%
shown(es.reads_table(c15, chunk=c15_judge_chunk).round(2))

# %% [markdown]
# ## Verdicts
#
# - **C001.1** is judged on the servers the claim names. Callbacks: `callback_epoll`.
#   Plain coroutines: `cxx20_new` (default `new`, no symmetric transfer). Optimised
#   coroutines: `cxx20_pool_sym` (pooled frames, symmetric transfer, whole-frame reads).
# - **C001.3** is about asio's back end. So it is judged on `asio_uring` against
#   `asio_epoll`. The lab's own twin pair (`callback_uring` / `callback_epoll`) is in the
#   note. Without asio here, it is judged on the lab's pair, and the note says so.
# - **C001.5** is about asio's `async_read` against an `async_read_some` loop. It is
#   judged on `asio_epoll`, with the article's 1 KiB `recv_buf`. The other servers are in
#   the table above and in the note.

# %%
notes = es.verdict_notes(main, ms, c15, names, connections=connections,
                         message_bytes=message_bytes, where=where, chunk=c15_judge_chunk,
                         c15_message_bytes=c15_message_bytes, c15_connections=c15_connections)

# %% [markdown]
# ## C004.1's TPS column, beside the claim
#
# The claim's five rows stand against the C++20 servers that follow the same steps.
# `cxx20_lean` has fewer live locals, with default `new`. `cxx20_reuse` has one reader and
# one writer coroutine per connection, reused for every message. Each row's TPS ratio is
# judged by its own claim (C004.1e-h), in the article's table at the end of this notebook.
# The ratios are saved as `09_echo_servers_c004`. C004.2's throughput half
# (`cxx20_pool_sym` / `cxx20_new`) is judged with the memory half of 07b
# (`labkit.lab.judging.rules.c004_2`).

# %%
shown(es.c004_table(main, ms))

# %% [markdown]
# ## The table per server
#
# These are [medians](../docs/glossary.md#median) over the runs at 1000 connections and 64
# B messages. The QPS spread is the interquartile range.

# %%
shown(es.closing_table(ms))

# %%
es.save(main=main, connections=conn_runs, reads=c15, robust=robust)
table = designs.verdict_table(exp, echo_rows, notes=notes, chunk=c15_judge_chunk,
                              why=lambda claim: es.why_not(claim, c15, c15_judge_chunk))
findings.and_verdicts(exp.name, table, [es.table_finding(ms), es.connections_finding(
    es.connection_summary(conn_runs, main)), es.reads_finding(c15)])

# %% [markdown]
# <a id="09_echo_servers-article-table"></a>
# ## The article's table beside ours
#
# Here is the echo-server table of the coroutine-server article
# (`001_22488c889cf00991.txt`): its allocation, io_uring and plain-coroutine figures.
# Beside it is the TPS column of the coroutine-memory article
# (`004_dfc61b1060864bf1.txt`). Each number of an article sits beside the median measured
# here, with its [spread](../docs/glossary.md#spread). The table keeps the article's own
# rows and columns, and the relative column it uses. It also names the claim that judges
# each row. `labkit.lab.report.articles` builds it from the data this notebook just saved.
# The [row claims](../docs/glossary.md#row-claim) without a verdict above are judged here,
# by their rules in `data/claims.csv`.

# %%
articles.section(exp)

# %% [markdown]
# ## Try next
#
# Change one parameter: pass `connections` to `params.resolve` in the parameters cell,
# set to a tenth of its value. Then run the notebook again.
#
# Predict first: which server gains most in requests per second when fewer connections
# compete?
# Write the number down before you run it.
