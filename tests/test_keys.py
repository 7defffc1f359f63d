"""Publishers' keys (labkit.lab.registry.keys): `labkit key new` makes an Ed25519 pair with
the private key mode 0600; a bundle is signed over every file but its signature, and one
byte changed anywhere after signing fails verification; without a key a bundle is made
unsigned, and signed or not it is the same bundle to a registry."""
import json
import stat
from pathlib import Path

import pytest
from conftest import copy_bundle, labkit_cli

from labkit.core.results import REPO
from labkit.lab.registry import keys
from labkit.lab.sharing import bundle

REFERENCE = REPO.parent / "shared" / "reference"
# The Intel Xeon bundle is kept among the fixtures, so these tests run on every clone.
XEON = Path(__file__).resolve().parent / "fixtures" / "intel-xeon-amx-kvm-e68bcbc.labkit"
EPYC = REFERENCE / "amd-epyc-zen4-kvm.labkit"
EPYC_RUNS = REFERENCE / "amd-epyc-zen4-kvm.verdict_runs"
needs_epyc = pytest.mark.skipif(not EPYC.exists(), reason="no AMD EPYC reference bundle")



def test_key_new_makes_a_private_key_only_its_owner_reads(tmp_path):
    where = tmp_path / "keys"
    done = labkit_cli("key", "new", "--name", "alice", "--key-dir", str(where))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE((where / keys.PRIVATE).stat().st_mode) == 0o600
    shown = labkit_cli("key", "show", "--key-dir", str(where))
    line = shown.stdout.strip()
    assert line.startswith("ed25519 ") and line.endswith(" alice") and line in done.stdout
    again = labkit_cli("key", "new", "--name", "alice", "--key-dir", str(where))
    err = again.stderr.strip().splitlines()
    assert again.returncode == 2 and len(err) == 1 and "--key-dir" in err[0], again.stderr
    bad = labkit_cli("key", "new", "--name", " ", "--key-dir", str(tmp_path / "other"))
    assert bad.returncode == 2 and "--name" in bad.stderr
    # the environment variable names the folder as well
    me = labkit_cli("key", "show", env={keys.KEY_DIR_ENV: str(where)})
    assert me.stdout.strip() == line


def test_a_signed_bundle_with_one_byte_changed_in_any_file_fails(tmp_path):
    me = keys.new_key("alice", tmp_path / "k")
    signed = copy_bundle(XEON, tmp_path / "b.labkit")
    assert keys.verify(signed) is None  # unsigned
    assert keys.sign(signed, tmp_path / "k") == me
    said = json.loads((signed / keys.SIGNATURE).read_text())
    assert {said["public_key"], said["name"], said["hash"]} == {me.public_key, "alice", "sha256"}
    assert keys.verify(signed) == me
    for f in sorted(p.name for p in signed.iterdir() if p.name != keys.SIGNATURE):
        altered = copy_bundle(signed, tmp_path / f"altered-{f}.labkit")
        data = bytearray((altered / f).read_bytes())
        data[len(data) // 2] ^= 0x01
        (altered / f).write_bytes(bytes(data))
        with pytest.raises(keys.BadSignature, match="does not verify"):
            keys.verify(altered)
    damaged = copy_bundle(signed, tmp_path / "damaged.labkit")
    (damaged / keys.SIGNATURE).write_text("{")
    with pytest.raises(keys.BadSignature, match="damaged"):
        keys.verify(damaged)


@needs_epyc
def test_bundles_are_signed_when_there_is_a_key_and_are_one_bundle_either_way(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv(keys.KEY_DIR_ENV, str(tmp_path / "none"))
    plain = bundle.attach_runs(EPYC, EPYC_RUNS, tmp_path / "plain")
    assert not (plain / keys.SIGNATURE).exists()
    monkeypatch.setenv(keys.KEY_DIR_ENV, str(tmp_path / "k"))
    me = keys.new_key("bob")
    signed = bundle.attach_runs(EPYC, EPYC_RUNS, tmp_path / "signed")
    assert keys.verify(signed) == me
    assert bundle.content_hash(signed) == bundle.content_hash(plain)
    bundle.relabel(signed, "0123456789ab")  # renamed, and signed again
    assert keys.verify(signed) == me
