/*
 * switch_aarch64_aapcs.h -- labkit's stackful switch kernels for AArch64, AAPCS64 (Linux ELF, GNU as).
 *
 * C prototype, shared by every kernel in this file:
 *
 *     void lk_swap_<kernel>(void **save_sp, void *load_sp);    x0 = save_sp, x1 = load_sp
 *
 * Stores what the kernel preserves below the current stack pointer, stores sp
 * to *save_sp, loads load_sp (a pointer that an earlier lk_swap_<kernel> or
 * lk_make produced), reloads the same frame and transfers control.
 *
 * Why these registers (AAPCS64, section 6.1 "Machine Registers" and 6.4
 * "Memory and the Stack"):
 *   x19-x28            callee-saved ("a subroutine invocation must preserve the
 *                      contents of the registers r19-r29 and SP").
 *   x29 (fp)           callee-saved, as above; also the frame-record chain.
 *   x30 (lr)           the return address the caller's `bl`/`blr` wrote: not
 *                      callee-saved as such, but it is where control goes back
 *                      to, so it is kept like x86's pushed rip.
 *   sp                 the stack pointer is the context: it is stored, not saved
 *                      in the frame. It must be 16-aligned at every access
 *                      (SCTLR_EL1.SA0, and "SP mod 16 = 0" at public interfaces):
 *                      every frame here is a multiple of 16 bytes.
 *   d8-d15             callee-saved: "registers v8-v15 must be preserved by a
 *                      callee ... only the bottom 64 bits of each value stored
 *                      in v8-v15 need to be preserved". d<n> is that low half.
 *   FPCR               rounding mode, FZ, DN, trap enables: AAPCS64 6.1.3 treats
 *                      them as callee-preserved unless a function's documented
 *                      purpose is to change them, so asm_fpu keeps FPCR (the
 *                      analogue of x86's MXCSR control bits and x87 control word).
 *
 * What is not saved, and why:
 *   x0-x7              argument/result registers: caller-saved.
 *   x8                 indirect-result register: caller-saved.
 *   x9-x15             temporaries: caller-saved.
 *   x16-x17 (ip0/ip1)  intra-procedure-call scratch (veneers/PLT): caller-saved.
 *   x18                platform register; on Linux an ordinary temporary: not
 *                      saved (a shadow call stack would live here: see below).
 *   v0-v7, v16-v31     caller-saved: a C caller has already spilled what it needs.
 *   v8-v15 bits 64-127 only the low 64 bits are callee-saved, so only d8-d15.
 *   FPSR               cumulative exception flags (IOC, DZC, ... QC): caller-saved
 *                      status, like MXCSR's flags; asm_fpu does not keep it.
 *   NZCV               condition flags: caller-saved.
 *   SVE z/p, SME ZA    a base-PCS call (which this is) only promises the d8-d15
 *                      halves; the caller of a base-PCS function saves the rest.
 *
 * Saved frame, at the stored stack pointer (offsets in bytes, growing upwards);
 * asm_fpu keeps asm's frame and adds FPCR above it, so all three share one
 * store and one load sequence (LK_STORE_CALLEE_SAVED, LK_LOAD_CALLEE_SAVED):
 *
 *   asm, asm_ret, asm_fpu        asm_fpu only
 *   0x00 d8     0x50 x21          0xa0 fpcr (8 B: mrs reads 64 bits, upper ones RES0)
 *   0x08 d9     0x58 x22          0xa8 padding (keeps sp 16-aligned)
 *   0x10 d10    0x60 x23          (176 B)
 *   0x18 d11    0x68 x24
 *   0x20 d12    0x70 x25
 *   0x28 d13    0x78 x26
 *   0x30 d14    0x80 x27
 *   0x38 d15    0x88 x28
 *   0x40 x19    0x90 x29 (fp)
 *   0x48 x20    0x98 x30 (lr)
 *   (160 B)
 *
 * Alignment: a C caller enters with sp 16-aligned, and 160 and 176 are
 * multiples of 16, so sp stays 16-aligned at every instruction here. The
 * frame is reserved with one `sub` first and filled with stp below sp only
 * after that, so no store ever lands below the live sp (AArch64 Linux has no
 * red zone; a signal may use everything below sp).
 *
 * How control returns: every kernel but asm_ret reloads lr (x30) and jumps to
 * it with `br x30`, an indirect branch predicted by the branch target buffer
 * (the analogue of x86's pop + jmp); asm_ret ends in `ret`, which also goes to
 * x30 but is predicted by the return-stack predictor, whose top entry is the
 * caller of this swap, not the other context's (notebook 06 measures both).
 *
 * A new context starts in lk_trampoline_aarch64 with x19 = fn, x20 =
 * argument (see lk_arch_make below); the start function must never return.
 *
 * Not handled (none of them is on in labkit's builds): BTI (`br x30` lands on
 * a return site that has no `bti j` landing pad, so a binary built with
 * -mbranch-protection=bti would fault on a BTI core; the swap functions have
 * no `bti c` either), GCS (the guarded control stack would reject the other
 * context's return address), and -fsanitize=shadow-call-stack (x18 would have
 * to be switched per context). Pointer authentication of return addresses
 * (pac-ret) is fine: each function signs and checks its own lr against its own
 * sp, and both come back unchanged.
 *
 * The compiler emits the .note.GNU-stack section for the C file that includes
 * this header; the pushsection at the end says the same for the asm itself.
 */
#ifndef LK_SWITCH_AARCH64_AAPCS_H
#define LK_SWITCH_AARCH64_AAPCS_H

#define LK_ARCH_NAME "aarch64-aapcs64"

/* Every kernel's frame, from sp up: d8-d15, x19-x28, x29, x30 (the table above). The
 * frame is reserved first, so these stores never land below the live sp. */
#define LK_STORE_CALLEE_SAVED                                                     \
    "    stp   d8, d9, [sp, #0x00]\n"   /* low halves of v8-v15: callee-saved */  \
    "    stp   d10, d11, [sp, #0x10]\n" /* callee-saved */                        \
    "    stp   d12, d13, [sp, #0x20]\n" /* callee-saved */                        \
    "    stp   d14, d15, [sp, #0x30]\n" /* callee-saved */                        \
    "    stp   x19, x20, [sp, #0x40]\n" /* callee-saved */                        \
    "    stp   x21, x22, [sp, #0x50]\n" /* callee-saved */                        \
    "    stp   x23, x24, [sp, #0x60]\n" /* callee-saved */                        \
    "    stp   x25, x26, [sp, #0x70]\n" /* callee-saved */                        \
    "    stp   x27, x28, [sp, #0x80]\n" /* callee-saved */                        \
    "    stp   x29, x30, [sp, #0x90]\n" /* frame pointer and return address */
#define LK_LOAD_CALLEE_SAVED                                                      \
    "    ldp   d8, d9, [sp, #0x00]\n"   /* the other context's registers */       \
    "    ldp   d10, d11, [sp, #0x10]\n"                                           \
    "    ldp   d12, d13, [sp, #0x20]\n"                                           \
    "    ldp   d14, d15, [sp, #0x30]\n"                                           \
    "    ldp   x19, x20, [sp, #0x40]\n"                                           \
    "    ldp   x21, x22, [sp, #0x50]\n"                                           \
    "    ldp   x23, x24, [sp, #0x60]\n"                                           \
    "    ldp   x25, x26, [sp, #0x70]\n"                                           \
    "    ldp   x27, x28, [sp, #0x80]\n"                                           \
    "    ldp   x29, x30, [sp, #0x90]\n" /* its frame pointer and return address */
/* A global function private to the extension: .hidden keeps calls off the PLT. */
#define LK_FUNCTION(name) \
    ".globl " name "\n.hidden " name "\n.type " name ",%function\n.p2align 4\n" name ":\n"
#define LK_END(name) ".size " name ",.-" name "\n"

/* The switches' code, emitted by the one file that defines LK_SWITCH_CODE (stack.c);
 * every other file that includes this one gets the declarations and helpers below. */
#ifdef LK_SWITCH_CODE
__asm__(
    ".text\n"

    /* ---- asm: callee-saved x19-x30, d8-d15 + sp, ends with br to the restored lr ---- */
    LK_FUNCTION("lk_swap_asm")
    "    sub   sp, sp, #160\n"          /* room for the frame; sp stays 16-aligned */
    LK_STORE_CALLEE_SAVED
    "    mov   x9, sp\n"                /* str cannot take sp as its data register */
    "    str   x9, [x0]\n"              /* *save_sp = sp: this context is now stored */
    "    mov   sp, x1\n"                /* sp = load_sp: we are on the other stack */
    LK_LOAD_CALLEE_SAVED
    "    add   sp, sp, #160\n"          /* pop the frame */
    "    br    x30\n"                   /* indirect branch: predicted by the BTB */
    LK_END("lk_swap_asm")

    /* ---- asm_ret: same frame as asm, ends with ret ---- */
    LK_FUNCTION("lk_swap_asm_ret")
    "    sub   sp, sp, #160\n"          /* room for the frame */
    LK_STORE_CALLEE_SAVED
    "    mov   x9, sp\n"                /* sp into a GPR to store it */
    "    str   x9, [x0]\n"              /* store this context */
    "    mov   sp, x1\n"                /* switch stacks */
    LK_LOAD_CALLEE_SAVED
    "    add   sp, sp, #160\n"          /* pop the frame */
    "    ret\n"                         /* to x30; the return-stack predictor guesses our caller: wrong */
    LK_END("lk_swap_asm_ret")

    /* ---- asm_fpu: asm + FPCR (rounding mode, FZ, DN, trap enables) ---- */
    LK_FUNCTION("lk_swap_asm_fpu")
    "    sub   sp, sp, #176\n"          /* asm's frame + 16 B for FPCR; sp stays 16-aligned */
    LK_STORE_CALLEE_SAVED
    "    mrs   x9, fpcr\n"              /* FPCR: its control bits are callee-preserved */
    "    str   x9, [sp, #0xa0]\n"       /* above the registers (0xa8 is padding) */
    "    mov   x10, sp\n"               /* sp into a GPR to store it */
    "    str   x10, [x0]\n"             /* store this context */
    "    mov   sp, x1\n"                /* switch stacks */
    "    ldr   x9, [sp, #0xa0]\n"       /* the other context's FPCR */
    "    msr   fpcr, x9\n"              /* install it (FPSR flags are left alone) */
    LK_LOAD_CALLEE_SAVED
    "    add   sp, sp, #176\n"          /* pop the frame */
    "    br    x30\n"                   /* indirect branch, as asm */
    LK_END("lk_swap_asm_fpu")

    /* ---- a new context, resumed the first time ---- */
    LK_FUNCTION("lk_trampoline_aarch64")
    "    mov   x0, x20\n"               /* argument, placed in the x20 slot by lk_arch_make */
    "    blr   x19\n"                   /* fn, from the x19 slot; sp is 16-aligned here */
    "    brk   #0\n"                    /* a start function returned: crash loudly (SIGTRAP) */
    LK_END("lk_trampoline_aarch64")

    /* ---- register-survival probe for the tests ---- */
    /* void lk_regprobe(swap_fn fn, void **save, void *load, const uint64_t in[19], uint64_t out[19])
     * loads in[] into x19-x28, x29, d8-d15 (raw 64-bit patterns), calls
     * fn(save, load), and writes those 19 registers as they are after the
     * switch came back into out[]. */
    LK_FUNCTION("lk_regprobe")
    "    sub   sp, sp, #176\n"          /* 160 B for our caller's registers + 16 B for out */
    LK_STORE_CALLEE_SAVED               /* our own caller's: lr too, blr below overwrites it */
    "    str   x4, [sp, #0xa0]\n"       /* out[]: x4 is clobbered by the switch */
    "    mov   x9, x0\n"                /* fn */
    "    mov   x0, x1\n"                /* save */
    "    mov   x1, x2\n"                /* load */
    "    ldp   x19, x20, [x3, #0]\n"    /* sentinels into every callee-saved register */
    "    ldp   x21, x22, [x3, #16]\n"   /* ... */
    "    ldp   x23, x24, [x3, #32]\n"   /* ... */
    "    ldp   x25, x26, [x3, #48]\n"   /* ... */
    "    ldp   x27, x28, [x3, #64]\n"   /* ... */
    "    ldr   x29, [x3, #80]\n"        /* fp too: no frame walk happens meanwhile */
    "    ldp   d8, d9, [x3, #88]\n"     /* raw 64-bit loads: no FP conversion */
    "    ldp   d10, d11, [x3, #104]\n"  /* ... */
    "    ldp   d12, d13, [x3, #120]\n"  /* ... */
    "    ldp   d14, d15, [x3, #136]\n"  /* ... */
    "    blr   x9\n"                    /* switch away and, later, back */
    "    ldr   x4, [sp, #0xa0]\n"       /* out[], from our stack */
    "    stp   x19, x20, [x4, #0]\n"    /* what survived */
    "    stp   x21, x22, [x4, #16]\n"   /* ... */
    "    stp   x23, x24, [x4, #32]\n"   /* ... */
    "    stp   x25, x26, [x4, #48]\n"   /* ... */
    "    stp   x27, x28, [x4, #64]\n"   /* ... */
    "    str   x29, [x4, #80]\n"        /* ... */
    "    stp   d8, d9, [x4, #88]\n"     /* raw 64-bit stores */
    "    stp   d10, d11, [x4, #104]\n"  /* ... */
    "    stp   d12, d13, [x4, #120]\n"  /* ... */
    "    stp   d14, d15, [x4, #136]\n"  /* ... */
    LK_LOAD_CALLEE_SAVED                /* our caller's registers back */
    "    add   sp, sp, #176\n"          /* pop */
    "    ret\n"                         /* back to our caller */
    LK_END("lk_regprobe")

    /* ---- an empty function, for the call-cost baseline ---- */
    LK_FUNCTION("lk_noop")
    "    ret\n"                         /* nothing to do */
    LK_END("lk_noop")

    ".pushsection .note.GNU-stack,\"\",@progbits\n"
    ".popsection\n");
#endif

#include <stdint.h>
#include <string.h>

/* Registers that lk_regprobe fills with sentinels: x19-x28, x29, d8-d15. */
#define LK_NREGPROBE 19
static const char *const lk_regprobe_names[LK_NREGPROBE] = {
    "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29",
    "d8",  "d9",  "d10", "d11", "d12", "d13", "d14", "d15",
};

/* Nothing to ask the CPU: every kernel here uses base AArch64 only. */
/* x86-64's XINUSE has no AArch64 counterpart here. */
static inline int64_t lk_arch_xinuse(void) { return -1; }

static inline int lk_arch_init(void) { return 1; }

/* No XCR0 or xsave area on AArch64, and no CPUID leaf naming a hypervisor. */
static inline void lk_arch_xstate(int64_t out[3]) { out[0] = out[1] = out[2] = -1; }
static inline void lk_arch_hypervisor(char out[13]) { memset(out, 0, 13); }

/* Bytes each kernel keeps on a suspended context's stack (for minimum stack sizes). */
static inline size_t lk_arch_frame_bytes(int kernel) {
    switch (kernel) {
    case LK_ASM: case LK_ASM_RET: return 160;
    case LK_ASM_FPU: return 176;
    default: return 0;
    }
}

extern void lk_trampoline_aarch64(void);

/* Lay out a new context's first frame below top (16-aligned) so that the
 * kernel's restore path lands in the trampoline with x19 = fn, x20 = arg.
 * The d8-d15 slots start as zero; FPCR (asm_fpu) starts as a copy of the
 * creator's, as a new thread's does. */
static inline void *lk_arch_make(int kernel, char *top, void (*fn)(void *), void *arg) {
    if (kernel != LK_ASM && kernel != LK_ASM_RET && kernel != LK_ASM_FPU) return 0;
    size_t bytes = kernel == LK_ASM_FPU ? 176 : 160;
    uint64_t *f = (uint64_t *)(((uintptr_t)top & ~(uintptr_t)15) - bytes);
    memset(f, 0, bytes);                      /* d8-d15, x21-x28, padding: zero */
    f[8] = (uint64_t)(uintptr_t)fn;        /* x19 (0x40) */
    f[9] = (uint64_t)(uintptr_t)arg;          /* x20 (0x48) */
    f[18] = 0;                                /* x29 (0x90): ends frame-pointer walks */
    f[19] = (uint64_t)(uintptr_t)&lk_trampoline_aarch64; /* x30 (0x98): where br/ret goes */
    if (kernel == LK_ASM_FPU) {
        uint64_t fpcr;
        __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
        f[20] = fpcr;                         /* fpcr (0xa0): the creator's, as a thread's */
    }
    return f;
}

/* Floating-point control state: FPCR; the second word is unused here. */
#define LK_FPCTL_NAMES {"fpcr", "unused"}
/* FPCR's RMode (bits 23:22), FZ (24) and DN (25): control bits, callee-preserved. */
#define LK_FPCTL_MASK0 ((3u << 22) | (1u << 24) | (1u << 25))
#define LK_FPCTL_MASK1 0u
/* Values the tests set: round-toward-zero in main, round-down in the other context. */
#define LK_FPCTL_MAIN0 (3u << 22)  /* RMode = RZ */
#define LK_FPCTL_MAIN1 0u
#define LK_FPCTL_CO0 (2u << 22)    /* RMode = RM */
#define LK_FPCTL_CO1 0u
#define LK_FPCTL_DEFAULT0 0u       /* Linux starts threads with FPCR = 0: round to nearest */
#define LK_FPCTL_DEFAULT1 0u

static inline void lk_fpctl_get(uint32_t v[2]) {
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    v[0] = (uint32_t)fpcr; v[1] = 0;
}
static inline void lk_fpctl_set(const uint32_t v[2]) {
    uint64_t fpcr = v[0];
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
}

#endif /* LK_SWITCH_AARCH64_AAPCS_H */
