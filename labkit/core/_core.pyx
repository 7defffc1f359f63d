# cython: language_level=3, boundscheck=False, wraparound=False
"""labkit's compiled core: thin wrappers over the C kernels and timed loops, the Cython half
of the one binding layer (labkit.core.native is the ctypes half, for the -O builds and the C++
library). The samples are ctypes arrays made by labkit.core.structs from the layout the C
exports, so both halves return the same dicts and neither lists the fields.

Private: call it only inside a worker process (labkit.core.worker), where a
crashing kernel cannot take the caller down. Arguments are validated by
labkit.core.validate before they get here.
"""
import ctypes
import os

from libc.stdint cimport int64_t, uint32_t, uint64_t

from labkit.core import structs



def kernel_table():
    """One dict per kernel the C core knows, in its enum order (the kernel table,
    LK_KERNELS in labkit_core.h): index, name, handle, stackful, keeps_fp_control,
    available, why_not, frame_bytes."""
    cdef const char *why
    cdef int k
    table = [row for row in lk_kernel_table().decode().split(";") if row]
    rows = []
    for k in range(len(table)):
        name, *props = table[k].split()
        props = dict(p.split("=") for p in props)
        ok = lk_kernel_available(k, &why)
        rows.append({
            "index": k,
            "name": name,
            "handle": props["handle"],
            "stackful": props["stackful"] == "1",
            "keeps_fp_control": props["keeps_fp_control"] == "1",
            "available": bool(ok),
            "why_not": why.decode(),
            "frame_bytes": lk_kernel_frame_bytes(k),
        })
    return rows


def peer_table():
    """One dict per C++ peer, in the order of enum lkx_peer (the peer table, LKX_PEERS in
    cxx/peers.h): index, name, kind, fp_control (whether measure's fp_control can set its
    words), saves."""
    rows = []
    for k, line in enumerate(lkx_peer_table().decode().splitlines()):
        head, _, saves = line.partition(" saves=")
        name, *props = head.split()
        props = dict(p.split("=") for p in props)
        rows.append({"index": k, "name": name, "kind": props["kind"],
                     "fp_control": props["fp_control"] == "1", "saves": saves})
    return rows


def build_info():
    """Architecture, timer, compiler and flags the core was built with."""
    return {
        "arch": lk_arch_name().decode(),
        "timer": lk_timer_name().decode(),
        "compiler": lk_compiler().decode(),
        "cflags": lk_cflags().decode(),
        "page_size": lk_page_size(),
    }


def cpu_state():
    """What CPUID and xgetbv say: XCR0, the xsave area's bytes for XCR0's components and
    for all the CPU supports (None each without xsave), the hypervisor's signature ('')."""
    cdef int64_t x[3]
    lk_xstate(x)
    return {
        "xcr0": None if x[0] < 0 else x[0],
        "xsave_bytes": None if x[1] < 0 else x[1],
        "xsave_max_bytes": None if x[2] < 0 else x[2],
        "hypervisor_cpuid": lk_hypervisor_signature().decode(errors="replace"),
    }


def ticks_per_ns(int ms=100):
    """Cycle-counter ticks per nanosecond of CLOCK_MONOTONIC, over about ms milliseconds."""
    cdef double r
    with nogil:
        r = lk_ticks_per_ns(ms)
    return r


def _layouts():
    return {
        "lk_sample": (lk_layout_lk_sample(), lk_sizeof_lk_sample()),
        "lk_handoff_sample": (lk_layout_lk_handoff_sample(), lk_sizeof_lk_handoff_sample()),
        "lk_yield_sample": (lk_layout_lk_yield_sample(), lk_sizeof_lk_yield_sample()),
    }


_LAYOUTS = {name: (text.decode(), size) for name, (text, size) in _layouts().items()}


def _new(str name, int count):
    """A zeroed ctypes array of `count` structs `name` for the C side to fill."""
    return (structs.struct_type(name, *_LAYOUTS[name]) * count)()


cdef size_t _address(out):
    return ctypes.addressof(out)


def pingpong(int kernel, size_t stack_size, bint prefault, uint64_t rounds, int warmup,
             int repeats, int fpctl_mode=0, size_t stack_in_use=0):
    """Run the timed ping-pong; one dict per repeat (raw ns and ticks of both loops).
    fpctl_mode: 0 as is, 1 both contexts at the default FP control words, 2 they differ.
    stack_in_use: bytes the copy_stack coroutines hold when they switch."""
    out = _new("lk_sample", repeats)
    cdef lk_sample *p = <lk_sample *>_address(out)
    cdef char err[512]
    cdef int rc
    with nogil:
        lk_set_stack_in_use(stack_in_use)
        rc = lk_pingpong_fp(kernel, stack_size, prefault, rounds, warmup, repeats,
                            fpctl_mode, p, err, sizeof(err))
        lk_set_stack_in_use(0)
    if rc != 0:
        raise RuntimeError(err.decode())
    return structs.as_dicts(out)


def ring_switches_per_lap(int n, bint asymmetric):
    """Transfers in one lap of a ring of n contexts (symmetric) or of a scheduler
    resuming n in turn (asymmetric): the C core's lk_ring_switches_per_lap."""
    return lk_ring_switches_per_lap(n, asymmetric)


def ring(int kernel, int n, bint asymmetric, size_t stack_size, size_t colour_step,
         bint prefault, uint64_t laps, int warmup, int repeats):
    """Run n contexts as a symmetric ring or an asymmetric scheduler; one dict per repeat."""
    out = _new("lk_sample", repeats)
    cdef lk_sample *p = <lk_sample *>_address(out)
    cdef char err[512]
    cdef int rc
    with nogil:
        rc = lk_ring(kernel, n, asymmetric, stack_size, colour_step, prefault, laps,
                     warmup, repeats, p, err, sizeof(err))
    if rc != 0:
        raise RuntimeError(err.decode())
    return structs.as_dicts(out)


def regtest(int kernel):
    """Sentinels loaded into every callee-saved register on each side, and what survived."""
    cdef uint64_t mi[32]
    cdef uint64_t mo[32]
    cdef uint64_t ci[32]
    cdef uint64_t co[32]
    cdef int n = lk_regprobe_count()
    if lk_regtest(kernel, mi, mo, ci, co) != 0:
        raise RuntimeError(f"regtest cannot run kernel {lk_kernel_name(kernel).decode()}")
    return [
        {
            "register": lk_regprobe_name(i).decode(),
            "main_in": mi[i], "main_out": mo[i],
            "other_in": ci[i], "other_out": co[i],
        }
        for i in range(n)
    ]


def fptest(int kernel):
    """FP control words set on each side of a switch and seen after it, with the masks that count."""
    cdef uint32_t ms[2]
    cdef uint32_t ma[2]
    cdef uint32_t cs[2]
    cdef uint32_t ca[2]
    cdef uint32_t mask[2]
    if lk_fptest(kernel, ms, ma, cs, ca, mask) != 0:
        raise RuntimeError(f"fptest cannot run kernel {lk_kernel_name(kernel).decode()}")
    return {
        "main_set": [ms[0], ms[1]], "main_after": [ma[0], ma[1]],
        "other_set": [cs[0], cs[1]], "other_after": [ca[0], ca[1]],
        "mask": [mask[0], mask[1]],
    }


def stack_probe(int kernel, size_t stack_size, size_t use_bytes):
    """Use about use_bytes of a new context's stack; past its end the process dies of SIGSEGV."""
    cdef int rc
    with nogil:
        rc = lk_stack_probe(kernel, stack_size, use_bytes)
    if rc != 0:
        raise RuntimeError("stack_probe could not set up the context")
    return use_bytes


def ticks_begin():
    """The cycle counter, fenced as the C loops read it before timing."""
    return lk_ticks_begin()


def ticks_end():
    """The cycle counter, fenced as the C loops read it after timing."""
    return lk_ticks_end()


def now_ns():
    """CLOCK_MONOTONIC in nanoseconds, as the C loops read it."""
    return lk_now_ns()


def handoff_mode_names():
    """Names of the kernel-switch modes, in enum order."""
    names = []
    while True:
        n = lk_handoff_mode_name(len(names)).decode()
        if n == "?":
            return names
        names.append(n)


def handoff_pingpong(int mode, int cpu_a, int cpu_b, uint64_t rounds, int warmup, int repeats):
    """Ping-pong between two kernel tasks (threads or processes); one dict per repeat."""
    out = _new("lk_handoff_sample", repeats)
    cdef lk_handoff_sample *p = <lk_handoff_sample *>_address(out)
    cdef char err[512]
    cdef int rc
    with nogil:
        rc = lk_handoff_pingpong(mode, cpu_a, cpu_b, rounds, warmup, repeats, p, err,
                                 sizeof(err))
    if rc != 0:
        raise RuntimeError(err.decode())
    return structs.as_dicts(out)


def yield_run(int cpu, uint64_t units, uint64_t k):
    """Two CPU-bound threads on one CPU, sched_yield() every k units (0: never)."""
    out = _new("lk_yield_sample", 1)
    cdef lk_yield_sample *p = <lk_yield_sample *>_address(out)
    cdef char err[512]
    cdef int rc
    with nogil:
        rc = lk_yield_run(cpu, units, k, p, err, sizeof(err))
    if rc != 0:
        raise RuntimeError(err.decode())
    return {**structs.as_dict(out[0]), "unit_iters": lk_yield_unit_iters()}


def perf_open(uint32_t type, uint64_t config, bint user_only=False):
    """A disabled perf_event_open counter of this thread and the tasks it starts: its file
    descriptor, or OSError with the kernel's errno."""
    cdef int fd = lk_perf_open(type, config, user_only)
    if fd < 0:
        raise OSError(-fd, os.strerror(-fd))
    return fd
