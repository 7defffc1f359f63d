"""The hostile clients an echo server of notebook 09 must survive: disconnects mid-frame,
resets, a 4 GiB length header, garbage, a client that leaves before its echo, pipelined
frames, a slow client; then a good client, and, over several rounds, no leaked descriptor
or heap block and a clean SIGTERM.

    from labkit.experiments import echo, echo_hostile
    with echo.start_server("cxx20_new") as srv:
        echo_hostile.bad_clients(srv)                # one row per case: what was done, ok
    echo_hostile.robustness("cxx20_new", rounds=3)   # every case, rounds times, then SIGTERM
"""
from __future__ import annotations

import os
import socket
import struct
import threading
import time

from labkit.core import validate as _v
from labkit.experiments.echo import (HEADER, HOST, MAGIC_ECHO, MAX_DURATION, EchoServer,
                                     children, echo, recv_exactly, start_server)
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

# Live heap blocks two leak-free snapshots may differ by: asio keeps a few freed blocks
# per thread for reuse (full again once the server is idle, so in practice the growth is
# 0). A leak on any one path, once per round, grows by rounds - 1 >= 2 with the default.
CACHE_SLACK = 1


def _closed_by_peer(s: socket.socket, timeout: float) -> bool:
    """True if the server closes this connection (EOF or reset) within the timeout,
    without sending anything first."""
    s.settimeout(timeout)
    try:
        data = s.recv(1 << 16)
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    return data == b""


def _connect(server: EchoServer, timeout: float) -> socket.socket:
    return socket.create_connection((HOST, server.port), timeout=timeout)


def _reset_on_close(s: socket.socket) -> None:
    """Make close() send a reset (RST) instead of an orderly FIN."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _mid_header(server: EchoServer, timeout: float):
    with _connect(server, timeout) as s:
        s.sendall(HEADER.pack(MAGIC_ECHO, 100)[:3])
    return "sent 3 of 8 header bytes, closed", True


def _mid_message(server: EchoServer, timeout: float):
    with _connect(server, timeout) as s:
        s.sendall(HEADER.pack(MAGIC_ECHO, 1000) + b"x" * 10)
    return "sent 10 of 1000 payload bytes, closed", True


def _reset_mid_message(server: EchoServer, timeout: float):
    with _connect(server, timeout) as s:
        s.sendall(HEADER.pack(MAGIC_ECHO, 5000) + b"y" * 100)
        _reset_on_close(s)
    return "sent 100 of 5000 payload bytes, reset the connection", True


def _closes_after(data: bytes):
    """A client that sends `data` and passes only if the server then closes on it."""
    def client(server: EchoServer, timeout: float):
        with _connect(server, timeout) as s:
            s.sendall(data)
            closed = _closed_by_peer(s, timeout)
        return ("closed by the server" if closed else "left open"), closed
    return client


_huge_length = _closes_after(HEADER.pack(MAGIC_ECHO, 0xFFFFFFF0))
_garbage = _closes_after(bytes(range(256)) * 4)


def _leave_before_reply(server: EchoServer, timeout: float):
    big = server.max_message
    with _connect(server, timeout) as s:
        s.sendall(HEADER.pack(MAGIC_ECHO, big) + os.urandom(big))
        _reset_on_close(s)
    return f"sent a {big}-byte message, reset before reading the echo", True


def _pipelined(server: EchoServer, timeout: float):
    msgs = [os.urandom(n) for n in (0, 1, 7, 8, 100, 4096, 70000, 3) * 4]
    blob = b"".join(HEADER.pack(MAGIC_ECHO, len(m)) + m for m in msgs)
    with _connect(server, timeout) as s:
        # Sent from a thread: the echoes come back while we still send, and a
        # client that only sends would block once both socket buffers are full.
        sender = threading.Thread(target=s.sendall, args=(blob,), daemon=True)
        sender.start()
        back = recv_exactly(s, len(blob))
        sender.join(timeout)
    same = back == blob
    return (f"{len(msgs)} frames in one send: "
            f"{'all echoed byte for byte' if same else 'ECHO DIFFERS'}"), same


def _byte_by_byte(server: EchoServer, timeout: float):
    payload = os.urandom(300)
    frame = HEADER.pack(MAGIC_ECHO, len(payload)) + payload
    with _connect(server, timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(0, len(frame), 7):
            s.sendall(frame[i:i + 7])
            time.sleep(0.0005)
        back = recv_exactly(s, len(frame))
    same = back == frame
    return f"a frame in 7-byte pieces: {'echoed' if same else 'ECHO DIFFERS'}", same


def _good_client(server: EchoServer, timeout: float):
    payloads = [b"", b"a", os.urandom(64), os.urandom(16384), os.urandom(server.max_message)]
    bad = [len(p) for p in payloads if echo(server.port, p, timeout) != p]
    return ("sizes 0, 1, 64, 16384, max all echoed" if not bad else f"sizes {bad} differ"), not bad


# (case, what the server must do, the client), played in this order on one server.
_BAD_CLIENTS = (
    ("disconnect mid-header", "no crash", _mid_header),
    ("disconnect mid-message", "no crash", _mid_message),
    ("reset mid-message", "no crash", _reset_mid_message),
    ("huge length header", "server closes the connection", _huge_length),
    ("garbage", "server closes the connection", _garbage),
    ("leave before the reply", "no crash (EPIPE, not SIGPIPE)", _leave_before_reply),
    ("pipelined frames", "every frame echoed", _pipelined),
    ("slow client", "echoed", _byte_by_byte),
)
# Played after every bad client: what they did must not have cost a good one its service.
_GOOD_CLIENT = ("good client afterwards", "echoed", _good_client)


def _play(server: EchoServer, timeout: float, case: str, expect: str, client) -> dict:
    """One case's row; a server that died on it fails the case whatever the client saw."""
    try:
        outcome, ok = client(server, timeout)
    except Exception as exc:  # any failure of one case is its row, not the end
        outcome, ok = f"{type(exc).__name__}: {exc}", False
    alive = server.alive
    return {"server": server.name, "case": case, "expect": expect,
            "outcome": outcome if alive else f"{outcome}; SERVER DIED",
            "ok": bool(ok and alive)}


def bad_clients(server: EchoServer, *, timeout: float = 5.0):
    """Throw the clients a server must survive at it, then check that a good client is
    still served. One row per case: what was done, what the server did, and ok."""
    import pandas as pd

    if not isinstance(server, EchoServer):
        raise TypeError(f"server must be a running EchoServer, not {type(server).__name__}")
    timeout = _v.seconds("timeout", timeout, MAX_DURATION)
    return pd.DataFrame([_play(server, timeout, *case)
                         for case in (*_BAD_CLIENTS, _GOOD_CLIENT)])


def robustness(name: str, *, rounds: int = 3, timeout: float = 5.0):
    """The bad clients, `rounds` times against one server, then SIGTERM. One row per case
    (ok only if it was ok in every round), and rows for what must hold afterwards: the
    descriptors and the heap allocations alive after the first round (pools and caches
    warm) are still all there is after the last; SIGTERM ends the server with status 0
    and its counters, no connection left open; no server or load generator process of
    ours is left."""
    import pandas as pd

    rounds = _v.integer_in("rounds", rounds, 2, 100)
    timeout = _v.seconds("timeout", timeout, MAX_DURATION)
    srv = start_server(name)
    try:
        per_round = [bad_clients(srv, timeout=timeout)]
        st1 = srv.snapshot()
        for _ in range(rounds - 1):
            per_round.append(bad_clients(srv, timeout=timeout))
        st2 = srv.snapshot()
        final = srv.stop()
    except BaseException:
        srv.kill()
        raise
    cases = pd.concat(per_round, ignore_index=True)
    rows = []
    for case, g in cases.groupby("case", sort=False):
        bad = g[~g.ok]
        rows.append({"server": name, "case": case, "expect": g.expect.iloc[0],
                     "outcome": (bad.outcome.iloc[0] if len(bad) else g.outcome.iloc[0]),
                     "ok": bool(g.ok.all())})
    # Frames a pool keeps are not leaked: they wait for reuse, and a round that happens
    # to overlap more connections needs a few more of them.
    live1 = st1["live_allocs"] - st1["pool_blocks"]
    live2 = st2["live_allocs"] - st2["pool_blocks"]
    left = children()
    rows += [
        {"server": name, "case": "no descriptor leak", "expect": "same open fds",
         "outcome": f"{st1['open_fds']} -> {st2['open_fds']} open descriptors",
         "ok": st2["open_fds"] == st1["open_fds"]},
        {"server": name, "case": "no heap growth",
         "expect": f"live allocations (less pooled frames) grow by at most {CACHE_SLACK}",
         "outcome": f"{live1} -> {live2} live allocations after {rounds - 1} more rounds "
                    f"({st2['pool_blocks']} pooled frames)",
         "ok": live2 - live1 <= CACHE_SLACK},
        {"server": name, "case": "SIGTERM", "expect": "exit 0, counters, no connection open",
         "outcome": f"exit 0, {final['conns_open']} connections open, "
                    f"{final['closed_bad']} closed as bad, {final['closed_mid']} mid-frame",
         "ok": final["conns_open"] == 0},
        {"server": name, "case": "no process left", "expect": "no child of ours",
         "outcome": "none" if not left else str(left), "ok": not left},
    ]
    return pd.DataFrame(rows)


def robustness_of(names, *, rounds: int):
    """robustness() for every server named, one frame."""
    import pandas as pd

    return pd.concat([robustness(n, rounds=rounds) for n in names], ignore_index=True)
