/*
 * switch_x86_64_sysv.h -- labkit's stackful switch kernels for x86-64, System V ABI (ELF, GNU as).
 *
 * C prototype, shared by every kernel in this file:
 *
 *     void lk_swap_<kernel>(void **save_sp, void *load_sp);
 *
 * Pushes what the kernel preserves onto the current stack, stores the stack
 * pointer to *save_sp, loads load_sp (a pointer that an earlier lk_swap_<kernel>
 * or lk_make produced), pops the same frame and transfers control.
 *
 * Why these registers (System V AMD64 ABI, section 3.2.1 and 3.2.3):
 *   rbx, rbp, r12-r15  callee-saved: the code we return into expects them intact.
 *   rsp                the stack pointer is the context: it is stored, not pushed.
 *   rip                the return address the `call` pushed; popped and jumped to.
 *   MXCSR control bits callee-saved ("the control bits of the MXCSR register are
 *   x87 control word   callee-saved, while the status bits are caller-saved"; the
 *                      x87 control word likewise): asm_fpu and above keep them.
 *   xmm0-15, x87 stack caller-saved: a C caller has already spilled what it needs,
 *   and k0-7, zmm16-31 so asm/asm_fpu do not save them. asm_fxsave/asm_xsave do,
 *                      needlessly, to measure what that costs (claim C002.3).
 *   rax..r11 (others)  caller-saved or argument registers: not saved.
 *   red zone           unaffected: we only ever push below rsp inside a call.
 *   direction flag     the ABI requires DF=0 at calls and returns: nothing to do.
 *
 * Saved frame, at the stored stack pointer (offsets in bytes, growing upwards):
 *
 *   asm, asm_ret        asm_fpu              asm_fxsave           asm_xsave
 *   0x00 r15            0x00 mxcsr (4 B)     0x000 fxsave area    0x0000 xsave area (64-aligned,
 *   0x08 r14            0x04 x87 cw (2 B)          (512 B) +8 pad        lk_xsave_area_size B)
 *   0x10 r13            0x08 r15             0x208 r15            size   -> pointer to r15 slot
 *   0x18 r12            0x10 r14             0x210 r14            then the asm frame (r15 ... rip)
 *   0x20 rbx            0x18 r13             0x218 r13
 *   0x28 rbp            0x20 r12             0x220 r12
 *   0x30 rip            0x28 rbx             0x228 rbx
 *                       0x30 rbp             0x230 rbp
 *                       0x38 rip             0x238 rip
 *
 * Alignment: a C caller enters with rsp = 8 (mod 16); six pushes keep that,
 * so an 8-byte (fpu) or 520-byte (fxsave) reservation makes rsp 16-aligned,
 * which fxsave64 needs. xsave64 needs 64-byte alignment: it is made by `and`.
 *
 * How control returns: every kernel but asm_ret pops the return address and
 * jumps to it (as Boost.Context's jump_fcontext does); asm_ret ends in `ret`,
 * whose target the return-stack predictor did not push (notebook 06 measures both).
 *
 * libco_design is another design, libco's (WeChat), written here from its description:
 * the context is a struct of 14 slots (lk_regs_ctx), not the stack; save and load point at
 * two of them. It stores every register below, caller-saved ones (rcx rdx rsi rdi r8 r9)
 * included, which the ABI does not ask for; keeps neither MXCSR nor the x87 control word
 * (a rounding mode set in one context leaks into the other: tests/test_kernel_correctness);
 * and returns by pushing the other side's return address and `ret`, which the
 * return-stack predictor gets wrong as it does asm_ret's.
 *
 *   lk_regs_ctx slot: 0x00 rsp (the caller's, past the return address)  0x08 return address
 *   0x10 rbx  0x18 rcx  0x20 rdx  0x28 rsi  0x30 rdi  0x38 rbp  0x40 r8  0x48 r9
 *   0x50 r12  0x58 r13  0x60 r14  0x68 r15     (112 B; a new context's sits at its stack's top)
 *
 * A new context starts in lk_trampoline_x86_64 with r12 = fn, r13 = argument
 * (see lk_arch_make below, which lk_make calls); the start function must never return.
 *
 * The compiler emits the .note.GNU-stack section for the C file that includes
 * this header; the pushsection at the end says the same for the asm itself.
 */
#ifndef LK_SWITCH_X86_64_SYSV_H
#define LK_SWITCH_X86_64_SYSV_H

#define LK_ARCH_NAME "x86_64-sysv"

/* Every kernel's entry and exit: the six callee-saved registers, pushed in this order and
 * popped in the reverse one (the frame tables above list them from the stack pointer up). */
#define LK_PUSH_CALLEE_SAVED                                                     \
    "    pushq %rbp\n"                  /* callee-saved (frame pointer) */        \
    "    pushq %rbx\n"                  /* callee-saved */                        \
    "    pushq %r12\n"                  /* callee-saved */                        \
    "    pushq %r13\n"                  /* callee-saved */                        \
    "    pushq %r14\n"                  /* callee-saved */                        \
    "    pushq %r15\n"                  /* callee-saved */
#define LK_POP_CALLEE_SAVED                                                      \
    "    popq  %r15\n"                  /* the other context's registers */       \
    "    popq  %r14\n"                                                            \
    "    popq  %r13\n"                                                            \
    "    popq  %r12\n"                                                            \
    "    popq  %rbx\n"                                                            \
    "    popq  %rbp\n"
/* A global function private to the extension: .hidden keeps calls off the PLT. */
#define LK_FUNCTION(name) \
    ".globl " name "\n.hidden " name "\n.type " name ",@function\n.p2align 4\n" name ":\n"
#define LK_END(name) ".size " name ",.-" name "\n"

/* The switches' code, emitted by the one file that defines LK_SWITCH_CODE (stack.c);
 * every other file that includes this one gets the declarations and helpers below. */
#ifdef LK_SWITCH_CODE
__asm__(
    ".text\n"

    /* ---- asm: callee-saved GPRs + rsp, ends with pop + indirect jmp ---- */
    LK_FUNCTION("lk_swap_asm")
    LK_PUSH_CALLEE_SAVED
    "    movq  %rsp, (%rdi)\n"          /* *save_sp = rsp: this context is now stored */
    "    movq  %rsi, %rsp\n"            /* rsp = load_sp: we are on the other stack */
    LK_POP_CALLEE_SAVED
    "    popq  %r8\n"                   /* its return address (r8 is scratch) */
    "    jmpq  *%r8\n"                  /* indirect jump: predicted by the BTB */
    LK_END("lk_swap_asm")

    /* ---- asm_ret: same frame as asm, ends with ret ---- */
    LK_FUNCTION("lk_swap_asm_ret")
    LK_PUSH_CALLEE_SAVED
    "    movq  %rsp, (%rdi)\n"          /* store this context */
    "    movq  %rsi, %rsp\n"            /* switch stacks */
    LK_POP_CALLEE_SAVED
    "    ret\n"                         /* the return-stack buffer predicts our caller: wrong */
    LK_END("lk_swap_asm_ret")

    /* ---- asm_fpu: asm + MXCSR + x87 control word (what jump_fcontext keeps) ---- */
    LK_FUNCTION("lk_swap_asm_fpu")
    LK_PUSH_CALLEE_SAVED
    "    leaq  -8(%rsp), %rsp\n"        /* room for MXCSR + x87 CW; rsp now 16-aligned */
    "    stmxcsr (%rsp)\n"              /* MXCSR: control bits are callee-saved */
    "    fnstcw  4(%rsp)\n"             /* x87 control word: callee-saved */
    "    movq  %rsp, (%rdi)\n"          /* store this context */
    "    movq  %rsi, %rsp\n"            /* switch stacks */
    "    ldmxcsr (%rsp)\n"              /* the other context's MXCSR */
    "    fldcw   4(%rsp)\n"             /* and its x87 control word */
    "    leaq  8(%rsp), %rsp\n"
    LK_POP_CALLEE_SAVED
    "    popq  %r8\n"                   /* return address */
    "    jmpq  *%r8\n"
    LK_END("lk_swap_asm_fpu")

    /* ---- asm_fxsave: asm + the whole legacy FP/SSE state (512 B, fxsave64) ---- */
    LK_FUNCTION("lk_swap_asm_fxsave")
    LK_PUSH_CALLEE_SAVED
    "    leaq  -520(%rsp), %rsp\n"      /* 512 B area + 8 B pad: rsp 16-aligned */
    "    fxsave64 (%rsp)\n"             /* x87 + MXCSR + xmm0-15: more than the ABI asks */
    "    movq  %rsp, (%rdi)\n"          /* store this context */
    "    movq  %rsi, %rsp\n"            /* switch stacks */
    "    fxrstor64 (%rsp)\n"            /* the other context's FP/SSE state */
    "    leaq  520(%rsp), %rsp\n"
    LK_POP_CALLEE_SAVED
    "    popq  %r8\n"                   /* return address */
    "    jmpq  *%r8\n"
    LK_END("lk_swap_asm_fxsave")

    /* ---- asm_xsave: asm + every state component enabled in XCR0 (xsave64) ---- */
    LK_FUNCTION("lk_swap_asm_xsave")
    LK_PUSH_CALLEE_SAVED
    "    movq  %rsp, %r9\n"             /* r9 = address of the r15 slot */
    "    subq  lk_xsave_area_size(%rip), %rsp\n" /* room for the area (size from CPUID) */
    "    subq  $64, %rsp\n"             /* and for the back pointer */
    "    andq  $-64, %rsp\n"            /* xsave64 needs 64-byte alignment */
    "    movq  lk_xsave_area_size(%rip), %r10\n"
    "    movq  %r9, (%rsp,%r10)\n"      /* back pointer just above the area */
    "    xorl  %eax, %eax\n"             /* xsave64 writes only the XSTATE_BV bits */
    "    movq  %rax, 512(%rsp)\n"        /* that XCR0 enables and none of the rest of */
    "    movq  %rax, 520(%rsp)\n"        /* the 64-byte header, and xrstor64 faults */
    "    movq  %rax, 528(%rsp)\n"        /* unless the rest is zero: the stack holds */
    "    movq  %rax, 536(%rsp)\n"        /* garbage there, so clear all of it */
    "    movq  %rax, 544(%rsp)\n"
    "    movq  %rax, 552(%rsp)\n"
    "    movq  %rax, 560(%rsp)\n"
    "    movq  %rax, 568(%rsp)\n"
    "    movl  $-1, %eax\n"             /* requested-feature bitmap: everything */
    "    movl  $-1, %edx\n"             /* that XCR0 enables */
    "    xsave64 (%rsp)\n"              /* x87, SSE, AVX, AVX-512, ...: all of it */
    "    movq  %rsp, (%rdi)\n"          /* store this context */
    "    movq  %rsi, %rsp\n"            /* switch stacks */
    "    xrstor64 (%rsp)\n"             /* eax/edx still all ones */
    "    movq  lk_xsave_area_size(%rip), %r10\n"
    "    movq  (%rsp,%r10), %rsp\n"     /* follow the back pointer to the GPR frame */
    LK_POP_CALLEE_SAVED
    "    popq  %r8\n"                   /* return address */
    "    jmpq  *%r8\n"
    LK_END("lk_swap_asm_xsave")

    /* ---- libco_design: 14 registers into a struct, push + ret ---- */
    LK_FUNCTION("lk_swap_libco_design")
    "    movq  (%rsp), %rax\n"           /* our return address (rax is scratch) */
    "    leaq  8(%rsp), %r10\n"          /* rsp as our caller sees it after the return */
    "    movq  %r10, 0x00(%rdi)\n"       /* the context is the struct at save (rdi) */
    "    movq  %rax, 0x08(%rdi)\n"
    "    movq  %rbx, 0x10(%rdi)\n"       /* callee-saved */
    "    movq  %rcx, 0x18(%rdi)\n"       /* caller-saved: stored anyway, as libco does */
    "    movq  %rdx, 0x20(%rdi)\n"       /* caller-saved */
    "    movq  %rsi, 0x28(%rdi)\n"       /* caller-saved */
    "    movq  %rdi, 0x30(%rdi)\n"       /* caller-saved */
    "    movq  %rbp, 0x38(%rdi)\n"       /* callee-saved */
    "    movq  %r8,  0x40(%rdi)\n"       /* caller-saved */
    "    movq  %r9,  0x48(%rdi)\n"       /* caller-saved */
    "    movq  %r12, 0x50(%rdi)\n"       /* callee-saved */
    "    movq  %r13, 0x58(%rdi)\n"       /* callee-saved */
    "    movq  %r14, 0x60(%rdi)\n"       /* callee-saved */
    "    movq  %r15, 0x68(%rdi)\n"       /* callee-saved; no MXCSR, no x87 CW */
    "    movq  0x00(%rsi), %rsp\n"       /* the other context's stack */
    "    movq  0x10(%rsi), %rbx\n"       /* and its registers, from the struct at load (rsi) */
    "    movq  0x18(%rsi), %rcx\n"
    "    movq  0x20(%rsi), %rdx\n"
    "    movq  0x30(%rsi), %rdi\n"
    "    movq  0x38(%rsi), %rbp\n"
    "    movq  0x40(%rsi), %r8\n"
    "    movq  0x48(%rsi), %r9\n"
    "    movq  0x50(%rsi), %r12\n"
    "    movq  0x58(%rsi), %r13\n"
    "    movq  0x60(%rsi), %r14\n"
    "    movq  0x68(%rsi), %r15\n"
    "    pushq 0x08(%rsi)\n"             /* its return address back onto its stack */
    "    movq  0x28(%rsi), %rsi\n"       /* rsi last: it held the struct's address */
    "    ret\n"                          /* the return-stack buffer predicts our caller: wrong */
    LK_END("lk_swap_libco_design")

    /* ---- a new context, resumed the first time ---- */
    LK_FUNCTION("lk_trampoline_x86_64")
    "    movq  %r13, %rdi\n"            /* argument, placed in the r13 slot by lk_make */
    "    callq *%r12\n"                 /* fn, from the r12 slot; rsp is 16-aligned here */
    "    ud2\n"                         /* a start function returned: crash loudly */
    LK_END("lk_trampoline_x86_64")

    /* ---- register-survival probe for the tests ---- */
    /* void lk_regprobe(swap_fn fn, void **save, void *load, const uint64_t in[6], uint64_t out[6])
     * loads in[] into rbx, rbp, r12-r15, calls fn(save, load), and writes the six
     * registers as they are after the switch came back into out[]. */
    LK_FUNCTION("lk_regprobe")
    LK_PUSH_CALLEE_SAVED
    "    pushq %r8\n"                   /* out[]: r8 is clobbered by the switch; rsp now 16-aligned */
    "    movq  %rdi, %rax\n"            /* fn */
    "    movq  %rsi, %rdi\n"            /* save */
    "    movq  %rdx, %rsi\n"            /* load */
    "    movq  0(%rcx), %rbx\n"         /* sentinels into every callee-saved register */
    "    movq  8(%rcx), %rbp\n"
    "    movq  16(%rcx), %r12\n"
    "    movq  24(%rcx), %r13\n"
    "    movq  32(%rcx), %r14\n"
    "    movq  40(%rcx), %r15\n"
    "    callq *%rax\n"                 /* switch away and, later, back */
    "    popq  %r8\n"
    "    movq  %rbx, 0(%r8)\n"          /* what survived */
    "    movq  %rbp, 8(%r8)\n"
    "    movq  %r12, 16(%r8)\n"
    "    movq  %r13, 24(%r8)\n"
    "    movq  %r14, 32(%r8)\n"
    "    movq  %r15, 40(%r8)\n"
    LK_POP_CALLEE_SAVED
    "    ret\n"
    LK_END("lk_regprobe")

    /* ---- an empty function, for the call-cost baseline ---- */
    LK_FUNCTION("lk_noop")
    "    ret\n"
    LK_END("lk_noop")

    ".pushsection .note.GNU-stack,\"\",@progbits\n"
    ".popsection\n");
#endif

#include <stdint.h>
#include <string.h>

/* Registers that lk_regprobe fills with sentinels: rbx, rbp, r12-r15. */
#define LK_NREGPROBE 6
static const char *const lk_regprobe_names[LK_NREGPROBE] = {"rbx", "rbp", "r12", "r13", "r14", "r15"};

/* Bytes that xsave64 writes for the components XCR0 enables, rounded up to 64:
 * set once by lk_arch_init() from CPUID leaf 0xD, read by lk_swap_asm_xsave. */
#ifdef LK_SWITCH_CODE
__attribute__((visibility("hidden"))) uint64_t lk_xsave_area_size = 0;
#else
extern __attribute__((visibility("hidden"))) uint64_t lk_xsave_area_size;
#endif

static inline void lk_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

/* 1 when the CPU and the OS let us use xsave64/xrstor64 (CPUID.1:ECX.OSXSAVE). */
static inline int lk_arch_init(void) {
    uint32_t r[4];
    lk_cpuid(1, 0, r);
    if (!(r[2] & (1u << 27))) return 0;
    lk_cpuid(0xD, 0, r);
    lk_xsave_area_size = ((uint64_t)r[1] + 63) & ~(uint64_t)63;
    return 1;
}

/* XINUSE (xgetbv with ecx = 1): which state components are not in their initial
 * configuration right now. Saving the FP state costs more when, say, zmm16-31 are in use
 * (glibc's string functions use them on AVX-512 machines). -1 where not supported. */
static inline int64_t lk_arch_xinuse(void) {
    uint32_t r[4], lo, hi;
    lk_cpuid(1, 0, r);
    if (!(r[2] & (1u << 27))) return -1;
    lk_cpuid(0xD, 1, r);
    if (!(r[0] & (1u << 2))) return -1;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    return (int64_t)(((uint64_t)hi << 32) | lo);
}

/* The FP/SIMD state the OS makes every switch save (XCR0, xgetbv with ecx = 0) and the
 * xsave area it takes (CPUID leaf 0xD: EBX for XCR0's components, ECX for all the CPU
 * supports); -1 each where xsave is not enabled. */
static inline void lk_arch_xstate(int64_t out[3]) {
    uint32_t r[4], lo, hi;
    out[0] = out[1] = out[2] = -1;
    lk_cpuid(1, 0, r);
    if (!(r[2] & (1u << 27))) return;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    out[0] = (int64_t)(((uint64_t)hi << 32) | lo);
    lk_cpuid(0xD, 0, r);
    out[1] = r[1];
    out[2] = r[2];
}

/* The hypervisor's CPUID signature (leaf 0x40000000: "KVMKVMKVM", "Microsoft Hv"...),
 * or "" when CPUID.1:ECX.hypervisor is clear (bare metal, or a hypervisor that hides). */
static inline void lk_arch_hypervisor(char out[13]) {
    uint32_t r[4];
    memset(out, 0, 13);
    lk_cpuid(1, 0, r);
    if (!(r[2] & (1u << 31))) return;
    lk_cpuid(0x40000000u, 0, r);
    memcpy(out, &r[1], 4);
    memcpy(out + 4, &r[2], 4);
    memcpy(out + 8, &r[3], 4);
}

/* Bytes each kernel keeps on a suspended context's stack (for minimum stack sizes). */
static inline size_t lk_arch_frame_bytes(int kernel) {
    switch (kernel) {
    case LK_ASM: case LK_ASM_RET: return 56;
    case LK_ASM_FPU: return 64;
    case LK_ASM_FXSAVE: return 576;
    case LK_ASM_XSAVE: return 56 + 64 + 64 + (size_t)lk_xsave_area_size;
    case LK_LIBCO_DESIGN: return sizeof(lk_regs_ctx) + 16 + 64;  /* the struct, aligned, and a gap */
    default: return 0;
    }
}

extern void lk_trampoline_x86_64(void);

/* Lay out a new context's first frame below top (16-aligned) so that the
 * kernel's restore path lands in the trampoline with r12 = fn, r13 = arg.
 * FP state starts as a copy of the creator's, as a new thread's does. */
static inline void *lk_arch_make(int kernel, char *top, void (*fn)(void *), void *arg) {
    if (kernel == LK_LIBCO_DESIGN) {
        /* The struct at the top; the stack starts 16 bytes below it, 16-aligned, so the
         * trampoline's call is aligned after the push + ret. */
        lk_regs_ctx *c = (lk_regs_ctx *)(((uintptr_t)top - sizeof(lk_regs_ctx)) & ~(uintptr_t)63);
        memset(c, 0, sizeof *c);
        c->slot[0] = (uint64_t)(uintptr_t)c - 16;                       /* rsp */
        c->slot[1] = (uint64_t)(uintptr_t)&lk_trampoline_x86_64;       /* return address */
        c->slot[10] = (uint64_t)(uintptr_t)fn;                      /* r12 */
        c->slot[11] = (uint64_t)(uintptr_t)arg;                        /* r13 */
        return c;
    }
    uint64_t *gpr = (uint64_t *)(((uintptr_t)top & ~(uintptr_t)15) - 56);
    gpr[0] = 0;                               /* r15 */
    gpr[1] = 0;                               /* r14 */
    gpr[2] = (uint64_t)(uintptr_t)arg;        /* r13 */
    gpr[3] = (uint64_t)(uintptr_t)fn;      /* r12 */
    gpr[4] = 0;                               /* rbx */
    gpr[5] = 0;                               /* rbp: ends frame-pointer walks */
    gpr[6] = (uint64_t)(uintptr_t)&lk_trampoline_x86_64; /* rip */
    char *sp = (char *)gpr;
    switch (kernel) {
    case LK_ASM: case LK_ASM_RET:
        return sp;
    case LK_ASM_FPU:
        sp -= 8;
        __asm__ volatile("stmxcsr (%0)\n\tfnstcw 4(%0)" : : "r"(sp) : "memory");
        return sp;
    case LK_ASM_FXSAVE:
        sp -= 520;
        __asm__ volatile("fxsave64 (%0)" : : "r"(sp) : "memory");
        return sp;
    case LK_ASM_XSAVE: {
        char *area = (char *)(((uintptr_t)sp - lk_xsave_area_size - 64) & ~(uintptr_t)63);
        memset(area, 0, lk_xsave_area_size);  /* a clean header for xrstor64 */
        *(uint64_t *)(area + lk_xsave_area_size) = (uint64_t)(uintptr_t)sp;
        __asm__ volatile("xsave64 (%0)" : : "r"(area), "a"(-1), "d"(-1) : "memory");
        return area;
    }
    default:
        return 0;
    }
}

/* Floating-point control state: MXCSR and the x87 control word. */
#define LK_FPCTL_NAMES {"mxcsr", "x87_cw"}
#define LK_FPCTL_MASK0 0xFFC0u   /* MXCSR without the sticky exception flags (caller-saved) */
#define LK_FPCTL_MASK1 0xFFFFu
/* Values the tests set: round-toward-zero in main, round-down in the other context. */
#define LK_FPCTL_MAIN0 0x7F80u
#define LK_FPCTL_MAIN1 0x0F7Fu
#define LK_FPCTL_CO0 0x3F80u
#define LK_FPCTL_CO1 0x077Fu
#define LK_FPCTL_DEFAULT0 0x1F80u
#define LK_FPCTL_DEFAULT1 0x037Fu

static inline void lk_fpctl_get(uint32_t v[2]) {
    uint32_t mx; uint16_t cw;
    __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mx), "=m"(cw));
    v[0] = mx; v[1] = cw;
}
static inline void lk_fpctl_set(const uint32_t v[2]) {
    uint32_t mx = v[0]; uint16_t cw = (uint16_t)v[1];
    __asm__ volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(mx), "m"(cw));
}

#endif /* LK_SWITCH_X86_64_SYSV_H */
