"""Publishers' keys: an Ed25519 key pair per publisher, and a bundle's signature over every
file it holds.

The key lives in the key folder (KEY_DIR_ENV, else $XDG_CONFIG_HOME/labkit, else
~/.config/labkit): `publisher.key` (PKCS#8 PEM, mode 0600) and `publisher.pub`, one line
`ed25519 <base64 public key> <name>`. A signed bundle holds SIGNATURE, a JSON object:
the public key, the name its publisher chose, the hash algorithm, the hash of the bundle
(signed_hash) and the signature of that hash.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from labkit.errors import ParameterError

KEY_DIR_ENV = "LABKIT_KEY_DIR"
PRIVATE, PUBLIC = "publisher.key", "publisher.pub"
SIGNATURE = "signature.json"
ALGORITHM, HASH = "ed25519", "sha256"
# What is signed: this tag and the bundle's hash, so a signature made for something else
# with the same key never passes for a bundle's.
CONTEXT = b"labkit bundle v1\0"
NAME = re.compile(r"^[\w.@+-][\w .@+-]{0,63}$")
HOW_TO_SIGN = ("unsigned: make a key with `labkit key new --name NAME` and bundle again to "
               "sign it (a registry that admits keys refuses unsigned bundles)")


class BadSignature(ValueError):
    """A bundle's signature.json is damaged, or does not verify over its files."""


@dataclass(frozen=True)
class Signer:
    """Whose key signed a bundle: the name the publisher chose, its public key (base64 of
    the 32 raw bytes) and the key's fingerprint."""
    name: str
    public_key: str
    fingerprint: str


def key_dir(given=None) -> Path:
    """The key folder: `given`, else $LABKIT_KEY_DIR, else the user's config folder."""
    if given is not None:
        return Path(given).expanduser()
    if os.environ.get(KEY_DIR_ENV):
        return Path(os.environ[KEY_DIR_ENV]).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(config) / "labkit"


def fingerprint(public_key: str) -> str:
    """'sha256:' and the first 16 hex digits of the sha256 of the raw public key."""
    return "sha256:" + hashlib.sha256(_raw(public_key)).hexdigest()[:16]


def _raw(public_key: str) -> bytes:
    try:
        raw = base64.b64decode(public_key, validate=True)
    except (ValueError, TypeError):
        raw = b""
    if len(raw) != 32:
        raise ParameterError("key", f"{public_key!r} is not an Ed25519 public key (base64 of "
                             "32 bytes, as `labkit key show` prints it)")
    return raw


def check_name(name) -> str:
    if not isinstance(name, str) or not NAME.match(name.strip()):
        raise ParameterError("name", f"must be 1 to 64 letters, digits, spaces or . @ + - _ "
                             f"(not starting with a space); got {name!r}")
    return name.strip()


def new_key(name: str, directory=None, *, replace: bool = False) -> Signer:
    """Make a key pair in the key folder (the private key mode 0600); an existing key is
    kept unless `replace`."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    name = check_name(name)
    folder = key_dir(directory)
    private = folder / PRIVATE
    if private.exists() and not replace:
        raise ParameterError("key_dir", f"{folder} holds a key already ({fingerprint(_public_of(folder))}); "
                             "keep it, or make another with --replace")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    tmp = folder / f".{PRIVATE}.{os.getpid()}.tmp"
    # Created 0600, never readable by others even for an instant.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    os.chmod(tmp, 0o600)
    os.replace(tmp, private)
    public = base64.b64encode(key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)).decode()
    (folder / PUBLIC).write_text(f"{ALGORITHM} {public} {name}\n")
    return Signer(name, public, fingerprint(public))


def _public_of(folder: Path) -> str:
    return (folder / PUBLIC).read_text().split()[1]


def own_key(directory=None) -> Signer | None:
    """The key in the key folder (None if there is none)."""
    folder = key_dir(directory)
    if not (folder / PRIVATE).exists() or not (folder / PUBLIC).exists():
        return None
    return parse_public((folder / PUBLIC).read_text())


def parse_public(text: str, name: str | None = None) -> Signer:
    """A public key as `labkit key show` prints it (`ed25519 KEY NAME`) or the bare base64
    key (then `name` names it)."""
    words = str(text).strip().split(None, 2)
    if len(words) >= 2 and words[0] == ALGORITHM:
        key, said = words[1], (words[2].strip() if len(words) > 2 else "")
    elif len(words) == 1:
        key, said = words[0], ""
    else:
        raise ParameterError("key", f"{str(text).strip()[:60]!r} is not a public key: give "
                             "the line `labkit key show` prints, or its base64 key")
    return Signer(check_name(name or said or "unnamed"), key, fingerprint(key))


def signed_hash(path) -> str:
    """sha256 over every file of the bundle folder but its signature: names and bytes, in
    name order (machine.json whole, its `created` included)."""
    h = hashlib.sha256()
    for f in sorted(Path(path).iterdir()):
        if f.is_file() and f.name != SIGNATURE:
            h.update(f.name.encode() + b"\0")
            h.update(f.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


def sign(path, directory=None) -> Signer | None:
    """Sign the bundle folder at `path` with the key in the key folder, writing SIGNATURE;
    None (and no file) when there is no key."""
    me = own_key(directory)
    if me is None:
        return None
    from cryptography.hazmat.primitives import serialization

    folder = key_dir(directory)
    key = serialization.load_pem_private_key((folder / PRIVATE).read_bytes(), password=None)
    digest = signed_hash(path)
    signature = key.sign(CONTEXT + bytes.fromhex(digest))
    record = {"algorithm": ALGORITHM, "hash": HASH, "content_hash": digest,
              "public_key": me.public_key, "fingerprint": me.fingerprint, "name": me.name,
              "signature": base64.b64encode(signature).decode()}
    (Path(path) / SIGNATURE).write_text(json.dumps(record, indent=1) + "\n")
    return me


def verify(path) -> Signer | None:
    """Whose key signed the bundle folder at `path` (None: it is unsigned); BadSignature
    if the signature is damaged or any file changed after signing."""
    file = Path(path) / SIGNATURE
    if not file.exists():
        return None
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        record = json.loads(file.read_text())
        if record.get("algorithm") != ALGORITHM or record.get("hash") != HASH:
            raise BadSignature(f"its {SIGNATURE} is of {record.get('algorithm')}/"
                               f"{record.get('hash')}, not {ALGORITHM}/{HASH}")
        public = Ed25519PublicKey.from_public_bytes(_raw(record["public_key"]))
        signature = base64.b64decode(record["signature"], validate=True)
        name = check_name(record.get("name", "unnamed"))
    except BadSignature:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BadSignature(f"its {SIGNATURE} is damaged ({type(exc).__name__})") from None
    digest = signed_hash(path)
    try:
        public.verify(signature, CONTEXT + bytes.fromhex(digest))
    except InvalidSignature:
        raise BadSignature(f"its signature by {name} ({fingerprint(record['public_key'])}) "
                           "does not verify: a file changed after it was signed") from None
    return Signer(name, record["public_key"], fingerprint(record["public_key"]))


__all__ = ["BadSignature", "HOW_TO_SIGN", "SIGNATURE", "Signer", "check_name", "fingerprint",
           "key_dir", "new_key", "own_key", "parse_public", "sign", "signed_hash", "verify"]
