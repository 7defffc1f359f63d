"""The FP and vector state by component (notebook 06): what one save (xsave, xsaveopt or
xsavec) and one xrstor cost for each set of components XCR0 enables, with the vector
registers dirty (written before each save) or clean (in their initial state, which
xsaveopt and xsavec may skip).

The component sets of the sweep grow one step at a time: x87+SSE (0x3), +AVX (0x7),
+AVX-512 (0xE7), +AMX tiles (0x600E7), each where XCR0 enables it, and XCR0 itself (what
a switch kernel that saves everything XCR0 enables, asm_xsave, saves). The area's bytes
come from CPUID leaf 0xD. Each row is one repeat: the loop of save+restore pairs and its
baseline (the same loop, same dirtying, with the pair replaced by empty calls), net per
pair floored at 0.

The C side is labkit/csrc/xstate.c, in the C core's builds, called through
labkit.core.native in the worker process (worker_run)."""
from __future__ import annotations

import ctypes
import os

from labkit.core import machine as _machine
from labkit.core import native as _native
from labkit.core import validate as _v
from labkit.core import worker as _worker
from labkit.core.stats import floor_net
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

# In the order of enum lk_xstate_insn (labkit/csrc/xstate.h), with the bit of
# lk_xstate_cpu's insns that says the CPU has it.
INSTRUCTIONS = {"xsave": 1, "xsaveopt": 2, "xsavec": 4}
HAS_XINUSE = 8
STATES = {
    "dirty": "every register of the components written before each save",
    "clean": "vector components in their initial state, nothing written",
}
# XCR0 bit -> component name (the user components Linux enables).
COMPONENTS = {0: "x87", 1: "sse", 2: "avx", 5: "opmask", 6: "zmm_hi256", 7: "hi16_zmm",
              9: "pkru", 17: "tilecfg", 18: "tiledata"}
# The sweep's component sets, each one step wider than the last.
STEPS = {0x3: "x87+SSE", 0x7: "+AVX", 0xE7: "+AVX-512", 0x600E7: "+AMX"}
DEFAULT_BUILD = _native.DEFAULT_BUILD
MAX_PAIRS = 10**8


def _lib(build: str = DEFAULT_BUILD):
    return _native.core(build)


def cpu_state(build: str = DEFAULT_BUILD) -> dict:
    """XCR0, the save instructions this CPU has, XINUSE now (None if unreadable), and
    CPUID leaf 0xD: enabled_bytes (sub-leaf 0 EBX, the standard area for all of XCR0)
    and each enabled component's offset and size (sub-leaves 2 and up). RuntimeError
    where there is no XSAVE (or not x86-64)."""
    lib = _lib(build)
    xcr0, insns, xinuse = ctypes.c_uint64(), ctypes.c_uint32(), ctypes.c_int64()
    _native.check(lib.lk_xstate_cpu, ctypes.byref(xcr0), ctypes.byref(insns), ctypes.byref(xinuse))
    regs = (ctypes.c_uint32 * 4)()

    def leaf(sub):
        _native.check(lib.lk_xstate_leaf, sub, regs)
        return list(regs)

    comps = {}
    for bit in range(2, 63):
        if xcr0.value >> bit & 1:
            eax, ebx, ecx, _ = leaf(bit)
            comps[bit] = {"name": COMPONENTS.get(bit, f"bit{bit}"), "offset": ebx, "size": eax,
                          "align64": bool(ecx & 2)}
    return {"xcr0": xcr0.value,
            "instructions": [n for n, bit in INSTRUCTIONS.items() if insns.value & bit],
            "xinuse": xinuse.value if insns.value & HAS_XINUSE else None,
            "enabled_bytes": leaf(0)[1], "components": comps}


def available() -> str:
    """'' if this machine can run the sweep, else why not."""
    try:
        cpu_state()
    except (RuntimeError, FileNotFoundError, OSError) as exc:
        return str(exc)
    return ""


def names(mask: int) -> str:
    """'x87 sse avx': the components of a mask, in bit order."""
    return " ".join(COMPONENTS.get(b, f"bit{b}") for b in range(64) if mask >> b & 1)


def sweep_masks(xcr0: int) -> list[int]:
    """The sweep's masks that XCR0 enables, then XCR0 itself if it is not among them."""
    out = [m for m in STEPS if m & xcr0 == m]
    return out + ([xcr0] if xcr0 not in out else [])


def label(mask: int) -> str:
    """The sweep step's name, or 'XCR0 (...)' for everything XCR0 enables."""
    return STEPS.get(mask, f"XCR0 0x{mask:x}")


def check_mask(value, xcr0: int) -> int:
    """A mask XCR0 enables, holding x87 and SSE, whole AVX-512 and AMX groups."""
    mask = _v.integer("mask", value)
    problems = []
    if mask <= 0 or mask & ~xcr0:
        problems.append(f"lie within XCR0 0x{xcr0:x}")
    if mask & 0x3 != 0x3:
        problems.append("hold x87 and SSE (0x3)")
    if mask & 0xE0 not in (0, 0xE0):
        problems.append("hold all three AVX-512 components (0xE0) or none")
    if mask & 0x60000 not in (0, 0x60000):
        problems.append("hold both AMX components (0x60000) or none")
    if problems:
        raise ValueError(f"mask must {' and '.join(problems)}; got 0x{mask:x}"
                         f" ({names(mask & ((1 << 64) - 1))})")
    return mask


def area_bytes(mask: int, instruction: str, build: str = DEFAULT_BUILD) -> int:
    """Bytes of the area `instruction` writes for `mask` (xsavec: the compacted form)."""
    return int(_lib(build).lk_xstate_bytes(mask, int(instruction == "xsavec")))


# ---- run in the worker process (labkit.core.worker.call) ----

def worker_run(build: str, instruction: str, mask: int, state: str, pairs: int, warmup: int,
               repeats: int, cpu: int | None) -> list[dict]:
    """lk_xstate_run's raw samples as dicts."""
    before = os.sched_getaffinity(0)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    try:
        return _lib(build).samples("lk_xstate_run", "lk_xstate_sample", repeats,
                                   list(INSTRUCTIONS).index(instruction), mask,
                                   int(state == "dirty"), pairs, warmup, repeats)
    finally:
        os.sched_setaffinity(0, before)


# ---- the caller's side ----

def measure(instruction: str, mask: int, state: str, *, pairs: int = 20_000,
            repeats: int = 10, warmup: int = 1, cpu: int | None = None,
            build: str = DEFAULT_BUILD, timeout: float | None = None):
    """One (instruction, mask, state): a row per repeat, in a worker process. ValueError
    for an instruction this CPU lacks or a mask XCR0 does not enable."""
    build = _native.check_build(build)
    info = cpu_state(build)
    instruction = _v.choice("instruction", instruction, INSTRUCTIONS)
    if instruction not in info["instructions"]:
        raise ValueError(f"instruction {instruction!r}: this CPU has only "
                         f"{', '.join(info['instructions'])}")
    mask = check_mask(mask, info["xcr0"])
    state = _v.choice("state", state, STATES)
    pairs = _v.integer_in("pairs", pairs, 1, MAX_PAIRS)
    repeats, warmup, cpu = _v.repeats(repeats), _v.warmup(warmup), _v.cpu(cpu)
    timeout = (60 + (repeats + warmup) * 2 * pairs * 5e-6) if timeout is None else _v.timeout(timeout)
    meta = _machine.row_metadata(build)
    describe = (f"xstate ({instruction}, mask=0x{mask:x}, {state}, pairs={pairs}, "
                f"repeats={repeats}, build={build})")
    samples = _worker.call("labkit.experiments.xstate", "worker_run", describe=describe,
                           timeout=timeout, build=build, instruction=instruction, mask=mask,
                           state=state, pairs=pairs, warmup=warmup, repeats=repeats, cpu=cpu)
    return _frame(samples, dict(instruction=instruction, mask=mask, mask_hex=f"0x{mask:x}",
                                step=label(mask), components=names(mask),
                                area_bytes=area_bytes(mask, instruction, build), state=state,
                                xcr0=f"0x{info['xcr0']:x}", build=build, repeats=repeats,
                                cpu=cpu), describe, meta)


def _frame(samples, common, describe, meta):
    import pandas as pd

    rows = []
    for i, s in enumerate(samples):
        n = s["pairs"]
        if n <= 0:
            raise RuntimeError(f"{describe}: repeat {i} made no pairs")
        raw, base = s["loop_ns"] / n, s["base_ns"] / n
        # One repeat's difference has no interval: floored at 0, `below_resolution` says
        # where; the quartiles over repeats are the interval.
        net, below = floor_net(raw, base)
        rows.append({**common, "repeat": i, "pairs": n, "loop_ns": s["loop_ns"],
                     "base_ns": s["base_ns"], "ns_per_pair_raw": raw,
                     "baseline_ns_per_pair": base, "ns_per_pair": net,
                     "below_resolution": below,
                     "xinuse": f"0x{s['xinuse']:x}" if s["xinuse"] >= 0 else None,
                     "preemptions": s["preemptions"], **meta})
    return pd.DataFrame(rows)


def sweep(*, instructions=None, masks=None, states=tuple(STATES), pairs: int = 20_000,
          repeats: int = 10, warmup: int = 1, cpu: int | None = None,
          build: str = DEFAULT_BUILD):
    """measure() for every (instruction, mask, state): by default every instruction this
    CPU has, every mask of sweep_masks(XCR0), dirty and clean. The repeats are taken in
    rounds, one of every point per round, so that the machine's drift (clock, neighbours)
    falls on all points alike. One frame of all their rows."""
    import pandas as pd

    info = cpu_state(build)
    insns = info["instructions"] if instructions is None else list(instructions)
    ms = sweep_masks(info["xcr0"]) if masks is None else list(masks)
    if isinstance(states, str) or not all(isinstance(s, str) for s in states):
        raise TypeError("states must be a list of state names (dirty, clean)")
    repeats = _v.repeats(repeats)
    frames = []
    for r in range(repeats):
        for i in insns:
            for m in ms:
                for s in states:
                    f = measure(i, m, s, pairs=pairs, repeats=1, warmup=warmup, cpu=cpu,
                                build=build)
                    frames.append(f.assign(repeat=r, repeats=repeats))
    return pd.concat(frames, ignore_index=True)


def summary(df):
    """Median and quartiles of ns per pair (net) for each (instruction, mask, state), in
    sweep order, with the raw and baseline medians beside them."""
    g = df.groupby(["instruction", "mask", "state"], sort=False)
    out = g.agg(step=("step", "first"), components=("components", "first"),
                area_bytes=("area_bytes", "first"), repeats=("repeat", "size"),
                median_ns=("ns_per_pair", "median"),
                q1_ns=("ns_per_pair", lambda x: x.quantile(0.25)),
                q3_ns=("ns_per_pair", lambda x: x.quantile(0.75)),
                raw_ns=("ns_per_pair_raw", "median"),
                baseline_ns=("baseline_ns_per_pair", "median"),
                xinuse=("xinuse", "first")).reset_index()
    out["mask"] = out["mask"].map(lambda m: f"0x{m:x}")
    return out


def component_costs(summ, instruction: str = "xsave", state: str = "dirty") -> list[dict]:
    """What each step of the sweep adds to one pair, for one instruction and state, in
    sweep order: the difference of the medians (adds_ns), with `resolved` False where the
    two steps' quartile ranges overlap (the difference is within the spread)."""
    sel = summ[(summ.instruction == instruction) & (summ.state == state)]
    out, prev = [], None
    for _, r in sel.iterrows():
        first = prev is None
        out.append({"step": r.step, "components": r.components, "area_bytes": r.area_bytes,
                    "median_ns": r.median_ns,
                    "adds_ns": r.median_ns if first else r.median_ns - prev.median_ns,
                    "adds_bytes": r.area_bytes if first else r.area_bytes - prev.area_bytes,
                    "resolved": True if first else bool(r.q1_ns > prev.q3_ns
                                                        or r.q3_ns < prev.q1_ns)})
        prev = r
    return out


def cost_text(costs) -> str:
    """component_costs in words: 'x87+SSE costs 150.2 ns (576 B); +AVX adds 4.1 ns ...'."""
    words = []
    for i, c in enumerate(costs):
        what = f"{c['step']} {'costs' if i == 0 else 'adds'} {c['adds_ns']:.1f} ns"
        if not c["resolved"]:
            what += " (within the quartiles: not resolved)"
        words.append(f"{what} ({c['adds_bytes']} B)")
    return "; ".join(words)
