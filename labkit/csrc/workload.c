/* workload.c -- a described workload on labkit's kernels (see workload.h for its shape):
 * N coroutines under a round-robin scheduler, W of work and u bytes of stack touched per
 * step. A timed loop of the C core: it calls the stacks, the copy stacks and the kernel
 * table, nothing after them.
 *
 * Counting: main bumps its counter after each transfer back to it, each coroutine bumps
 * its own before each transfer to main and its step counter in each step; after R
 * resumptions the transfers add up to 2R and the steps to R, which the Python side checks
 * before it believes any time. */
#define _GNU_SOURCE
#include "labkit_core.h"
#include "workload.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "lk_timer.h"

typedef struct wl wl;
typedef struct {
    void *h;                     /* what the kernel's switch loads (as in ring.c) */
    wl *w;
    char *buf;                   /* the bytes in use: on its stack (stackless: its state) */
    volatile uint64_t count;     /* transfers this context made */
    volatile uint64_t steps;     /* steps it ran */
} __attribute__((aligned(64))) wl_slot;  /* a cache line each, as in ring.c */

struct wl {
    int kernel;
    uint64_t n, cursor;          /* the next coroutine either loop visits */
    size_t in_use;               /* bytes touched per step, whole lines */
    uint64_t units;
    uint64_t sink;               /* the work's running value, one chain over all steps */
    wl_slot main;
    wl_slot *c;
    ucontext_t main_uc;
    lk_regs_ctx main_lc;
    lk_copy_ctx main_cc, *cc;    /* copy_stack: main's context and the coroutines' */
    lk_copy_run run;
    lk_stack run_stack;
    char *map;                   /* the stacks (stackful) or the states' buffers (stackless) */
    size_t map_size;
    int open;
};

static wl g_wl;  /* static: its address is stable and off the stacks being measured */

/* One step, out of line: the coroutines and the baseline call this same function. */
__attribute__((noinline)) static void wl_step(wl *w, wl_slot *s) {
    w->sink = lk_wl_touch_work(s->buf, w->in_use, w->units, w->sink);
    s->steps++;
}

/* A scheduler loop and a coroutine body for every kernel whose contexts have stacks, from
 * the kernel table. UC: the handle is a context object the switch saves into. */
#define LK_WL(NAME, SWAP, UC)                                                          \
    static void **wsave_##NAME(wl_slot *s) { return UC ? (void **)s->h : &s->h; }      \
    static void body_##NAME(void *arg) {                                               \
        wl_slot *s = arg;                                                              \
        wl *w = s->w;                                                                  \
        s->buf = LK_WL_BUFFER(w->in_use);                                              \
        for (;;) {                                                                     \
            wl_step(w, s);                                                             \
            s->count++;                                                                \
            SWAP(wsave_##NAME(s), w->main.h);                                          \
        }                                                                              \
    }                                                                                  \
    LK_TIMED_LOOP static void loop_##NAME(wl *w, uint64_t resumptions) {               \
        wl_slot *c = w->c;                                                             \
        uint64_t i = w->cursor, n = w->n;                                              \
        for (uint64_t r = 0; r < resumptions; r++) {                                   \
            SWAP(wsave_##NAME(&w->main), c[i].h);                                      \
            w->main.count++;                                                           \
            if (++i == n) i = 0;                                                       \
        }                                                                              \
        w->cursor = i;                                                                 \
    }

static void uc_swap(void **save, void *load) { swapcontext((ucontext_t *)save, (ucontext_t *)load); }

#define LK_WL_sp(NAME) LK_WL(NAME, lk_swap_##NAME, 0)
#define LK_WL_regs(NAME) LK_WL(NAME, lk_swap_##NAME, 1)
#define LK_WL_uc(NAME) LK_WL(NAME, uc_swap, 1)
#define LK_WL_copy(NAME) LK_WL(NAME, lk_swap_##NAME, 1)
#define LK_WL_none(NAME)
#define LK_WL_ROW(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) LK_ON_##ARCH(LK_WL_##HANDLE(name))
LK_KERNELS(LK_WL_ROW)

/* stackless: a state machine entered through a pointer the compiler cannot see through,
 * which runs one step and returns (harness.c's stackless kernel, with the step). */
__attribute__((noinline)) static void sl_body(wl_slot *s) {
    wl_step(s->w, s);
    s->count++;
}
static void (*volatile sl_resume)(wl_slot *) = sl_body;
LK_TIMED_LOOP static void loop_stackless(wl *w, uint64_t resumptions) {
    wl_slot *c = w->c;
    uint64_t i = w->cursor, n = w->n;
    for (uint64_t r = 0; r < resumptions; r++) {
        sl_resume(&c[i]);
        w->main.count++;
        if (++i == n) i = 0;
    }
    w->cursor = i;
}
#define body_stackless 0

/* The same steps on the same buffers in the same order, every counter bumped as often,
 * called in place: no transfer, no other stack. */
LK_TIMED_LOOP static void wl_base(wl *w, uint64_t resumptions) {
    wl_slot *c = w->c;
    uint64_t i = w->cursor, n = w->n;
    for (uint64_t r = 0; r < resumptions; r++) {
        wl_step(w, &c[i]);
        c[i].count++;
        w->main.count++;
        if (++i == n) i = 0;
    }
    w->cursor = i;
}

typedef void (*wl_loop)(wl *, uint64_t);

#define LK_WL_CASE(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    LK_ON_##ARCH(case LK_KERNEL_##name: *loop = loop_##name; *body = body_##name; return 0;)

/* The kernels a workload runs: all but the ones that save the whole FP state, which are
 * there to price that state, not to be chosen. */
static int wl_pick(int kernel, wl_loop *loop, void (**body)(void *)) {
    if (kernel == LK_ASM_FXSAVE || kernel == LK_ASM_XSAVE) return -1;
    switch (kernel) {
    LK_KERNELS(LK_WL_CASE)
    default: return -1;
    }
}

/* Counters of the contexts a loop of `resumptions` from `start` visits, and main's. */
static void wl_totals(wl *w, uint64_t start, uint64_t resumptions, uint64_t *count,
                      uint64_t *steps) {
    LK_WL_TOTALS(w->c, w->n, w->main.count, start, resumptions, count, steps);
}

static lk_wl_part wl_timed(wl_loop f, wl *w, uint64_t resumptions) {
    uint64_t start = w->cursor, c0, s0, c1, s1;
    wl_totals(w, start, resumptions, &c0, &s0);
    lk_span span = lk_span_begin();
    f(w, resumptions);
    span = lk_span_end(span);
    wl_totals(w, start, resumptions, &c1, &s1);
    lk_wl_part p = {span.ns, span.ticks, c1 - c0, s1 - s0, span.faults, span.preempted};
    return p;
}

double lk_wl_ticks_per_unit(uint64_t units, int tries) {
    double best = 0;
    if (units == 0 || tries < 1) return 0;
    uint64_t x = 1;
    for (int k = 0; k < tries; k++) {
        uint64_t t0 = lk_ticks_begin();
        x = lk_wl_touch_work(0, 0, units, x);
        uint64_t t1 = lk_ticks_end();
        double per = (double)(t1 - t0) / (double)units;
        /* The fastest run is the one least disturbed by interrupts and steal time. */
        if (k == 0 || per < best) best = per;
    }
    __asm__ volatile("" : : "r"(x));
    return best;
}

void lk_wl_trim(void) { malloc_trim(0); }

size_t lk_wl_depth(void) {
    const wl *w = &g_wl;
    enum lk_handle handle = lk_kernel_handle(w->kernel);
    if (!w->open || !w->map || !w->c[0].buf || handle == LK_HANDLE_none
        || handle == LK_HANDLE_copy)
        return 0;
    return (size_t)(w->map + w->map_size / w->n - w->c[0].buf);
}

void lk_wl_close(void) {
    wl *w = &g_wl;
    if (w->cc) {
        for (uint64_t i = 0; i < w->n; i++) lk_copy_free(&w->cc[i]);
        free(w->cc);
    }
    lk_stack_free(&w->run_stack);
    /* The coroutines stay suspended for good; their stacks simply go away. */
    if (w->map) munmap(w->map, w->map_size);
    if (w->c) munmap(w->c, w->n * sizeof(wl_slot));
    memset(w, 0, sizeof *w);
    malloc_trim(0);
}

static int wl_fail(char *err, size_t errlen, const char *what, int e) {
    snprintf(err, errlen, "%s%s%s", what, e ? ": " : "", e ? strerror(e) : "");
    lk_wl_close();
    return -1;
}

int lk_wl_open(int kernel, uint64_t n, size_t stack_size, int guard, size_t in_use,
               uint64_t units, char *err, size_t errlen) {
    const char *why;
    wl_loop loop;
    void (*body)(void *);
    char what[200];
    lk_wl_close();
    if (!lk_kernel_available(kernel, &why)) {
        snprintf(err, errlen, "kernel %s is not available here: %s", lk_kernel_name(kernel), why);
        return -1;
    }
    if (wl_pick(kernel, &loop, &body) != 0) {
        snprintf(err, errlen, "kernel %s has no workload loop", lk_kernel_name(kernel));
        return -1;
    }
    if (n < 1) {
        snprintf(err, errlen, "a workload needs at least one coroutine");
        return -1;
    }
    wl *w = &g_wl;
    size_t page = lk_page_size();
    enum lk_handle handle = lk_kernel_handle(kernel);
    w->kernel = kernel;
    w->in_use = (in_use + LK_WL_LINE - 1) / LK_WL_LINE * LK_WL_LINE;
    w->units = 0;  /* the first steps, in here, touch but do no work */
    w->sink = 1;
    w->c = lk_wl_map(n * sizeof(wl_slot), 0);
    if (!w->c) return wl_fail(err, errlen, "mmap of the coroutines' slots failed", errno);
    w->n = n;
    w->main.w = w;
    w->main.h = handle == LK_HANDLE_uc ? (void *)&w->main_uc
                : handle == LK_HANDLE_regs ? (void *)&w->main_lc
                : handle == LK_HANDLE_copy ? (void *)&w->main_cc : 0;
    if (handle == LK_HANDLE_none) {
        /* Each state's bytes in use, side by side in one mapping. */
        if (w->in_use) {
            w->map_size = n * w->in_use;
            w->map = lk_wl_map(w->map_size, 0);
            if (!w->map) return wl_fail(err, errlen, "mmap of the states' buffers failed", errno);
        }
        for (uint64_t i = 0; i < n; i++) {
            w->c[i].w = w;
            w->c[i].buf = w->map ? w->map + i * w->in_use : 0;
        }
    } else if (handle == LK_HANDLE_copy) {
        int e = lk_stack_alloc(&w->run_stack, stack_size, 0, 0);
        if (e != 0) return wl_fail(err, errlen, "mmap of the run stack failed", -e);
        lk_copy_run_init(&w->run, &w->run_stack);
        lk_copy_main(&w->main_cc);
        w->cc = calloc(n, sizeof *w->cc);
        if (!w->cc) return wl_fail(err, errlen, "out of memory for the copy contexts", 0);
        for (uint64_t i = 0; i < n; i++) {
            w->c[i].w = w;
            w->c[i].h = &w->cc[i];
            if (lk_copy_make(&w->cc[i], &w->run, body, &w->c[i], 0) != 0) {
                snprintf(what, sizeof what, "out of memory at coroutine %llu", (unsigned long long)i);
                return wl_fail(err, errlen, what, 0);
            }
        }
    } else {
        size_t slot = (stack_size + page - 1) / page * page + (guard ? page : 0);
        w->map_size = n * slot;
        w->map = lk_wl_map(w->map_size, 1);
        if (!w->map) {
            snprintf(what, sizeof what, "mmap of %llu stacks of %zu bytes failed",
                     (unsigned long long)n, slot);
            return wl_fail(err, errlen, what, errno);
        }
        for (uint64_t i = 0; i < n; i++) {
            char *lo = w->map + i * slot;
            if (guard && mprotect(lo, page, PROT_NONE) != 0) {
                snprintf(what, sizeof what, "the guard page of stack %llu failed (each guard "
                         "splits the mapping: vm.max_map_count?)", (unsigned long long)i);
                return wl_fail(err, errlen, what, errno);
            }
            /* map: where the guard page is, or would be (make_ucontext's stack starts a page
             * above it) */
            lk_stack s = {.map = guard ? lo : lo - page, .map_size = slot,
                          .usable = slot - (guard ? page : 0), .top = lo + slot};
            w->c[i].w = w;
            w->c[i].h = lk_make(kernel, &s, body, &w->c[i]);
            if (!w->c[i].h) {
                snprintf(what, sizeof what, "could not make coroutine %llu", (unsigned long long)i);
                return wl_fail(err, errlen, what, 0);
            }
        }
    }
    w->open = 1;
    /* Start each coroutine once, in order: its buffer is made and touched, its pages are
     * committed, and it suspends where the loops will find it. */
    loop(w, n);
    w->cursor = 0;
    w->units = units;
    return 0;
}

int lk_wl_run(uint64_t resumptions, int warmup, int repeats, lk_wl_sample *out, char *err,
              size_t errlen) {
    wl *w = &g_wl;
    wl_loop loop;
    void (*body)(void *);
    if (!w->open || wl_pick(w->kernel, &loop, &body) != 0) {
        snprintf(err, errlen, "no workload is open (lk_wl_open first)");
        return -1;
    }
    if (resumptions < 1) {
        snprintf(err, errlen, "resumptions must be at least 1");
        return -1;
    }
    /* Each sample times base, loop, loop, base, half the resumptions each time, and adds
     * the halves: a drift across the sample weighs on both loops alike. */
    const uint64_t first = resumptions / 2 ? resumptions / 2 : resumptions;
    const uint64_t halves[2] = {first, resumptions - first};
    for (int k = 0; k < warmup + repeats; k++) {
        lk_wl_sample scratch, *o = k < warmup ? &scratch : &out[k - warmup];
        memset(o, 0, sizeof *o);
        uint64_t copied0 = w->run.copied;
        for (int h = 0; h < 2; h++) {
            if (!halves[h]) continue;
            lk_wl_part b, l;
            if (h == 0) {
                b = wl_timed(wl_base, w, halves[h]);
                l = wl_timed(loop, w, halves[h]);
            } else {
                l = wl_timed(loop, w, halves[h]);
                b = wl_timed(wl_base, w, halves[h]);
            }
            lk_wl_add(o, &b, &l);
        }
        o->resumptions = resumptions;
        o->switches = 2 * resumptions;
        o->copied_bytes = w->run.copied - copied0;
    }
    return 0;
}

LK_LAYOUT(lk_wl_sample, LK_WL_SAMPLE_FIELDS)
