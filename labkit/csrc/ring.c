/* ring.c -- N contexts: a symmetric ring (each context transfers straight to the next) and
 * an asymmetric scheduler (main resumes each worker in turn, each yields back), for every
 * kernel whose contexts have stacks of their own. The ring itself (its contexts, loops and
 * samples) is ring_loops.h's, which user_switch.c shares. */
#define _GNU_SOURCE
#include "labkit_core.h"

#include "ring_loops.h"

/* For the uc and regs kernels (ucontext, libco_design) the handle is the context object
 * itself, which the switch saves into. copy_stack has no ring here: its contexts share one
 * stack (notebook 04 and 07b measure it through the ping-pong and
 * labkit.experiments.frames). */
static void uc_swap(void **save, void *load) { swapcontext((ucontext_t *)save, (ucontext_t *)load); }

/* A ring for every kernel whose contexts have stacks of their own, from the kernel table. */
#define LK_RING_sp(NAME) LK_RING(NAME, lk_swap_##NAME, 0)
#define LK_RING_regs(NAME) LK_RING(NAME, lk_swap_##NAME, 1)
#define LK_RING_uc(NAME) LK_RING(NAME, uc_swap, 1)
#define LK_RING_copy(NAME)
#define LK_RING_none(NAME)
#define LK_RING_ROW(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    LK_ON_##ARCH(LK_RING_##HANDLE(name))
LK_KERNELS(LK_RING_ROW)

#define LK_RING_PICK(NAME)                                                             \
    code.sym = sym_##NAME, code.asym = asym_##NAME, code.symloop = symloop_##NAME,      \
    code.asymloop = asymloop_##NAME
#define LK_RING_CASE_sp(NAME) case LK_KERNEL_##NAME: LK_RING_PICK(NAME); break;
#define LK_RING_CASE_regs LK_RING_CASE_sp
#define LK_RING_CASE_uc LK_RING_CASE_sp
#define LK_RING_CASE_copy(NAME)
#define LK_RING_CASE_none(NAME)
#define LK_RING_CASE(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) \
    LK_ON_##ARCH(LK_RING_CASE_##HANDLE(name))

uint64_t lk_ring_switches_per_lap(int n, int asymmetric) {
    return ring_switches_per_lap(n, asymmetric);
}

int lk_ring(int kernel, int n, int asymmetric, size_t stack_size, size_t colour_step,
            int prefault, uint64_t laps, int warmup, int repeats, lk_sample *out, char *err,
            size_t errlen) {
    ring_code code = {.make = lk_make};
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
    code.handle = lk_kernel_handle(kernel);
    return ring_run(&code, kernel, n, asymmetric, stack_size, colour_step, prefault, laps,
                    warmup, repeats, out, err, errlen);
}
