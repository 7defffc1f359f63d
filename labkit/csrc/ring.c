/* ring.c -- N contexts: a symmetric ring (each context transfers straight to the next) and
 * an asymmetric scheduler (main resumes each worker in turn, each yields back).
 *
 * Symmetric, one lap: main -> c0 -> c1 -> ... -> c(N-1) -> main: N+1 transfers.
 * Asymmetric, one lap: main -> c(i) -> main for every i: 2N transfers, N useful resumptions.
 * Every context bumps its own counter once per transfer it makes, so after L laps the
 * counters add up to L*(N+1) or L*2N: proof that every transfer happened.
 * Stacks are `stack_size` apart in separate mappings; with colour_step > 0, stack i's top
 * is moved down by (i mod 1024) * colour_step bytes, so that the tops of power-of-two
 * stacks stop landing in the same cache sets. */
#define _GNU_SOURCE
#include "labkit_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "lk_timer.h"


typedef struct ring ring;
typedef struct {
    void *h;                  /* asm: the stored stack pointer; ucontext: its ucontext_t */
    ring *r;
    int i;
    volatile uint64_t count;
} __attribute__((aligned(64))) slot;  /* one cache line each: no false sharing of counters */

struct ring {
    int n;
    slot main;
    slot *c;
    ucontext_t main_uc;
    lk_regs_ctx main_lc;      /* regs (libco_design): main's register struct */
};

/* For the uc and regs kernels (ucontext, libco_design) the handle is the context object
 * itself, which the switch saves into. copy_stack has no ring here: its contexts share one
 * stack (notebook 04 and 07b measure it through the ping-pong and
 * labkit.experiments.frames). */
static void uc_swap(void **save, void *load) { swapcontext((ucontext_t *)save, (ucontext_t *)load); }

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
    LK_TIMED_LOOP static void symloop_##NAME(ring *r, uint64_t laps) {     \
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

/* A ring for every kernel whose contexts have stacks of their own, from the kernel table. */
#define LK_RING_sp(NAME) LK_RING(NAME, lk_swap_##NAME, 0)
#define LK_RING_regs(NAME) LK_RING(NAME, lk_swap_##NAME, 1)
#define LK_RING_uc(NAME) LK_RING(NAME, uc_swap, 1)
#define LK_RING_copy(NAME)
#define LK_RING_none(NAME)
#define LK_RING_ROW(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    LK_ON_##ARCH(LK_RING_##HANDLE(name))
LK_KERNELS(LK_RING_ROW)

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

static uint64_t total(ring *r) {
    uint64_t t = r->main.count;
    for (int i = 0; i < r->n; i++) t += r->c[i].count;
    return t;
}

typedef void (*ring_loop)(ring *, uint64_t);

LK_TIMED_FN(timed, ring, total)

#define LK_RING_PICK(NAME) \
    sym = sym_##NAME, asym = asym_##NAME, symloop = symloop_##NAME, asymloop = asymloop_##NAME
#define LK_RING_CASE_sp(NAME) case LK_KERNEL_##NAME: LK_RING_PICK(NAME); break;
#define LK_RING_CASE_regs LK_RING_CASE_sp
#define LK_RING_CASE_uc LK_RING_CASE_sp
#define LK_RING_CASE_copy(NAME)
#define LK_RING_CASE_none(NAME)
#define LK_RING_CASE(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    LK_ON_##ARCH(LK_RING_CASE_##HANDLE(name))

uint64_t lk_ring_switches_per_lap(int n, int asymmetric) {
    return asymmetric ? 2ull * (uint64_t)n : (uint64_t)n + 1;
}

int lk_ring(int kernel, int n, int asymmetric, size_t stack_size, size_t colour_step,
            int prefault, uint64_t laps, int warmup, int repeats, lk_sample *out, char *err,
            size_t errlen) {
    void (*sym)(void *) = 0, (*asym)(void *) = 0;
    ring_loop symloop = 0, asymloop = 0;
    const char *why;
    if (!lk_kernel_available(kernel, &why) || !lk_kernel_is_stackful(kernel)) {
        snprintf(err, errlen, "kernel %s cannot run a ring here", lk_kernel_name(kernel));
        return -1;
    }
    switch (kernel) {
    LK_KERNELS(LK_RING_CASE)
    default:
        snprintf(err, errlen, "no ring for kernel %s", lk_kernel_name(kernel));
        return -1;
    }
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
    enum lk_handle handle = lk_kernel_handle(kernel);
    r->main.h = handle == LK_HANDLE_uc ? (void *)&r->main_uc
                : handle == LK_HANDLE_regs ? (void *)&r->main_lc : 0;
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
        c[i].h = lk_make(kernel, &stacks[i], asymmetric ? asym : sym, &c[i]);
        if (!c[i].h) {
            lk_stack_free(&stacks[i]);
            snprintf(err, errlen, "could not make context %d", i);
            goto done;
        }
    }
    ring_loop loop = asymmetric ? asymloop : symloop, base = asymmetric ? asymbase : symbase;
    uint64_t per_lap = lk_ring_switches_per_lap(n, asymmetric);
    uint64_t ns, ticks, flt, counted;
    for (int w = 0; w < warmup; w++) {
        timed(base, r, laps, &ns, &ticks, &flt, &counted);
        timed(loop, r, laps, &ns, &ticks, &flt, &counted);
    }
    for (int k = 0; k < repeats; k++) {
        lk_sample *o = &out[k];
        timed(base, r, laps, &o->base_ns, &o->base_ticks, &flt, &counted);
        timed(loop, r, laps, &o->loop_ns, &o->loop_ticks, &o->minor_faults, &o->counted);
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
