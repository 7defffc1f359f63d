/* ring_loops.h -- the ring written once for the two libraries that run it: ring.c (the C
 * core, every stackful kernel) and user_switch.c (a user's switch, built into a library of
 * its own, which cannot link ring.c). Everything here is static, so each library gets its
 * own copy, compiled with its own flags.
 *
 * Symmetric, one lap: main -> c0 -> c1 -> ... -> c(N-1) -> main: N+1 transfers.
 * Asymmetric, one lap: main -> c(i) -> main for every i: 2N transfers, N useful resumptions.
 * Every context bumps its own counter once per transfer it makes, so after L laps the
 * counters add up to L*(N+1) or L*2N: proof that every transfer happened.
 * Stacks are `stack_size` apart in separate mappings; with colour_step > 0, stack i's top
 * is moved down by (i mod 1024) * colour_step bytes, so that the tops of power-of-two
 * stacks stop landing in the same cache sets.
 *
 * Includers define _GNU_SOURCE and include labkit_core.h first. */
#ifndef LK_RING_LOOPS_H
#define LK_RING_LOOPS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "lk_timer.h"

typedef struct ring ring;
typedef struct {
    void *h;                  /* the stored stack pointer, or the context object (uc, regs) */
    ring *r;
    int i;
    volatile uint64_t count;
} __attribute__((aligned(64))) slot;  /* one cache line each: no false sharing of counters */

struct ring {
    int n;
    slot main;
    slot *c;
    union {                   /* main's own context object, for the uc and regs kernels */
        ucontext_t uc;
        lk_regs_ctx regs;
    } main_ctx;
};

/* LK_RING(NAME, SWAP, UC): the ring's two context bodies (sym_NAME, asym_NAME) and its two
 * timed loops (symloop_NAME, asymloop_NAME) over SWAP(void **save, void *to). UC is 1 where
 * the handle is the context object itself, which the switch saves into. */
#define LK_RING(NAME, SWAP, UC)                                                        \
    static void **save_##NAME(slot *s) { return UC ? (void **)s->h : &s->h; }          \
    static void sym_##NAME(void *arg) {                                                \
        slot *s = arg;                                                                 \
        slot *next = s->i + 1 < s->r->n ? &s->r->c[s->i + 1] : &s->r->main;            \
        for (;;) {                                                                     \
            s->count++;                                                                \
            SWAP(save_##NAME(s), next->h);                                             \
        }                                                                              \
    }                                                                                  \
    static void asym_##NAME(void *arg) {                                               \
        slot *s = arg;                                                                 \
        for (;;) {                                                                     \
            s->count++;                                                                \
            SWAP(save_##NAME(s), s->r->main.h);                                        \
        }                                                                              \
    }                                                                                  \
    LK_TIMED_LOOP static void symloop_##NAME(ring *r, uint64_t laps) {                 \
        for (uint64_t l = 0; l < laps; l++) {                                          \
            SWAP(save_##NAME(&r->main), r->c[0].h);                                    \
            r->main.count++;                                                           \
        }                                                                              \
    }                                                                                  \
    LK_TIMED_LOOP static void asymloop_##NAME(ring *r, uint64_t laps) {                \
        for (uint64_t l = 0; l < laps; l++)                                            \
            for (int i = 0; i < r->n; i++) {                                           \
                SWAP(save_##NAME(&r->main), r->c[i].h);                                \
                r->main.count++;                                                       \
            }                                                                          \
    }

/* The same laps without any transfer: every counter bumped as often as in the real loop. */
LK_TIMED_LOOP static void symbase(ring *r, uint64_t laps) {
    for (uint64_t l = 0; l < laps; l++) {
        for (int i = 0; i < r->n; i++) r->c[i].count++;
        r->main.count++;
    }
}
LK_TIMED_LOOP static void asymbase(ring *r, uint64_t laps) {
    for (uint64_t l = 0; l < laps; l++)
        for (int i = 0; i < r->n; i++) {
            r->c[i].count++;
            r->main.count++;
        }
}

static uint64_t ring_total(ring *r) {
    uint64_t t = r->main.count;
    for (int i = 0; i < r->n; i++) t += r->c[i].count;
    return t;
}

LK_TIMED_FN(ring_timed, ring, ring_total)

/* Transfers in one lap: the one place this is written in C. */
static inline uint64_t ring_switches_per_lap(int n, int asymmetric) {
    return asymmetric ? 2ull * (uint64_t)n : (uint64_t)n + 1;
}

typedef void (*ring_loop)(ring *, uint64_t);

/* One ring's code: its context bodies and timed loops (from LK_RING), how it makes a
 * context on a stack, and which handle its main context has. */
typedef struct {
    void (*sym)(void *), (*asym)(void *);
    ring_loop symloop, asymloop;
    void *(*make)(int kernel, lk_stack *s, void (*fn)(void *), void *arg);
    enum lk_handle handle;
} ring_code;

/* lk_ring's work once the ring's code is picked: n contexts on their own stacks, then
 * `repeats` samples of the empty loop and the switch loop after `warmup` unrecorded ones.
 * Returns 0, or -1 with err filled. */
static int ring_run(const ring_code *code, int kernel, int n, int asymmetric,
                    size_t stack_size, size_t colour_step, int prefault, uint64_t laps,
                    int warmup, int repeats, lk_sample *out, char *err, size_t errlen) {
    if (n < 1) {
        snprintf(err, errlen, "a ring needs at least one context");
        return -1;
    }
    ring *r = aligned_alloc(64, (sizeof *r + 63) & ~(size_t)63);  /* slot main is 64-aligned */
    lk_stack *stacks = calloc((size_t)n, sizeof *stacks);
    slot *c = aligned_alloc(64, sizeof(slot) * (size_t)n);
    int rc = -1, made = 0;
    if (!r || !stacks || !c) {
        snprintf(err, errlen, "out of memory for %d contexts", n);
        goto done;
    }
    memset(r, 0, sizeof *r);
    memset(c, 0, sizeof(slot) * (size_t)n);
    r->n = n;
    r->c = c;
    r->main.r = r;
    r->main.i = -1;
    r->main.h = code->handle == LK_HANDLE_uc ? (void *)&r->main_ctx.uc
                : code->handle == LK_HANDLE_regs ? (void *)&r->main_ctx.regs : 0;
    for (int i = 0; i < n; i++, made++) {
        size_t offset = colour_step ? (size_t)(i % 1024) * colour_step : 0;
        int e = lk_stack_alloc(&stacks[i], stack_size, offset, prefault);
        if (e != 0) {
            snprintf(err, errlen, "mmap of stack %d (%zu bytes) failed: %s", i, stack_size,
                     strerror(-e));
            goto done;
        }
        c[i].r = r;
        c[i].i = i;
        c[i].h = code->make(kernel, &stacks[i], asymmetric ? code->asym : code->sym, &c[i]);
        if (!c[i].h) {
            lk_stack_free(&stacks[i]);
            snprintf(err, errlen, "could not make context %d", i);
            goto done;
        }
    }
    ring_loop loop = asymmetric ? code->asymloop : code->symloop;
    ring_loop base = asymmetric ? asymbase : symbase;
    uint64_t per_lap = ring_switches_per_lap(n, asymmetric);
    uint64_t ns, ticks, flt, counted;
    for (int w = 0; w < warmup; w++) {
        ring_timed(base, r, laps, &ns, &ticks, &flt, &counted);
        ring_timed(loop, r, laps, &ns, &ticks, &flt, &counted);
    }
    for (int k = 0; k < repeats; k++) {
        lk_sample *o = &out[k];
        memset(o, 0, sizeof *o);
        ring_timed(base, r, laps, &o->base_ns, &o->base_ticks, &flt, &counted);
        ring_timed(loop, r, laps, &o->loop_ns, &o->loop_ticks, &o->minor_faults, &o->counted);
        o->switches = laps * per_lap;
        o->xinuse = lk_xinuse();
    }
    rc = 0;
done:
    for (int i = 0; i < made; i++) lk_stack_free(&stacks[i]);
    free(c);
    free(stacks);
    free(r);
    return rc;
}

#endif
