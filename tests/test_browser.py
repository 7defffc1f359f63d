"""End to end in a real browser, as a person uses the lab: JupyterLab, started with the
lab's own settings (jupyter/, as `make lab` does) on a free loopback port with a token,
serves a copy of an experiment notebook with `quick = True` injected; headless Chromium,
driven by Playwright, runs all its cells from the Run menu, and the figure and the verdict
table must render with no error. The explorer notebook is driven the same way: choosing
another kernel in its drop-down must bring back that kernel's measurement.

Uses Debian's chromium (/usr/bin/chromium; LABKIT_CHROMIUM to override) and never
downloads a browser. Skipped, with the reason, where Chromium or Playwright is missing;
with LABKIT_REQUIRE_BROWSER=1 (CI) that is a failure instead.
Screenshots go to the test's tmp_path and to reports/browser/ for a person to look at."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from labkit.core import results
from labkit.lab.running import notebook_run, notebooks

REPO = results.REPO
CHROMIUM = os.environ.get("LABKIT_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = REPO / "reports" / "browser"
EXPERIMENT = "01_stack_size"  # the lightest experiment in quick mode
# Bounds for the waits: the machine may be shared with other benchmarks.
SERVER_START_S = 180
NOTEBOOK_RUN_S = 900
UI_S = 120
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync", "--disable-default-apps",
                 "--disable-extensions"]


def _missing() -> str:
    if not Path(CHROMIUM).exists():
        return (f"Chromium is not installed at {CHROMIUM}: as root, `apt-get install "
                "chromium` (.ci/run does), or set LABKIT_CHROMIUM")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return ("Playwright is not installed: make test (or .venv/bin/pip install -e "
                "'.[test]' -c requirements.lock)")
    return ""


_WHY = _missing()
if _WHY and os.environ.get("LABKIT_REQUIRE_BROWSER"):
    pytest.fail(f"LABKIT_REQUIRE_BROWSER is set but {_WHY}", pytrace=False)
pytestmark = [pytest.mark.notebook, pytest.mark.skipif(bool(_WHY), reason=_WHY)]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stat(pid) -> list[str] | None:
    try:
        # Fields after the command name, which may hold spaces: state, ppid, ...
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _descendants(pid: int) -> dict[int, str]:
    """Every process below pid (the kernels, and the labkit workers they started in
    sessions of their own), by the parent links in /proc, with each one's start time so
    that a reused process id is never taken for one of them."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (st := _stat(entry.name)):
            children.setdefault(int(st[1]), []).append(int(entry.name))
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            st = _stat(c)
            if c not in found and st:
                found[c] = st[19]
                todo.append(c)
    return found


def _alive(pid: int, start: str) -> bool:
    """Still running, and still the same process (a zombie counts as gone)."""
    st = _stat(pid)
    return bool(st) and st[19] == start and st[0] != "Z"


def _prepare(name: str, source: Path, root: Path) -> Path:
    """The notebook as JupyterLab will open it: converted to .ipynb on the lab kernel, with
    papermill's parameters cell injected (quick = True) and nothing executed."""
    import jupytext
    import nbformat
    import papermill

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": notebook_run.KERNEL_NAME,
                                 "display_name": "labkit (Python 3)", "language": "python"}
    plain = root / f".{name}.source.ipynb"
    nbformat.write(nb, plain)
    out = root / f"{name}.ipynb"
    papermill.execute_notebook(str(plain), str(out), parameters={"quick": True},
                               prepare_only=True, kernel_name=notebook_run.KERNEL_NAME,
                               progress_bar=False)
    plain.unlink()
    return out


class Lab:
    def __init__(self, proc, url, token, log):
        self.proc, self.url, self.token, self.log = proc, url, token, log

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
        return json.loads(body) if body else None

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "notebooks"
    root.mkdir()
    _prepare(EXPERIMENT, notebooks.NOTEBOOKS / f"{EXPERIMENT}.py", root)
    shutil.copy(notebooks.NOTEBOOKS / "explore.ipynb", root / "explore.ipynb")
    token = secrets.token_hex(16)
    port = _free_port()
    env = dict(os.environ)
    env.update({
        # The lab's settings, as `make lab` adds them; nothing from this user's own
        # Jupyter set-up (config, settings, workspaces, kernels) leaks in.
        "JUPYTER_CONFIG_PATH": str(REPO / "jupyter"),
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "IPYTHONDIR": str(base / "ipython"),
        # The notebooks' results go here, never over the repository's data/ and figures/.
        "LABKIT_RESULTS_DIR": str(base / "results"),
    })
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
           f"--port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           f"--LabApp.user_settings_dir={base / 'user-settings'}",
           f"--LabApp.workspaces_dir={base / 'workspaces'}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = base / "jupyterlab.log"
    with open(log, "wb") as logf:
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env,
                                cwd=root, start_new_session=True)
    server = Lab(proc, f"http://127.0.0.1:{port}", token, log)
    server.results = base / "results"
    server.started = {}  # every process below the server, gathered before it stops
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                server.api("/api/status")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer within {SERVER_START_S} s:\n"
                                f"{server.log_tail()}")
                time.sleep(0.5)
        yield server
    finally:
        server.started.update(_descendants(proc.pid))
        _stop_server(server)
        leftover = [p for p, start in server.started.items() if _alive(p, start)]
        for p in leftover:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert not leftover, f"processes left running after JupyterLab stopped: {leftover}"


def _stop_server(server: Lab):
    """Shut the kernels and the server down through the API (so kernels end cleanly and
    their workers see their pipes close), then make sure the process group is gone."""
    proc = server.proc
    if proc.poll() is None:
        try:
            for k in server.api("/api/kernels"):
                server.api(f"/api/kernels/{k['id']}", method="DELETE")
            server.api("/api/shutdown", method="POST")
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            continue
    # Kernels' workers run in sessions of their own; once their kernel is gone they read
    # EOF and exit. Give them a moment.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(p, s) for p, s in server.started.items()):
        time.sleep(0.2)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


# The notebook in front: JupyterLab keeps other open notebooks in the page, hidden.
NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"


def _open(browser, lab: Lab, path: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    # A workspace of its own: nothing another test opened is restored beside it.
    workspace = Path(path).stem.replace("_", "-")
    page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{path}?token={lab.token}",
              timeout=UI_S * 1000)
    page.wait_for_selector(f"{NB} .jp-Notebook .jp-Cell", timeout=UI_S * 1000)
    # The notebook's kernel is the lab's, started by opening the notebook.
    page.locator(f"{NB} .jp-Toolbar-kernelName",
                 has_text="labkit (Python 3)").first.wait_for(timeout=UI_S * 1000)
    _wait_kernel_idle(page, UI_S)
    return page


def _wait_kernel_idle(page, seconds: float):
    page.wait_for_selector(f"{NB} .jp-Notebook-ExecutionIndicator[data-status='idle']",
                           timeout=seconds * 1000)


def _run_all(page):
    """Run > Run All Cells, from the menu bar, as a person would."""
    page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-item:visible", has_text="Run All Cells").first.click()


def _wait_all_executed(page, seconds: float):
    """Every code cell has an execution count (no [*] or blank prompt left) and the
    kernel is idle. An error output ends the wait at once (Run All stops there)."""
    deadline = time.monotonic() + seconds
    while True:
        prompts = page.eval_on_selector_all(
            f"{NB} .jp-CodeCell .jp-InputArea-prompt",
            "els => els.map(e => e.textContent.trim())")
        done = prompts and all(p.startswith("[") and p[1:-2].isdigit() for p in prompts)
        if done:
            _wait_kernel_idle(page, max(1, deadline - time.monotonic()))
            return prompts
        errors = _errors_in_outputs(page)
        if errors:
            raise AssertionError("error output in the notebook:\n" + "\n---\n".join(errors))
        if time.monotonic() > deadline:
            raise AssertionError(f"not every cell ran within {seconds} s: prompts {prompts}")
        page.wait_for_timeout(1000)


def _errors_in_outputs(page) -> list[str]:
    texts = page.eval_on_selector_all(
        f"{NB} .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'],"
        f"{NB} .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']",
        "els => els.map(e => e.textContent)")
    return [t for t in texts if "Traceback" in t or "Error" in t]


def _screenshot(page, tmp_path: Path, name: str) -> Path:
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, SCREENSHOTS / shot.name)
    return shot


def test_experiment_notebook_runs_in_jupyterlab_and_renders_plot_and_verdicts(
        lab, browser, tmp_path):
    page = _open(browser, lab, f"{EXPERIMENT}.ipynb")
    try:
        _run_all(page)
        prompts = _wait_all_executed(page, NOTEBOOK_RUN_S)
        assert len(prompts) >= 8
        errors = _errors_in_outputs(page)
        assert not errors, "error output in the notebook:\n" + "\n---\n".join(errors)
        images = page.locator(f"{NB} .jp-OutputArea-output.jp-RenderedImage img")
        assert images.count() >= 2, "the figures did not render"
        assert all(images.nth(i).evaluate("img => img.naturalWidth > 100")
                   for i in range(images.count()))
        # The verdict table as a learner reads it (claim, what it says, the article's value,
        # measured here, verdict, why); the full table is folded beneath it.
        verdict = page.locator(f"{NB} .jp-RenderedHTMLCommon table",
                               has_text="what it says").last
        verdict.scroll_into_view_if_needed(timeout=UI_S * 1000)
        text = verdict.inner_text()
        assert "C000.2" in text and "verdict" in text
        assert any(v in text for v in ("reproduced", "contradicted", "inconclusive",
                                       "not-applicable-here"))
        assert page.locator(f"{NB} .jp-RenderedHTMLCommon table").count() >= 3
        # The article's table beside ours, the notebook's last section.
        article = page.locator(f"{NB} .jp-RenderedHTMLCommon table",
                               has_text="ns/switch, article").last
        assert "here" in article.inner_text()
        # The last figure and the verdict table in one picture for a person to look at.
        page.keyboard.press("Control+b")  # fold the file browser away
        images.last.evaluate("img => img.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(1000)
        shot = _screenshot(page, tmp_path, f"jupyterlab-{EXPERIMENT}")
        assert shot.stat().st_size > 20_000
        assert not page.errors, f"JavaScript errors in the page: {page.errors}"
    finally:
        page.close()
    # The notebook's results went to the test's folder, not over the repository's.
    assert (lab.results / "data" / f"{EXPERIMENT}_verdicts.csv").exists()


def test_explorer_widgets_change_the_measurement_in_the_browser(lab, browser, tmp_path):
    page = _open(browser, lab, "explore.ipynb")
    try:
        _run_all(page)
        _wait_all_executed(page, NOTEBOOK_RUN_S)
        assert not _errors_in_outputs(page)
        status = page.locator(f"{NB} .widget-html-content", has_text="per switch")
        status.first.wait_for(timeout=UI_S * 1000)
        assert "asm_fpu, 64 KiB, ping-pong" in status.first.inner_text()
        # Choose another kernel in the drop-down; the explorer measures it by itself.
        page.locator(f"{NB} .widget-dropdown select").first.select_option(
            label="asm (labkit, stackful)")
        page.locator(f"{NB} .widget-html-content",
                     has_text="asm, 64 KiB, ping-pong").first.wait_for(timeout=UI_S * 1000)
        # The plot is there, and the kernel stayed free while the measurement ran.
        assert page.locator(f"{NB} .widget-image").first.evaluate(
            "img => img.naturalWidth > 100")
        _wait_kernel_idle(page, UI_S)
        page.locator(f"{NB} .widget-image").first.scroll_into_view_if_needed()
        _screenshot(page, tmp_path, "jupyterlab-explore")
        assert not page.errors, f"JavaScript errors in the page: {page.errors}"
    finally:
        page.close()


# ---- the report, as a reader opens it ----------------------------------------------------

def _report_fixture(tmp_path: Path) -> Path:
    """A report built from the repository's committed results (data/) and one executed
    notebook carrying the debris a report must not show (stderr, a progress bar, a
    PosixPath repr, a long table), plus the quick run's executed notebooks if one ran."""
    import nbformat

    from labkit.lab.report import page as report_page

    results_dir = tmp_path / "results"
    shutil.copytree(REPO / "data", results_dir / "data")
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("")
    code.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="ping-pong:  40%|####  | 2/5\n"),
        nbformat.v4.new_output("stream", name="stdout", text="ring:  10%|#   | 1/9\r\n"),
        nbformat.v4.new_output("execute_result", execution_count=1, data={
            "text/plain": "[PosixPath('/x/figures/01_stack_size-pingpong.png')]"}),
        nbformat.v4.new_output("display_data", data={"text/html": "<table>" + "".join(
            f"<tr><td>{i}</td></tr>" for i in range(49)) + "</table>"}),
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("## debris"), code]
    executed = tmp_path / "zz_debris.ipynb"
    nbformat.write(nb, executed)
    outcomes = [notebook_run.Outcome("zz_debris", True, 1.0, executed, error="")]
    quick = REPO / "reports" / "quick" / "executed"
    for p in sorted(quick.glob("*.ipynb")) if quick.exists() else []:
        outcomes.append(notebook_run.Outcome(p.stem, True, 0.0, p, error="", earlier=True))
    old = os.environ.get("LABKIT_RESULTS_DIR")
    os.environ["LABKIT_RESULTS_DIR"] = str(results_dir)
    try:
        return report_page.build(outcomes, out_dir=tmp_path / "report", quick=True)
    finally:
        if old is None:
            os.environ.pop("LABKIT_RESULTS_DIR", None)
        else:
            os.environ["LABKIT_RESULTS_DIR"] = old


def test_report_shows_the_articles_tables_offline_and_clean(browser, tmp_path):
    path = _report_fixture(tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    fetched = []
    page.on("request", lambda r: fetched.append(r.url))
    try:
        page.goto(path.as_uri(), wait_until="load", timeout=UI_S * 1000)
        page.wait_for_timeout(500)
        # Nothing but the file itself and its inline images: no CDN, no network at all.
        remote = [u for u in fetched if not u.startswith(("file:", "data:"))]
        assert not remote, f"the report fetched {remote}"
        assert page.locator("#summary").count() == 1 and page.locator("#toc").count() == 1
        assert page.locator("#articles").count() == 1
        sections = page.locator("section.lk-article")
        assert sections.count() == 11
        for i in range(11):
            heads = sections.nth(i).locator("table.lk-table th").all_inner_texts()
            assert any("article" in h for h in heads), heads
            assert any("here" in h for h in heads), heads
            assert sections.nth(i).locator("img.lk-fig").count() == 1
        text = page.locator("body").inner_text()
        assert "PosixPath" not in text
        assert "%|" not in text, "progress-bar text in the report"
        # The 49-row table is folded, not spread over the page.
        assert page.locator("details", has_text="table of 49 rows").count() == 1
        # The first screens, for a person to look at.
        for n in range(3):
            page.evaluate(f"window.scrollTo(0, {n} * window.innerHeight)")
            page.wait_for_timeout(200)
            shot = _screenshot(page, tmp_path, f"report-screen-{n + 1}")
            assert shot.stat().st_size > 10_000
        page.locator("#articles").scroll_into_view_if_needed()
        _screenshot(page, tmp_path, "report-articles")
    finally:
        page.close()
