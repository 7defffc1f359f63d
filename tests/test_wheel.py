"""The package as a new user gets it: build the wheel, install it into a fresh virtual
environment in a temporary folder (pinned by requirements.lock), and from a folder that
is not a checkout run `labkit measure asm --json` and every notebook in quick mode
(`labkit reproduce --quick`), writing to ./labkit-results/.
Slow (a build, an install and a quick run of the whole lab, minutes): marked `wheel`;
`make test` runs it."""
import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from labkit.lab.judging import claims, verdicts
from labkit.lab.running import notebooks

pytestmark = pytest.mark.wheel

REPO = Path(__file__).resolve().parent.parent
GLOSSARY = REPO / "docs" / "glossary.md"
NOTEBOOKS = [p.stem for p in notebooks.notebook_sources()]


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


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """(venv, work folder outside any checkout, environment) with the wheel installed."""
    root = tmp_path_factory.mktemp("installed")
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-c",
          str(REPO / "requirements.lock"), str(wheel)], timeout=1800)
    work = root / "work"  # not a checkout: results must land in ./labkit-results
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("LABKIT_")}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    return venv, work, env


def test_wheel_holds_every_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    folders = {p.parent.relative_to(REPO).as_posix() for p in (REPO / "labkit").rglob("__init__.py")
               if "__pycache__" not in p.parts}
    assert "labkit/lab/analysis" in folders
    missing = sorted(f for f in folders if f"{f}/__init__.py" not in names)
    assert not missing, f"packages missing from the wheel: {missing}"
    # Every module of every package, not only its __init__.py.
    modules = {p.relative_to(REPO).as_posix() for f in folders for p in (REPO / f).glob("*.py")}
    assert not modules - names, f"modules missing from the wheel: {sorted(modules - names)}"


def test_wheel_holds_its_package_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    sources = set()
    for package, patterns in package_data.items():
        folder = REPO.joinpath(*package.split("."))
        for pattern in patterns:
            if pattern.split("/")[0] in ("bin", "shipped"):
                continue  # made by the build, not in the checkout: checked below
            sources |= {p.relative_to(REPO).as_posix() for p in folder.glob(pattern) if p.is_file()}
    assert any(s.startswith("labkit/csrc/") for s in sources), "the patterns found no sources"
    assert not sources - names, f"package data missing from the wheel: {sorted(sources - names)}"
    assert any(n.startswith("labkit/core/_core.") and n.endswith(".so") for n in names)
    assert "labkit/bin/liblabkit_c-O2.so" in names and "labkit/bin/lk_count" in names
    assert "labkit/bin/build.json" in names  # and the reasons for anything skipped
    assert "labkit/shipped/data/claims.csv" in names
    # The glossary the report inlines, a copy of docs/glossary.md as the build made it.
    shipped_glossary = zipfile.ZipFile(wheel).read("labkit/shipped/docs/glossary.md").decode()
    assert shipped_glossary == GLOSSARY.read_text()
    shipped = {f"labkit/shipped/notebooks/{name}.py" for name in NOTEBOOKS}
    assert not shipped - names, f"notebooks missing from the wheel: {sorted(shipped - names)}"
    meta = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "labkit = labkit.lab.cli:main" in zipfile.ZipFile(wheel).read(meta).decode()


def test_installed_wheel_measures(installed):
    venv, work, env = installed
    labkit = venv / "bin" / "labkit"
    # The version of its metadata (pyproject.toml's) and the commit recorded at build time.
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    res = _run([str(labkit), "--version"], cwd=work, env=env, timeout=120)
    assert res.stdout.startswith(f"labkit {version} (commit "), res.stdout
    said = res.stdout.split("(commit ", 1)[1].rstrip(")\n")
    res = _run([str(labkit), "measure", "asm", "--json", "--switches", "10000",
                "--repeats", "2"], cwd=work, env=env, timeout=600)
    rows = json.loads(res.stdout)["records"]
    assert len(rows) == 2 and rows[0]["entry"] == "asm"
    assert all(r["counted_switches"] == r["switches"] for r in rows)
    # The commit it was built from, not whatever git repository the venv sits in.
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    if head:
        assert rows[0]["labkit_commit"].removesuffix("-dirty") == head
        assert said.removesuffix("-dirty") == head


def test_installed_wheel_reports_with_its_glossary(installed):
    """Outside a checkout the report still inlines the glossary and ships it beside its
    executed notebooks (labkit.lab.report.page), from the package's own copy."""
    venv, work, env = installed
    out = work / "glossary-check"
    code = ("import sys; from pathlib import Path; from labkit.lab.report import page; "
            "page.ship_glossary(Path(sys.argv[1])); print(page.GLOSSARY); "
            "print(page.glossary_html().count(\"id='glossary-\"))")
    res = _run([str(venv / "bin" / "python"), "-c", code, str(out)], cwd=work, env=env,
               timeout=300)
    found, headings = res.stdout.split()
    assert Path(found).is_relative_to(venv), found  # the package's copy, not the checkout's
    assert int(headings) == len(re.findall(r"^#+ ", GLOSSARY.read_text(), re.M))
    assert (out / "docs" / "glossary.md").read_text() == GLOSSARY.read_text()


def _errors(executed: Path) -> list[str]:
    """The error outputs of an executed notebook, and papermill's record of an exception."""
    nb = nbformat.read(executed, as_version=4)
    found = [f"{o.get('ename')}: {o.get('evalue')}" for c in nb.cells if c.cell_type == "code"
             for o in c.get("outputs", []) if o.get("output_type") == "error"]
    if nb.metadata.get("papermill", {}).get("exception"):
        found.append("papermill recorded an exception")
    return found


def test_installed_wheel_reproduces_every_notebook(installed):
    venv, work, env = installed
    res = subprocess.run([str(venv / "bin" / "labkit"), "reproduce", "--quick", "--no-progress"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=3600)
    said = f"{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    # reproduce ends with status 1 and a "FAILED name:" block per failed notebook.
    assert res.returncode == 0 and "FAILED" not in res.stdout + res.stderr, said
    assert f"{len(NOTEBOOKS)} notebooks ok, 0 failed" in res.stdout, said
    # The notebooks ran on the wheel's Python, not on a kernel of the checkout's.
    specs = json.loads(_run([str(venv / "bin" / "jupyter"), "kernelspec", "list", "--json"],
                            cwd=work, env=env, timeout=120).stdout)["kernelspecs"]
    assert Path(specs["labkit"]["resource_dir"]).is_relative_to(venv)

    home = work / "labkit-results" / "reports" / "quick"
    assert (home / "labkit-report.html").exists(), said
    report = (home / "labkit-report.html").read_text()
    assert len(re.findall(r"""id=["']glossary-""", report)) == len(
        re.findall(r"^#+ ", GLOSSARY.read_text(), re.M)), "the report's glossary"
    # The executed notebooks' ../docs/glossary.md links lead to the shipped copy.
    assert (home / "executed" / ".." / "docs" / "glossary.md").read_text() == GLOSSARY.read_text()
    registered = claims.registry()
    for name in NOTEBOOKS:
        executed = home / "executed" / f"{name}.ipynb"
        assert executed.exists(), f"{name}: no executed notebook\n{said}"
        errors = _errors(executed)
        assert not errors, f"{name}: {errors}"
        nb = nbformat.read(executed, as_version=4)
        injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
        assert injected and "quick = True" in injected[0].source, name
        data = home / "data" / f"{name}.csv"
        assert data.exists() and len(pd.read_csv(data)) > 0, f"{name}: no data"
        if name == notebooks.LEDGER:
            ledger = pd.read_csv(data)
            assert sorted(ledger.claim_id) == sorted(registered.claim_id)
            continue
        # Its verdicts cover exactly the claims it is registered for.
        keys = ["claim_id", "verdict"]
        table = pd.read_csv(home / "data" / f"{name}_verdicts.csv")[keys]
        rows = home / "data" / f"{name}_article_verdicts.csv"
        if rows.exists():
            table = pd.concat([table, pd.read_csv(rows)[keys]], ignore_index=True)
        assert set(table.claim_id) == set(registered[registered.notebook == name].claim_id), name
        assert set(table.verdict) <= set(verdicts.VERDICTS), name
    # Nothing was written into the installed package.
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert not (site / "data").exists() and not (site / "reports").exists()
    assert not (site / "labkit" / "shipped" / "data" / "run_manifest.json").exists()
