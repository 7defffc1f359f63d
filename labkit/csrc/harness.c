/* harness.c -- the timed loops of labkit's kernels: a ping-pong of switches between two
 * contexts, and the same loop without the switch, whose cost is subtracted; lk_pingpong_fp
 * sets them up and times the repeats. The ping-pong itself (its state, loops, counters and
 * samples) is pingpong_loops.h's, which user_switch.c shares. */
#define _GNU_SOURCE
#include "labkit_core.h"

#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include "lk_timer.h"
#include "pingpong_loops.h"

/* ---------------------------------------------------------------- the switch loops */

/* The sp and regs kernels' loops, from the kernel table. regs: the contexts are register
 * structs, main's here and the other's at the top of its stack, as ucontext's are. */
#define LK_PINGPONG_sp(NAME) LK_PINGPONG(NAME, lk_swap_##NAME, 0)
#define LK_PINGPONG_regs(NAME) LK_PINGPONG(NAME, lk_swap_##NAME, 1)
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

/* ucontext: LK_PINGPONG's loop, with glibc's swapcontext called as it is declared (a
 * wrapper in the kernels' shape would be one more call at -O0). */
static void co_ucontext(void *arg) {
    pingpong *p = arg;
    for (;;) {
        p->co_count++;
        swapcontext(p->co_h, &p->main_ctx.uc);
    }
}
LK_TIMED_LOOP static void loop_ucontext(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        swapcontext(&p->main_ctx.uc, p->co_h);
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

/* ---------------------------------------------------------------- the ping-pong */

/* The other context of a kernel on s; copy_stack's two coroutines share s as their run
 * stack, with room for what they hold, so the copies never grow in the loop. */
static void *make_kernel(int kernel, pingpong *p, lk_stack *s, void (*co)(void *)) {
    if (lk_kernel_handle(kernel) != LK_HANDLE_copy) return lk_make(kernel, s, co, p);
    p->stack_in_use = stack_in_use;
    lk_copy_run_init(&p->run, s);
    lk_copy_main(&p->cs_main);
    void *ctx = &p->cs[0];
    for (int i = 0; i < 2; i++) {
        p->cs[i].p = p;
        if (lk_copy_make(&p->cs[i].ctx, &p->run, co, &p->cs[i], stack_in_use + 1024) != 0)
            ctx = 0;
    }
    return ctx;
}

static void unmake_kernel(pingpong *p) {
    for (int i = 0; i < 2; i++) lk_copy_free(&p->cs[i].ctx);
}

int lk_pingpong(int kernel, size_t stack_size, int prefault, uint64_t rounds, int warmup,
                int repeats, lk_sample *out, char *err, size_t errlen) {
    return lk_pingpong_fp(kernel, stack_size, prefault, rounds, warmup, repeats, 0, out, err,
                          errlen);
}

/* stackless has no other context to start. */
#define co_stackless 0
#define LK_PINGPONG_CASE(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    LK_ON_##ARCH(case LK_KERNEL_##name: code.loop = loop_##name; code.co = co_##name; break;)

int lk_pingpong_fp(int kernel, size_t stack_size, int prefault, uint64_t rounds, int warmup,
                   int repeats, int fpctl_mode, lk_sample *out, char *err, size_t errlen) {
    const char *why;
    if (!lk_kernel_available(kernel, &why)) {
        snprintf(err, errlen, "kernel %s is not available here: %s", lk_kernel_name(kernel), why);
        return -1;
    }
    pingpong_code code = {.make = make_kernel, .unmake = unmake_kernel,
                          .name = lk_kernel_name(kernel)};
    switch (kernel) {
    LK_KERNELS(LK_PINGPONG_CASE)
    default:
        snprintf(err, errlen, "unknown kernel %d", kernel);
        return -1;
    }
    return pingpong_run(&code, kernel, stack_size, prefault, rounds, warmup, repeats,
                        fpctl_mode, out, err, errlen);
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
