"""`labkit lab`: JupyterLab on the lab's kernel, opening start_here.ipynb; options it does
not know go on to `jupyter lab`."""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from labkit.core import results
from labkit.lab.cli.command import Command
from labkit.lab.cli.options import flag


def _arguments(lab) -> None:
    lab.add_argument("--port", type=int, default=None, help="port (default 8888 or the next free)")
    flag(lab, "--no-browser", "do not open a browser")
    lab.add_argument("lab_args", nargs=argparse.REMAINDER,
                     help="more options for `jupyter lab`")


def _lab(args) -> int:
    jupyter = Path(sys.executable).with_name("jupyter")
    if not jupyter.exists() and shutil.which("jupyter") is None:
        raise FileNotFoundError("JupyterLab is not installed: pip install 'labkit[lab]'")
    env = dict(os.environ)
    checkout = results.checkout()
    if checkout and (checkout / "jupyter").is_dir():
        # The lab's settings are added to the user's own (the user's still win).
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            p for p in (str(checkout / "jupyter"), env.get("JUPYTER_CONFIG_PATH")) if p)
    notebooks = results.notebooks_dir()
    if checkout is None:
        # Installed: the learner edits a copy in the results folder, never site-packages.
        copy = results.home() / "notebooks"
        if not copy.exists():
            shutil.copytree(notebooks, copy)
            print(f"labkit lab: copied the notebooks to {copy}", file=sys.stderr)
        notebooks = copy
    cmd = [str(jupyter) if jupyter.exists() else "jupyter", "lab",
           f"--ServerApp.root_dir={notebooks}"]
    if args.port:
        cmd.append(f"--port={args.port}")
    if args.no_browser:
        cmd.append("--no-browser")
    if os.geteuid() == 0:  # a VM or a container: the server must be told it may run as root
        cmd.append("--allow-root")
    cmd += [a for a in args.lab_args if a != "--"]
    return subprocess.call(cmd, env=env)


LAB = Command("lab", "start JupyterLab on the lab's notebooks",
              "JupyterLab on the `labkit` kernel, opening start_here.ipynb.", _arguments, _lab,
              extra="lab_args")
