/* xstate.h -- what saving and restoring the FP and vector state costs, by component
 * (notebook 06).
 *
 * One timed loop runs `pairs` times: dirty the registers (or not), then one save
 * (xsave, xsaveopt or xsavec) and one xrstor of a 64-byte-aligned area, with the
 * requested-feature bitmap `mask` in EDX:EAX. Its baseline is the same loop with the
 * save and the restore replaced by calls to an empty function: what is left is the
 * pair. "Dirty" writes x87 and every vector register of the components in `mask` (not
 * PKRU) before each save, so no save can skip them; "clean" writes none and first puts the AVX, AVX-512 and AMX
 * components into their initial state, which xsaveopt and xsavec may then skip (the
 * init optimisation; xsaveopt also skips what was not modified since the last xrstor).
 *
 * x86-64 only: elsewhere every function fails with "not available on this architecture".
 * Called through ctypes (labkit/core/native.py) inside a worker process only. */
#ifndef LK_XSTATE_H
#define LK_XSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "lk_layout.h"

#define LK_XSTATE_SAMPLE_FIELDS(F)                                                      \
    F(uint64_t, loop_ns) F(uint64_t, loop_ticks)    /* the loop with the pairs */       \
    F(uint64_t, base_ns) F(uint64_t, base_ticks)    /* the same loop without them */    \
    F(uint64_t, pairs)           /* save+restore pairs the loop made */                 \
    F(uint64_t, preemptions)     /* involuntary context switches in either loop */      \
    /* XINUSE (xgetbv 1) right after the timed loop, -1 where the CPU cannot tell:      \
       which components were out of their initial state */                              \
    F(int64_t, xinuse)
LK_STRUCT(lk_xstate_sample, LK_XSTATE_SAMPLE_FIELDS)
LK_LAYOUT_DECL(lk_xstate_sample)

/* The save instructions, in the order labkit/experiments/xstate.py names them. */
enum lk_xstate_insn { LK_XSAVE = 0, LK_XSAVEOPT = 1, LK_XSAVEC = 2 };

/* Bits of lk_xstate_cpu's *insns: which of the instructions this CPU has. */
#define LK_XSTATE_HAS_XSAVE 1u
#define LK_XSTATE_HAS_XSAVEOPT 2u
#define LK_XSTATE_HAS_XSAVEC 4u
#define LK_XSTATE_HAS_XINUSE 8u /* xgetbv with ECX = 1 */

/* Called through ctypes (lk_layout.h's LK_FUNCTIONS):
 * lk_xstate_cpu: XCR0, which save instructions exist (LK_XSTATE_HAS_*), and XINUSE now
 *   (-1 if unreadable). Returns 0, or -1 with err filled (no XSAVE, or not x86-64).
 * lk_xstate_leaf: CPUID leaf 0xD, sub-leaf `sub`, into regs[0..3] (EAX, EBX, ECX, EDX).
 * lk_xstate_bytes: bytes of the area a save of `mask` writes, in the standard form
 *   (compacted = 0: xsave, xsaveopt) or the compacted one (xsavec); 0 if not x86-64.
 * lk_xstate_run: `repeats` samples into out after `warmup` dropped runs, each timing
 *   the baseline and the loop of `pairs` pairs, halves interleaved (baseline, loop,
 *   loop, baseline). mask must be a subset of XCR0 holding x87 and SSE. dirty: 1 or 0.
 *   Returns 0, or -1 with err filled. */
#define LK_XSTATE_FUNCTIONS(F)                                                          \
    F(int, lk_xstate_cpu, (uint64_t *xcr0, uint32_t *insns, int64_t *xinuse, char *err, \
                           size_t errlen))                                              \
    F(int, lk_xstate_leaf, (uint32_t sub, uint32_t *regs, char *err, size_t errlen))    \
    F(uint32_t, lk_xstate_bytes, (uint64_t mask, int compacted))                        \
    F(int, lk_xstate_run, (int insn, uint64_t mask, int dirty, uint64_t pairs,          \
                           int warmup, int repeats, lk_xstate_sample *out, char *err,   \
                           size_t errlen))
LK_DECLARE(LK_XSTATE_FUNCTIONS)

#endif
