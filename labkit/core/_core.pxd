# Declarations of labkit's C core (labkit/csrc/labkit_core.h, handoff.h, lk_timer.h, perf.h)
# for _core.pyx.
# The structs are opaque here: their fields are declared once, in C (lk_layout.h).
from libc.stdint cimport int64_t, uint32_t, uint64_t


cdef extern from "csrc/labkit_core.h" nogil:
    enum:
        LK_NKERNELS

    # Its fields are read through labkit.core.structs, from the layout the C exports.
    ctypedef struct lk_sample:
        pass
    const char *lk_layout_lk_sample()
    size_t lk_sizeof_lk_sample()

    const char *lk_kernel_name(int kernel)
    int lk_kernel_available(int kernel, const char **why)
    int lk_kernel_is_stackful(int kernel)
    size_t lk_kernel_frame_bytes(int kernel)
    const char *lk_arch_name()
    const char *lk_timer_name()
    const char *lk_compiler()
    const char *lk_cflags()
    size_t lk_page_size()
    void lk_xstate(int64_t *out)
    const char *lk_hypervisor_signature()

    int lk_regprobe_count()
    const char *lk_regprobe_name(int i)
    int lk_regtest(int kernel, uint64_t *main_in, uint64_t *main_out, uint64_t *co_in,
                   uint64_t *co_out)
    int lk_fptest(int kernel, uint32_t *main_set, uint32_t *main_after, uint32_t *co_set,
                  uint32_t *co_after, uint32_t *masks)
    int lk_stack_probe(int kernel, size_t stack_size, size_t use_bytes)

    int lk_pingpong_fp(int kernel, size_t stack_size, int prefault, uint64_t rounds, int warmup,
                       int repeats, int fpctl_mode, lk_sample *out, char *err, size_t errlen)
    void lk_set_stack_in_use(size_t bytes)
    int lk_ring(int kernel, int n, int asymmetric, size_t stack_size, size_t colour_step,
                int prefault, uint64_t laps, int warmup, int repeats, lk_sample *out, char *err,
                size_t errlen)
    double lk_ticks_per_ns(int ms)


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

    const char *lk_handoff_mode_name(int mode)
    int lk_handoff_pingpong(int mode, int cpu_a, int cpu_b, uint64_t rounds, int warmup, int repeats,
                     lk_handoff_sample *out, char *err, size_t errlen)
    int lk_yield_run(int cpu, uint64_t units, uint64_t k, lk_yield_sample *out, char *err,
                     size_t errlen)
    uint64_t lk_yield_unit_iters()


cdef extern from "csrc/perf.h" nogil:
    int lk_perf_open(uint32_t type, uint64_t config, int user_only)
