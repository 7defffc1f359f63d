/* harness.c -- the timed loops of labkit's kernels: a ping-pong of switches between two
 * contexts, and the same loop without the switch, whose cost is subtracted (lmbench's
 * lat_ctx does the same); lk_pingpong_fp sets them up and times the repeats. */
#define _GNU_SOURCE
#include "labkit_core.h"

#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include "lk_timer.h"


/* One round trip is two switches: main -> co and co -> main. Each side bumps its
 * own volatile counter once per switch it makes, so after R rounds the counters
 * must add up to 2R: proof that every switch happened. */
typedef struct pingpong pingpong;
/* copy_stack: one of the two coroutines that take turns on the run stack. */
typedef struct {
    lk_copy_ctx ctx;
    pingpong *p;
} copy_side;

struct pingpong {
    void *main_sp, *co_sp;   /* asm kernels: the two stored stack pointers */
    ucontext_t main_uc;      /* ucontext: main's context ... */
    ucontext_t *co_uc;       /* ... and the other one's, at the top of its stack */
    lk_regs_ctx main_lc;     /* regs (libco_design): main's register struct ... */
    lk_regs_ctx *co_lc;      /* ... and the other one's, at the top of its stack */
    lk_copy_run run;         /* copy_stack: the shared run stack, */
    lk_copy_ctx cs_main;     /* main's context (its own stack), */
    copy_side cs[2];         /* and the two coroutines main resumes in turn */
    size_t stack_in_use;
    int sl_state;            /* stackless: the state machine's resume point */
    volatile uint64_t main_count, co_count;
};

typedef void (*loop_fn)(pingpong *, uint64_t);

/* ---------------------------------------------------------------- the switch loops */

/* The sp and regs kernels are called directly, not through a pointer, as Boost.Context's
 * jump_fcontext is: one loop and one start function per kernel, made from the kernel table. */
#define LK_PINGPONG(NAME, MAIN_SAVE, MAIN_LOAD, CO_SAVE, CO_LOAD)                \
    static void co_##NAME(void *arg) {                                       \
        pingpong *p = arg;                                                   \
        for (;;) {                                                           \
            p->co_count++;                                                   \
            lk_swap_##NAME(CO_SAVE, CO_LOAD);                                \
        }                                                                    \
    }                                                                        \
    LK_TIMED_LOOP static void loop_##NAME(pingpong *p, uint64_t rounds) {    \
        for (uint64_t i = 0; i < rounds; i++) {                              \
            lk_swap_##NAME(MAIN_SAVE, MAIN_LOAD);                            \
            p->main_count++;                                                 \
        }                                                                    \
    }
/* sp: the two stored stack pointers. */
#define LK_PINGPONG_sp(NAME) LK_PINGPONG(NAME, &p->main_sp, p->co_sp, &p->co_sp, p->main_sp)
/* regs: the contexts are register structs, main's here and the other's at the top of its
 * stack, as ucontext's are. */
#define LK_PINGPONG_regs(NAME) \
    LK_PINGPONG(NAME, (void **)&p->main_lc, p->co_lc, (void **)p->co_lc, &p->main_lc)
/* The others' loops are written out below. */
#define LK_PINGPONG_uc(NAME)
#define LK_PINGPONG_copy(NAME)
#define LK_PINGPONG_none(NAME)
#define LK_PINGPONG_ROW(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    LK_ON_##ARCH(LK_PINGPONG_##HANDLE(name))
LK_KERNELS(LK_PINGPONG_ROW)

/* copy_stack: main resumes two coroutines in turn, so that each resume finds the other
 * one on the run stack: it is copied out and this one copied in (one copy of the bytes in
 * use per switch, on average). With one coroutine nothing would ever be copied. */
static void co_copy_stack(void *arg) {
    copy_side *c = arg;
    pingpong *p = c->p;
    size_t n = p->stack_in_use;
    char *pad = __builtin_alloca(n);
    memset(pad, 0x5a, n);  /* written: the bytes in use are real data */
    __asm__ volatile("" : : "r"(pad) : "memory");
    for (;;) {
        p->co_count++;
        lk_swap_copy_stack((void **)&c->ctx, &p->cs_main);
    }
}
LK_TIMED_LOOP static void loop_copy_stack(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        lk_swap_copy_stack((void **)&p->cs_main, &p->cs[i & 1].ctx);
        p->main_count++;
    }
}

static size_t stack_in_use = 0;
void lk_set_stack_in_use(size_t bytes) { stack_in_use = bytes; }

/* ucontext: the same loop through glibc's swapcontext. */
static void co_ucontext(void *arg) {
    pingpong *p = arg;
    for (;;) {
        p->co_count++;
        swapcontext(p->co_uc, &p->main_uc);
    }
}
LK_TIMED_LOOP static void loop_ucontext(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        swapcontext(&p->main_uc, p->co_uc);
        p->main_count++;
    }
}

/* Stackless: what a C++20 coroutine's resume() compiles to, written by hand.
 * The body is entered through a pointer read from memory (the compiler cannot
 * inline it), jumps to its resume point, runs to the next suspension, records
 * where to continue, and returns: one resume + one suspend = two transfers. */
__attribute__((noinline)) static void stackless_body(pingpong *p) {
    switch (p->sl_state) {
    case 0: p->co_count++; p->sl_state = 1; return;   /* first suspension point */
    default: p->co_count++; p->sl_state = 0; return;  /* second, then loop */
    }
}
static void (*volatile stackless_resume)(pingpong *) = stackless_body;
LK_TIMED_LOOP static void loop_stackless(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        stackless_resume(p);
        p->main_count++;
    }
}

/* ---------------------------------------------------------------- the empty loop */

/* The loop without the switch: the same counters, the same loop control. */
LK_TIMED_LOOP static void loop_base(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        p->co_count++;
        p->main_count++;
    }
}

/* ---------------------------------------------------------------- timing one loop */

/* For instruction counting (labkit.experiments.callgrind): 1 runs only the switch loops, 2 only the
 * empty loops, so that each can be counted alone. 0, the default, runs both. */
static int only_loops = 0;
void lk_set_only(int which) { only_loops = which; }

#define LK_PINGPONG_COUNT(p) ((p)->main_count + (p)->co_count)
LK_TIMED_FN(timed_loop, pingpong, LK_PINGPONG_COUNT)

/* One loop in one span (lk_timer.h), and the switches the two counters saw in it; a loop
 * lk_set_only leaves out reads as all zeros. */
static void timed(loop_fn f, pingpong *p, uint64_t rounds, uint64_t *ns, uint64_t *ticks,
                  uint64_t *faults, uint64_t *counted) {
    if ((only_loops == 1 && f == loop_base) || (only_loops == 2 && f != loop_base)) {
        *ns = *ticks = *faults = *counted = 0;
        return;
    }
    timed_loop(f, p, rounds, ns, ticks, faults, counted);
}

/* ---------------------------------------------------------------- the ping-pong */

int lk_pingpong(int kernel, size_t stack_size, int prefault, uint64_t rounds, int warmup,
                int repeats, lk_sample *out, char *err, size_t errlen) {
    return lk_pingpong_fp(kernel, stack_size, prefault, rounds, warmup, repeats, 0, out, err,
                          errlen);
}

/* stackless has no other context to start. */
#define co_stackless 0
#define LK_PINGPONG_CASE(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    LK_ON_##ARCH(case LK_KERNEL_##name: loop = loop_##name; fn = co_##name; break;)

int lk_pingpong_fp(int kernel, size_t stack_size, int prefault, uint64_t rounds, int warmup,
                   int repeats, int fpctl_mode, lk_sample *out, char *err, size_t errlen) {
    const char *why;
    loop_fn loop = 0;
    void (*fn)(void *) = 0;
    if (!lk_kernel_available(kernel, &why)) {
        snprintf(err, errlen, "kernel %s is not available here: %s", lk_kernel_name(kernel), why);
        return -1;
    }
    switch (kernel) {
    LK_KERNELS(LK_PINGPONG_CASE)
    default:
        snprintf(err, errlen, "unknown kernel %d", kernel);
        return -1;
    }
    enum lk_handle handle = lk_kernel_handle(kernel);

    static pingpong p;  /* static: its address is stable and off the stacks being measured */
    memset(&p, 0, sizeof p);
    uint32_t fp_saved[2];
    lk_fpctl_read(fp_saved);
    if (fpctl_mode) lk_fpctl_reset();  /* the other context copies these when made */
    lk_stack s;
    memset(&s, 0, sizeof s);
    if (fn) {
        int rc = lk_stack_alloc(&s, stack_size, 0, prefault);
        if (rc != 0) {
            snprintf(err, errlen, "mmap of a %zu-byte stack failed: %s", stack_size, strerror(-rc));
            lk_fpctl_write(fp_saved);
            return -1;
        }
        void *ctx = 0;
        if (handle == LK_HANDLE_copy) {
            /* Room for what the coroutines hold, so the copies never grow in the loop. */
            p.stack_in_use = stack_in_use;
            lk_copy_run_init(&p.run, &s);
            lk_copy_main(&p.cs_main);
            ctx = &p.cs[0];
            for (int i = 0; i < 2; i++) {
                p.cs[i].p = &p;
                if (lk_copy_make(&p.cs[i].ctx, &p.run, fn, &p.cs[i], stack_in_use + 1024) != 0)
                    ctx = 0;
            }
        } else {
            ctx = lk_make(kernel, &s, fn, &p);
        }
        if (!ctx) {
            snprintf(err, errlen, "could not make a %s context", lk_kernel_name(kernel));
            for (int i = 0; i < 2; i++) lk_copy_free(&p.cs[i].ctx);
            lk_stack_free(&s);
            lk_fpctl_write(fp_saved);
            return -1;
        }
        if (handle == LK_HANDLE_uc) p.co_uc = ctx;
        else if (handle == LK_HANDLE_regs) p.co_lc = ctx;
        else p.co_sp = ctx;
    }
    if (fpctl_mode == 2) lk_fpctl_divide();

    uint64_t ns, ticks, faults, counted;
    for (int w = 0; w < warmup; w++) {
        timed(loop_base, &p, rounds, &ns, &ticks, &faults, &counted);
        timed(loop, &p, rounds, &ns, &ticks, &faults, &counted);
    }
    for (int r = 0; r < repeats; r++) {
        lk_sample *o = &out[r];
        timed(loop_base, &p, rounds, &o->base_ns, &o->base_ticks, &faults, &counted);
        uint64_t copied = p.run.copied;
        timed(loop, &p, rounds, &o->loop_ns, &o->loop_ticks, &o->minor_faults, &o->counted);
        o->copied_bytes = p.run.copied - copied;
        o->switches = 2 * rounds;
        o->xinuse = lk_xinuse();
    }
    /* The other context stays suspended for good; its stack simply goes away. */
    for (int i = 0; i < 2; i++) lk_copy_free(&p.cs[i].ctx);
    lk_stack_free(&s);
    lk_fpctl_write(fp_saved);
    return 0;
}

/* ---------------------------------------------------------------- the timer */

double lk_ticks_per_ns(int ms) {
    uint64_t n0 = lk_now_ns(), t0 = lk_ticks_begin();
    uint64_t target = n0 + (uint64_t)ms * 1000000ull, n1;
    do n1 = lk_now_ns(); while (n1 < target);
    uint64_t t1 = lk_ticks_end();
    return (double)(t1 - t0) / (double)(n1 - n0);
}

const char *lk_timer_name(void) { return LK_TIMER_NAME; }

/* What labkit/core/structs.py reads an lk_sample by (lk_layout.h). */
LK_LAYOUT(lk_sample, LK_SAMPLE_FIELDS)
