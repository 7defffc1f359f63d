"""Whole echo servers on loopback (notebook 09): a callback state machine, labkit's own
stackful coroutines, C++20 coroutines with default or pooled frames, asio's co_spawn, on
epoll and on io_uring; and the lab's own closed-loop load generator. The clients a server
must survive are in labkit.experiments.echo_hostile.

    from labkit.experiments import echo
    echo.servers()                                   # each server: what it is, here or why not
    echo.run_load("callback_epoll", connections=100, requests=50_000, duration=1.0)
    with echo.start_server("cxx20_new") as srv:      # a running server
        echo.echo(srv.port, b"hello")

Every server is a child of this process, started in a session of its own on 127.0.0.1 and
an ephemeral port, pinned to one CPU with the load generator on another. It is stopped
with SIGTERM, on which it prints its counters and exits; on any error its whole process
group is killed, and every child is always reaped. Nothing leaves the loopback interface.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import time
import weakref
from dataclasses import dataclass

from labkit.core import native, procfs
from labkit.core import validate as _v
from labkit.errors import EchoError, ServerUnavailableError  # noqa: F401
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

BIN_DIR = native.BIN_DIR
LOADGEN = "lk_echo_load"
READ_MODES = ("whole", "some")
MAX_CONNECTIONS = 1000
MAX_MESSAGE = 1 << 20          # the servers' --max-message: a longer header closes the connection
MAX_MAX_MESSAGE = 1 << 30      # the largest --max-message a server may be started with
MAX_REQUESTS = 10**9
MAX_DURATION = 600.0
HOST = "127.0.0.1"
MAGIC_ECHO, MAGIC_STATS, MAGIC_REPLY = 0x4C4B4531, 0x4C4B533F, 0x4C4B5321
# Every frame of the protocol starts with this header: a magic word and the payload's length.
HEADER = struct.Struct(">II")


@dataclass(frozen=True)
class ServerInfo:
    name: str
    style: str      # callback, stackful, stackless (C++20), asio
    frames: str     # where a connection's per-operation state lives
    transfer: str   # how control comes back to a waiting coroutine
    backend: str    # epoll or io_uring
    what: str


SERVERS = {s.name: s for s in (
    ServerInfo("callback_epoll", "callback", "one struct per connection", "callback from the loop",
               "epoll", "a state machine per connection; handlers read until EAGAIN"),
    ServerInfo("callback_uring", "callback", "one struct per connection", "completion from the ring",
               "io_uring", "the same state machine; one recv or send submitted at a time"),
    ServerInfo("stackful_epoll", "stackful", "a 64 KiB mmap stack per connection",
               "labkit asm_fpu switch", "epoll",
               "one coroutine per connection on labkit's own switch (lk_swap asm_fpu)"),
    ServerInfo("cxx20_new", "stackless", "global operator new", "posted to the run queue",
               "epoll", "C++20 coroutines; a child coroutine per read and per write"),
    ServerInfo("cxx20_pool", "stackless", "free-list pool", "posted to the run queue", "epoll",
               "the same, frames from a pool that keeps them for reuse"),
    ServerInfo("cxx20_pool_sym", "stackless", "free-list pool", "symmetric transfer", "epoll",
               "pooled frames + symmetric transfer: the optimised coroutines"),
    ServerInfo("cxx20_lean", "stackless", "global operator new", "posted to the run queue",
               "epoll", "cxx20_new with fewer live locals: the awaiters live in the "
               "connection's frame, a child frame keeps only a reference"),
    ServerInfo("cxx20_reuse", "stackless", "free-list pool", "symmetric transfer", "epoll",
               "pooled + symmetric, and one reader and one writer coroutine per connection, "
               "reused for every message (never freed per message)"),
    ServerInfo("asio_epoll", "asio", "asio's recycling allocator", "asio co_spawn / awaitable",
               "epoll", "asio co_spawn, one awaitable per connection (Debian libasio-dev)"),
    ServerInfo("asio_uring", "asio", "asio's recycling allocator", "asio co_spawn / awaitable",
               "io_uring", "the same on asio's io_uring back end (ASIO_HAS_IO_URING)"),
)}
SERVER_NAMES = tuple(SERVERS)
# The io_uring server and its epoll twin: the same code on the other back end (C001.3).
TWINS = {"callback_uring": "callback_epoll", "asio_uring": "asio_epoll"}


# ---------------------------------------------------------------- what is here

def _io_uring_ok() -> tuple[bool, str]:
    """Whether this kernel lets us make an io_uring at all (a sysctl or a seccomp filter
    in a container can forbid it even where liburing is installed)."""
    if procfs.sysctl("kernel.io_uring_disabled") == "2":
        return False, "io_uring is disabled here (sysctl kernel.io_uring_disabled = 2)"
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    fd = libc.syscall(425, 1, params)          # io_uring_setup: 425 on x86-64 and AArch64
    if fd < 0:
        err = ctypes.get_errno()
        return False, f"io_uring_setup fails here: {os.strerror(err)} (kernel or container policy)"
    os.close(fd)
    return True, ""


_URING_STATE: tuple[bool, str] | None = None


def availability(name: str) -> tuple[bool, str]:
    """(True, "") if the server was built and can run here, else (False, why not)."""
    global _URING_STATE
    if name not in SERVERS and name != LOADGEN:
        raise ValueError(f"server must be one of {', '.join(SERVER_NAMES)}; got {name!r}")
    binary = BIN_DIR / name
    missing = BIN_DIR / f"{name}.missing.txt"
    if missing.exists():
        text = missing.read_text().strip().splitlines()
        return False, text[0] if text else "did not build"
    if not binary.exists():
        return False, f"not built: run `make setup` (no {binary})"
    if name in SERVERS and SERVERS[name].backend == "io_uring":
        if _URING_STATE is None:
            _URING_STATE = _io_uring_ok()
        if not _URING_STATE[0]:
            return _URING_STATE
    return True, ""


def servers():
    """Every echo server: its style, where its frames live, how control returns, its back
    end, whether it runs here or why not, and the flags it was built with."""
    import pandas as pd

    flags = _manifest()
    rows = []
    for s in SERVERS.values():
        ok, why = availability(s.name)
        rows.append({"server": s.name, "style": s.style, "frames": s.frames,
                     "transfer": s.transfer, "backend": s.backend, "what": s.what,
                     "available": ok, "why_not": why,
                     "cflags": flags.get(s.name, {}).get("cflags", "")})
    return pd.DataFrame(rows)


def available() -> list[str]:
    """The servers that run here, in the table's order."""
    return [n for n in SERVER_NAMES if availability(n)[0]]


def _manifest() -> dict:
    try:
        return json.loads((BIN_DIR / "servers.json").read_text())
    except (OSError, ValueError):
        return {}


def placement() -> tuple[int | None, int | None, str]:
    """(server CPU, client CPU, note): the first two CPUs this process may use, or
    (None, None) and a note saying so when there is only one."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        return cpus[0], cpus[1], f"server pinned to CPU {cpus[0]}, load generator to CPU {cpus[1]}"
    return None, None, (f"only one CPU ({cpus[0]}) is available: server and load generator "
                        "run unpinned and share it")


def _placement_note(server_cpu, client_cpu) -> str:
    """Where a run really ran: the note travels with its row."""
    if server_cpu is None and client_cpu is None:
        return "server and load generator unpinned"
    if server_cpu is not None and server_cpu == client_cpu:
        return f"server and load generator share CPU {server_cpu}"
    return (f"server on CPU {server_cpu if server_cpu is not None else 'any'}, "
            f"load generator on CPU {client_cpu if client_cpu is not None else 'any'}")


# ---------------------------------------------------------------- argument checks

def _known(server) -> str:
    return _v.choice("server", server, SERVER_NAMES)


def _name(server) -> str:
    """A known server that runs here."""
    _known(server)
    ok, why = availability(server)
    if not ok:
        raise ServerUnavailableError(f"server {server!r} is not available here: {why}")
    return server


# ---------------------------------------------------------------- processes

def _kill_group(proc: subprocess.Popen):
    """Kills a child's whole process group (it leads a session of its own). Only while
    the child is unreaped: its pid, and so its group id, cannot have been reused yet."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def children(all: bool = False) -> list[dict]:
    """This process's children that are echo servers or load generators, alive or
    unreaped (from /proc): a clean run leaves none. all=True lists every child (labkit's
    own worker process among them)."""
    ours = set(SERVER_NAMES) | {LOADGEN}
    me = os.getpid()
    out = []
    for p in procfs.processes():
        if p["ppid"] == me and (all or p["comm"] in ours):
            out.append({"pid": p["pid"], "comm": p["comm"], "state": p["state"]})
    return out


class EchoServer:
    """A running echo server, a child of this process. Use as a context manager, or call
    stop(); a server never stopped is killed when the object goes away."""

    def __init__(self, name: str, *, read_mode: str = "whole", chunk: int = 4096,
                 cpu="auto", max_message: int = MAX_MESSAGE, start_timeout: float = 15.0):
        self.name = _name(name)
        self.read_mode = _v.choice("read_mode", read_mode, READ_MODES)
        self.chunk = _v.integer_in("chunk", chunk, 1, 1 << 24)
        server_cpu, _, _ = placement()
        self.cpu = _v.cpu(cpu, auto=server_cpu)
        self.max_message = _v.integer_in("max_message", max_message, 0, MAX_MAX_MESSAGE)
        self.final_stats: dict | None = None
        self.port = None
        cmd = [str(BIN_DIR / self.name), "--port", "0", "--read-mode", self.read_mode,
               "--chunk", str(self.chunk), "--max-message", str(self.max_message),
               "--cpu", str(-1 if self.cpu is None else self.cpu)]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid = self._proc.pid
        self._finalizer = weakref.finalize(self, _reap, self._proc)
        try:
            line = self._readline(start_timeout)
            if not line.startswith("LISTENING "):
                raise EchoError(f"{self.name} did not start: {line!r}")
            self.port = int(line.split()[1])
        except BaseException as exc:
            err = self.kill()
            if isinstance(exc, EchoError) and self._proc.returncode not in (None, 0):
                raise ServerUnavailableError(
                    f"server {self.name!r} could not start here (exit status "
                    f"{self._proc.returncode}): {err.strip() or exc}") from None
            raise

    def _readline(self, timeout: float) -> str:
        end = time.monotonic() + timeout
        buf = b""
        while not buf.endswith(b"\n"):
            left = end - time.monotonic()
            if left <= 0:
                raise EchoError(f"{self.name} said nothing within {timeout:g} s")
            r, _, _ = select.select([self._proc.stdout], [], [], left)
            if not r:
                continue
            ch = os.read(self._proc.stdout.fileno(), 1)
            if not ch:
                raise EchoError(f"{self.name} exited before it was listening")
            buf += ch
        return buf.decode(errors="replace").strip()

    def kill(self) -> str:
        """Kill the process group, reap, and return what the server wrote to stderr."""
        _kill_group(self._proc)
        try:
            _, err = self._proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            err = b""
        self._proc.wait()
        self._finalizer.detach()
        return (err or b"").decode(errors="replace")

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def stats(self, timeout: float = 5.0) -> dict:
        """The server's counters now, from a stats request on a connection of its own."""
        if not self.alive:
            raise EchoError(f"{self.name} is not running (exit status {self._proc.returncode})")
        with socket.create_connection((HOST, self.port), timeout=timeout) as s:
            s.sendall(HEADER.pack(MAGIC_STATS, 0))
            magic, n = HEADER.unpack(recv_exactly(s, HEADER.size))
            if magic != MAGIC_REPLY:
                raise EchoError(f"{self.name} answered a stats request with magic {magic:#x}")
            return json.loads(recv_exactly(s, n))

    def open_fds(self) -> int:
        """How many descriptors the server holds open (from /proc)."""
        return procfs.open_fds(self.pid)

    def snapshot(self, timeout: float = 10.0) -> dict:
        """Counters and open descriptors taken together, once the server holds no
        connection but the one asking (its close of the others is asynchronous: polled,
        within a bound). Both then count exactly that one connection, so two snapshots
        compare like with like."""
        end = time.monotonic() + timeout
        with socket.create_connection((HOST, self.port), timeout=timeout) as s:
            while True:
                s.sendall(HEADER.pack(MAGIC_STATS, 0))
                magic, n = HEADER.unpack(recv_exactly(s, HEADER.size))
                st = json.loads(recv_exactly(s, n))
                if st["conns_open"] <= 1 or time.monotonic() > end:
                    st["open_fds"] = self.open_fds()
                    return st
                time.sleep(0.02)

    def wait_idle(self, conns_open: int = 1, timeout: float = 10.0) -> dict:
        """Stats once the server has closed every connection but `conns_open` (1: the stats
        connection itself): closing is asynchronous, so poll, within a bound."""
        end = time.monotonic() + timeout
        while True:
            st = self.stats()
            if st["conns_open"] <= conns_open or time.monotonic() > end:
                return st
            time.sleep(0.02)

    def stop(self, timeout: float = 10.0) -> dict:
        """SIGTERM, then wait for a clean exit and return the server's last STATS line.
        A server that does not stop in time is killed and EchoError raised."""
        if self.final_stats is not None:
            return self.final_stats
        if not self.alive:
            err = self.kill()
            raise EchoError(f"{self.name} died (exit status {self._proc.returncode}): {err.strip()}")
        os.kill(self.pid, signal.SIGTERM)
        try:
            out, err = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise EchoError(f"{self.name} did not stop within {timeout:g} s of SIGTERM; killed")
        except BaseException:
            self.kill()
            raise
        self._finalizer.detach()
        if self._proc.returncode != 0:
            raise EchoError(f"{self.name} exited with status {self._proc.returncode} on SIGTERM: "
                            f"{err.decode(errors='replace').strip()}")
        lines = [ln for ln in out.decode(errors="replace").splitlines() if ln.startswith("STATS ")]
        if not lines:
            raise EchoError(f"{self.name} stopped without its STATS line")
        self.final_stats = json.loads(lines[-1][len("STATS "):])
        return self.final_stats

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.stop()
        else:
            self.kill()
        return False

    def __repr__(self):
        state = "running" if self.alive else f"exited {self._proc.returncode}"
        return f"<EchoServer {self.name} pid={self.pid} port={self.port} {self.read_mode} {state}>"


def _reap(proc: subprocess.Popen):
    if proc.poll() is None:
        _kill_group(proc)
    try:
        proc.communicate(timeout=10)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass
    proc.wait()


def start_server(name: str, *, read_mode: str = "whole", chunk: int = 4096, cpu="auto",
                 max_message: int = MAX_MESSAGE) -> EchoServer:
    """Start a server on 127.0.0.1 and an ephemeral port (cpu: 'auto' pins it to the first
    CPU of placement(), None leaves it unpinned)."""
    return EchoServer(name, read_mode=read_mode, chunk=chunk, cpu=cpu, max_message=max_message)


# ---------------------------------------------------------------- load

def recv_exactly(s: socket.socket, n: int) -> bytes:
    """Exactly n bytes from the socket (EchoError if the server closes first)."""
    parts, got = [], 0
    while got < n:
        b = s.recv(min(n - got, 1 << 20))
        if not b:
            raise EchoError(f"the server closed the connection after {got} of {n} bytes")
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def echo(port: int, payload: bytes, timeout: float = 10.0) -> bytes:
    """Send one frame and return the payload that came back (the caller compares)."""
    port = _v.integer_in("port", port, 1, 65535)
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise TypeError(f"payload must be bytes, not {type(payload).__name__}")
    payload = bytes(payload)
    if len(payload) > MAX_MAX_MESSAGE:
        raise ValueError(f"payload must be at most {MAX_MAX_MESSAGE} bytes; got {len(payload)}")
    timeout = _v.seconds("timeout", timeout, MAX_DURATION)
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(HEADER.pack(MAGIC_ECHO, len(payload)) + payload)
        magic, n = HEADER.unpack(recv_exactly(s, HEADER.size))
        if magic != MAGIC_ECHO or n != len(payload):
            raise EchoError(f"bad reply header: magic {magic:#x}, length {n} for {len(payload)}")
        return recv_exactly(s, n)


def run_load(server, *, connections: int = 100, requests: int = 100_000,
             duration: float = 2.0, message_bytes: int = 64, read_mode: str = "whole",
             chunk: int = 4096, warmup_per_conn: int = 2, server_cpu="auto",
             client_cpu="auto", timeout: float | None = None, seed: int = 1):
    """One bounded closed-loop run: `connections` connections, one request in flight on
    each, until `requests` have been issued or `duration` seconds have passed. Every
    response is checked byte for byte (EchoError if one differs or goes missing).

    server: a name (a server is started for this run and stopped after it) or a running
    EchoServer (its read mode must be read_mode). Returns a one-row DataFrame: requests/s,
    latency percentiles, the server's allocations per second and per request, reads,
    waits (suspensions) and dispatches per message, RSS, its CPU time, and the row
    metadata of labkit.core.machine."""
    import pandas as pd

    if not isinstance(server, EchoServer):
        _known(server)
    connections = _v.integer_in("connections", connections, 1, MAX_CONNECTIONS)
    requests = _v.integer_in("requests", requests, 1, MAX_REQUESTS)
    duration = _v.seconds("duration", duration, MAX_DURATION)
    message_bytes = _v.integer_in("message_bytes", message_bytes, 0, MAX_MESSAGE)
    read_mode = _v.choice("read_mode", read_mode, READ_MODES)
    chunk = _v.integer_in("chunk", chunk, 1, 1 << 24)
    warmup_per_conn = _v.integer_in("warmup_per_conn", warmup_per_conn, 0, 1000)
    seed = _v.integer_in("seed", seed, 0, 10**15)
    d_server, d_client, _ = placement()
    client_cpu = _v.cpu(client_cpu, name="client_cpu", auto=d_client)
    server_cpu = _v.cpu(server_cpu, name="server_cpu", auto=d_server)
    if timeout is None:
        timeout = duration + 20.0
    timeout = _v.seconds("timeout", timeout, MAX_DURATION + 600)
    for name in ([] if isinstance(server, EchoServer) else [server]) + [LOADGEN]:
        ok, why = availability(name)
        if not ok:
            raise ServerUnavailableError(f"{name!r} is not available here: {why}")
    if isinstance(server, EchoServer):
        if server.read_mode != read_mode or server.chunk != chunk:
            raise ValueError(f"read_mode/chunk must match the running server's "
                             f"({server.read_mode!r}, {server.chunk}); got ({read_mode!r}, {chunk})")
        srv, own = server, False
    else:
        srv = EchoServer(server, read_mode=read_mode, chunk=chunk, cpu=server_cpu)
        own = True
    load_before = os.getloadavg()[0]
    try:
        res, begin, end = _loadgen(srv, connections=connections, requests=requests,
                                   duration=duration, message_bytes=message_bytes,
                                   warmup_per_conn=warmup_per_conn, cpu=client_cpu,
                                   timeout=timeout, seed=seed)
        if own:
            srv.stop()
    except BaseException:
        if own:
            srv.kill()
        raise

    settings = {"read_mode": read_mode, "chunk": chunk, "connections": connections,
                "message_bytes": message_bytes, "requests_limit": requests,
                "duration_limit_s": duration}
    return pd.DataFrame([_load_row(srv, settings, res, begin, end, load_before, client_cpu)])


def _load_row(srv, settings: dict, res: dict, begin: dict, end: dict, load_before: float,
              client_cpu) -> dict:
    """One run_load row: the load generator's figures and the server's counters over the
    measured window (end - begin), per second and per message, with the row metadata."""
    from labkit.core import machine

    window = (end["now_ns"] - begin["now_ns"]) / 1e9
    d = {k: end[k] - begin[k] for k in ("msgs", "reads", "writes", "read_waits", "write_waits",
                                       "dispatches", "allocs", "frees", "alloc_bytes")}
    cpu_s = (end["utime_us"] + end["stime_us"] - begin["utime_us"] - begin["stime_us"]) / 1e6
    if d["msgs"] <= 0:
        raise EchoError(f"load on {srv.name}: the server echoed no message in the measured "
                        "window")
    msgs = d["msgs"]
    info = SERVERS[srv.name]
    row = {
        "server": srv.name, "style": info.style, "backend": info.backend,
        "frames": info.frames, "transfer": info.transfer,
        **settings,
        "qps": res["rps"], "completed": res["completed"], "elapsed_s": res["elapsed_s"],
        "stopped_by": res["stopped_by"],
        "p50_us": res["p50_us"], "p90_us": res["p90_us"], "p99_us": res["p99_us"],
        "p999_us": res["p999_us"], "max_us": res["max_us"], "mean_us": res["mean_us"],
        "server_msgs": d["msgs"],
        "allocs": d["allocs"], "allocs_per_s": d["allocs"] / window if window > 0 else float("nan"),
        "allocs_per_msg": d["allocs"] / msgs, "alloc_bytes_per_msg": d["alloc_bytes"] / msgs,
        "reads_per_msg": d["reads"] / msgs, "writes_per_msg": d["writes"] / msgs,
        "read_waits_per_msg": d["read_waits"] / msgs, "write_waits_per_msg": d["write_waits"] / msgs,
        "dispatches_per_msg": d["dispatches"] / msgs,
        "rss_kb": end["rss_kb"], "hwm_kb": end["hwm_kb"], "live_allocs": end["live_allocs"],
        "pool_blocks": end["pool_blocks"],
        "server_cpu_s": cpu_s, "server_cpu_util": cpu_s / window if window > 0 else float("nan"),
        "server_cpu_us_per_msg": 1e6 * cpu_s / msgs,
        "client_cpu_util": res["client_cpu_s"] / res["elapsed_s"] if res["elapsed_s"] > 0 else float("nan"),
        # Involuntary context switches per second: how often another task took the CPU
        # a side was pinned to (a busy machine shows here first).
        "server_preempted_per_s": (end["nivcsw"] - begin["nivcsw"]) / window if window > 0 else float("nan"),
        "client_preempted_per_s": res["client_preempted"] / res["elapsed_s"] if res["elapsed_s"] > 0 else float("nan"),
        "load_avg_1min": load_before,
        "server_cpu": srv.cpu, "client_cpu": client_cpu,
        "placement": _placement_note(srv.cpu, client_cpu),
    }
    built = _manifest().get(srv.name, {})
    row.update(machine.row_metadata(cflags=built.get("cflags"), compiler=built.get("compiler")))
    return row


def _loadgen(srv: EchoServer, *, connections, requests, duration, message_bytes,
             warmup_per_conn, cpu, timeout, seed):
    cmd = [str(BIN_DIR / LOADGEN), "--port", str(srv.port), "--connections", str(connections),
           "--requests", str(requests), "--duration", repr(duration),
           "--message-bytes", str(message_bytes), "--warmup-per-conn", str(warmup_per_conn),
           "--cpu", str(-1 if cpu is None else cpu), "--timeout", repr(timeout),
           "--seed", str(seed)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout + 15)
    except BaseException:
        _kill_group(proc)
        proc.communicate()
        raise
    lines = {}
    for ln in out.decode(errors="replace").splitlines():
        key, _, rest = ln.partition(" ")
        if key in ("RESULT", "STATS_BEGIN", "STATS_END"):
            try:
                lines[key] = json.loads(rest)
            except ValueError:
                raise EchoError(f"load on {srv.name}: the load generator wrote an unreadable "
                                f"{key} line ({rest[:120]!r}); stderr: "
                                f"{err.decode(errors='replace').strip()[-500:]}") from None
    res = lines.get("RESULT", {})
    if proc.returncode != 0 or res.get("error"):
        alive = "" if srv.alive else f"; the server exited with status {srv._proc.returncode}"
        raise EchoError(f"load on {srv.name} failed (load generator status {proc.returncode}): "
                        f"{res.get('error') or err.decode(errors='replace').strip()}"
                        f" [corrupt={res.get('corrupt')}, dropped={res.get('dropped')}, "
                        f"missing={res.get('missing')}]{alive}")
    if "STATS_BEGIN" not in lines or "STATS_END" not in lines:
        raise EchoError(f"load on {srv.name}: the server's counters are missing")
    if not srv.alive:
        raise EchoError(f"{srv.name} exited during the load (status {srv._proc.returncode})")
    return res, lines["STATS_BEGIN"], lines["STATS_END"]


# --- the sweeps of notebook 09 -------------------------------------------------------------
# Their first argument, `sweep`, runs the points: the lab hands in its own
# (labkit.lab.running.sweep.for_notebook: checkpointed and resumable), called
# sweep(measure_one, points, desc=..., checkpoint=PART).

def connection_sweep(sweep, names, connections, repeats: int, *, requests: int,
                     duration: float, message_bytes: int):
    """Every server at every number of connections, `repeats` times."""
    return sweep(
        lambda repeat, connections, server: run_load(
            server, connections=connections, requests=requests, duration=duration,
            message_bytes=message_bytes, seed=repeat + 1).assign(repeat=repeat),
        [dict(repeat=r, connections=c, server=s)
         for r in range(repeats) for c in connections for s in names],
        desc="connections", checkpoint="connections",
    )


def reads_sweep(sweep, names, *, chunks, repeats: int, connections: int, requests: int,
                duration: float, message_bytes: int):
    """Every server reading whole frames and with a read_some loop of each chunk size,
    `repeats` times."""
    points = [dict(repeat=r, mode=m, chunk=c, server=s)
              for r in range(repeats)
              for m, c in [("whole", 4096)] + [("some", c) for c in chunks]
              for s in names]
    return sweep(
        lambda repeat, mode, chunk, server: run_load(
            server, connections=connections, requests=requests, duration=duration,
            message_bytes=message_bytes, read_mode=mode, chunk=chunk,
            seed=repeat + 1).assign(repeat=repeat),
        points, desc="whole vs read_some", checkpoint="reads",
    )
