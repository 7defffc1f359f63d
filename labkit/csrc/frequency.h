/* frequency.h -- switch frequency and batching (notebook 08, claim C000.7).
 *
 * A scheduler (main) resumes N coroutines in turn with the asm_fpu kernel, which
 * keeps what Boost's jump_fcontext keeps. Each resumption runs `batch` tasks, then the
 * coroutine yields back: 2 transfers per resumption, tasks / batch resumptions. A task is
 * `units` rounds of a fixed busy loop; the caller turns W cycle-counter ticks of work
 * into units with lk_freq_ticks_per_unit. Two kinds of work (enum lk_freq_work): one
 * dependent multiply-add chain, which leaves most execution ports idle, so an
 * out-of-order core can run a switch beside it and hide its cost; and independent adds
 * that keep the core's issue width full, so a switch's instructions cannot hide.
 *
 * The baseline runs the very same tasks through the same function, in the same order
 * and with the same counter updates, from main's stack and without any transfer: what
 * is left of the difference is the cost of switching (the transfers and the cache and
 * branch-predictor damage they do to the work around them).
 *
 * Called through ctypes (labkit/core/native.py) inside a worker process only. */
#ifndef LK_FREQUENCY_H
#define LK_FREQUENCY_H

#include <stddef.h>
#include <stdint.h>

#include "lk_layout.h"

#define LK_FREQ_SAMPLE_FIELDS(F)                                                        \
    F(uint64_t, total_ns) F(uint64_t, total_ticks)  /* the loop with switches */           \
    F(uint64_t, work_ns) F(uint64_t, work_ticks)    /* the same tasks without switches */  \
    F(uint64_t, switches)        /* transfers the switching loop makes: 2 per resumption */ \
    F(uint64_t, counted)         /* transfers the scheduler and coroutines counted */         \
    F(uint64_t, tasks)           /* tasks each loop must run */                            \
    F(uint64_t, tasks_counted)   /* tasks the coroutines counted in the switching loop */     \
    F(uint64_t, work_tasks_counted)  /* tasks counted in the switch-free loop */           \
    F(uint64_t, minor_faults)    /* page faults inside the switching loop */               \
    /* involuntary context switches in either loop: a run the OS cut into (a VM's steal    \
       time is not counted) */                                                             \
    F(uint64_t, preemptions)
LK_STRUCT(lk_freq_sample, LK_FREQ_SAMPLE_FIELDS)
LK_LAYOUT_DECL(lk_freq_sample)

/* The work a task does (see above). */
enum lk_freq_work {
    LK_FREQ_DEPENDENT = 0,    /* one serial multiply-add chain: latency-bound */
    LK_FREQ_INDEPENDENT = 1,  /* six independent add chains: issue-bound */
};

/* Called through ctypes (lk_layout.h's LK_FUNCTIONS):
 * lk_freq_ticks_per_unit: cycle-counter ticks one unit of the busy loop of `work` takes,
 *   the fastest of `tries` runs of `units` units through the same task function the
 *   experiment uses (0 for an unknown work).
 * lk_freq_run: `coroutines` coroutines with stacks of stack_size bytes (mmapped, guard page
 *   below, not prefaulted), `tasks` tasks of `units` units each, `batch` tasks per
 *   resumption (tasks must be a multiple of batch), tasks doing `work`. warmup runs are
 *   dropped, then `repeats` samples are written to out, each timing the loops in the
 *   order work-only, switching, switching, work-only (half the resumptions each) and
 *   adding the halves. Returns 0, or -1 with err filled. */
#define LK_FREQ_FUNCTIONS(F)                                                            \
    F(double, lk_freq_ticks_per_unit, (int work, uint64_t units, int tries))            \
    F(int, lk_freq_run, (size_t stack_size, int coroutines, uint32_t batch, int work,      \
                         uint64_t units, uint64_t tasks, int warmup, int repeats,       \
                         lk_freq_sample *out, char *err, size_t errlen))
LK_DECLARE(LK_FREQ_FUNCTIONS)

#endif
