"""Where results go, written so that nothing finished is ever lost: every file is written
to a temporary name in the same folder and renamed into place (atomic on POSIX), so an
interrupted or failed run leaves the previous version whole.

The root is the repository (data/, figures/), or LABKIT_RESULTS_DIR when set: quick runs
and the tests write elsewhere, so they never replace a full run's results."""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def root() -> Path:
    """The folder that holds data/ and figures/."""
    env = os.environ.get("LABKIT_RESULTS_DIR")
    return Path(env).resolve() if env else REPO


def data_dir() -> Path:
    d = root() / "data"
    d.mkdir(parents=True, exist_ok=True)
    return d


def figures_dir() -> Path:
    d = root() / "figures"
    d.mkdir(parents=True, exist_ok=True)
    return d


@contextmanager
def atomic_path(path: Path):
    """Yield a temporary path beside `path`; on success rename it onto `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    # mkstemp makes the file private (0600); results are meant to be read and shared.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_csv(df, name: str, *, subdir: str | None = None) -> Path:
    """Write a tidy frame to data/<name>.csv (or data/<subdir>/<name>.csv) atomically;
    returns the path."""
    if not name or "/" in name:
        raise ValueError(f"name must be a plain file name without '/', got {name!r}")
    if subdir is not None and (not subdir or "/" in subdir or subdir.startswith(".")):
        raise ValueError(f"subdir must be a plain folder name, got {subdir!r}")
    path = data_dir() / (subdir or "") / f"{name}.csv"
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)
    return path


def load_csv(name: str):
    """Read data/<name>.csv back (FileNotFoundError says which run makes it)."""
    import pandas as pd

    path = data_dir() / f"{name}.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist yet: run `make reproduce` (or the "
                                f"notebook {name}) first")
    return pd.read_csv(path)


def save_figure(fig, name: str) -> list[Path]:
    """Save a matplotlib figure as figures/<name>.png and .svg, each atomically."""
    out = []
    for ext in ("png", "svg"):
        path = figures_dir() / f"{name}.{ext}"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=150 if ext == "png" else None,
                        bbox_inches="tight")
        out.append(path)
    return out
