/* labkit_core.h -- the C side of labkit: kernels, stacks, the timed loops and the self-checks.
 * Its callers, always inside a worker process: labkit/core/_core.pyx (the default build),
 * ctypes in labkit/core/native.py (the -O builds), the C++ peers (through cxx/peers.h, for
 * lk_sample), and the C programs lk_count (cxx/), the stackful echo server and the
 * self-tests.
 *
 * Its sources, lowest first; each calls only those before it (native_build.py lists them):
 *   stack.c       guarded stacks, new contexts, and the switches themselves
 *   copy_stack.c  copy stacks
 *   kernels.c     the kernel table: names, properties, availability, lk_swap_of
 *   harness.c, ring.c, xstate.c, workload.c, frequency.c   the timed loops
 *   checks.c      the correctness checks (registers, FP control state, the stack guard) */
#ifndef LABKIT_CORE_H
#define LABKIT_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "lk_layout.h"

/* The kernel table: every kernel, once, in enum order. Everything that lists the kernels
 * is made from it: the enum and the names, lk_swap_of, the ping-pong's and the ring's loops
 * and their dispatch (harness.c, ring.c), and lk_kernel_table(), which Python reads
 * (labkit.core.systems, the tests).
 *
 *   X(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT)
 *
 * ARCH      any, or x86_64: where the switch files define it (elsewhere WHY_NOT says why not).
 * HANDLE    what save/load point at, which picks the loops made for it:
 *           sp    a stack pointer: lk_swap_<name>(void **save_sp, void *load_sp), called
 *                 directly by loops made from the table (add a row and its switch: done);
 *           regs  a register struct (lk_regs_ctx) at the top of the context's stack,
 *                 lk_swap_<name> again, loops made from the table too;
 *           uc, copy, none: ucontext_t, copy stacks, no context at all: loops of their own.
 * STACKFUL  1 if the other side runs on a stack of its own.
 * KEEPS_FP  1 if a switch keeps the FP control state (MXCSR + x87 CW; AArch64: FPCR): the
 *           property the correctness tests check, both ways. */
#define LK_KERNELS(X)                                                                    \
    /* callee-saved GPRs + sp, pop + jmp */                                              \
    X(asm, any, sp, 1, 0, "")                                                            \
    /* the same, ending in ret */                                                        \
    X(asm_ret, any, sp, 1, 0, "")                                                        \
    /* + MXCSR and x87 control word (AArch64: + FPCR) */                                 \
    X(asm_fpu, any, sp, 1, 1, "")                                                        \
    /* + the whole x87/SSE state, fxsave64 */                                            \
    X(asm_fxsave, x86_64, sp, 1, 1, "fxsave is an x86-64 instruction")                   \
    /* + every XCR0 component, xsave64 */                                                \
    X(asm_xsave, x86_64, sp, 1, 1, "xsave is an x86-64 instruction")                     \
    /* glibc swapcontext */                                                              \
    X(ucontext, any, uc, 1, 1, "")                                                       \
    /* a C state machine called through a pointer */                                     \
    X(stackless, any, none, 0, 0, "")                                                    \
    /* libco's design: 14 registers into a struct, push + ret */                         \
    X(libco_design, x86_64, regs, 1, 0,                                                  \
      "libco's design is its x86-64 switch; labkit has no variant of it for this architecture") \
    /* coroutines share one run stack, copied out and in (asm_fpu underneath) */         \
    X(copy_stack, any, copy, 1, 1, "")

/* LK_ON_<ARCH>(code): the code where ARCH's switch exists, nothing elsewhere;
 * LK_HERE_<ARCH>: 1 there, 0 elsewhere. */
#define LK_ON_any(...) __VA_ARGS__
#define LK_HERE_any 1
#if defined(__x86_64__)
#define LK_ON_x86_64(...) __VA_ARGS__
#define LK_HERE_x86_64 1
#else
#define LK_ON_x86_64(...)
#define LK_HERE_x86_64 0
#endif

#define LK_KERNEL_ENUM(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) LK_KERNEL_##name,
enum lk_kernel { LK_KERNELS(LK_KERNEL_ENUM) LK_NKERNELS };
/* The short names the C code uses. */
#define LK_ASM LK_KERNEL_asm
#define LK_ASM_RET LK_KERNEL_asm_ret
#define LK_ASM_FPU LK_KERNEL_asm_fpu
#define LK_ASM_FXSAVE LK_KERNEL_asm_fxsave
#define LK_ASM_XSAVE LK_KERNEL_asm_xsave
#define LK_UCONTEXT LK_KERNEL_ucontext
#define LK_STACKLESS LK_KERNEL_stackless
#define LK_LIBCO_DESIGN LK_KERNEL_libco_design
#define LK_COPY_STACK LK_KERNEL_copy_stack

/* What a kernel's save/load words point at (the HANDLE column). */
enum lk_handle { LK_HANDLE_sp, LK_HANDLE_regs, LK_HANDLE_uc, LK_HANDLE_copy, LK_HANDLE_none };
#define LK_HANDLE_CASE(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    case LK_KERNEL_##name: return LK_HANDLE_##HANDLE;
static inline enum lk_handle lk_handle_of(int kernel) {
    switch (kernel) {
    LK_KERNELS(LK_HANDLE_CASE)
    default: return LK_HANDLE_none;
    }
}

typedef void (*lk_swap_fn)(void **save_sp, void *load_sp);

/* The switches of the sp and regs kernels, defined in the architecture's switch file
 * (switch_platform.h, emitted by stack.c); copy_stack's is in copy_stack.c. For regs, save
 * and load point at lk_regs_ctx structs, not at stack pointers. */
#define LK_SWAP_DECL_sp(name) void lk_swap_##name(void **save_sp, void *load_sp);
#define LK_SWAP_DECL_regs(name) void lk_swap_##name(void **save, void *load);
#define LK_SWAP_DECL_uc(name)
#define LK_SWAP_DECL_copy(name)
#define LK_SWAP_DECL_none(name)
#define LK_SWAP_DECL(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    LK_ON_##ARCH(LK_SWAP_DECL_##HANDLE(name))
LK_KERNELS(LK_SWAP_DECL)

/* libco_design's context: every register it keeps lives here, not on the stack. */
typedef struct {
    uint64_t slot[14];  /* rsp, return address, rbx, rcx, rdx, rsi, rdi, rbp, r8, r9, r12-r15 */
} __attribute__((aligned(16))) lk_regs_ctx;

/* ---- stack.c ---- */
/* A mmapped stack with a PROT_NONE guard page below it. */
typedef struct {
    void *map;          /* start of the mapping (the guard page) */
    size_t map_size;    /* guard + usable */
    size_t usable;      /* usable bytes, a whole number of pages */
    char *top;          /* highest address; the stack grows down from here */
} lk_stack;

size_t lk_page_size(void);
/* usable is rounded up to whole pages; offset moves the top down (stack colouring). */
int lk_stack_alloc(lk_stack *s, size_t usable, size_t offset, int prefault);
void lk_stack_free(lk_stack *s);

/* A new stackful context on s that starts in fn(arg); fn must never return.
 * Returns what the kernel's switch switches to (lk_swap_of): for the asm kernels the
 * context's saved stack pointer, for LK_UCONTEXT a ucontext_t kept at the top of s (0 if
 * getcontext fails). An asm_xsave context needs lk_kernel_available() asked first (it
 * sizes the xsave area). */
void *lk_make(int kernel, lk_stack *s, void (*fn)(void *), void *arg);

/* ---- kernels.c ---- */
/* The table as text, "name handle=sp stackful=1 keeps_fp_control=0;" a kernel, in enum
 * order: what labkit.core.systems reads the kernels from. */
const char *lk_kernel_table(void);
const char *lk_kernel_name(int kernel);
enum lk_handle lk_kernel_handle(int kernel);
/* 1 if the kernel can run here; else 0 and *why says why not. */
int lk_kernel_available(int kernel, const char **why);
int lk_kernel_is_stackful(int kernel);
/* 1 if a switch keeps the FP control state (the table's KEEPS_FP). */
int lk_kernel_keeps_fp_control(int kernel);
/* Bytes a suspended context keeps on its stack for this kernel. */
size_t lk_kernel_frame_bytes(int kernel);
const char *lk_arch_name(void);
const char *lk_timer_name(void);
const char *lk_compiler(void);

/* The switch of a kernel whose context is a stack pointer, an lk_regs_ctx or an lk_copy_ctx
 * (0 for ucontext and stackless). */
lk_swap_fn lk_swap_of(int kernel);

/* The FP control state: reset to the ABI's defaults, dirtied by an inexact division, read,
 * written. */
void lk_fpctl_reset(void);
void lk_fpctl_divide(void);
void lk_fpctl_read(uint32_t v[2]);
void lk_fpctl_write(const uint32_t v[2]);
/* The state components in use now (x86-64 XINUSE bitmap), or -1 where unknown. */
int64_t lk_xinuse(void);
/* XCR0, the xsave bytes for its components, and for every component the CPU supports
 * (-1 each where there is no xsave). */
void lk_xstate(int64_t out[3]);
/* The hypervisor's CPUID signature, or "" where CPUID names none. */
const char *lk_hypervisor_signature(void);

/* ---- checks.c ---- */
/* Self-checks, run by the tests. Return 0 on success, -1 if the kernel is not
 * available or stackless. */
int lk_regprobe_count(void);
const char *lk_regprobe_name(int i);
/* Fills main_out/co_out with the registers each side holds after switches; the
 * sentinels each side loaded are written to main_in/co_in. */
int lk_regtest(int kernel, uint64_t *main_in, uint64_t *main_out, uint64_t *co_in, uint64_t *co_out);
/* FP control state: values set and seen after a switch, in main and in the other context.
 * Each array holds 2 words (x86-64: MXCSR, x87 CW; AArch64: FPCR, 0). masks[] says which bits count. */
int lk_fptest(int kernel, uint32_t *main_set, uint32_t *main_after, uint32_t *co_set,
              uint32_t *co_after, uint32_t *masks);
/* The same two checks of a switch from outside the kernel table (a user's: csrc/user_switch.c):
 * swap as the kernels' prototype, make(stack_base, stack_size, fn, arg) making a new
 * context on [stack_base, stack_base + stack_size) that starts in fn(arg). */
typedef void *(*lk_make_fn)(void *stack_base, size_t stack_size, void (*fn)(void *), void *arg);
int lk_regtest_ext(lk_swap_fn swap, lk_make_fn make, uint64_t *main_in, uint64_t *main_out,
                   uint64_t *co_in, uint64_t *co_out);
int lk_fptest_ext(lk_swap_fn swap, lk_make_fn make, uint32_t *main_set, uint32_t *main_after,
                  uint32_t *co_set, uint32_t *co_after, uint32_t *masks);
/* Runs a coroutine that uses about use_bytes of stack, then returns to main.
 * Past the stack's end it faults on the guard page: the worker dies by SIGSEGV. */
int lk_stack_probe(int kernel, size_t stack_size, size_t use_bytes);

/* ---- copy_stack.c ---- */
/* Copy stacks: coroutines share one run stack; a suspended one keeps only the bytes it
 * used, in a heap buffer. The run stack's owner is copied out only when another
 * coroutine needs the run stack (lazily, as libco's shared stacks and libaco do). */
typedef struct lk_copy_ctx lk_copy_ctx;
typedef struct {
    char *top;             /* where the frames start: the lk_stack's top, 16-aligned */
    lk_copy_ctx *owner;    /* whose frames are on it now (0: nobody's) */
    uint64_t copied;       /* bytes copied out and in so far */
} lk_copy_run;
struct lk_copy_ctx {
    void *sp;              /* first: the switch stores it through (void **)ctx */
    lk_copy_run *run;      /* 0: runs on a stack of its own (main) */
    char *saved;           /* its used stack while it is off the run stack */
    size_t saved_bytes, capacity;
};
void lk_copy_run_init(lk_copy_run *r, lk_stack *s);
/* A coroutine on run r that starts in fn(arg); reserve: bytes of buffer to start with.
 * Returns 0, or -1 if out of memory. Nothing is written to the run stack yet. */
int lk_copy_make(lk_copy_ctx *c, lk_copy_run *r, void (*fn)(void *), void *arg,
                 size_t reserve);
void lk_copy_main(lk_copy_ctx *c);  /* main's context: it keeps its own stack */
void lk_copy_free(lk_copy_ctx *c);
/* save: (void **)from, load: to (both lk_copy_ctx). A switch between two coroutines of the
 * same run stack would overwrite the frames it runs on: it aborts (transfers go through
 * main, as libaco's do). */
void lk_swap_copy_stack(void **save, void *load);

/* ---- harness.c ---- */
/* One timed sample; its fields are declared once, here (lk_layout.h). */
#define LK_SAMPLE_FIELDS(F)                                                           \
    F(uint64_t, loop_ns) F(uint64_t, loop_ticks)  /* the ping-pong loop */           \
    F(uint64_t, base_ns) F(uint64_t, base_ticks)  /* the same loop without the switch */ \
    F(uint64_t, switches)      /* transfers of control the loop made */              \
    F(uint64_t, counted)       /* transfers the two sides counted */                 \
    F(uint64_t, minor_faults)  /* page faults during the timed loop */               \
    F(uint64_t, copied_bytes)  /* stack bytes the loop's switches copied (copy_stack) */ \
    F(int64_t, xinuse)         /* XINUSE after the loop (-1 unknown; see lk_xinuse) */
LK_STRUCT(lk_sample, LK_SAMPLE_FIELDS)
LK_LAYOUT_DECL(lk_sample)

/* Ping-pong between two contexts: rounds round trips = 2*rounds switches.
 * warmup repeats are run and dropped; repeats samples are written to out.
 * Returns 0, or -1 with err filled. */
int lk_pingpong(int kernel, size_t stack_size, int prefault, uint64_t rounds, int warmup,
                int repeats, lk_sample *out, char *err, size_t errlen);
/* ---- ring.c ---- */
/* Transfers in one lap: a symmetric ring main -> c0 -> ... -> c(n-1) -> main makes n+1,
 * a scheduler (asymmetric: main -> c(i) -> main for each i) 2n. The one statement of it:
 * Python reads it through the extension (labkit.core.timing.ring_switches_per_lap). */
uint64_t lk_ring_switches_per_lap(int n, int asymmetric);
/* n contexts in a symmetric ring or resumed in turn by main (asymmetric), for `laps` laps
 * of lk_ring_switches_per_lap transfers. colour_step > 0 staggers the stack tops. */
int lk_ring(int kernel, int n, int asymmetric, size_t stack_size, size_t colour_step,
            int prefault, uint64_t laps, int warmup, int repeats, lk_sample *out, char *err,
            size_t errlen);


/* 1: the ping-pong runs only its switch loops; 2: only its empty loops; 0: both (default).
 * For counting instructions with callgrind, not for timing. */
void lk_set_only(int which);

/* Ticks of the cycle counter per nanosecond of CLOCK_MONOTONIC, over about ms milliseconds. */
double lk_ticks_per_ns(int ms);

/* ---- what the -O builds are called by, through ctypes ---- */
/* Each a row F(return type, name, (parameters)), declared here and nowhere else: the
 * library exports the rows as text (LK_FUNCTIONS, lk_layout.h), and labkit/core/native.py
 * types its calls from that text. */
#define LK_CORE_FUNCTIONS(F)                                                              \
    /* the flags this build was compiled with */                                         \
    F(const char *, lk_cflags, (void))                                                   \
    /* harness.c: lk_pingpong with control over the FP control words the two contexts    \
     * hold: 0 = as they are; 1 = both at the ABI defaults; 2 = main dirtied by an       \
     * inexact division after the other context was made (x86-64: their MXCSRs differ    \
     * in PE). */                                                                        \
    F(int, lk_pingpong_fp, (int kernel, size_t stack_size, int prefault, uint64_t rounds, \
                            int warmup, int repeats, int fpctl_mode, lk_sample *out,      \
                            char *err, size_t errlen))                                    \
    /* copy_stack.c: bytes the copy-stack coroutines of the next ping-pong hold on their  \
     * stacks when they switch, besides their frames (0 by default) */                   \
    F(void, lk_set_stack_in_use, (size_t bytes))                                          \
    /* copy_stack.c: n suspended copy-stack coroutines, each holding stack_in_use bytes,  \
     * kept until lk_copy_hold_release(); for measuring their memory. Returns 0, or -1   \
     * with err filled. */                                                               \
    F(int, lk_copy_hold, (uint64_t n, size_t stack_in_use, uint64_t *saved_bytes,        \
                          char *err, size_t errlen))                                      \
    F(void, lk_copy_hold_release, (void))
LK_DECLARE(LK_CORE_FUNCTIONS)

#endif
