# Declarations of labkit's C core (labkit/csrc/labkit_core.h, handoff.h, lk_timer.h, perf.h)
# and of the C++ peers' table (labkit/cxx/peers.h) for _core.pyx.
# The structs are opaque here: their fields are declared once, in C (lk_layout.h); so are
# the functions' parameters (see below).
from libc.stdint cimport int64_t, uint32_t, uint64_t


cdef extern from "csrc/labkit_core.h" nogil:
    # Its fields are read through labkit.core.structs, from the layout the C exports.
    ctypedef struct lk_sample:
        pass
    const char *lk_layout_lk_sample()
    size_t lk_sizeof_lk_sample()

    # The kernels, their names and properties, as the kernel table's text (LK_KERNELS).
    const char *lk_kernel_table()
    const char *lk_arch_name()
    const char *lk_timer_name()
    const char *lk_compiler()
    const char *lk_cflags()
    size_t lk_page_size()
    const char *lk_hypervisor_signature()
    int lk_regprobe_count()

    # Functions with parameters: their return types only. The parameters are declared in
    # the header alone, which the generated C includes: the C compiler checks every call
    # against them.
    const char *lk_kernel_name(...)
    int lk_kernel_available(...)
    size_t lk_kernel_frame_bytes(...)
    void lk_xstate(...)
    const char *lk_regprobe_name(...)
    int lk_regtest(...)
    int lk_fptest(...)
    int lk_stack_probe(...)
    int lk_pingpong_fp(...)
    void lk_set_stack_in_use(...)
    int lk_ring(...)
    uint64_t lk_ring_switches_per_lap(...)
    double lk_ticks_per_ns(...)


cdef extern from "csrc/lk_timer.h" nogil:
    uint64_t lk_ticks_begin()
    uint64_t lk_ticks_end()
    uint64_t lk_now_ns()


cdef extern from "csrc/handoff.h" nogil:
    ctypedef struct lk_handoff_sample:
        pass
    ctypedef struct lk_yield_sample:
        pass
    const char *lk_layout_lk_handoff_sample()
    size_t lk_sizeof_lk_handoff_sample()
    const char *lk_layout_lk_yield_sample()
    size_t lk_sizeof_lk_yield_sample()
    uint64_t lk_yield_unit_iters()

    const char *lk_handoff_mode_name(...)
    int lk_handoff_pingpong(...)
    int lk_yield_run(...)


cdef extern from "csrc/perf.h" nogil:
    int lk_perf_open(...)


cdef extern from "cxx/peers.h" nogil:
    # The peer table's text (LKX_PEERS), a static inline function of the header: the
    # catalogue knows the peers where their library is not built too.
    const char *lkx_peer_table()
