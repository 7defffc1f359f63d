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

/* One timed stretch. The reads nest in mirror order, the cycle counter innermost, so
 * that the slow getrusage and clock_gettime calls stay outside the ticks. */
typedef struct {
    uint64_t ns, ticks, faults;
} lk_span;

static inline lk_span lk_span_begin(void) {
    lk_span s;
    s.faults = lk_minor_faults();
    s.ns = lk_now_ns();
    s.ticks = lk_ticks_begin();
    return s;
}

static inline lk_span lk_span_end(lk_span begun) {
    lk_span d;
    d.ticks = lk_ticks_end() - begun.ticks;
    d.ns = lk_now_ns() - begun.ns;
    d.faults = lk_minor_faults() - begun.faults;
    return d;
}

#endif
