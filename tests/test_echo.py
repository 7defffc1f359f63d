"""The echo servers of notebook 09 (labkit.experiments.echo, and echo_hostile's clients):
each server that runs here echoes every byte under a short bounded load, survives bad
clients and still serves a good one, stops cleanly on SIGTERM, and leaves no process behind; a server that cannot run is reported with the
reason; the load generator itself catches a server that corrupts, drops or swallows a
message; bad arguments are refused naming the parameter. No timing thresholds: only
counts, bytes and exit statuses are checked."""
import json
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import assert_each_raises
from labkit.experiments import echo, echo_hostile
from labkit.lab.analysis import echo_servers

AVAILABLE = echo.available()
HDR = echo.HEADER


@pytest.fixture(autouse=True)
def no_process_left():
    yield
    assert echo.children() == [], "a server or load generator was left running"


@pytest.mark.parametrize("name", AVAILABLE)
def test_short_load_is_echoed_byte_for_byte(name):
    df = echo.run_load(name, connections=20, requests=2000, duration=5.0, message_bytes=100)
    row = df.iloc[0]
    # The load generator compares every response with its request and fails the run
    # (EchoError) on any difference; here the counts must add up as well.
    assert row.completed > 0
    assert row.server_msgs >= row.completed
    assert row.stopped_by in ("requests", "duration")
    assert {"machine_id", "cpu_model", "compiler", "cflags", "qps", "p99_us", "allocs_per_s",
            "rss_kb", "read_waits_per_msg"} <= set(df.columns)


@pytest.mark.parametrize("name", AVAILABLE)
def test_read_some_in_tiny_pieces_and_a_thousand_connections(name):
    # 7-byte reads: every frame crosses many reads and the header is split between two.
    some = echo.run_load(name, connections=10, requests=300, duration=5.0,
                         message_bytes=1000, read_mode="some", chunk=7).iloc[0]
    assert some.completed > 0 and some.reads_per_msg > 100
    many = echo.run_load(name, connections=1000, requests=3000, duration=5.0,
                         message_bytes=16).iloc[0]
    assert many.completed > 0


@pytest.mark.parametrize("name", AVAILABLE)
def test_bad_clients_do_not_kill_it_and_nothing_leaks(name):
    table = echo_hostile.robustness(name, rounds=3)
    assert table.ok.all(), table[~table.ok].to_string()
    assert {"huge length header", "garbage", "disconnect mid-message",
            "good client afterwards", "no descriptor leak", "no heap growth"} <= set(table.case)


@pytest.mark.parametrize("name", AVAILABLE)
def test_sigterm_with_connections_open(name):
    srv = echo.start_server(name)
    pid = srv.pid
    socks = []
    try:
        socks += [socket.create_connection((echo.HOST, srv.port)) for _ in range(3)]
        half = socket.create_connection((echo.HOST, srv.port))
        socks.append(half)
        half.sendall(HDR.pack(echo.MAGIC_ECHO, 500) + b"z" * 20)  # a frame left half-sent
        assert echo.echo(srv.port, b"still serving") == b"still serving"
        final = srv.stop()
    finally:
        for s in socks:
            s.close()
        if srv.alive:  # a failure above must not leave the server running
            srv.kill()
    assert final["conns_open"] == 0
    assert final["server"] == name
    assert not Path(f"/proc/{pid}").exists()


def test_unavailable_servers_say_why():
    table = echo.servers()
    assert list(table.server) == list(echo.SERVER_NAMES)
    assert (table.why_not[~table.available].str.len() > 0).all()
    assert (table.why_not[table.available] == "").all()


def test_a_missing_server_is_a_row_and_a_clear_error(tmp_path, monkeypatch):
    (tmp_path / "asio_uring.missing.txt").write_text(
        "missing: <liburing.h> not found: apt-get install liburing-dev\n")
    monkeypatch.setattr(echo, "BIN_DIR", tmp_path)
    row = echo.servers().set_index("server").loc["asio_uring"]
    assert not row.available
    assert "apt-get install liburing-dev" in row.why_not
    assert "not built" in echo.servers().set_index("server").loc["callback_epoll"].why_not
    with pytest.raises(echo.ServerUnavailableError, match="liburing-dev"):
        echo.start_server("asio_uring")
    with pytest.raises(echo.ServerUnavailableError, match="liburing-dev"):
        echo.run_load("asio_uring", requests=10)


def test_build_skips_what_it_cannot_build(tmp_path, monkeypatch):
    from labkit.core import native_build as build

    monkeypatch.setattr(build, "TARGETS", {k: build.TARGETS[k]
                                           for k in ("callback_epoll", "callback_uring")})
    monkeypatch.setattr(build, "_header", lambda name, lang="c++": name != "liburing.h")
    assert build.main(["native_build.py", str(tmp_path)]) == 0
    assert (tmp_path / "callback_epoll").exists()
    assert not (tmp_path / "callback_uring").exists()
    assert "apt-get install liburing-dev" in (tmp_path / "callback_uring.missing.txt").read_text()
    manifest = json.loads((tmp_path / "servers.json").read_text())
    assert set(manifest) == {"callback_epoll"} and "-O2" in manifest["callback_epoll"]["cflags"]


# ---- the checker: a deliberately broken server must fail the run ----

class BrokenServer:
    """A Python echo server on 127.0.0.1 that misbehaves once, after `after` replies:
    flips a byte ('corrupt'), closes the connection ('drop'), never answers ('swallow'),
    sends bytes past the reply ('extra') or closes right after replying ('close_idle')."""

    def __init__(self, mode: str, after: int = 30):
        self.mode, self.after, self.replies = mode, after, 0
        self.lock = threading.Lock()
        self.sock = socket.create_server((echo.HOST, 0))
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.accept, daemon=True)]
        self.threads[0].start()

    def accept(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            t = threading.Thread(target=self.serve, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def serve(self, conn):
        conn.settimeout(0.2)
        buf = b""
        with conn:
            while not self.stop.is_set():
                try:
                    data = conn.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while len(buf) >= 8:
                    _, n = HDR.unpack(buf[:8])
                    if len(buf) < 8 + n:
                        break
                    frame, buf = buf[:8 + n], buf[8 + n:]
                    with self.lock:
                        self.replies += 1
                        strike = self.replies == self.after
                    if strike and self.mode == "corrupt":
                        frame = frame[:-1] + bytes([frame[-1] ^ 0x40])
                    elif strike and self.mode == "drop":
                        return
                    elif strike and self.mode == "swallow":
                        continue
                    elif strike and self.mode == "extra":
                        frame += b"EXTRA-BYTES"
                    conn.sendall(frame)
                    if strike and self.mode == "close_idle":
                        return

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(5)
        self.sock.close()


def loadgen(port, timeout=3.0):
    cmd = [str(echo.BIN_DIR / echo.LOADGEN), "--port", str(port), "--connections", "4",
           "--requests", "400", "--duration", "5", "--message-bytes", "50", "--stats", "0",
           "--timeout", str(timeout)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30)
    result = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    return out.returncode, json.loads(result[-1][len("RESULT "):])


@pytest.mark.skipif(not echo.availability(echo.LOADGEN)[0], reason="load generator not built")
@pytest.mark.parametrize("mode,status,counter", [("corrupt", 4, "corrupt"),
                                                 ("drop", 4, "dropped"),
                                                 ("swallow", 3, "missing"),
                                                 ("extra", 4, "corrupt"),
                                                 ("close_idle", 4, "dropped")])
def test_the_load_generator_fails_a_broken_server(mode, status, counter):
    srv = BrokenServer(mode)
    try:
        code, res = loadgen(srv.port)
    finally:
        srv.close()
    assert code == status, res
    assert res[counter] >= 1 and res["error"]


@pytest.mark.skipif(not echo.availability(echo.LOADGEN)[0], reason="load generator not built")
def test_the_load_generator_passes_a_correct_python_server():
    srv = BrokenServer("none")
    try:
        code, res = loadgen(srv.port)
    finally:
        srv.close()
    assert code == 0, res
    assert res["completed"] == 400 and res["corrupt"] == res["dropped"] == res["missing"] == 0


@pytest.mark.skipif("callback_epoll" not in AVAILABLE, reason="callback_epoll not built")
def test_runs_stop_by_themselves():
    by_count = echo.run_load("callback_epoll", connections=5, requests=50, duration=60.0).iloc[0]
    assert by_count.stopped_by == "requests" and by_count.completed == 50
    by_time = echo.run_load("callback_epoll", connections=5, requests=10**9, duration=0.2).iloc[0]
    assert by_time.stopped_by == "duration" and by_time.completed < 10**9


# ---- bad arguments ----

@pytest.mark.parametrize("kwargs,exc,word", [
    (dict(connections=0), ValueError, "connections"),
    (dict(connections=1001), ValueError, "connections"),
    (dict(connections=2.5), TypeError, "connections"),
    (dict(requests=0), ValueError, "requests"),
    (dict(duration=0), ValueError, "duration"),
    (dict(duration="1"), TypeError, "duration"),
    (dict(message_bytes=-1), ValueError, "message_bytes"),
    (dict(message_bytes=(1 << 20) + 1), ValueError, "message_bytes"),
    (dict(read_mode="half"), ValueError, "read_mode"),
    (dict(read_mode=1), TypeError, "read_mode"),
    (dict(chunk=0), ValueError, "chunk"),
    (dict(server_cpu=10**6), ValueError, "server_cpu"),
    (dict(client_cpu=True), TypeError, "client_cpu"),
])
def test_bad_arguments_name_the_parameter(kwargs, exc, word):
    with pytest.raises(exc, match=word):
        echo.run_load("callback_epoll", **kwargs)


@pytest.mark.parametrize("call,exc,word", [
    (lambda: echo.echo(0, b"x"), ValueError, "port"),
    (lambda: echo.echo(70000, b"x"), ValueError, "port"),
    (lambda: echo.echo("80", b"x"), TypeError, "port"),
    (lambda: echo.echo(1, "text"), TypeError, "payload"),
    (lambda: echo.echo(1, b"x", timeout=float("inf")), ValueError, "timeout"),
    (lambda: echo_hostile.robustness("callback_epoll", timeout="5"), TypeError, "timeout"),
    (lambda: echo_servers.ordering(None, "cxx20_new"), TypeError, "order"),
], ids=["port-0", "port-big", "port-str", "payload-str", "timeout-inf", "robustness-timeout",
        "ordering-order"])
def test_helpers_name_the_bad_parameter(call, exc, word):
    with pytest.raises(exc, match=word):
        call()
    assert echo.children() == []  # nothing was started on the way to the error


def test_bad_server_names():
    assert_each_raises(
        (lambda: echo.run_load("nginx"), ValueError, "server must be one of"),
        (lambda: echo.run_load(3), TypeError, "server"),
        (lambda: echo.start_server("nginx"), ValueError, "server must be one of"))
