/* lk_timer.h -- the cycle counter read around a timed loop, the monotonic clock, and
 * the span that reads both (and the page-fault count) around one loop.
 * Includers define _GNU_SOURCE first: the fault count is RUSAGE_THREAD's. */
#ifndef LK_TIMER_H
#define LK_TIMER_H

#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#if defined(__x86_64__)
/* Timer: lfence keeps rdtsc from running ahead of earlier instructions;
 * rdtscp waits for them, and the lfence after it keeps later ones back. */
#define LK_TIMER_NAME "rdtsc (lfence-fenced) / rdtscp + lfence"
static inline uint64_t lk_ticks_begin(void) {
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t lk_ticks_end(void) {
    uint32_t lo, hi, aux;
    __asm__ volatile("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
    return ((uint64_t)hi << 32) | lo;
}

#elif defined(__aarch64__)
/* The generic timer's virtual count: isb keeps the read from moving across
 * the instructions around it. It ticks at CNTFRQ_EL0, usually far below the
 * core clock, so one tick spans many cycles. */
#define LK_TIMER_NAME "cntvct_el0 (isb-fenced)"
static inline uint64_t lk_ticks_begin(void) {
    uint64_t v;
    __asm__ volatile("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v) : : "memory");
    return v;
}
static inline uint64_t lk_ticks_end(void) { return lk_ticks_begin(); }
#else
#error "no cycle counter for this architecture"
#endif

static inline uint64_t lk_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Minor page faults of the calling thread so far (first touches of stack pages). */
static inline uint64_t lk_minor_faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (uint64_t)ru.ru_minflt;
}

/* One timed stretch: every timed loop of labkit's C and C++ is read by this. The reads
 * nest in mirror order, the cycle counter innermost, so that the slow getrusage and
 * clock_gettime calls stay outside the ticks. faults: the thread's minor page faults;
 * preempted: its involuntary context switches. */
typedef struct {
    uint64_t ns, ticks, faults, preempted;
} lk_span;

static inline void lk_span_usage(lk_span *s) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    s->faults = (uint64_t)ru.ru_minflt;
    s->preempted = (uint64_t)ru.ru_nivcsw;
}

static inline lk_span lk_span_begin(void) {
    lk_span s;
    lk_span_usage(&s);
    s.ns = lk_now_ns();
    s.ticks = lk_ticks_begin();
    return s;
}

static inline lk_span lk_span_end(lk_span begun) {
    lk_span d;
    d.ticks = lk_ticks_end() - begun.ticks;
    d.ns = lk_now_ns() - begun.ns;
    lk_span_usage(&d);
    d.faults -= begun.faults;
    d.preempted -= begun.preempted;
    return d;
}

/* LK_TIMED_FN(name, T, COUNT) defines
 *     static void name(void (*loop)(T *, uint64_t), T *obj, uint64_t n,
 *                      uint64_t *ns, uint64_t *ticks, uint64_t *faults, uint64_t *counted)
 * which runs loop(obj, n) in one span and sets *counted to the transfers the counters
 * COUNT(obj) saw meanwhile: the timing of every ping-pong and ring sample. */
#define LK_TIMED_FN(name, T, COUNT)                                                      \
    static void name(void (*loop)(T *, uint64_t), T *obj, uint64_t n, uint64_t *ns,      \
                     uint64_t *ticks, uint64_t *faults, uint64_t *counted) {             \
        uint64_t c0 = COUNT(obj);                                                        \
        lk_span span = lk_span_begin();                                                  \
        loop(obj, n);                                                                    \
        span = lk_span_end(span);                                                        \
        *ns = span.ns;                                                                   \
        *ticks = span.ticks;                                                             \
        *faults = span.faults;                                                           \
        *counted = COUNT(obj) - c0;                                                      \
    }

/* Every timed loop, and the empty loop timed against it, starts on a 64-byte boundary:
 * where the loop falls against cache lines and fetch blocks then depends on its own code
 * alone, not on what the compiler happened to put before it (a 1-2 ns switch moves by a
 * third of a nanosecond with that placement). An attribute rather than an .p2align before
 * the loop: it works at every optimisation level, where -falign-loops differs, and the
 * padding sits before the function's entry, so it is never executed and the instruction
 * counts do not change. */
#define LK_TIMED_LOOP __attribute__((noinline, aligned(64)))

#endif
