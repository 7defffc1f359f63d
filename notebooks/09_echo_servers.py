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
# **Claims tested** (ids from `data/claims.csv`, the articles in `docs/sources.md`):
#
# - **C001.1** (`001_22488c889cf00991.txt`): an echo server in callback style did
#   125,000 QPS (p99 12 ms, about 50,000 allocations/s); rewritten with plain C++20
#   coroutines, 108,000 QPS (p99 16 ms, about 1,200,000 allocations/s, 24 times as many);
#   with optimised coroutines (pooled frames, fewer suspensions), 138,000 QPS (p99 9 ms,
#   about 80,000 allocations/s).
# - **C001.3** (same file): switching asio's back end from epoll to io_uring gave about
#   8% more throughput under high load.
# - **C001.5** (same file): reading a message with one `async_read` of its whole length
#   suspends the coroutine once; a loop of `async_read_some` suspends it many times.
# - **C004.1**, the TPS column only (`004_dfc61b1060864bf1.txt`): an echo server's
#   coroutines did 100,000 TPS with default `new` frames, 350,000 with a thread-local
#   pool, 420,000 with symmetric transfer, 450,000 with pooled coroutine reuse. (C004.1's
#   rule judges its memory column, in notebook 07b; the TPS column is measured here and
#   shown beside the claim, without a verdict of its own.)
#
# **How the authors got their numbers.** The author of `001` rewrote a gateway's I/O on
# asio with C++20 coroutines and load-tested it with `wrk`, 1000 concurrent connections
# and small requests, on Linux 5.10, 8 cores, 16 GB; the allocation counts and the
# suspension argument come with no tool named. The author of `004` timed "a simple
# benchmark simulating an asynchronous echo server", each connection's coroutine
# suspending on several reads and writes; no machine or load is given.
#
# **What we run.** Whole servers, each a child process of this notebook on 127.0.0.1 and
# an ephemeral port, pinned to one CPU with the lab's own load generator on the other:
# closed loop (one request in flight per connection), every response checked byte for
# byte, every run bounded in requests *and* seconds. The protocol has a length header;
# a server reads each frame either whole or with a `read_some` loop of a fixed buffer.
# Every server counts, inside itself, its allocations (a counting `malloc` linked into
# it), its read calls, and its *suspensions*: the times a connection's handler handed
# control back to the event loop to wait for input.
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
# Only orderings and ratios are judged: absolute QPS on one loopback with a one-core
# client say little about the authors' machines. The verdict rules are those written in
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
from labkit.experiments import echo, echo_hostile
from labkit.lab.analysis import findings, echo_servers as es
from labkit.lab.experiment import ECHO_SERVERS as exp
from labkit.lab.judging import designs
from labkit.lab.report import articles
findings.placeholder(exp.name)

where, names = echo.placement()[2], echo.available()
print(plots.machine_caption(), where, sep="\n")
es.servers()

# %% [markdown]
# ## Bad clients first
#
# A server that does not survive these has no throughput worth measuring. Each server
# meets, `robustness_rounds` times: clients that disconnect in the middle of a header or
# a payload (cleanly or with a reset), a length header of 4 GiB, 1 KiB of garbage, a
# client that sends a 1 MiB message and leaves before reading the echo, 32 pipelined
# frames in one write, a frame sent 7 bytes at a time; then a good client with frames of
# 0 B to 1 MiB. Afterwards the open descriptors and live heap allocations must be what
# they were after the first round, SIGTERM must end the server cleanly with its
# counters, and no process of ours may be left.

# %%
robust = echo_hostile.robustness_of(names, rounds=robustness_rounds)
print(es.failures(robust))
es.survived(robust)

# %% [markdown]
# ## The article's table: 1000 connections, small messages
#
# The runs come in rounds: each round runs every server once, a fresh server process per
# run, in an order that starts at a random server and is mirrored every other round, so
# that a slow minute of this machine falls on all of them alike. A round is the unit of
# replication: the verdicts take their intervals over rounds, at the looks of its
# schedule, and the runs stop at the first look where no interval straddles a
# bound (`labkit.core.sequential`, written before measuring). Each run: 1000
# connections, two warm-up requests on each (connection set-up, buffers and pools grow
# there), then the measured window. Allocations per second are the server's own count
# over that window.

# %%
main, echo_rows = designs.run_rounds(
    exp,
    lambda server, r: echo.run_load(
        server, connections=connections, requests=requests, duration=duration,
        message_bytes=message_bytes, read_mode="whole", seed=r + 1).assign(repeat=r),
    names, quick=quick)
ms = es.summary(main)
print(es.conditions(main, ms))
es.load_table(ms)

# %% [markdown]
# `server_cpu_util` and `client_cpu_util` are the share of the window each side spent on
# its CPU. When both are near 1, neither side waits for the other and the QPS is shared
# out between a server's cost and the client's; `server_cpu_us_per_msg` (the server's
# CPU time per message) is then the cleaner measure of what a server costs. When both
# are well below 1, something else had the CPUs: the involuntary context switches of
# the two pinned processes (`*_preempted_per_s`) and the load average say how much.

# %%
es.table_figure(ms, connections=connections, message_bytes=message_bytes, where=where);

# %% [markdown]
# ## Throughput against the number of connections
#
# With one connection a run measures a round trip (two cross-CPU wake-ups); with more,
# the server finds several sockets ready per `epoll_wait` (or completions per
# `io_uring_enter`) and the per-request cost drops until one side runs out of CPU.

# %%
conn_runs = echo.connection_sweep(es.sweep, names, sweep_connections, sweep_repeats,
                                  requests=requests, duration=sweep_duration,
                                  message_bytes=message_bytes)
es.connections_figure(conn_runs, main)

# %% [markdown]
# ## Suspensions per message: one whole read or a read_some loop (C001.5)
#
# 16 KiB messages. In whole mode each server reads a frame as one operation: asio with
# one `async_read` whose completion condition reads the length from the header, the
# C++20 servers with one awaiter that keeps reading until the frame is whole. In some
# mode the connection's code loops over reads of at most `chunk` bytes (asio:
# `async_read_some`). `read_waits_per_msg` counts the suspensions (times the handler
# went back to the loop to wait for input), `reads_per_msg` the read calls (or, for
# asio, its read completions).

# %%
c15 = echo.reads_sweep(es.sweep, names, chunks=c15_chunks, repeats=c15_repeats,
                       connections=c15_connections, requests=requests, duration=c15_duration,
                       message_bytes=c15_message_bytes)
es.reads_figure(c15, message_bytes=c15_message_bytes, connections=c15_connections)

# %% [markdown]
# How to read the three panels. A server that tries the system call first and waits only
# on EAGAIN (the callback and stackful servers, `cxx20_pool_sym`) waits for input about
# once per message however small its read buffer: on loopback the 16 KiB of a request
# arrive together, so every read after the first finds data. asio and the io_uring
# server hand every operation to the loop and get control back through it, so their
# suspensions are their reads: a `read_some` loop of 1 KiB suspends 17 times per
# message. The C++20 servers that post a finished child's parent to the run queue
# (`cxx20_new`, `cxx20_pool`) wait *less* than once: the trip through the queue gives
# the next request time to arrive, and they pay for it in loop dispatches instead.
#
# ## What the data says
#
# The numbers each claim is judged on, side by side. If the noise warnings above fired
# (pyperf's rule: a standard deviation of 10% of the mean or more), the verdict rows say
# so; the bootstrap intervals carry that noise: on a shared machine the spread between
# runs can be larger than the differences the claims are about.

# %%
have_order = all(s in names for s in es.CLAIMED_ORDER)
print("C001.1:", es.c001_1_text(main, ms) if have_order else "not all its servers run here")
es.twins(main, ms).round(3)

# %%
es.reads_table(c15, chunk=c15_judge_chunk).round(2)

# %% [markdown]
# ## Verdicts
#
# - **C001.1** is judged on the servers the claim names: callbacks (`callback_epoll`),
#   plain coroutines (`cxx20_new`: default `new`, no symmetric transfer) and optimised
#   coroutines (`cxx20_pool_sym`: pooled frames, symmetric transfer, whole-frame reads).
# - **C001.3** is about asio's back end, so it is judged on `asio_uring` against
#   `asio_epoll`; the lab's own twin pair (`callback_uring` / `callback_epoll`) is in the
#   note. Without asio here it is judged on the lab's pair and the note says so.
# - **C001.5** is about asio's `async_read` against an `async_read_some` loop, judged on
#   `asio_epoll` with the article's 1 KiB `recv_buf`; the other servers are in the table
#   above and in the note.

# %%
notes = es.verdict_notes(main, ms, c15, names, connections=connections,
                         message_bytes=message_bytes, where=where, chunk=c15_judge_chunk,
                         c15_message_bytes=c15_message_bytes, c15_connections=c15_connections)

# %% [markdown]
# ## C004.1's TPS column, beside the claim
#
# The claim's five rows against the C++20 servers that follow the same steps (`cxx20_lean`:
# fewer live locals with default `new`; `cxx20_reuse`: one reader and one writer coroutine
# per connection, reused for every message). Each row's TPS ratio is judged by its own
# claim (C004.1e-h) in the article's table at the end of this notebook; the ratios are
# saved as `09_echo_servers_c004`. C004.2's throughput half (`cxx20_pool_sym` /
# `cxx20_new`) is judged with 07b's memory half (`labkit.lab.judging.rules.c004_2`).

# %%
es.c004_table(main, ms)

# %% [markdown]
# ## The table per server
#
# Medians over the runs at 1000 connections and 64 B messages; the QPS spread is the
# interquartile range.

# %%
es.closing_table(ms)

# %%
es.save(main=main, connections=conn_runs, reads=c15, robust=robust)
table = designs.verdict_table(exp, echo_rows, notes=notes, chunk=c15_judge_chunk,
                              why=lambda claim: es.why_not(claim, c15, c15_judge_chunk))
findings.and_verdicts(exp.name, table)

# %% [markdown]
# <a id="09_echo_servers-article-table"></a>
# ## The article's table beside ours
#
# Here: the echo-server table of `001_22488c889cf00991.txt`, its allocation, io_uring
# and plain-coroutine figures, and the TPS column of `004_dfc61b1060864bf1.txt`. The
# article's own rows and columns, its number beside the median measured here with its
# spread, the relative column it uses, and the claim that judges each row
# (`labkit.lab.report.articles`, built from the data this notebook just saved). The row claims
# without a verdict above are judged here by their rules in `data/claims.csv`.

# %%
articles.section(exp)
