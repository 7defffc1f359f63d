"""Memory per suspended coroutine, probed as each design's record says: stacks touched and
not, copy-stack coroutines, C++20 heap frames (notebook 07b), Python objects (tracemalloc);
the depth of the bytes in use on a stack, and the memory mappings one takes."""
from __future__ import annotations

import asyncio
import gc
import math
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import greenlet
import numpy as np

from labkit.core import entries, systems, user_pyswitch, validate
from labkit.core.plots import bytes_label
from labkit.experiments import frames, workload
from labkit.lab.advising import taxonomy
from labkit.lab.advising import evidence as _ev
from labkit.lab.advising.cold import holding, layout_of
from labkit.lab.advising.inputs import Workload

GUARD_MAPPINGS = 2           # a guard-paged stack: the PROT_NONE page and the stack
MMAP_THRESHOLD = 128 << 10   # glibc malloc's default M_MMAP_THRESHOLD: larger blocks are mmapped


def _stackful_rows(ev):
    df = ev.rows("07b_coroutine_memory")
    if "part" not in df:
        return df.iloc[0:0]
    return df[df.part == "stackful"]


def stack_memory(ev, size: int, touched_bytes: int) -> dict:
    """Resident bytes and page tables of one stack of `size` with `touched_bytes` written:
    07b's untouched stack (one page) plus, per further page written, the slope from its
    wholly touched stack, at the measured size nearest `size`; page tables scaled by size."""
    page = validate.page_size()
    df = _stackful_rows(ev)
    if df.empty and ev.local:
        n = 500 if ev.quick else 5000
        ev.announce(f"memory of {n} stacks of {size} bytes, touched and not",
                    "data/07b_coroutine_memory.csv has no stackful row from this machine")
        for t in (False, True):
            ev.add("07b_coroutine_memory", frames.stackful(size, touched=t, n=n)
                   .assign(part="stackful"))
        df = _stackful_rows(ev)
    if df.empty:
        raise LookupError(f"no stackful memory rows in {ev.source}")
    s = _ev.nearest_size(df, size)
    sub = df[df.stack_size == s]
    untouched = sub[sub.touched.astype(str) == "False"]
    touched = sub[sub.touched.astype(str) == "True"]
    base = float(untouched.bytes_per_object.median())
    pte = float(untouched.pte_bytes_per_object.median()) * size / s
    pages = max(1, math.ceil(touched_bytes / page))
    slope = page  # one page per page, until a fully touched stack says otherwise
    if len(touched) and s > page:
        slope = (float(touched.bytes_per_object.median()) - base) / (s / page - 1)
    return {"resident": base + (min(pages, size // page) - 1) * slope, "page_tables": pte,
            "note": "" if s == size else f"memory from {bytes_label(s)} stacks"}


def copy_memory(ev, u: int) -> dict:
    df = ev.rows("07b_coroutine_memory_copy_stack")
    if df.empty and ev.local:
        n = 2000 if ev.quick else 20_000
        ev.announce(f"memory of {n} copy-stack coroutines with {u} bytes in use",
                    "data/07b_coroutine_memory_copy_stack.csv has no row from this machine")
        for x in sorted({0, u}):
            ev.add("07b_coroutine_memory_copy_stack", frames.copy_stack(x, n=n))
        df = ev.rows("07b_coroutine_memory_copy_stack")
    if df.empty:
        raise LookupError(f"no copy-stack memory in {ev.source}")
    pts = df.groupby("stack_in_use").bytes_per_object.median()
    xs, ys = pts.index.to_numpy(float), pts.to_numpy(float)
    if len(xs) == 1 or u <= xs[-1]:
        v = float(np.interp(u, xs, ys))
        note = ""
    else:
        v = ys[-1] + (u - xs[-1]) * (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        note = f"extrapolated beyond {bytes_label(xs[-1])} in use"
    return {"resident": v, "page_tables": math.nan, "note": note}


# The C++20 frames measured now where the data has none: the smallest and two sizes of a
# connection's frame, for the straight line by frame size (notebook 07b measures these).
FRAME_VARIANTS = ("empty", "conn192", "conn256")


def frame_memory(ev, frame: int) -> dict:
    """A heap frame holding `frame` bytes alive across a suspension beside the smallest
    (empty) coroutine's frame: a straight line through 07b's C++20 frames (heap allocator)
    by frame size."""
    def heap_frames():
        df = ev.rows("07b_coroutine_memory")
        # the stackful rows measured now have a kind but no allocator
        return (df[(df.kind == "cxx20") & (df.allocator == "heap")]
                if {"kind", "allocator"} <= set(df.columns) else df.iloc[0:0])

    df = heap_frames()
    if df.empty and ev.local:
        n = 20_000 if ev.quick else 200_000
        ev.announce(f"memory of {n} C++20 coroutines of each of the frames "
                    f"{', '.join(FRAME_VARIANTS)} (heap)",
                    "data/07b_coroutine_memory.csv has no C++20 frame from this machine")
        for v in FRAME_VARIANTS:
            ev.add("07b_coroutine_memory", frames.coroutines(v, "heap", n=n))
        df = heap_frames()
    if df.empty:
        raise LookupError(f"no C++20 frame memory in {ev.source}")
    g = df.groupby("frame_bytes")[["bytes_per_object", "pte_bytes_per_object"]].median()
    x = g.index.to_numpy(float)
    frame = x.min() + frame  # the empty coroutine's own fields, and what stays alive
    if len(x) < 2:
        raise LookupError("C++20 frame memory at one frame size only")
    fit = np.polyfit(x, g.bytes_per_object.to_numpy(float), 1)
    pfit = np.polyfit(x, g.pte_bytes_per_object.to_numpy(float), 1)
    note = f"extrapolated beyond {int(x.max())}-byte frames" if frame > x.max() else ""
    return {"resident": float(np.polyval(fit, frame)),
            "page_tables": max(0.0, float(np.polyval(pfit, frame))), "note": note}


def python_memory(ev, design: str) -> dict:
    """Python heap bytes per suspended greenlet, generator or asyncio task, or context of a
    user's Python switch, measured now with tracemalloc (the lab's data has none)."""
    if not ev.local:
        raise LookupError(f"no memory of {design} in {ev.source}")
    key = f"python memory {design}"
    if key not in ev.frames:
        n = 1000 if ev.quick else 10_000
        ev.announce(f"Python heap of {n} suspended {design} objects (tracemalloc)",
                    "the lab's data has no memory figure for Python's designs")
        if design in systems.USER_PY_SWITCHES:  # the user's code runs in a worker only
            ev.frames[key] = user_pyswitch.memory(design, n)
        else:
            # In a thread of its own: asyncio's measurement runs an event loop, which a
            # Jupyter kernel's thread already has running.
            with ThreadPoolExecutor(1) as pool:
                ev.frames[key] = pool.submit(_python_bytes, design, n).result()
    return {"resident": ev.frames[key], "page_tables": math.nan,
            "note": "Python heap (tracemalloc), measured now"}


def _python_bytes(design: str, n: int) -> float:
    def gen():
        yield 1
        yield 2

    held = []
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    if design == "generator_send":
        for _ in range(n):
            g = gen()
            next(g)
            held.append(g)
    elif design == "greenlet_switch":
        main = greenlet.getcurrent()
        for _ in range(n):
            g = greenlet.greenlet(lambda: main.switch())
            g.switch()
            held.append(g)
    elif design == "asyncio_task":
        loop = asyncio.new_event_loop()
        fut = loop.create_future()

        async def task():
            await fut

        held = [loop.create_task(task()) for _ in range(n)]
        loop.run_until_complete(asyncio.sleep(0))
    else:
        raise ValueError(f"design {design!r} is not a Python design")
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    if design == "asyncio_task":
        fut.cancel()
        loop.run_until_complete(asyncio.gather(*held, return_exceptions=True))
        loop.close()
    elif design == "greenlet_switch":
        for g in held:
            g.throw(greenlet.GreenletExit)
    return (after - before) / n


def stack_depth(ev, design: str, u: int, size: int) -> tuple[int, str]:
    """(bytes, note): from the top of one of the design's stacks down to the start of its u
    bytes in use, which the stack holds resident. The workload experiment's coroutine in the
    design's layout, made now (a peer's own record at the top of the stack is counted
    only so), less the layout's declared frame plus the design's; with nothing in use, or
    another machine's data, the declared frame plus u."""
    frame = entries.frame_bytes(design)
    if u == 0:
        return frame, ""
    layout = layout_of(design)
    size = holding(layout, u, size)
    key = f"depth {layout} {u} {size}"
    if key not in ev.frames:
        if not ev.local:
            return u + frame, "stack depth: the bytes in use and the declared frame"

        ev.announce(f"how deep {layout}'s {u} bytes in use sit on a {bytes_label(size)} "
                    "stack", "the lab's data has no stack depth")
        df = workload.run_workload(layout, work_ns=0, alive=1, stack_in_use=u,
                                   switches_per_request=1, requests=1, stack_size=size,
                                   repeats=1)
        ev.frames[key] = int(df.stack_depth_bytes.iloc[0])
    return ev.frames[key] - entries.frame_bytes(layout) + frame, ""


def mappings(design: str, w: Workload) -> int:
    """Memory mappings one coroutine of the design takes, from its layout alone."""
    size = taxonomy.stack_size(design, w)
    if size is None:
        return 0
    # A malloc'd stack (Boost's fixedsize_stack) is a mapping of its own only when malloc
    # mmaps it.
    return GUARD_MAPPINGS if taxonomy.of(design).guard_page else int(size >= MMAP_THRESHOLD)


def memory(ev, design: str, w: Workload) -> dict:
    """Per coroutine: reserved, resident and page-table bytes and memory mappings; the
    total for N (resident + page tables); the stack size it assumed; notes."""
    fam, size = taxonomy.of(design).family, taxonomy.stack_size(design, w)
    page = validate.page_size()
    if fam in ("stack", "thread"):
        held, note = (stack_depth(ev, design, w.stack_in_use, size) if fam == "stack"
                      else (w.stack_in_use, ""))
        m = stack_memory(ev, size, held)
        m["note"] = "; ".join(filter(None, [m["note"], note]))
        reserved = size + (page if taxonomy.of(design).guard_page else 0)
    elif fam == "copy":
        m = copy_memory(ev, w.stack_in_use)
        reserved = m["resident"]
    elif fam == "frame":
        m = frame_memory(ev, w.stack_in_use)
        reserved = m["resident"]
    else:
        m = python_memory(ev, design)
        reserved = m["resident"]
    maps = mappings(design, w)
    per = m["resident"] + (0.0 if math.isnan(m["page_tables"]) else m["page_tables"])
    return {"stack_size": size, "reserved": reserved, "resident": m["resident"],
            "page_tables": m["page_tables"], "mappings": maps, "per_coroutine": per,
            "total": per * w.alive, "mappings_total": maps * w.alive, "note": m["note"]}
