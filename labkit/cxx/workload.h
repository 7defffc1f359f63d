/* workload.h (C++) -- the described workload of csrc/workload.h on the C++ peers: N
 * coroutines of Boost.Context's fcontext or fiber, or C++20 coroutines, under a
 * round-robin scheduler, each step the same touch and work (lk_wl_touch_work), timed
 * against the same steps called without switching. Called through ctypes
 * (labkit/core/native.py, the prototypes exported as text) inside a worker process only. */
#ifndef LABKIT_CXX_WORKLOAD_H
#define LABKIT_CXX_WORKLOAD_H

#ifdef __cplusplus
extern "C" {
#endif

#include "../csrc/workload.h"

/* The designs, in the order lkw_open numbers them; each is the peer of the same name in
 * the peer table (peers.h), run as a workload:
 *   X(name, STACKFUL) */
#define LKW_DESIGNS(X)        \
    X(boost_fcontext, 1)      \
    X(boost_fiber, 1)         \
    X(cxx20_generator, 0)

/* lkw_design_name: the design's name, "?" past the end.
 * lkw_open, lkw_run, lkw_depth, lkw_close: as lk_wl_open, lk_wl_run, lk_wl_depth,
 *   lk_wl_close (csrc/workload.h),
 *   for design `design`. The stackful designs' stacks are one mapping of n slots (with a
 *   guard page below each when guard is 1), handed to Boost as preallocated stacks; a
 *   C++20 coroutine's buffer is allocated with its frame, past its end. */
#define LKW_FUNCTIONS(F)                                                                  \
    F(const char *, lkw_design_name, (int design))                                        \
    F(int, lkw_open, (int design, uint64_t n, size_t stack_size, int guard, size_t in_use, \
                      uint64_t units, char *err, size_t errlen))                           \
    F(int, lkw_run, (uint64_t resumptions, int warmup, int repeats, lk_wl_sample *out,    \
                     char *err, size_t errlen))                                            \
    F(size_t, lkw_depth, (void))                                                          \
    F(void, lkw_close, (void))
LK_DECLARE(LKW_FUNCTIONS)

#ifdef __cplusplus
}
#endif

#endif
