"""The room's keys: a fresh certificate authority and one certificate per Dask role
(scheduler, client, worker), made with `cryptography`, kept together in one room file.

The room file is a key to the room: whoever holds it can connect as a client and run
code on every joined machine, or join as a worker. It is written with mode 0600 and is
never printed. The CA's private key is not kept anywhere: nobody, the room's holder
included, can mint another certificate for this room; a new room means a new CA.
"""
from __future__ import annotations

import datetime
import json
import os
import tempfile
from pathlib import Path
# cryptography and distributed (the room extra) are imported where used: they may be absent.

ROLES = ("scheduler", "client", "worker")
FORMAT = 1
KIND = "labkit-room"
VALID_DAYS = 30  # a workshop or a fleet comparison; a stale room file stops working


def _pem_key(key) -> str:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _pem_cert(cert) -> str:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM).decode()


def make_credentials(*, common_name: str = "labkit room") -> dict:
    """A fresh CA certificate and a signed certificate with its key for each role:
    {"ca": PEM, "scheduler": {"cert", "key"}, "client": {...}, "worker": {...}}."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if not isinstance(common_name, str) or not common_name:
        raise TypeError("common_name must be a non-empty str")
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{common_name} CA")])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                            key_encipherment=False, data_encipherment=False,
                                            key_agreement=False, key_cert_sign=True,
                                            crl_sign=True, encipher_only=False,
                                            decipher_only=False), critical=True)
               .sign(ca_key, hashes.SHA256()))
    out = {"ca": _pem_cert(ca_cert)}
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                            f"{common_name} {role}")]))
                .issuer_name(ca_name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(end)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                # Every role is both ends of some connection (workers talk to each other).
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        out[role] = {"cert": _pem_cert(cert), "key": _pem_key(key)}
    return out


def write_room(path: str | Path, address: str, credentials: dict) -> Path:
    """Write the room file (JSON, mode 0600 from its creation on) atomically."""
    if not isinstance(address, str) or not address.startswith("tls://"):
        raise ValueError(f"address must be a tls:// address, got {address!r}")
    path = Path(path)
    doc = {"kind": KIND, "format": FORMAT, "address": address,
           "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           **credentials}
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file 0600, so the keys are never readable by others, even briefly.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_room(path) -> dict:
    """Read and check a room file; ValueError (naming `room`) if it is not one."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"room must be a room file's path (str or Path), not {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"room {path} does not exist: the room's holder makes it with "
                         "`labkit room serve`")
    try:
        doc = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"room {path} is not a labkit room file: {exc}") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise ValueError(f"room {path} is not a labkit room file")
    missing = [k for k in ("address", "ca", *ROLES) if k not in doc]
    if missing:
        raise ValueError(f"room {path} lacks {', '.join(missing)}")
    return doc


def security(room: dict, role: str):
    """A Dask `Security` for one role of the room: TLS required, peers verified against
    the room's CA (mutual TLS), keys passed in memory."""
    from distributed.security import Security

    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    mine = room[role]
    kwargs = {f"tls_{role}_cert": mine["cert"], f"tls_{role}_key": mine["key"]}
    return Security(require_encryption=True, tls_ca_file=room["ca"], **kwargs)
