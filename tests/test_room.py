"""The room on loopback: a scheduler and two workers labelled as two machines, the suite
run on both and merged, a worker killed mid-run, and peers without the room's
certificate refused. No timing thresholds: the waits below bound how long a test may
hang, they do not judge a speed."""
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

pytest.importorskip("distributed")
pytest.importorskip("cryptography")

from labkit.lab import cli  # noqa: E402
from labkit.lab.analysis.compare_machines import ladder_figure  # noqa: E402
from labkit.lab.room import noise, room  # noqa: E402
from labkit.lab.room.noise import wait_for_text  # noqa: E402
from labkit.lab.room.tls import make_credentials, read_room, security, write_room  # noqa: E402
from labkit.lab.sharing import bundle  # noqa: E402

FAST = ["03_symmetric_vs_asymmetric"]  # the quickest notebook in quick mode (about 10 s)
MACHINES = {"alice": "aaaaaa000001", "bob": "bbbbbb000002"}


def _start(args, log: Path):
    with open(log, "w") as f:
        return subprocess.Popen([sys.executable, "-m", "labkit", "room", *args], stdout=f,
                                stderr=subprocess.STDOUT)


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def the_room(tmp_path_factory):
    """A served room with alice and bob joined (two 'machines' on this one)."""
    tmp = tmp_path_factory.mktemp("room")
    room_file = tmp / "room.json"
    procs = {"serve": _start(["serve", "--room", str(room_file), "--port", "0"],
                             tmp / "serve.log")}
    try:
        wait_for_text(tmp / "serve.log", "each participant runs", 60, proc=procs["serve"])
        for name, mid in MACHINES.items():
            procs[name] = _start(["join", str(room_file), "--name", name, "--allow-root",
                                  "--machine-id", mid], tmp / f"{name}.log")
        for name in MACHINES:
            wait_for_text(tmp / f"{name}.log", "joined as", 120, proc=procs[name])
        yield {"file": room_file, "dir": tmp, "procs": procs}
    finally:
        for p in procs.values():
            _stop(p)


def test_room_file_is_private_and_never_printed(the_room):
    mode = stat.S_IMODE(os.stat(the_room["file"]).st_mode)
    assert mode == 0o600
    doc = read_room(the_room["file"])
    assert doc["address"].startswith("tls://127.0.0.1:")  # loopback unless told otherwise
    log = (the_room["dir"] / "serve.log").read_text()
    assert "PRIVATE KEY" not in log and doc["worker"]["key"] not in log
    assert "labkit room join room.json --name" in log
    for name in MACHINES:
        assert "can now run labkit's suite on this machine" in \
            (the_room["dir"] / f"{name}.log").read_text()


def test_two_machines_run_and_merge(the_room, tmp_path):
    seen = []
    res = room.run(the_room["file"], quick=True, only=FAST, out=tmp_path / "out",
                   on_update=lambda r: seen.append(r.table.copy()), timeout=600)
    t = res.table.set_index("name")
    assert list(t.state) == ["done", "done"], res.table.to_string()
    assert set(res.bundles) == set(MACHINES.values())
    assert any((s.state == "running").any() for s in seen)  # the live table moved
    for mid in MACHINES.values():
        b = bundle.read_bundle(res.bundles[mid])
        assert b["machine"]["machine_id"] == mid
        assert set(b["measurements"].notebook) == set(FAST)
        assert (tmp_path / "out" / f"{res.bundles[mid].name}.tar.gz").exists()
    cols = res.comparison["verdicts"].columns.get_level_values(0)
    assert sum(m in " ".join(cols) for m in ("aaaaaa", "bbbbbb")) == 2
    assert (tmp_path / "out" / "room-verdicts.csv").exists()
    # The participant's own results were not touched: everything ran in a private folder.
    assert not list((tmp_path / "out").glob("**/reports"))


def test_compare_notebook_runs_the_room(the_room, tmp_path):
    """compare_machines.py with a room file: the live table, then the merged comparison."""
    import jupytext
    import nbformat
    import papermill

    from labkit.lab.running import notebook_run, notebooks

    nb = notebooks.NOTEBOOKS / "compare_machines.py"
    src = tmp_path / "compare.ipynb"
    nbformat.write(jupytext.read(nb), src)
    papermill.execute_notebook(str(src), str(tmp_path / "out.ipynb"),
                               parameters={"room_file": str(the_room["file"]), "quick": True,
                                           "room_only": FAST, "room_out": str(tmp_path / "b")},
                               kernel_name=notebook_run.KERNEL_NAME, progress_bar=False,
                               cwd=str(nb.parent))
    text = (tmp_path / "out.ipynb").read_text()
    assert "done" in text and "C000.4" in text
    assert sorted(p.name for p in (tmp_path / "b").glob("*.labkit")) == \
        sorted(f"{n}-{m}.labkit" for n, m in MACHINES.items())


def test_the_room_publishes_to_a_registry_and_judges_predictions(the_room, tmp_path):
    """The room on real Dask workers, its bundles published to a local registry as they
    come: each machine stored once, the room page's tally and the learners' predictions."""
    pytest.importorskip("duckdb")
    from labkit.lab.registry import query

    preds = tmp_path / "predictions.csv"
    preds.write_text("learner,claim_id,predicted\nann,C000.4,reproduced\n"
                     "ben,C000.4,contradicted\n")
    reg = tmp_path / "registry"
    res = room.run(the_room["file"], quick=True, only=FAST, out=tmp_path / "out",
                   registry=reg, predictions=preds, timeout=600)
    assert list(res.table.state) == ["done", "done"], res.table.to_string()
    assert set(res.published) == set(MACHINES.values())
    assert all(v.startswith("stored as ") for v in res.published.values()), res.published
    rows = query.claims(reg, quick=True)
    assert set(rows.machine) == set(MACHINES.values())
    page = res.page.read_text()
    assert "C000.4" in page and "2 learners wrote 2 predictions" in page
    # the same bundles again store nothing new
    from labkit.lab.room import page as room_page

    for folder in res.bundles.values():
        assert room_page.publish_one(folder, reg) == "already in the registry"
    assert len(query.claims(reg, quick=True)) == len(rows)


def test_ladder_figure_of_a_merge():
    import pandas as pd

    ladder = pd.DataFrame({("m1", "median ns"): [2.0, 4.0], ("m1", "ratio to asm"): [1.0, 2.0],
                           ("m2", "median ns"): [3.0, 3.0], ("m2", "ratio to asm"): [1.0, 1.0]},
                          index=["asm", "ucontext"])
    fig = ladder_figure({"ladder": ladder})
    assert len(fig.axes[0].patches) == 4
    assert ladder_figure({"ladder": pd.DataFrame()}) is None


def test_a_worker_killed_mid_run_is_reported_and_the_other_kept(the_room, tmp_path):
    killed = {}

    def kill_bob(r):
        row = r.table.set_index("name").loc["bob"]
        if not killed and row.state == "running" and row.notebook:
            proc = the_room["procs"]["bob"]
            killed["suites"] = [c for c in psutil.Process(proc.pid).children(recursive=True)
                                if "labkit room suite" in " ".join(c.cmdline())]
            os.kill(proc.pid, signal.SIGKILL)
            killed["at"] = row.progress

    res = room.run(the_room["file"], quick=True, only=FAST, out=tmp_path / "out",
                   on_update=kill_bob, poll=0.2, timeout=600)
    t = res.table.set_index("name")
    assert killed, "bob never reached a running notebook"
    assert t.loc["bob", "state"] == "left", res.table.to_string()
    assert t.loc["alice", "state"] == "done", res.table.to_string()
    assert list(res.bundles) == [MACHINES["alice"]]
    assert bundle.read_bundle(res.bundles[MACHINES["alice"]])["machine"]["machine_id"] == \
        MACHINES["alice"]
    # The killed worker's suite does not measure on for nobody.
    assert killed["suites"]
    gone, alive = psutil.wait_procs(killed["suites"], timeout=60)
    assert not alive


def _client_refused(address, sec):
    from distributed import Client

    with pytest.raises((OSError, TypeError, ValueError)):
        Client(address, timeout="10s", **({"security": sec} if sec else {}))


def test_client_without_the_rooms_certificate_is_refused(the_room):
    doc = read_room(the_room["file"])
    other = make_credentials()
    _client_refused(doc["address"].replace("tls://", "tcp://"), None)  # no TLS at all
    _client_refused(doc["address"], security({"ca": other["ca"], **other}, "client"))
    # Mutual: trusting the room's CA but showing a certificate of another CA.
    _client_refused(doc["address"], security({"ca": doc["ca"], **{r: other[r] for r in
                                                                   ("client",)}}, "client"))


def test_worker_without_the_rooms_certificate_is_refused(the_room, tmp_path):
    from distributed import Client

    doc = read_room(the_room["file"])
    other = make_credentials()
    # Trusts the room's CA (so it talks to the real scheduler) but holds another CA's cert.
    forged = write_room(tmp_path / "forged.json", doc["address"],
                        {"ca": doc["ca"], "scheduler": other["scheduler"],
                         "client": other["client"], "worker": other["worker"]})
    log = tmp_path / "mallory.log"
    serve_log = the_room["dir"] / "serve.log"
    failed_before = serve_log.read_text().count("TLS handshake failed")
    proc = _start(["join", str(forged), "--name", "mallory", "--allow-root",
                   "--machine-id", "cccccc000003"], log)
    try:
        wait_for_text(log, "Waiting to connect", 60, proc=proc)
        # The scheduler turns its handshakes away and says so.
        end = time.monotonic() + 60
        while serve_log.read_text().count("TLS handshake failed") <= failed_before:
            assert time.monotonic() < end, "the scheduler never saw mallory's handshake"
            time.sleep(0.5)
        with Client(doc["address"], security=security(doc, "client"), timeout="20s") as c:
            names = [w["name"] for w in c.scheduler_info(n_workers=-1)["workers"].values()]
        assert not any(str(n).startswith("mallory") for n in names)
        assert "joined as" not in log.read_text()
    finally:
        _stop(proc)


def test_bad_input_names_the_parameter(tmp_path):
    with pytest.raises(ValueError, match="room"):
        room.run(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text(json.dumps({"kind": "something else"}))
    with pytest.raises(ValueError, match="room"):
        read_room(tmp_path / "x.json")
    with pytest.raises(TypeError, match="room"):
        read_room(42)
    with pytest.raises(ValueError, match="name"):
        room.join(tmp_path / "x.json", name="not a name!")
    with pytest.raises(TypeError, match="quick"):
        room.run(tmp_path / "x.json", quick="yes")
    with pytest.raises(ValueError, match="only"):
        room.run(tmp_path / "x.json", only=["no_such_notebook"])
    with pytest.raises(ValueError, match="port"):
        room.serve(tmp_path / "r.json", port=70000)
    with pytest.raises(ValueError, match="blocks"):
        noise.noise(blocks=0)
    with pytest.raises(TypeError, match="quiet"):
        noise.noise(quiet="yes")
    assert cli.main(["room", "run", str(tmp_path / "missing.json")]) == 2
    with pytest.raises(TypeError, match="params"):
        room.run(tmp_path / "x.json", params=["cpu"])


def test_join_refuses_root_without_allow_root(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("not root here")
    write_room(tmp_path / "r.json", "tls://127.0.0.1:1", make_credentials())
    with pytest.raises(PermissionError, match="root"):
        room.join(tmp_path / "r.json", name="root-user")


def test_a_refused_merge_is_reported_and_the_bundles_kept(tmp_path):
    fixture = Path(__file__).parent / "fixtures" / "synthetic-aarch64.labkit"
    r = room.RoomRun(out=tmp_path, bundles={"a": fixture, "b": fixture})
    room._merge(r)  # the same machine twice: merge refuses
    assert r.comparison is None and "same machine" in r.merge_error
    assert set(r.bundles) == {"a", "b"}
