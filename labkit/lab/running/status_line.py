"""The status line of a run of notebooks: one line on stderr (notebook k of n, the sweep
point it is at, elapsed times, the sweep's ETA and the whole run's), read from the progress
file that the notebook's sweeps write (labkit.lab.running.sweep). On a terminal it fits the
width and shortens by dropping its least useful parts. It never goes into a notebook or the
report.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

# The parts of the line, in the order they are dropped when it does not fit the terminal:
# time spent goes first, what the run and the notebook have left (run ETA, point) last.
DROP_ORDER = ("run_elapsed", "elapsed", "desc", "sweep_eta", "point", "run_eta")


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60}:{seconds % 60:02d}"


def last_seconds(names: list[str], manifest: dict) -> list[float | None]:
    """Each notebook's time in the last run that finished it, in `names`' order, from the
    run manifest (labkit.lab.judging.ledger.read_manifest); None where it is not known
    (never run, or it failed: a failure's time says little about a whole run's)."""
    def seconds(entry: dict) -> float | None:
        return float(entry["seconds"]) if entry.get("ok") and "seconds" in entry else None
    return [seconds(manifest.get(name, {})) for name in names]


class StatusLine:
    """One line on stderr: notebook k of n, the sweep point it is at, elapsed times, the
    sweep's ETA and the whole run's (from `expected`: each notebook's time in the last
    run, in run order, None where not known), read from the progress file the notebook's
    sweeps write. On a terminal it is redrawn in place within `width` columns (the
    terminal's, read at each redraw, unless given); elsewhere (CI logs) a line is printed
    when the point changes."""

    def __init__(self, progress_file: Path, total: int, stream=None, enabled: bool = True,
                 expected: list[float | None] | None = None, width: int | None = None):
        self.path, self.total = progress_file, total
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.expected = list(expected or [])
        self.width = width
        self.name, self.index, self.started = "", 0, time.monotonic()
        self.run_started = time.monotonic()
        self._stop = threading.Event()
        # clear() hides the line until the next notebook: a redraw from the thread between
        # clear() and the caller's own output would put that output on the status row.
        # Reentrant: a Ctrl-C in the main thread's draw or clear must not lock out stop().
        self._lock = threading.RLock()
        self._shown = False
        self._last = ""
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        if self.enabled:
            self._thread.start()
        return self

    def notebook(self, index: int, name: str):
        self.index, self.name, self.started = index, name, time.monotonic()
        self.path.unlink(missing_ok=True)
        self._shown = True
        self.draw()

    def _sweep(self) -> tuple[str, int, int, float | None] | None:
        """The sweep under way: its description, points done, points in all, its ETA."""
        try:
            p = json.loads(self.path.read_text())
            done, total = int(p["done"]), int(p["total"])
            eta = ((time.time() - float(p["started"])) / done * (total - done)
                   if 0 < done < total else None)
            return str(p["desc"]), done, total, eta
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def run_eta(self, sweep_eta: float | None = None) -> tuple[float, bool] | None:
        """Seconds the run has left, and whether that is all of it (False: some notebook
        left has no time from the last run, so the run takes longer). The notebook running
        has left its last time less its elapsed time, or the sweep's ETA if longer; None
        when no notebook of the rest of the run has a time."""
        this = self.expected[self.index - 1] if 0 < self.index <= len(self.expected) else None
        known = [s for s in self.expected[self.index:] if s is not None]  # those after it
        if this is None and not known:
            return None
        now = 0.0 if this is None else this - (time.monotonic() - self.started)
        if sweep_eta is not None:
            now = max(now, sweep_eta)
        whole = this is not None and len(known) == self.total - self.index
        return max(now, 0.0) + sum(known), whole

    def parts(self) -> dict[str, str]:
        """The line's parts by name, in display order."""
        out = {"head": f"[{self.index}/{self.total}] {self.name}"}
        sweep = self._sweep()
        if sweep is not None:
            desc, done, total, eta = sweep
            out["desc"] = f"{desc}: "
            out["point"] = f"point {min(done + 1, total)}/{total}"
            if eta is not None:
                out["sweep_eta"] = f"sweep ETA {_clock(eta)}"
        out["elapsed"] = f"elapsed {_clock(time.monotonic() - self.started)}"
        out["run_elapsed"] = f" (run {_clock(time.monotonic() - self.run_started)})"
        ahead = self.run_eta(sweep[3] if sweep else None)
        if ahead is not None:
            seconds, whole = ahead
            out["run_eta"] = f"run ETA {_clock(seconds)}{'' if whole else '+'}"
        return out

    @staticmethod
    def join(parts: dict[str, str]) -> str:
        """The parts as one line: "desc" goes before "point" and "run_elapsed" after
        "elapsed", each only beside its partner."""
        segments = []
        for key, text in parts.items():
            if key == "point":
                text = parts.get("desc", "") + text
            elif key == "elapsed":
                text += parts.get("run_elapsed", "")
            elif key in ("desc", "run_elapsed"):
                continue
            segments.append(text)
        return "  ".join(segments)

    def text(self, width: int | None = None, parts: dict[str, str] | None = None) -> str:
        """The line; within `width` columns if given, shortened by dropping parts in
        DROP_ORDER, then cut."""
        parts = dict(parts or self.parts())
        line = self.join(parts)
        for key in DROP_ORDER:
            if width is None or len(line) <= width:
                break
            parts.pop(key, None)
            line = self.join(parts)
        return line if width is None else line[:width]

    def columns(self) -> int:
        """The terminal's width now (it may have been resized since the last redraw)."""
        if self.width is not None:
            return self.width
        try:
            return os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, ValueError, OSError):
            return shutil.get_terminal_size().columns

    def draw(self):
        if not self.enabled:
            return
        with self._lock:
            if not self._shown:
                return
            if self.tty:
                # One column short of the width: a line that fills the last column leaves
                # some terminals wrapped to the next row.
                self.stream.write("\r\033[K" + self.text(max(self.columns() - 1, 1)))
                self.stream.flush()
            else:
                parts = self.parts()
                line = self.text(parts=parts)
                core = parts["head"] + parts.get("desc", "") + parts.get("point", "")
                if core != self._last:  # one line per new point in a log, not a flood
                    self.stream.write(line + "\n")
                    self.stream.flush()
                    self._last = core

    def clear(self):
        with self._lock:
            self._shown = False
            if self.enabled and self.tty:
                self.stream.write("\r\033[K")
                self.stream.flush()

    def _loop(self):
        while not self._stop.wait(1.0):
            self.draw()

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        self.clear()
