/* pingpong_loops.h -- the ping-pong written once for the two libraries that time it:
 * harness.c (the C core, every kernel) and user_switch.c (a user's switch, built into a
 * library of its own, which cannot link harness.c). A user's switch is timed by the very
 * loop, counters, empty loop and sampling the lab's kernels are. Everything here but
 * lk_set_only is static, so each library gets its own copy, compiled with its own flags;
 * one file of a library includes it.
 *
 * One round trip is two switches: main -> co and co -> main. Each side bumps its own
 * volatile counter once per switch it makes, so after R rounds the counters add up to 2R:
 * proof that every switch happened. The same loop without the switch (the two increments
 * only) is timed right before each sample and subtracted, as lmbench's lat_ctx does.
 *
 * Includers define _GNU_SOURCE and include labkit_core.h first. */
#ifndef LK_PINGPONG_LOOPS_H
#define LK_PINGPONG_LOOPS_H

#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include "lk_timer.h"

typedef struct pingpong pingpong;
/* copy_stack: one of the two coroutines that take turns on the run stack. */
typedef struct {
    lk_copy_ctx ctx;
    pingpong *p;
} copy_side;

/* One layout for every switch, a user's too: the loops address the same fields at the
 * same offsets whichever switch they call. */
struct pingpong {
    void *main_h, *co_h;     /* what the switch saves and loads (sp: the stored stack
                              * pointers; uc, regs: co_h is the other's context object) */
    union {                  /* uc, regs: main's own context object */
        ucontext_t uc;
        lk_regs_ctx regs;
    } main_ctx;
    lk_copy_run run;         /* copy_stack: the shared run stack, */
    lk_copy_ctx cs_main;     /* main's context (its own stack), */
    copy_side cs[2];         /* and the two coroutines main resumes in turn */
    size_t stack_in_use;
    int sl_state;            /* stackless: the state machine's resume point */
    volatile uint64_t main_count, co_count;
};

typedef void (*pingpong_loop)(pingpong *, uint64_t);

/* LK_PINGPONG(NAME, SWAP, UC): the other side's body (co_NAME) and main's timed loop
 * (loop_NAME) over SWAP(void **save, void *to), called directly, not through a pointer, as
 * Boost.Context's jump_fcontext is. UC is 1 where the handle is the context object itself,
 * which the switch saves into: main's is main_ctx, the other's co_h. */
#define LK_PINGPONG(NAME, SWAP, UC)                                                    \
    static void co_##NAME(void *arg) {                                                 \
        pingpong *p = arg;                                                             \
        for (;;) {                                                                     \
            p->co_count++;                                                             \
            SWAP(UC ? (void **)p->co_h : &p->co_h,                                     \
                 UC ? (void *)&p->main_ctx : p->main_h);                               \
        }                                                                              \
    }                                                                                  \
    LK_TIMED_LOOP static void loop_##NAME(pingpong *p, uint64_t rounds) {              \
        for (uint64_t i = 0; i < rounds; i++) {                                        \
            SWAP(UC ? (void **)&p->main_ctx : &p->main_h, p->co_h);                    \
            p->main_count++;                                                           \
        }                                                                              \
    }

/* The loop without the switch: the same counters, the same loop control. */
LK_TIMED_LOOP static void loop_base(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        p->co_count++;
        p->main_count++;
    }
}

/* For instruction counting (labkit.experiments.callgrind): 1 runs only the switch loops, 2
 * only the empty loops, so that each can be counted alone. 0, the default, runs both. */
static int only_loops = 0;
void lk_set_only(int which) { only_loops = which; }

#define LK_PINGPONG_COUNT(p) ((p)->main_count + (p)->co_count)
LK_TIMED_FN(timed_loop, pingpong, LK_PINGPONG_COUNT)

/* One loop in one span (lk_timer.h), and the switches the two counters saw in it; a loop
 * lk_set_only leaves out reads as all zeros. */
static void timed(pingpong_loop f, pingpong *p, uint64_t rounds, uint64_t *ns,
                  uint64_t *ticks, uint64_t *faults, uint64_t *counted) {
    if ((only_loops == 1 && f == loop_base) || (only_loops == 2 && f != loop_base)) {
        *ns = *ticks = *faults = *counted = 0;
        return;
    }
    timed_loop(f, p, rounds, ns, ticks, faults, counted);
}

/* One switch's ping-pong: its loop, the body its other context starts in (0: it has none,
 * as stackless), how that context is made on s (its handle, or 0) and undone. */
typedef struct {
    pingpong_loop loop;
    void (*co)(void *);
    void *(*make)(int kernel, pingpong *p, lk_stack *s, void (*co)(void *));
    void (*unmake)(pingpong *p);  /* 0: nothing beyond the stack to undo */
    const char *name;             /* what makes it, for the error when make gives none */
} pingpong_code;

/* lk_pingpong_fp's work once the switch's code is picked: the other context on a stack of
 * its own, then `repeats` samples of the empty loop and the switch loop, back to back,
 * after `warmup` unrecorded pairs. Returns 0, or -1 with err filled. */
static int pingpong_run(const pingpong_code *code, int kernel, size_t stack_size, int prefault,
                        uint64_t rounds, int warmup, int repeats, int fpctl_mode,
                        lk_sample *out, char *err, size_t errlen) {
    static pingpong p;  /* static: its address is stable and off the stacks being measured */
    memset(&p, 0, sizeof p);
    uint32_t fp_saved[2];
    lk_fpctl_read(fp_saved);
    if (fpctl_mode) lk_fpctl_reset();  /* a new context that keeps them starts from these */
    lk_stack s;
    memset(&s, 0, sizeof s);
    int rc = -1;
    if (code->co) {
        int e = lk_stack_alloc(&s, stack_size, 0, prefault);
        if (e != 0) {
            snprintf(err, errlen, "mmap of a %zu-byte stack failed: %s", stack_size, strerror(-e));
            goto done;
        }
        p.co_h = code->make(kernel, &p, &s, code->co);
        if (!p.co_h) {
            snprintf(err, errlen, "could not make a context with %s on a %zu-byte stack",
                     code->name, s.usable);
            goto done;
        }
    }
    if (fpctl_mode == 2) lk_fpctl_divide();

    uint64_t ns, ticks, faults, counted;
    for (int w = 0; w < warmup; w++) {
        timed(loop_base, &p, rounds, &ns, &ticks, &faults, &counted);
        timed(code->loop, &p, rounds, &ns, &ticks, &faults, &counted);
    }
    for (int r = 0; r < repeats; r++) {
        lk_sample *o = &out[r];
        /* Zeroed first, outside the span: a field no line below fills (one LK_SAMPLE_FIELDS
         * gains later, a kernel's that does not apply) reads 0, not whatever the caller's
         * buffer held (lk_count's is on its stack), and every library fills it alike. */
        memset(o, 0, sizeof *o);
        timed(loop_base, &p, rounds, &o->base_ns, &o->base_ticks, &faults, &counted);
        uint64_t copied = p.run.copied;
        timed(code->loop, &p, rounds, &o->loop_ns, &o->loop_ticks, &o->minor_faults,
              &o->counted);
        o->copied_bytes = p.run.copied - copied;
        o->switches = 2 * rounds;
        o->xinuse = lk_xinuse();
    }
    rc = 0;
done:
    /* The other context stays suspended for good; its stack simply goes away. */
    if (code->unmake) code->unmake(&p);
    lk_stack_free(&s);
    lk_fpctl_write(fp_saved);
    return rc;
}

#endif
