/* workload.h -- a described workload run for real (labkit.experiments.workload): N
 * coroutines alive under a round-robin scheduler, each doing W of work and touching u bytes
 * of its own stack between switches.
 *
 * The scheduler (main) resumes coroutine i, which runs one step and suspends back; the
 * next resumption goes to i + 1 (mod N), so each coroutine is revisited only after the
 * N - 1 others, as in a server with N connections. A step reads and writes one word of
 * every 64-byte line of a u-byte buffer that lives on the coroutine's own stack (on the
 * shared run stack for copy_stack; in the coroutine's heap state for the stackless
 * designs), then runs `units` rounds of a dependent multiply-add chain (W, calibrated by
 * lk_wl_ticks_per_unit). The baseline runs the very same steps on the very same buffers,
 * called from main in the same round-robin order without any switch; both loops advance
 * one shared cursor, so the coroutine either loop visits was last touched N steps ago.
 *
 * The step is inline here so that the C core (workload.c) and the C++ peers
 * (cxx/workload.cpp) run the same instructions for the same W and u. */
#ifndef LK_WORKLOAD_H
#define LK_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "lk_layout.h"

#define LK_WL_SAMPLE_FIELDS(F)                                                             \
    F(uint64_t, loop_ns) F(uint64_t, loop_ticks)  /* the scheduler loop, with switches */ \
    F(uint64_t, base_ns) F(uint64_t, base_ticks)  /* the same steps without switches */   \
    F(uint64_t, resumptions)   /* resumptions each loop made */                          \
    F(uint64_t, switches)      /* transfers the switching loop made: 2 per resumption */ \
    F(uint64_t, counted)       /* transfers main and the coroutines counted meanwhile */ \
    F(uint64_t, steps)         /* steps the coroutines ran in the switching loop */      \
    F(uint64_t, base_steps)    /* steps the baseline ran */                              \
    F(uint64_t, minor_faults)  /* page faults inside the switching loop */               \
    F(uint64_t, preemptions)   /* involuntary context switches in either loop */         \
    F(uint64_t, copied_bytes)  /* stack bytes the switches copied (copy_stack) */
LK_STRUCT(lk_wl_sample, LK_WL_SAMPLE_FIELDS)
LK_LAYOUT_DECL(lk_wl_sample)

/* The multiplier and increment of frequency.c's chain (Knuth's MMIX): each round waits on
 * the one before, so a unit's time is its latency and cannot be overlapped or folded. */
#define LK_WL_MUL 6364136223846793005ull
#define LK_WL_ADD 1442695040888963407ull
#define LK_WL_LINE 64

/* One step's touch and work, from x (the previous step's value) to the next value. */
static inline uint64_t lk_wl_touch_work(char *buf, size_t in_use, uint64_t units, uint64_t x) {
    for (size_t o = 0; o < in_use; o += LK_WL_LINE) {
        uint64_t *word = (uint64_t *)(void *)(buf + o);
        x ^= *word;
        *word = x;
    }
    for (uint64_t i = 0; i < units; i++) {
        x = x * LK_WL_MUL + LK_WL_ADD;
        __asm__ volatile("" : "+r"(x));  /* opaque: no closed form, no vectorising */
    }
    return x;
}

/* Both sides' setup and bookkeeping, outside the timed loops: the C core (workload.c) and
 * the C++ peers (cxx/workload.cpp) share them so that they count and sum alike. */

/* The buffer in use, 64-aligned, on the calling coroutine's stack (a macro: alloca takes
 * the caller's frame); none when in_use is 0. */
#define LK_WL_BUFFER(in_use)                                                               \
    ((in_use) ? (char *)(((uintptr_t)__builtin_alloca((in_use) + 64) + 63) & ~(uintptr_t)63) \
              : 0)

/* An anonymous mapping, committed page by page as it is touched; 0 if mmap failed (errno
 * says why). stack: mapped as a stack (MAP_STACK). */
static inline void *lk_wl_map(size_t bytes, int stack) {
    void *m = mmap(0, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (stack ? MAP_STACK : 0), -1, 0);
    return m == MAP_FAILED ? 0 : m;
}

/* Sets *count_out to main's counter plus the transfer counters (`count`) of the contexts a
 * loop of `resumptions` from `start` visits (all n of them when it goes round), and
 * *steps_out to their step counters (`steps`); slots: an array of n such records. */
#define LK_WL_TOTALS(slots, n, main_count, start, resumptions, count_out, steps_out)      \
    do {                                                                                  \
        uint64_t c_ = (main_count), s_ = 0;                                               \
        uint64_t k_ = (resumptions) < (n) ? (resumptions) : (n);                          \
        for (uint64_t j_ = 0, i_ = (start); j_ < k_; j_++) {                              \
            c_ += (slots)[i_].count;                                                      \
            s_ += (slots)[i_].steps;                                                      \
            if (++i_ == (n)) i_ = 0;                                                      \
        }                                                                                 \
        *(count_out) = c_;                                                                \
        *(steps_out) = s_;                                                                \
    } while (0)

/* One timed loop of a sample: its span (lk_timer.h's lk_span) and what was counted in it. */
typedef struct {
    uint64_t ns, ticks, counted, steps, faults, preempted;
} lk_wl_part;

/* Adds one half of a sample to o: the baseline b's time and steps, the switching loop l's
 * time, transfers, steps and page faults, and the preemptions in either. */
static inline void lk_wl_add(lk_wl_sample *o, const lk_wl_part *b, const lk_wl_part *l) {
    o->base_ns += b->ns;
    o->base_ticks += b->ticks;
    o->base_steps += b->steps;
    o->loop_ns += l->ns;
    o->loop_ticks += l->ticks;
    o->counted += l->counted;
    o->steps += l->steps;
    o->minor_faults += l->faults;
    o->preemptions += b->preempted + l->preempted;
}

/* Called through ctypes (lk_layout.h's LK_FUNCTIONS), inside a worker process only. One
 * workload at a time per process:
 * lk_wl_ticks_per_unit: cycle-counter ticks per unit of the work, the fastest of `tries`
 *   runs of `units` units.
 * lk_wl_open: n coroutines of kernel `kernel` (one of LK_KERNELS but the fxsave/xsave
 *   ones), each started once (its buffer allocated on its stack and touched), work of
 *   `units` units, in_use bytes touched per step. The stackful kernels' stacks are one
 *   mapping of n slots of stack_size bytes (MAP_NORESERVE: pages are committed as they
 *   are touched), with a PROT_NONE guard page below each slot when guard is 1 (two
 *   mappings a stack against vm.max_map_count) and none when 0 (one mapping in all);
 *   copy_stack's coroutines share one run stack of stack_size bytes. Returns 0, or -1
 *   with err filled (nothing is left open then).
 * lk_wl_run: warmup dropped samples, then `repeats` samples into out, each timing the
 *   loops in the order baseline, switching, switching, baseline, half the resumptions
 *   each time.
 * lk_wl_depth: bytes from the top of the open workload's first stack down to the start of
 *   its bytes in use (what a stackful coroutine keeps above them, and them); 0 with no
 *   stack of its own or nothing in use.
 * lk_wl_close: frees the workload and gives free heap memory back (malloc_trim).
 * lk_wl_trim: gives free heap memory back, so that a resident-memory reading before a
 *   workload is not flattered by memory the last one left in malloc's free lists. */
#define LK_WL_FUNCTIONS(F)                                                                \
    F(double, lk_wl_ticks_per_unit, (uint64_t units, int tries))                          \
    F(int, lk_wl_open, (int kernel, uint64_t n, size_t stack_size, int guard,            \
                        size_t in_use, uint64_t units, char *err, size_t errlen))          \
    F(int, lk_wl_run, (uint64_t resumptions, int warmup, int repeats, lk_wl_sample *out,  \
                       char *err, size_t errlen))                                          \
    F(size_t, lk_wl_depth, (void))                                                        \
    F(void, lk_wl_close, (void))                                                          \
    F(void, lk_wl_trim, (void))
LK_DECLARE(LK_WL_FUNCTIONS)

#endif
