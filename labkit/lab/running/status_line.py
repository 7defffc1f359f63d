"""The status line of a run of notebooks: one line on stderr (notebook k of n, the sweep
point it is at, elapsed time, the sweep's ETA), read from the progress file that the
notebook's sweeps write (labkit.lab.running.sweep). It never goes into a notebook or the report.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60}:{seconds % 60:02d}"


class StatusLine:
    """One line on stderr: notebook k of n, the sweep point it is at, elapsed time and the
    sweep's ETA, read from the progress file the notebook's sweeps write. On a terminal it
    is redrawn in place; elsewhere (CI logs) a line is printed when the point changes."""

    def __init__(self, progress_file: Path, total: int, stream=None, enabled: bool = True):
        self.path, self.total = progress_file, total
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.name, self.index, self.started = "", 0, time.monotonic()
        self.run_started = time.monotonic()
        self._stop = threading.Event()
        self._last = ""
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        if self.enabled:
            self._thread.start()
        return self

    def notebook(self, index: int, name: str):
        self.index, self.name, self.started = index, name, time.monotonic()
        self.path.unlink(missing_ok=True)
        self.draw()

    def text(self) -> str:
        line = f"[{self.index}/{self.total}] {self.name}"
        try:
            p = json.loads(self.path.read_text())
            done, total = int(p["done"]), int(p["total"])
            line += f"  {p['desc']}: point {min(done + 1, total)}/{total}"
            if done > 0 and total > done:
                eta = (time.time() - float(p["started"])) / done * (total - done)
                line += f"  sweep ETA {_clock(eta)}"
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return f"{line}  elapsed {_clock(time.monotonic() - self.started)}" \
               f" (run {_clock(time.monotonic() - self.run_started)})"

    def draw(self):
        if not self.enabled:
            return
        line = self.text()
        if self.tty:
            self.stream.write("\r\033[K" + line[:200])
            self.stream.flush()
        else:
            core = line.split("  sweep ETA")[0].split("  elapsed")[0]
            if core != self._last:  # one line per new point in a log, not a flood
                self.stream.write(line + "\n")
                self.stream.flush()
                self._last = core

    def clear(self):
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
