"""The reference card (labkit.card, `labkit card`): its fields on this machine, read from the
OS and measured now, and its refusals of bad input. No timing thresholds: a latency is
checked to be a positive number inside its own interval."""
import json
import math
import os
import platform
import shutil
import subprocess

import pytest

import labkit
from labkit.errors import ParameterError
from labkit.lab.cli.main import main
from labkit.core.plots import bytes_label
from labkit.lab.exploring import card as card_mod

SMALL = dict(switches=2_000, repeats=3)

# What Linux sums into /proc/cpuinfo's "TLB size" on x86-64 (cpu_detect_cache_sizes): the
# 4 KiB-page entries of the second-level data and instruction TLBs, cpuid 0x80000006 EBX.
# 0 where the leaf is absent or leaves them out (Intel reports its TLBs in leaves 2 and 0x18).
CPUID_TLB = r"""
#include <cpuid.h>
#include <stdio.h>
int main(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000006) { puts("0"); return 0; }
    __get_cpuid(0x80000006, &a, &b, &c, &d);
    printf("%u\n", ((b >> 16) & 0xfff) + (b & 0xfff));
    return 0;
}
"""


@pytest.fixture(scope="module")
def card():
    return labkit.card(**SMALL)


def test_the_card_reports_the_caches_tlb_and_page_size_the_os_gives(card):
    assert card.page_size == os.sysconf("SC_PAGE_SIZE")
    if card_mod.CACHE_DIR.exists():
        assert card.caches, "sysfs lists caches but the card has none"
        for c in card.caches:
            assert c["level"] >= 1 and c["size"] > 0 and c["line"] > 0
            assert c["type"] in ("Data", "Instruction", "Unified")
        assert {c["level"] for c in card.caches} >= {1}
    if card.tlb_entries is None:
        assert card.tlb == card_mod.TLB_UNKNOWN or "cpuinfo" in card.tlb
    else:
        reach = bytes_label(card.tlb_entries * card_mod.TLB_PAGE)
        assert card.tlb.startswith(f"{card.tlb_entries} 4K pages") and reach in card.tlb
    assert f"TLB: {card.tlb}" in str(card)


def test_the_tlb_entries_on_the_card_are_the_ones_cpuid_gives(card, tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if platform.machine() != "x86_64" or cc is None:
        pytest.skip("reading cpuid needs x86-64 and a C compiler")
    (tmp_path / "tlb.c").write_text(CPUID_TLB)
    subprocess.run([cc, "-O1", "-o", str(tmp_path / "tlb"), str(tmp_path / "tlb.c")],
                   check=True)
    entries = int(subprocess.run([str(tmp_path / "tlb")], capture_output=True, text=True,
                                 check=True).stdout)
    if entries == 0:
        assert card.tlb_entries is None and card.tlb == card_mod.TLB_UNKNOWN
        pytest.skip("this CPU's cpuid leaf 0x80000006 gives no TLB entries (Intel's is in "
                    "leaves 2 and 0x18), and the card says it cannot tell")
    assert card.tlb_entries == entries, card.tlb


def test_each_latency_is_measured_here_with_its_interval_or_says_why_not(card):
    assert [r["entry"] for r in card.latencies] == [x[2] for x in card_mod.LATENCIES]
    for r in card.latencies:
        if r["ns"] is None:
            assert r["why"], r
            continue
        assert math.isfinite(r["ns"]) and r["ns"] >= 0
        assert r["low"] <= r["ns"] <= r["high"], r
        assert r["repeats"] == SMALL["repeats"]
    # The lab's own kernel always runs here.
    assert next(r for r in card.latencies if r["entry"] == "asm_fpu")["ns"] is not None
    assert card.machine == labkit.core.plots.machine_caption()
    text = str(card)
    assert "asm_fpu's switch" in text and card.machine in text and "page size" in text


def test_tlb_and_caches_read_what_the_os_writes(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nTLB size\t: 3072 4K pages\n")
    said, entries = card_mod.tlb(info)
    assert entries == 3072 and said.startswith("3072 4K pages") and "reach 12 MiB" in said
    info.write_text("processor\t: 0\nflags\t: fpu\n")
    assert card_mod.tlb(info) == (card_mod.TLB_UNKNOWN, None)
    assert card_mod.tlb(tmp_path / "absent") == (card_mod.TLB_UNKNOWN, None)
    idx = tmp_path / "index0"
    idx.mkdir()
    for name, value in {"level": "2", "type": "Unified", "size": "1024K",
                        "coherency_line_size": "64", "ways_of_associativity": "8",
                        "shared_cpu_list": "0-1"}.items():
        (idx / name).write_text(value + "\n")
    assert card_mod.caches(tmp_path) == [{"level": 2, "type": "Unified", "size": 1 << 20,
                                          "line": 64, "ways": 8, "shared_cpus": "0-1"}]


@pytest.mark.parametrize("kwargs, param", [({"repeats": 2}, "repeats"),
                                           ({"switches": 3}, "switches"),
                                           ({"cpu": 10**6}, "cpu")])
def test_bad_input_names_its_parameter(kwargs, param):
    with pytest.raises((ParameterError, ValueError)) as err:
        labkit.card(**kwargs)
    assert str(err.value).startswith(param)


def test_the_command_prints_json_and_refuses_bad_input_with_exit_2(capsys):
    assert main(["card", "--json", "--switches", "2000", "--repeats", "3"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert set(got) - {"schema", "context"} == {"caches", "tlb", "tlb_entries", "page_size",
                                                "latencies", "machine"}
    assert main(["card", "--repeats", "1"]) == 2
    assert "--repeats" in capsys.readouterr().err
