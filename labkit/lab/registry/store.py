"""Where a registry keeps its bundles: a local folder or an S3 bucket, one layout and one
code path (pyarrow's filesystems to write, DuckDB to read).

Layout, under the registry's root:

    run_mode=<full|quick>/format=<n>/commit=<labkit commit>/machine=<machine_id>/
        bundle=<content hash>/{machine,verdicts,measurements,verdict_runs}.parquet

Hive-style folder names, so DuckDB reads the partition keys as columns and skips the
folders a filter rules out. A bundle appears at once or not at all: in a folder it is
written under .staging/ and renamed into place (a rename onto an existing bundle fails,
which makes a duplicate lose the race); in S3, where an object appears whole but a folder
does not, `machine.parquet` is written last and every query starts from it, so a bundle
whose publish was cut short is never read.

A publisher killed while staging leaves its folder under .staging/, never in the layout.
Each staging folder has a lock file beside it, held (flock) by its publisher for as long as
it lives; the kernel lets go of it when the process dies, however it dies. The next publish
sweeps every staging folder whose lock it can take.
"""
from __future__ import annotations

import errno
import fcntl
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

PARTITIONS = ("run_mode", "format", "commit", "machine", "bundle")
TABLES = ("machine", "verdicts", "measurements", "verdict_runs")
MARKER = "machine.parquet"  # written last: a bundle exists when this file does
STAGING = ".staging"
LOCK_SUFFIX = ".lock"  # beside each staging folder, held by its publisher
# Where S3 credentials come from when a store asks for them: the usual AWS variables.
KEY_ENV, SECRET_ENV, ENDPOINT_ENV = "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"


class DuplicateBundle(ValueError):
    """The store already holds this bundle."""


@dataclass
class Store:
    """A registry's storage: pyarrow's local filesystem for a folder, DuckDB's httpfs for
    S3 (reads and writes; the AWS SDK's streamed uploads are not read back whole by every
    S3 server)."""
    location: str           # as the user gave it
    kind: str               # "local" or "s3"
    root: str               # local: an absolute folder; s3: "bucket/prefix"
    endpoint: str | None = None  # s3: "host:port"
    scheme: str = "https"

    def path(self, rel: str) -> str:
        prefix = self.root if self.kind == "local" else f"s3://{self.root}"
        return f"{prefix}/{rel}" if rel else prefix

    def has(self, rel_dir: str) -> bool:
        if self.kind == "local":
            return Path(self.path(f"{rel_dir}/{MARKER}")).exists()
        # DuckDB's glob returns a path without a wildcard as given: list the folder
        files = self._sql("SELECT file FROM glob(?)", [self.path(f"{rel_dir}/*")])
        return any(f.endswith(f"/{MARKER}") for (f,) in files)

    def _sql(self, sql: str, params=()):
        con = self.connect()
        try:
            return con.execute(sql, list(params)).fetchall()
        finally:
            con.close()

    def read(self, rel_dir: str, name: str):
        """One file of one bundle as a DataFrame, with its own column types."""
        import pandas as pd

        path = self.path(f"{rel_dir}/{name}")
        if self.kind == "local":
            return pd.read_parquet(path)
        con = self.connect()
        try:
            return con.execute("SELECT * FROM read_parquet(?)", [path]).df()
        finally:
            con.close()

    def put(self, rel_dir: str, files: dict) -> None:
        """Write one bundle's files (name -> bytes) at rel_dir, all or nothing; raises
        DuplicateBundle if a bundle is already there."""
        if MARKER not in files:
            raise ValueError(f"files must include {MARKER}")
        if self.kind == "local":
            return self._put_local(rel_dir, files)
        if self.has(rel_dir):
            raise DuplicateBundle(rel_dir)
        import pyarrow as pa
        import pyarrow.parquet as pq

        con = self.connect()
        try:
            for name in sorted(files, key=lambda n: n == MARKER):  # the marker last
                table = pq.read_table(pa.BufferReader(files[name]))
                con.register("bundle_file", table)
                con.execute(f"COPY (SELECT * FROM bundle_file) TO '{self.path(f'{rel_dir}/{name}')}' "
                            "(FORMAT parquet)")
                con.unregister("bundle_file")
        finally:
            con.close()

    def _put_local(self, rel_dir: str, files: dict) -> None:
        final = Path(self.root) / rel_dir
        staging = Path(self.root) / STAGING
        staging.mkdir(parents=True, exist_ok=True)
        sweep_staging(staging)
        stage, lock = _locked_stage(staging, final.name)
        try:
            stage.mkdir()
            for name, data in files.items():
                with open(stage / name, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.exists():
                raise DuplicateBundle(rel_dir)
            try:
                os.rename(stage, final)  # atomic; refused onto a bundle that is there
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    raise DuplicateBundle(rel_dir) from exc
                raise
        finally:
            shutil.rmtree(stage, ignore_errors=True)  # the folder, then its lock
            Path(lock.name).unlink(missing_ok=True)
            lock.close()

    def bundles(self) -> list[str]:
        """The rel_dir of every complete bundle (its marker written)."""
        if self.kind == "local":
            if not Path(self.root).is_dir():
                return []
            files = [str(p) for p in Path(self.root).glob(self.glob("machine")[len(self.root) + 1:])]
        else:
            files = [r[0] for r in self._sql("SELECT file FROM glob(?)", [self.glob("machine")])]
        prefix = self.path("")
        return sorted(f[len(prefix):].strip("/").rsplit("/", 1)[0] for f in files)

    def size_bytes(self) -> int:
        """Bytes of every complete bundle's files."""
        total = 0
        for rel in self.bundles():
            if self.kind == "local":
                total += sum(p.stat().st_size for p in Path(self.path(rel)).iterdir())
            else:
                total += int(self._sql("SELECT coalesce(sum(size), 0) FROM read_blob(?)",
                                       [self.path(f"{rel}/*.parquet")])[0][0])
        return total

    # ---- reading (DuckDB) ----
    def glob(self, table: str) -> str:
        if table not in TABLES:
            raise ValueError(f"table must be one of {TABLES}; got {table!r}")
        stars = "/".join(f"{k}=*" for k in PARTITIONS)
        return f"{self.path('')}/{stars}/{table}.parquet"

    def connect(self):
        """A DuckDB connection that reads this store (S3 through the httpfs extension of
        the duckdb-ext-httpfs package: nothing is downloaded)."""
        import duckdb

        con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                     "autoload_known_extensions": False})
        if self.kind == "s3":
            con.execute(f"SET extension_directory = '{httpfs_directory()}'")
            con.execute("LOAD httpfs")
            key, secret = os.environ.get(KEY_ENV, ""), os.environ.get(SECRET_ENV, "")
            con.execute(
                "CREATE SECRET registry (TYPE s3, KEY_ID ?, SECRET ?, ENDPOINT ?, "
                "URL_STYLE 'path', USE_SSL ?, REGION 'us-east-1')",
                [key, secret, self.endpoint or "s3.amazonaws.com", self.scheme == "https"])
        return con

    def describe(self) -> str:
        return self.location


def _locked_stage(staging: Path, name: str):
    """(staging folder path, its lock file, held): the lock is taken before the folder is
    made, so a sweeper never finds a living publisher's folder with its lock free."""
    while True:
        stage = staging / f"{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        lock = open(f"{stage}{LOCK_SUFFIX}", "xb")
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.stat(lock.name).st_ino == os.fstat(lock.fileno()).st_ino:
                return stage, lock
        except FileNotFoundError:
            pass
        lock.close()  # a sweeper took the fresh lock file for a dead one's: a new name


def sweep_staging(staging) -> list[str]:
    """Remove what killed publishers left under a local store's .staging/: a staging
    folder whose lock no living process holds (or that has no lock file), and a lone lock
    file no one holds. Returns the names removed. A publisher at work holds its lock, so
    its folder is left alone."""
    staging = Path(staging)
    if not staging.is_dir():
        return []
    removed = []
    for entry in sorted(staging.iterdir()):
        is_lock = entry.name.endswith(LOCK_SUFFIX)
        folder = staging / entry.name.removesuffix(LOCK_SUFFIX)
        if is_lock and (folder.exists() or not entry.exists()):
            continue  # handled with its folder
        lock_path = entry if is_lock else Path(f"{entry}{LOCK_SUFFIX}")
        try:
            lock = open(lock_path, "rb")
        except FileNotFoundError:
            shutil.rmtree(folder, ignore_errors=True)  # no lock: no publisher can own it
            removed.append(folder.name)
            continue
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a publisher at work
            shutil.rmtree(folder, ignore_errors=True)
            lock_path.unlink(missing_ok=True)
            removed.append(folder.name)
        finally:
            lock.close()
    return removed


def httpfs_directory() -> str:
    """The extension_directory holding the httpfs extension of the installed
    duckdb-ext-httpfs package (its files: duckdb_ext/extensions/v<duckdb>/<platform>/)."""
    from importlib import metadata

    try:
        files = metadata.files("duckdb-ext-httpfs") or []
    except metadata.PackageNotFoundError:
        raise FileNotFoundError("the S3 registry needs the duckdb-ext-httpfs package: "
                                "pip install 'labkit[registry]'") from None
    for f in files:
        if f.name == "httpfs.duckdb_extension":
            path = Path(f.locate())
            return str(path.parents[2])
    raise FileNotFoundError("duckdb-ext-httpfs is installed without its httpfs.duckdb_extension")


def open_store(location) -> Store:
    """A Store from a registry location: a folder path, s3://BUCKET[/PREFIX] (the endpoint
    from $AWS_ENDPOINT_URL, else AWS), or http(s)://HOST:PORT/BUCKET[/PREFIX] (an S3
    endpoint such as `labkit registry serve`'s)."""
    if not isinstance(location, (str, os.PathLike)) or not str(location):
        raise TypeError(f"registry must be a folder path or an s3:// or http(s):// URL; "
                        f"got {location!r}")
    text = str(location)
    url = urlparse(text)
    if url.scheme in ("s3", "http", "https"):
        if url.scheme == "s3":
            bucket, prefix = url.netloc, url.path.strip("/")
            env = urlparse(os.environ.get(ENDPOINT_ENV, "https://s3.amazonaws.com"))
            endpoint, scheme = env.netloc, env.scheme or "https"
        else:
            bucket, _, prefix = url.path.strip("/").partition("/")
            endpoint, scheme = url.netloc, url.scheme
        if not bucket or not endpoint:
            raise ValueError(f"registry {text!r} names no bucket: write s3://BUCKET/PREFIX or "
                             "http://HOST:PORT/BUCKET")
        return Store(text, "s3", "/".join(p for p in (bucket, prefix) if p), endpoint, scheme)
    if url.scheme and len(url.scheme) > 1:  # a one-letter scheme is a Windows drive
        raise ValueError(f"registry {text!r}: a folder path, s3:// or http(s):// URL, not "
                         f"{url.scheme}://")
    return Store(text, "local", str(Path(text).expanduser().resolve()))
