/* user_switch.c -- the lab's harness around a switch routine a user brings from outside the
 * package. labkit.core.user_switch compiles it, with the lab's -O2 flags, together with the
 * user's source (or links the user's library) into one library of the results folder. The
 * user's file defines
 *
 *     void *lk_user_make(void *stack_base, size_t stack_size, void (*fn)(void *), void *arg);
 *     void  lk_user_swap(void **save, void *to);
 *
 * lk_user_make prepares a context on [stack_base, stack_base + stack_size) that, when first
 * resumed, calls fn(arg), which never returns; lk_user_swap saves the running context into
 * *save and resumes `to` (libco's coctx_swap and libaco's acosw have this shape).
 *
 * Here: the ping-pong (pingpong_loops.h's, harness.c's) and the ring (ring_loops.h's,
 * ring.c's), both over lk_user_swap, and the checks checks.c does not already make for any
 * switch: the stack pointer's alignment when fn starts, and the stacks a switch must leave
 * alone. The register and FP-control checks are checks.c's own (lk_regtest_ext,
 * lk_fptest_ext). It answers the C core's entry points lk_pingpong_fp, lk_ring, lk_set_only
 * and lk_cflags, so the callgrind driver (cxx/count_main.c) and labkit.core.native treat it
 * as they treat a build of the core. */
#define _GNU_SOURCE
#include "labkit_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_timer.h"
#include "pingpong_loops.h"
#include "ring_loops.h"
#include "switch_platform.h"

#if !defined(__x86_64__)
#error "labkit's harness for a user's switch probes x86-64 registers and stacks only"
#endif

void *lk_user_make(void *stack_base, size_t stack_size, void (*fn)(void *), void *arg);
void lk_user_swap(void **save, void *to);
int64_t lk_user_frame_call(void **save, void *to, uint64_t *frame);  /* below, in asm */

/* What Python calls through ctypes (labkit.core.native.Library types the calls from it). */
#define LK_USER_FUNCTIONS(F)                                                               \
    F(const char *, lk_cflags, (void))                                                     \
    /* the ping-pong; kernel must be 0 (the library holds one switch) */                   \
    F(int, lk_pingpong_fp, (int kernel, size_t stack_size, int prefault, uint64_t rounds,  \
                            int warmup, int repeats, int fpctl_mode, lk_sample *out,        \
                            char *err, size_t errlen))                                      \
    F(int, lk_ring, (int kernel, int n, int asymmetric, size_t stack_size,                \
                     size_t colour_step, int prefault, uint64_t laps, int warmup,          \
                     int repeats, lk_sample *out, char *err, size_t errlen))               \
    /* checks.c's checks, run on lk_user_swap */                                           \
    F(int, lk_user_regtest, (uint64_t *main_in, uint64_t *main_out, uint64_t *co_in,      \
                             uint64_t *co_out))                                            \
    F(int, lk_user_fptest, (uint32_t *main_set, uint32_t *main_after, uint32_t *co_set,    \
                            uint32_t *co_after, uint32_t *masks))                          \
    /* rsp when fn started (its first instruction); 0 ok, -1 when no context was made */   \
    F(int, lk_user_aligntest, (uint64_t *entry_rsp))                                       \
    /* the stacks a switch must leave alone; out[0]: the first 8-byte word of the         \
     * caller's frame (64 bytes above the return address) that changed across the switch, \
     * or -1; out[1]: the first byte of a suspended context's stack that changed while    \
     * the others switched, as an offset from its rsp at the call (negative: below it; 1  \
     * << 62 when none) */                                                                 \
    F(int, lk_user_stacktest, (int64_t *out))                                              \
    F(int, lk_user_regprobe_count, (void))                                                 \
    F(const char *, lk_user_regprobe_name, (int i))
LK_DECLARE(LK_USER_FUNCTIONS)

static void *user_make(void *base, size_t size, void (*fn)(void *), void *arg) {
    return lk_user_make(base, size, fn, arg);
}
static void user_swap(void **save, void *to) { lk_user_swap(save, to); }

/* Every switch of the checks below goes through lk_user_frame_call, which gives its caller
 * back its callee-saved registers and keeps nothing of its own in the 64 bytes above the
 * return address: a switch that loses a register or writes there fails its check; it must
 * not corrupt the checks' own code. */
static void checked_swap(void **save, void *to) {
    uint64_t frame;
    lk_user_frame_call(save, to, &frame);
}

/* A new context of the user's on s; 0 if lk_user_make returned none. */
static void *make_on(lk_stack *s, void (*fn)(void *), void *arg) {
    return lk_user_make(s->top - s->usable, s->usable, fn, arg);
}

/* ---------------------------------------------------------------- the ping-pong */

/* pingpong_loops.h's ping-pong (harness.c's) over lk_user_swap. */
LK_PINGPONG(user, lk_user_swap, 0)

static void *make_pingpong(int kernel, pingpong *p, lk_stack *s, void (*co)(void *)) {
    (void)kernel;
    return make_on(s, co, p);
}

int lk_pingpong_fp(int kernel, size_t stack_size, int prefault, uint64_t rounds, int warmup,
                   int repeats, int fpctl_mode, lk_sample *out, char *err, size_t errlen) {
    if (kernel != 0) {
        snprintf(err, errlen, "a user's library holds one switch, number 0; got %d", kernel);
        return -1;
    }
    const pingpong_code code = {loop_user, co_user, make_pingpong, 0, "lk_user_make"};
    return pingpong_run(&code, kernel, stack_size, prefault, rounds, warmup, repeats,
                        fpctl_mode, out, err, errlen);
}

/* ---------------------------------------------------------------- the ring */

/* ring_loops.h's ring (ring.c's) over lk_user_swap. */
LK_RING(user, lk_user_swap, 0)

static void *make_user(int kernel, lk_stack *s, void (*fn)(void *), void *arg) {
    (void)kernel;
    return make_on(s, fn, arg);
}

int lk_ring(int kernel, int n, int asymmetric, size_t stack_size, size_t colour_step,
            int prefault, uint64_t laps, int warmup, int repeats, lk_sample *out, char *err,
            size_t errlen) {
    if (kernel != 0) {
        snprintf(err, errlen, "a user's library holds one switch, number 0; got %d", kernel);
        return -1;
    }
    const ring_code code = {sym_user, asym_user, symloop_user, asymloop_user, make_user,
                            LK_HANDLE_sp};
    return ring_run(&code, kernel, n, asymmetric, stack_size, colour_step, prefault, laps,
                    warmup, repeats, out, err, errlen);
}

/* ---------------------------------------------------------------- the checks */

int lk_user_regtest(uint64_t *main_in, uint64_t *main_out, uint64_t *co_in, uint64_t *co_out) {
    return lk_regtest_ext(user_swap, user_make, main_in, main_out, co_in, co_out);
}

int lk_user_fptest(uint32_t *main_set, uint32_t *main_after, uint32_t *co_set,
                   uint32_t *co_after, uint32_t *masks) {
    return lk_fptest_ext(user_swap, user_make, main_set, main_after, co_set, co_after, masks);
}

int lk_user_regprobe_count(void) { return lk_regprobe_count(); }
const char *lk_user_regprobe_name(int i) { return lk_regprobe_name(i); }

/* Alignment: the fn lk_user_make is given is this stub, which records rsp before anything
 * moves it and switches straight back; no C runs on the stack it was given (compiled code
 * may keep SSE data there with aligned moves, and would fault on a misaligned one). The
 * ABI wants rsp + 8 to be a multiple of 16 there, as after any call. */
__attribute__((visibility("hidden"))) uint64_t lk_user_entry_rsp;
__attribute__((visibility("hidden"))) void *lk_user_align_back;
void lk_user_align_entry(void *arg);
__asm__(".text\n"
        ".globl lk_user_align_entry\n.hidden lk_user_align_entry\n"
        ".type lk_user_align_entry,@function\n.p2align 4\n"
        "lk_user_align_entry:\n"
        "    movq  %rsp, lk_user_entry_rsp(%rip)\n" /* rsp as fn finds it */
        "    movq  (%rdi), %rsi\n"                  /* to: main, whose handle arg points at */
        "    leaq  lk_user_align_back(%rip), %rdi\n" /* save: this context */
        "    callq lk_user_swap\n"                  /* back to main, never resumed */
        "    ud2\n"
        ".size lk_user_align_entry,.-lk_user_align_entry\n");

int lk_user_aligntest(uint64_t *entry_rsp) {
    lk_stack s;
    void *main_ctx = 0;
    if (lk_stack_alloc(&s, 64 * 1024, 0, 0) != 0) return -1;
    lk_user_align_back = make_on(&s, lk_user_align_entry, &main_ctx);
    if (!lk_user_align_back) {
        lk_stack_free(&s);
        return -1;
    }
    lk_user_entry_rsp = 0;
    checked_swap(&main_ctx, lk_user_align_back);
    *entry_rsp = lk_user_entry_rsp;
    lk_stack_free(&s);
    return 0;
}

/* The stacks a switch must leave alone. lk_user_frame_call(save, to, frame) calls
 * lk_user_swap(save, to) with 64 bytes of sentinels in its own frame, just above the return
 * address, and returns the index of the first 8-byte word of them the round trip changed
 * (-1: none); *frame gets its rsp at the call. It gives its caller back the callee-saved
 * registers from its own stack, as lk_regprobe does. */
__asm__(".text\n"
        ".globl lk_user_frame_call\n.hidden lk_user_frame_call\n"
        ".type lk_user_frame_call,@function\n.p2align 4\n"
        "lk_user_frame_call:\n"
        LK_PUSH_CALLEE_SAVED
        "    subq  $72, %rsp\n"               /* the sentinel words and a pad: rsp 16-aligned */
        "    movq  %rsp, (%rdx)\n"            /* *frame = rsp at the call */
        "    movabsq $0x5a5a5a5a5a5a5a00, %rcx\n" /* the pattern: word i holds it + i */
        "    xorl  %eax, %eax\n"
        "1:  leaq  (%rcx,%rax), %r8\n"
        "    movq  %r8, (%rsp,%rax,8)\n"      /* word i */
        "    incq  %rax\n"
        "    cmpq  $8, %rax\n"
        "    jne   1b\n"
        "    callq lk_user_swap\n"            /* save (rdi) and to (rsi) as we got them */
        "    movabsq $0x5a5a5a5a5a5a5a00, %rcx\n" /* the pattern again: no register kept it */
        "    xorl  %eax, %eax\n"
        "2:  leaq  (%rcx,%rax), %r8\n"
        "    cmpq  %r8, (%rsp,%rax,8)\n"      /* word i as we left it? */
        "    jne   3f\n"
        "    incq  %rax\n"
        "    cmpq  $8, %rax\n"
        "    jne   2b\n"
        "    movq  $-1, %rax\n"               /* all eight survived */
        "3:  addq  $72, %rsp\n"
        LK_POP_CALLEE_SAVED
        "    ret\n"
        ".size lk_user_frame_call,.-lk_user_frame_call\n");

/* At file scope, off the stacks being checked, and reached without a register: a switch
 * that loses one must not make the check lose its way. */
static struct {
    void *main_ctx, *a, *b;
    uint64_t a_frame;      /* A's rsp at its call into the switch */
    int64_t a_changed;     /* what A's own frame check found */
} st;

static void stack_a(void *arg) {
    (void)arg;
    st.a_changed = lk_user_frame_call(&st.a, st.main_ctx, &st.a_frame);
    for (;;) checked_swap(&st.a, st.main_ctx);
}
static void stack_b(void *arg) {
    (void)arg;
    for (;;) checked_swap(&st.b, st.main_ctx);
}

int lk_user_stacktest(int64_t *out) {
    lk_stack sa, sb;
    memset(&st, 0, sizeof st);
    if (lk_stack_alloc(&sa, 64 * 1024, 0, 0) != 0) return -1;
    if (lk_stack_alloc(&sb, 64 * 1024, 0, 0) != 0) {
        lk_stack_free(&sa);
        return -1;
    }
    int rc = -1;
    char *copy = malloc(sa.usable);
    st.a = make_on(&sa, stack_a, 0);
    st.b = make_on(&sb, stack_b, 0);
    if (copy && st.a && st.b) {
        checked_swap(&st.main_ctx, st.a);      /* A suspends inside lk_user_frame_call */
        char *base = sa.top - sa.usable;
        memcpy(copy, base, sa.usable);         /* A's whole stack, while it is suspended */
        for (int i = 0; i < 16; i++) checked_swap(&st.main_ctx, st.b);  /* others switch */
        out[1] = (int64_t)1 << 62;
        for (size_t k = 0; k < sa.usable; k++)
            if (copy[k] != base[k]) {
                out[1] = (int64_t)((uint64_t)(uintptr_t)(base + k) - st.a_frame);
                break;
            }
        checked_swap(&st.main_ctx, st.a);      /* A checks its own frame and comes back */
        out[0] = st.a_changed;
        rc = 0;
    }
    free(copy);
    lk_stack_free(&sb);
    lk_stack_free(&sa);
    return rc;
}

LK_FUNCTIONS(LK_USER_FUNCTIONS)
/* What labkit/core/structs.py reads an lk_sample by (lk_layout.h). */
LK_LAYOUT(lk_sample, LK_SAMPLE_FIELDS)
