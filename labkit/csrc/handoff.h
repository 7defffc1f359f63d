/* handoff.h -- kernel context switches, measured the way lmbench's lat_ctx does it.
 *
 * Two kernel tasks (threads of this process, or this process and a forked child)
 * hand a turn back and forth; every hand-off forces the receiver to wake up, and
 * on one CPU forces the kernel to switch from the sender to the receiver. R round
 * trips are 2R hand-offs, so one-way cost = round trip / 2 = loop time / (2R).
 * What the communication itself costs (the syscalls, the locking, the counters)
 * is measured separately in one task where nobody has to wait, and subtracted:
 *     one-way switch ns = (loop_ns - base_ns) / switches.
 *
 * Same CPU vs. two CPUs: pinned to one CPU, the kernel must switch directly from
 * one task to the other at every hand-off -- that is a context switch. Pinned to
 * two CPUs, each task has a CPU to itself: when it blocks its CPU goes idle, and
 * the hand-off is a cross-CPU wake-up (IPI, idle exit; in a VM a halted vCPU that
 * the hypervisor has to resume). That measures wake-up latency, not a switch.
 *
 * All functions are synchronous, start and end everything they create (threads,
 * the child process, pipes) and return 0, or -1 with a message in err. */
#ifndef LABKIT_HANDOFF_H
#define LABKIT_HANDOFF_H

#include <stddef.h>
#include <stdint.h>

#include "lk_layout.h"

enum lk_handoff_mode {
    LK_HANDOFF_FUTEX,           /* "thread_futex":   a shared int, FUTEX_WAIT / FUTEX_WAKE (private) */
    LK_HANDOFF_CONDVAR,         /* "thread_condvar": mutex + 2 condition variables, queue of length 1 */
    LK_HANDOFF_PIPE_THREADS,    /* "thread_pipe":    two threads, two pipes, one byte each way */
    LK_HANDOFF_PIPE_PROCESSES,  /* "process_pipe":   fork()ed child, two pipes, one byte each way */
    LK_HANDOFF_NMODES
};

/* The mode's name, or "?" for an unknown mode. */
const char *lk_handoff_mode_name(int mode);

#define LK_HANDOFF_SAMPLE_FIELDS(F)                                                  \
    F(uint64_t, loop_ns) F(uint64_t, loop_ticks)  /* the ping-pong: rounds round trips */ \
    F(uint64_t, base_ns) F(uint64_t, base_ticks)  /* the same communication in one task, \
                                                     nobody waits */                   \
    F(uint64_t, switches)  /* hand-offs the loop made: 2 per round trip */             \
    F(uint64_t, counted)   /* hand-offs the two tasks counted (must equal switches) */ \
    /* the kernel's voluntary / involuntary context-switch counts of both tasks,       \
       summed, over the timed loop */                                                  \
    F(uint64_t, vol_ctxsw) F(uint64_t, invol_ctxsw)
LK_STRUCT(lk_handoff_sample, LK_HANDOFF_SAMPLE_FIELDS)
LK_LAYOUT_DECL(lk_handoff_sample)

/* Ping-pong between two tasks (threads or processes). cpu_a pins the measuring task
 * (the calling thread, temporarily: its affinity is restored before returning), cpu_b
 * the other task; -1 leaves a task unpinned. warmup repeats are run and dropped, then repeats
 * samples are written to out. Returns 0, or -1 with err filled. */
int lk_handoff_pingpong(int mode, int cpu_a, int cpu_b, uint64_t rounds, int warmup, int repeats,
                 lk_handoff_sample *out, char *err, size_t errlen);

/* C002.2: two CPU-bound threads pinned to one CPU, each doing units units of a
 * fixed busy work (lk_yield_unit_iters() dependent multiply-adds); every k units
 * each calls sched_yield() (k = 0: never). ns is from the start signal to the
 * later thread's finish; units_done counts both threads' units (2 * units). The
 * kernel counts sched_yield() switches as involuntary. The calling thread is not
 * pinned. */
#define LK_YIELD_SAMPLE_FIELDS(F) \
    F(uint64_t, ns) F(uint64_t, units_done) F(uint64_t, vol_ctxsw) F(uint64_t, invol_ctxsw)
LK_STRUCT(lk_yield_sample, LK_YIELD_SAMPLE_FIELDS)
LK_LAYOUT_DECL(lk_yield_sample)

int lk_yield_run(int cpu, uint64_t units, uint64_t k, lk_yield_sample *out, char *err,
                 size_t errlen);
uint64_t lk_yield_unit_iters(void);

#endif
