/* kernels.c -- the kernel table: names, properties, availability, frame sizes and the switch
 * of each kernel, and the CPU's FP and vector state. Above the stacks (stack.c) and the copy
 * stacks (copy_stack.c), whose switch lk_swap_of hands out. */
#define _GNU_SOURCE
#include "labkit_core.h"

#include <ucontext.h>

#include "switch_platform.h"

#ifndef LK_CFLAGS
#define LK_CFLAGS "unknown"
#endif

#define LK_NAME(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) #name,
static const char *const names[LK_NKERNELS] = {LK_KERNELS(LK_NAME)};
#define LK_STACKFUL(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) STACKFUL,
static const int stackful[LK_NKERNELS] = {LK_KERNELS(LK_STACKFUL)};
#define LK_KEEPS_FP(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) KEEPS_FP,
static const int keeps_fp[LK_NKERNELS] = {LK_KERNELS(LK_KEEPS_FP)};
/* Why not, where the switch file has no such kernel; 0 where it has. */
#define LK_NOT_HERE(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) LK_HERE_##ARCH ? 0 : WHY_NOT,
static const char *const not_here[LK_NKERNELS] = {LK_KERNELS(LK_NOT_HERE)};
#define LK_TABLE_TEXT(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    #name " handle=" #HANDLE " stackful=" #STACKFUL " keeps_fp_control=" #KEEPS_FP ";"

const char *lk_kernel_table(void) { return LK_KERNELS(LK_TABLE_TEXT); }
const char *lk_kernel_name(int k) { return (k >= 0 && k < LK_NKERNELS) ? names[k] : "?"; }
enum lk_handle lk_kernel_handle(int k) { return lk_handle_of(k); }
const char *lk_arch_name(void) { return LK_ARCH_NAME; }
const char *lk_compiler(void) { return "gcc-compatible " __VERSION__; }
const char *lk_cflags(void) { return LK_CFLAGS; }
int lk_kernel_is_stackful(int k) { return k >= 0 && k < LK_NKERNELS && stackful[k]; }
int lk_kernel_keeps_fp_control(int k) { return k >= 0 && k < LK_NKERNELS && keeps_fp[k]; }

static int arch_state = -1; /* -1 not asked yet; else lk_arch_init()'s answer */

int lk_kernel_available(int k, const char **why) {
    if (arch_state < 0) arch_state = lk_arch_init();
    *why = "";
    if (k < 0 || k >= LK_NKERNELS) {
        *why = "unknown kernel";
        return 0;
    }
    if (not_here[k]) {
        *why = not_here[k];
        return 0;
    }
    if (k == LK_ASM_XSAVE && !arch_state) {
        *why = "the CPU or the OS does not enable xsave (CPUID.1:ECX.OSXSAVE = 0)";
        return 0;
    }
    return 1;
}

size_t lk_kernel_frame_bytes(int k) {
    const char *why;
    if (!lk_kernel_available(k, &why)) return 0;
    /* make_ucontext puts the ucontext_t, 64-byte aligned, at the top of its own stack. */
    if (k == LK_UCONTEXT) return sizeof(ucontext_t) + 64;
    /* On the run stack: asm_fpu's frame (the used bytes above it come and go). */
    if (k == LK_COPY_STACK) return lk_arch_frame_bytes(LK_ASM_FPU);
    return lk_arch_frame_bytes(k);
}

/* ucontext's swapcontext and stackless have no function of this prototype (0). */
#define LK_SWAP_OF_sp(name) lk_swap_##name
#define LK_SWAP_OF_regs(name) lk_swap_##name
#define LK_SWAP_OF_copy(name) lk_swap_##name
#define LK_SWAP_OF_uc(name) 0
#define LK_SWAP_OF_none(name) 0
#define LK_SWAP_CASE(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    LK_ON_##ARCH(case LK_KERNEL_##name: return LK_SWAP_OF_##HANDLE(name);)

lk_swap_fn lk_swap_of(int k) {
    switch (k) {
    LK_KERNELS(LK_SWAP_CASE)
    default: return 0;
    }
}

/* FP control state, for the harness: reset to the ABI's defaults, or dirtied the way
 * ordinary arithmetic dirties it (an inexact division sets MXCSR's sticky PE flag on
 * x86-64; on AArch64 it sets FPSR.IXC, which no kernel here saves). */
void lk_fpctl_reset(void) {
    const uint32_t dflt[2] = {LK_FPCTL_DEFAULT0, LK_FPCTL_DEFAULT1};
    lk_fpctl_set(dflt);
}
void lk_fpctl_divide(void) {
    volatile double a = 1.0, b = 3.0, c;
    c = a / b;
    (void)c;
}
void lk_fpctl_read(uint32_t v[2]) { lk_fpctl_get(v); }
int64_t lk_xinuse(void) { return lk_arch_xinuse(); }
void lk_fpctl_write(const uint32_t v[2]) { lk_fpctl_set(v); }
void lk_xstate(int64_t out[3]) { lk_arch_xstate(out); }
const char *lk_hypervisor_signature(void) {
    static char sig[13];
    lk_arch_hypervisor(sig);
    return sig;
}
