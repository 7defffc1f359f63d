/* lk_timer.h -- the cycle counter read around a timed loop, and the monotonic clock. */
#ifndef LK_TIMER_H
#define LK_TIMER_H

#include <stdint.h>
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

#endif
