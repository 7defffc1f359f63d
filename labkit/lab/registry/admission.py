"""Who may publish to a registry: the owner's list of admitted public keys, kept at the
store's root (ADMITTED, one row per key: name, public key, fingerprint, when admitted).

A store without the list is open: any bundle that passes publish's checks lands, signed
or not, and every answer says so. With the list, publish takes only bundles signed by a
key on it (labkit.lab.registry.keys), and each stored bundle names its publisher as the
owner named the key.
"""
from __future__ import annotations

import datetime
import io
from pathlib import Path

import pandas as pd

from labkit.lab.registry import keys
from labkit.lab.registry import store as stores

ADMITTED = "_keys/admitted.parquet"
OPEN = ("open registry: it admits no keys, so anyone may publish to it (its owner closes it "
        "with `labkit registry admit`)")


def admitted(registry) -> dict | None:
    """fingerprint -> keys.Signer of every admitted key, the owner's names; None when the
    store has no list (it is open)."""

    store = stores.open_store(registry)
    if store.kind == "local":

        if not Path(store.path(ADMITTED)).exists():
            return None
    else:
        from pyarrow import fs

        found = store.filesystem().get_file_info(f"{store.root}/{ADMITTED}")
        if found.type != fs.FileType.File:
            return None
    rows = pd.read_parquet(io.BytesIO(store.read_bytes(ADMITTED)))
    return {fp: keys.Signer(name, key, fp)
            for name, key, fp in zip(rows.name, rows.public_key, rows.fingerprint)}


def admit(registry, key: str, name: str | None = None) -> keys.Signer:
    """Add a public key (as `labkit key show` prints it, or its base64) to the store's list
    under `name` (else the name the line carries); the first admission closes an open
    store. Admitting a key again renames it."""

    signer = keys.parse_public(key, name)
    store = stores.open_store(registry)
    have = admitted(store) or {}
    have[signer.fingerprint] = signer
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    rows = pd.DataFrame([{"name": s.name, "public_key": s.public_key, "fingerprint": fp,
                          "admitted": now} for fp, s in sorted(have.items())])
    buf = io.BytesIO()
    rows.to_parquet(buf, index=False)
    store.write(ADMITTED, buf.getvalue())
    return signer


def header(registry) -> str | None:
    """The line every answer of an open store opens with (None for a closed store)."""
    return OPEN if admitted(registry) is None else None


__all__ = ["ADMITTED", "OPEN", "admit", "admitted", "header"]
