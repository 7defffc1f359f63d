"""The package as a new user gets it: build the wheel, install it into a fresh virtual
environment in a temporary folder (pinned by requirements.lock), and from a folder that
is not a checkout run `labkit measure asm --json` and a quick one-notebook reproduce.
Slow (a build and an install): marked `wheel`; `make test` runs it."""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel

REPO = Path(__file__).resolve().parent.parent
SMALL_NOTEBOOK = "00_claims_ledger"  # reads verdicts only: seconds, not minutes


def _run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert res.returncode == 0, f"{cmd}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: the build tools of this environment, no download needed.
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
          "--quiet", "-w", str(out), str(REPO)], timeout=1800)
    (found,) = out.glob("labkit-*.whl")
    return found


def test_wheel_holds_what_the_lab_needs(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert any(n.startswith("labkit/core/_core.") and n.endswith(".so") for n in names)
    assert "labkit/bin/liblabkit_c-O2.so" in names and "labkit/bin/lk_count" in names
    assert "labkit/bin/build.json" in names  # and the reasons for anything skipped
    assert "labkit/shipped/data/claims.csv" in names
    assert f"labkit/shipped/notebooks/{SMALL_NOTEBOOK}.py" in names
    assert "labkit/lab/cli.py" in names
    meta = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "labkit = labkit.lab.cli:main" in zipfile.ZipFile(wheel).read(meta).decode()


def test_installed_wheel_measures_and_reproduces(wheel, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    py, labkit = venv / "bin" / "python", venv / "bin" / "labkit"
    _run([str(py), "-m", "pip", "install", "--quiet", "-c", str(REPO / "requirements.lock"),
          str(wheel)], timeout=1800)
    work = tmp_path / "work"  # not a checkout: results must land in ./labkit-results
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("LABKIT_RESULTS_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    res = _run([str(labkit), "--version"], cwd=work, env=env, timeout=120)
    assert res.stdout.startswith("labkit ")
    res = _run([str(labkit), "measure", "asm", "--json", "--switches", "10000",
                "--repeats", "2"], cwd=work, env=env, timeout=600)
    rows = json.loads(res.stdout)
    assert len(rows) == 2 and rows[0]["entry"] == "asm"
    assert all(r["counted_switches"] == r["switches"] for r in rows)
    # The commit it was built from, not whatever git repository the venv sits in.
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    if head:
        assert rows[0]["labkit_commit"].removesuffix("-dirty") == head
    res = _run([str(labkit), "reproduce", "--quick", "--only", SMALL_NOTEBOOK,
                "--no-progress"], cwd=work, env=env, timeout=1800)
    home = work / "labkit-results"
    assert (home / "reports" / "quick" / "labkit-report.html").exists(), res.stdout
    assert (home / "reports" / "quick" / "data" / f"{SMALL_NOTEBOOK}.csv").exists()
    assert "verdicts:" in res.stdout
    # Nothing was written into the installed package.
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert not (site / "data").exists() and not (site / "reports").exists()
