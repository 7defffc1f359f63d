"""Where results go, written so that nothing finished is ever lost: every file is written
to a temporary name in the same folder and renamed into place (atomic on POSIX), so an
interrupted or failed run leaves the previous version whole.

Where things are:
- inside a checkout (the package sits beside notebooks/ and data/claims.csv), results go
  to the checkout's data/ and figures/, as `make reproduce` always did;
- an installed labkit elsewhere writes to ./labkit-results (or `labkit --results DIR`),
  and finds the claims registry and the notebooks as package data (labkit/shipped/);
- LABKIT_RESULTS_DIR, when set, is the folder that holds data/ and figures/: quick runs
  and the tests write elsewhere, so they never replace a full run's results.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

PACKAGE = Path(__file__).resolve().parents[1]
SHIPPED = PACKAGE / "shipped"  # claims.csv and the notebooks, in an installed wheel
DEFAULT_OUTSIDE = "labkit-results"


def checkout() -> Path | None:
    """The source checkout this labkit runs from, or None for an installed package."""
    parent = PACKAGE.parent
    if (parent / "notebooks").is_dir() and (parent / "data" / "claims.csv").is_file():
        return parent
    return None


_home_override: Path | None = None


def set_home(path: str | os.PathLike | None) -> None:
    """Make `path` the home of results (data/, figures/, reports/): `labkit --results`."""
    global _home_override
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a folder (str or Path), not {type(path).__name__}")
    _home_override = None if path is None else Path(path).resolve()


def home() -> Path:
    """Where a run's data/, figures/ and reports/ go: --results DIR, else the checkout,
    else ./labkit-results in the current folder."""
    if _home_override is not None:
        return _home_override
    return checkout() or (Path.cwd() / DEFAULT_OUTSIDE).resolve()


# The checkout, or (installed) the results home: kept for the code that joins paths to it.
REPO = checkout() or home()


def notebooks_dir() -> Path:
    """The notebooks: the checkout's notebooks/, or the copy shipped in the package."""
    c = checkout()
    return c / "notebooks" if c else SHIPPED / "notebooks"


def claims_csv(name: str = "claims.csv") -> Path:
    """The claims registry, data/claims.csv (or its amendments, data/claims_amendments.csv),
    from the checkout or the package."""
    c = checkout()
    return c / "data" / name if c else SHIPPED / "data" / name


def root() -> Path:
    """The folder that holds data/ and figures/."""
    env = os.environ.get("LABKIT_RESULTS_DIR")
    return Path(env).resolve() if env else home()


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


def save_parts(name: str, parts: dict) -> Path:
    """Write a notebook's tidy rows, {part: frame}, as one data/<name>.csv with a `part`
    column naming the part each row comes from; returns the path."""
    import pandas as pd

    if not isinstance(parts, dict) or not parts:
        raise TypeError(f"parts must be a non-empty dict of part name -> DataFrame, "
                        f"not {type(parts).__name__}")
    return save_csv(pd.concat([df.assign(part=part) for part, df in parts.items()],
                              ignore_index=True), name)


def current_columns(df):
    """A frame written by an older labkit under today's column names. Before bundle
    format 3 the catalogue entry's column was `kernel`, and a design's runs called the
    side of a comparison `entry`; before format 4 a notebook's parts were its rows'
    `experiment`, and 08's coroutines its `workers`. A frame with no old name is returned
    as it is."""
    renames = {}
    if "experiment" in df.columns and "part" not in df.columns and "claim_id" not in df.columns:
        renames["experiment"] = "part"
    if "workers" in df.columns and "work_cycles" in df.columns:  # 08's pool of coroutines
        renames["workers"] = "coroutines"
    if "entry" in df.columns and "side" not in df.columns and (
            "kernel" in df.columns or "worker" in df.columns):
        renames["entry"] = "side"
    if "kernel" in df.columns:
        renames["kernel"] = "entry"
    return df.rename(columns=renames) if renames else df


def read_csv(path, **kw):
    """pandas.read_csv of a file labkit wrote, in today's column names (current_columns)."""
    import pandas as pd

    return current_columns(pd.read_csv(path, **kw))


def load_csv(name: str):
    """Read data/<name>.csv back (FileNotFoundError says which run makes it)."""
    path = data_dir() / f"{name}.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist yet: run `make reproduce` (or the "
                                f"notebook {name}) first")
    return read_csv(path)


FIGURE_DPI = 150   # the saved PNGs' resolution


def save_figure(fig, name: str) -> list[Path]:
    """Save a matplotlib figure as figures/<name>.png and .svg, each atomically."""
    import matplotlib

    out = []
    for ext in ("png", "svg"):
        path = figures_dir() / f"{name}.{ext}"
        # No date and fixed ids: rerunning on the same data gives the same bytes, so an
        # unchanged figure does not show up as changed in git.
        meta = {"Date": None} if ext == "svg" else {"Software": None}
        with atomic_path(path) as tmp, matplotlib.rc_context({"svg.hashsalt": "labkit"}):
            fig.savefig(tmp, format=ext, dpi=FIGURE_DPI if ext == "png" else None,
                        bbox_inches="tight", metadata=meta)
        out.append(path)
    return out
