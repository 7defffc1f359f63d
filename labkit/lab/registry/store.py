"""Where a registry keeps its bundles: a local folder or an S3 bucket, one layout and one
code path (DuckDB to read and to write S3 objects; pyarrow's S3 filesystem to list, copy
and delete them).

Layout, under the registry's root:

    run_mode=<full|quick>/format=<n>/commit=<labkit commit>/machine=<machine_id>/
        bundle=<content hash>/{machine,verdicts,measurements,verdict_runs,parts}.parquet
    _index/<table>/run_mode=<m>/format=<n>/commit=<c>/*.parquet   (labkit.lab.registry.index)

Hive-style folder names, so DuckDB reads the partition keys as columns and skips the
folders a filter rules out. A bundle is committed when its row lands in the index's
machine table (written last, create-if-absent in a folder); queries read the index, so a
bundle whose publish was cut short is never read.

A publish stages everything first: in a folder under .staging/ (renamed into place; a
rename is atomic), on S3 under the prefix .staging/<start time>-<id>/ (copied into place
by the server, then removed). A publisher killed while staging leaves only its staging
entry. In a folder each staging entry has a lock file beside it, held (flock) by its
publisher for as long as it lives; the kernel lets go of it when the process dies, however
it dies, and the next publish sweeps every staging entry whose lock it can take. S3 has
no locks: a staging prefix older than STALE_S seconds is taken for a dead publisher's and
swept, with whatever it had copied into place if its bundle was never committed.
"""
from __future__ import annotations

import errno
import fcntl
import os
import shutil
import time
import uuid
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd

from labkit.lab.registry import index
# pyarrow and duckdb (the registry extra) are imported where used: they may be absent.

PARTITIONS = ("run_mode", "format", "commit", "machine", "bundle")
TABLES = ("machine", "verdicts", "measurements", "verdict_runs")
TABLES_FILES = tuple(f"{t}.parquet" for t in TABLES)
MARKER = "machine.parquet"  # written last: a bundle exists when this file does
STAGING = ".staging"
LOCK_SUFFIX = ".lock"  # beside each staging folder, held by its publisher
# An S3 staging prefix older than this is a dead publisher's (a publish takes seconds).
STALE_S = 3600
# Where S3 credentials come from when a store asks for them: the usual AWS variables.
KEY_ENV, SECRET_ENV, ENDPOINT_ENV = "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"


class DuplicateBundle(ValueError):
    """The store already holds this bundle."""


@dataclass
class Store:
    """A registry's storage: files in a folder, or objects in S3 (written through DuckDB's
    httpfs, since the AWS SDK's streamed uploads are not read back whole by every S3
    server; listed, copied and deleted through pyarrow's S3 filesystem)."""
    location: str           # as the user gave it
    kind: str               # "local" or "s3"
    root: str               # local: an absolute folder; s3: "bucket/prefix"
    endpoint: str | None = None  # s3: "host:port"
    scheme: str = "https"

    def path(self, rel: str) -> str:
        prefix = self.root if self.kind == "local" else f"s3://{self.root}"
        return f"{prefix}/{rel}" if rel else prefix

    # ---- what is committed: the index ----
    def index_glob(self, table: str, partition: str | None = None) -> str:
        """The index files of a table (of one partition, or of all: hive wildcards)."""
        if table not in index.TABLES:
            raise ValueError(f"table must be one of {index.TABLES}; got {table!r}")
        part = partition or "/".join(f"{k}=*" for k in index.PARTITIONS)
        return self.path(f"{index.INDEX}/{table}/{part}/*.parquet")

    def has(self, rel_dir: str) -> bool:
        """Whether the bundle at rel_dir is committed (its row in the index)."""
        part, name = index.partition(rel_dir), index.delta_name(rel_dir)
        here = self.listing(f"{index.INDEX}/machine/{part}")
        if name in {r.rsplit("/", 1)[-1] for r, _ in here}:
            return True
        packed = [self.path(r) for r, _ in here
                  if r.rsplit("/", 1)[-1].startswith(index.COMPACTED)]
        if not packed:
            return False
        found = self._sql("SELECT count(*) FROM read_parquet(?, union_by_name = true) "
                          "WHERE bundle = ?", [packed, index.parts(rel_dir)["bundle"]])
        return found[0][0] > 0

    def bundles(self) -> list[str]:
        """The rel_dir of every committed bundle."""
        rows = self.query(
            f"SELECT DISTINCT run_mode, format, commit, machine, bundle FROM "
            f"read_parquet('{self.index_glob('machine')}', hive_partitioning = true, "
            "hive_types_autocast = false, union_by_name = true)")
        if rows is None:
            return []
        return sorted("/".join(f"{k}={v}" for k, v in zip(PARTITIONS, r)) for r in rows)

    def folders(self) -> list[str]:
        """The rel_dir of every bundle folder holding its marker, committed or not (a
        publish killed between placing its folder and committing it leaves one)."""
        depth = len(PARTITIONS)
        out = []
        for rel, _ in self.listing(""):
            bits = rel.split("/")
            if len(bits) == depth + 1 and bits[-1] == MARKER and bits[0].startswith("run_mode="):
                out.append("/".join(bits[:-1]))
        return sorted(out)

    def size_bytes(self) -> int:
        """Bytes of every file in the store but staging: the bundles and their index."""
        return sum(size for rel, size in self.listing("") if not rel.startswith(STAGING))

    # ---- files and objects ----
    def listing(self, rel_prefix: str) -> list[tuple[str, int]]:
        """(rel path, bytes) of every file under rel_prefix; none if it is absent."""
        base = self.path(rel_prefix) if rel_prefix else self.path("")
        if self.kind == "local":
            out = []
            for folder, _, names in os.walk(base):
                for n in names:
                    full = os.path.join(folder, n)
                    try:
                        size = os.stat(full).st_size
                    except FileNotFoundError:
                        continue  # removed meanwhile (a sweep, a compaction)
                    out.append((os.path.relpath(full, self.root), size))
            return out
        from pyarrow import fs

        key = base[len("s3://"):]
        infos = self.filesystem().get_file_info(fs.FileSelector(key, recursive=True,
                                                                allow_not_found=True))
        return [(i.path[len(self.root) + 1:], i.size) for i in infos
                if i.type == fs.FileType.File]

    def filesystem(self):
        """pyarrow's S3 filesystem on this store's endpoint (listing, copying, deleting)."""
        from pyarrow import fs

        key, secret = os.environ.get(KEY_ENV, ""), os.environ.get(SECRET_ENV, "")
        return fs.S3FileSystem(endpoint_override=self.endpoint, scheme=self.scheme,
                               access_key=key or None, secret_key=secret or None,
                               anonymous=not key, region="us-east-1")

    def write(self, rel: str, data: bytes, con=None) -> None:
        """One Parquet file at rel, appearing whole (a folder: written aside, fsynced and
        renamed; S3: one PUT through DuckDB, whose objects appear whole)."""
        if self.kind == "local":
            final = Path(self.path(rel))
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = final.parent / f".{final.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
            with open(tmp, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, final)
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        own = con is None
        con = con or self.connect()
        try:
            con.register("object_rows", pq.read_table(pa.BufferReader(data)))
            con.execute(f"COPY (SELECT * FROM object_rows) TO '{self.path(rel)}' (FORMAT parquet)")
            con.unregister("object_rows")
        finally:
            if own:
                con.close()

    def read_bytes(self, rel: str) -> bytes:
        if self.kind == "local":
            return Path(self.path(rel)).read_bytes()
        with self.filesystem().open_input_file(f"{self.root}/{rel}") as f:
            return f.read()

    def place(self, rel_dir: str, files: dict, con=None) -> None:
        """Write a bundle's files straight into its folder, the marker last, uncommitted
        (no index rows) and unstaged: for filling a scratch store in bulk
        (labkit.lab.registry.synthetic), whose index part is written after its folders."""
        for name in sorted(files, key=lambda n: n == MARKER):
            if self.kind == "local":
                final = Path(self.path(f"{rel_dir}/{name}"))
                final.parent.mkdir(parents=True, exist_ok=True)
                final.write_bytes(files[name])
            else:
                self.write(f"{rel_dir}/{name}", files[name], con)

    def remove(self, rels) -> None:
        """Delete files (S3 objects); one already gone is not an error."""
        if self.kind == "local":
            for rel in rels:
                Path(self.path(rel)).unlink(missing_ok=True)
            return
        f = self.filesystem()
        for rel in rels:
            try:
                f.delete_file(f"{self.root}/{rel}")
            except FileNotFoundError:
                pass

    def _sql(self, sql: str, params=()):
        con = self.connect()
        try:
            return con.execute(sql, list(params)).fetchall()
        finally:
            con.close()

    def query(self, sql: str, params=(), *, frame: bool = False):
        """Rows (or a DataFrame) of a query over the store; None when a file it reads does
        not exist (an empty store). A file removed between DuckDB's listing and its read
        (a compaction at work) makes it list again."""
        import duckdb

        for attempt in range(3):
            con = self.connect()
            try:
                done = con.execute(sql, list(params))
                return done.df() if frame else done.fetchall()
            except duckdb.IOException as exc:
                if "No files found" in str(exc):
                    return None
                if attempt == 2:
                    raise
            except duckdb.HTTPException:
                if attempt == 2:
                    raise
            finally:
                con.close()

    def read(self, rel_dir: str, name: str):
        """One file of one bundle as a DataFrame, with its own column types."""
        path = self.path(f"{rel_dir}/{name}")
        if self.kind == "local":
            return pd.read_parquet(path)
        con = self.connect()
        try:
            return con.execute("SELECT * FROM read_parquet(?)", [path]).df()
        finally:
            con.close()

    # ---- publishing ----
    def put(self, rel_dir: str, files: dict) -> None:
        """Write one bundle's files (name -> bytes) at rel_dir with its index rows, all or
        nothing; raises DuplicateBundle if the bundle is committed already."""
        if MARKER not in files:
            raise ValueError(f"files must include {MARKER}")
        rows = index.rows(rel_dir, files)
        if self.kind == "local":
            self._put_local(rel_dir, files, rows)
        else:
            self._put_s3(rel_dir, files, rows)
        part = index.partition(rel_dir)
        deltas = sum(r.rsplit("/", 1)[-1].startswith(index.DELTA)
                     for r, _ in self.listing(f"{index.INDEX}/machine/{part}"))
        if deltas >= index.AUTO_COMPACT:
            try:
                index.compact(self, adopt=False, only=part)
            except Exception as exc:  # noqa: BLE001 - the bundle is committed; say, go on
                warnings.warn(f"registry {self.describe()}: the bundle is stored, but "
                              f"compacting {part} failed ({exc}); `compact` will", stacklevel=2)

    def _index_rel(self, table: str, rel_dir: str) -> str:
        return f"{index.INDEX}/{table}/{index.partition(rel_dir)}/{index.delta_name(rel_dir)}"

    def _put_local(self, rel_dir: str, files: dict, rows: dict) -> None:
        final = Path(self.root) / rel_dir
        staging = Path(self.root) / STAGING
        staging.mkdir(parents=True, exist_ok=True)
        sweep_staging(staging)
        stage, lock = _locked_stage(staging, final.name)
        try:
            (stage / "bundle").mkdir(parents=True)
            for path, data in [(stage / "bundle" / n, d) for n, d in files.items()] + \
                    [(stage / f"{t}.parquet", d) for t, d in rows.items()]:
                with open(path, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
            if self.has(rel_dir):
                raise DuplicateBundle(rel_dir)
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(stage / "bundle", final)  # atomic
            except OSError as exc:
                # The same content's folder is there: a twin publishing it now, or a
                # publish killed before its commit. Either way its files are this bundle.
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
            for table in ("verdicts", "ladder", "machine"):  # the machine row commits
                target = Path(self.path(self._index_rel(table, rel_dir)))
                target.parent.mkdir(parents=True, exist_ok=True)
                if table != "machine":
                    os.replace(stage / f"{table}.parquet", target)
                    continue
                try:
                    os.link(stage / "machine.parquet", target)  # fails if it exists
                except FileExistsError:
                    raise DuplicateBundle(rel_dir) from None
        finally:
            shutil.rmtree(stage, ignore_errors=True)  # the folder, then its lock
            Path(lock.name).unlink(missing_ok=True)
            lock.close()

    def _put_s3(self, rel_dir: str, files: dict, rows: dict) -> None:
        self.sweep_staging()
        if self.has(rel_dir):
            raise DuplicateBundle(rel_dir)
        stage = f"{STAGING}/{int(time.time())}-{uuid.uuid4().hex[:12]}"
        # in the order they are copied into place: data, the bundle's marker, the index
        # rows, the machine row last (the commit)
        order = [f"{rel_dir}/{n}" for n in sorted(files, key=lambda n: n == MARKER)] + \
            [self._index_rel(t, rel_dir) for t in ("verdicts", "ladder", "machine")]
        data = {f"{rel_dir}/{n}": d for n, d in files.items()}
        data.update({self._index_rel(t, rel_dir): d for t, d in rows.items()})
        con = self.connect()
        try:
            for rel in order:
                self.write(f"{stage}/{rel}", data[rel], con)
        finally:
            con.close()
        f = self.filesystem()
        try:
            for rel in order:
                f.copy_file(f"{self.root}/{stage}/{rel}", f"{self.root}/{rel}")
        finally:
            self.remove(f"{stage}/{rel}" for rel in order)

    def sweep_staging(self, older_than: float = STALE_S) -> list[str]:
        """Remove what dead publishers left: a local store's unlocked staging folders
        (sweep_staging); an S3 store's staging prefixes older than `older_than` seconds,
        with the objects they had copied into place when their bundle was never committed.
        Returns the staging entries removed."""
        if self.kind == "local":
            return sweep_staging(Path(self.root) / STAGING)
        if not isinstance(older_than, (int, float)) or older_than < 0:
            raise ValueError(f"older_than must be seconds >= 0; got {older_than!r}")
        by_stage: dict[str, list[str]] = {}
        for rel, _ in self.listing(STAGING):
            name = rel.split("/")[1]
            by_stage.setdefault(name, []).append(rel)
        removed = []
        now = time.time()
        for name, rels in sorted(by_stage.items()):
            started = name.split("-", 1)[0]
            if started.isdigit() and now - int(started) < older_than:
                continue  # a publisher may be at work
            inner = [r.split("/", 2)[2] for r in rels]
            bundle = next((r.rsplit("/", 1)[0] for r in inner
                           if not r.startswith(index.INDEX + "/")), None)
            if bundle and not self.has(bundle):
                placed = [f"{bundle}/{n}" for n in TABLES_FILES] + \
                    [self._index_rel(t, bundle) for t in index.TABLES]
                self.remove(placed)
            self.remove(rels)
            removed.append(name)
        return removed

    # ---- reading (DuckDB) ----
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


def run_mode(quick: bool) -> str:
    """The partition a run's bundles go to: quick runs apart from full ones."""
    return "quick" if quick else "full"


def open_store(location) -> Store:
    """A Store from a registry location: a folder path, s3://BUCKET[/PREFIX] (the endpoint
    from $AWS_ENDPOINT_URL, else AWS), or http(s)://HOST:PORT/BUCKET[/PREFIX] (an S3
    endpoint such as `labkit registry serve`'s). A Store is returned as it is."""
    if isinstance(location, Store):
        return location
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
    folder = Path(text).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"registry {text!r} is a file, not a registry folder")
    return Store(text, "local", str(folder.resolve()))
