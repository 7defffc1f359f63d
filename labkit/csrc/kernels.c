/* kernels.c -- the kernel table, guarded stacks, new contexts, and the self-checks the tests run. */
#define _GNU_SOURCE
#include "labkit_core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "switch_platform.h"

#ifndef LK_CFLAGS
#define LK_CFLAGS "unknown"
#endif

void lk_regprobe(lk_swap_fn fn, void **save, void *load, const uint64_t *in, uint64_t *out);

#define LK_NAME(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) #name,
static const char *const names[LK_NKERNELS] = {LK_KERNELS(LK_NAME)};
#define LK_HANDLE(name, ARCH, HANDLE, STACKFUL, KEEPS_FP, WHY_NOT) LK_HANDLE_##HANDLE,
static const enum lk_handle handles[LK_NKERNELS] = {LK_KERNELS(LK_HANDLE)};
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
enum lk_handle lk_kernel_handle(int k) {
    return (k >= 0 && k < LK_NKERNELS) ? handles[k] : LK_HANDLE_none;
}
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

/* ---------------------------------------------------------------- stacks */

size_t lk_page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

int lk_stack_alloc(lk_stack *s, size_t usable, size_t offset, int prefault) {
    size_t page = lk_page_size();
    memset(s, 0, sizeof *s);
    usable = (usable + offset + page - 1) / page * page;
    size_t total = usable + page;
    /* MAP_NORESERVE: an 8 MB stack costs only the pages a context touches,
     * which is the lazily committed memory the experiments look at. */
    void *m = mmap(0, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED) return -errno;
    if (mprotect(m, page, PROT_NONE) != 0) {  /* the guard page, below the stack */
        int e = errno;
        munmap(m, total);
        return -e;
    }
    s->map = m;
    s->map_size = total;
    s->usable = usable;
    s->top = (char *)m + total - offset;
    if (prefault) {
        /* One write per page, top down as a stack would, so no first-touch
         * fault lands inside a timed loop. */
        for (char *p = (char *)m + total - page; p >= (char *)m + page; p -= page)
            *(volatile char *)p = 0;
    }
    return 0;
}

void lk_stack_free(lk_stack *s) {
    if (s->map) munmap(s->map, s->map_size);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------- contexts */

/* makecontext passes int arguments only: a pointer travels as two halves. */
static void uc_entry(unsigned hi, unsigned lo, unsigned fhi, unsigned flo) {
    void *arg = (void *)(((uintptr_t)hi << 32) | lo);
    void (*entry)(void *) = (void (*)(void *))(((uintptr_t)fhi << 32) | flo);
    entry(arg);
    abort();  /* entry functions never return */
}

/* Apart from lk_make: getcontext returns twice, and the compiler then fears for
 * every local of the function that calls it. */
__attribute__((noinline)) static void *make_ucontext(lk_stack *s, void (*entry)(void *), void *arg) {
    {
        /* The ucontext_t sits at the top of the stack it describes. */
        ucontext_t *volatile uc = (ucontext_t *)(((uintptr_t)s->top - sizeof(ucontext_t)) & ~(uintptr_t)63);
        if (getcontext(uc) != 0) return 0;
        uc->uc_stack.ss_sp = (char *)s->map + lk_page_size();
        uc->uc_stack.ss_size = (size_t)((char *)uc - (char *)uc->uc_stack.ss_sp);
        uc->uc_link = 0;
        uintptr_t a = (uintptr_t)arg, f = (uintptr_t)entry;
        makecontext(uc, (void (*)(void))uc_entry, 4, (unsigned)(a >> 32), (unsigned)a,
                    (unsigned)(f >> 32), (unsigned)f);
        return uc;
    }
}

void *lk_make(int kernel, lk_stack *s, void (*entry)(void *), void *arg) {
    enum lk_handle h = lk_kernel_handle(kernel);
    if (h == LK_HANDLE_uc) return make_ucontext(s, entry, arg);
    if (h == LK_HANDLE_copy) return 0;  /* needs a run stack: lk_copy_make */
    return lk_arch_make(kernel, s->top, entry, arg);
}

/* swapcontext behind the asm kernels' prototype, for the self-checks. */
static void uc_swap(void **save, void *load) {
    swapcontext((ucontext_t *)save, (ucontext_t *)load);
}

/* ----------------------------------------------------------- self-checks */

int lk_regprobe_count(void) { return LK_NREGPROBE; }
const char *lk_regprobe_name(int i) {
    return (i >= 0 && i < LK_NREGPROBE) ? lk_regprobe_names[i] : "?";
}

/* Two sides of a switch: main and one context ("co"). For the kernels whose context is an
 * object (ucontext_t, lk_regs_ctx, lk_copy_ctx) the save/load words point at the objects
 * instead of holding stack pointers; main_obj is main's, co_sp the other's. */
typedef struct {
    lk_swap_fn swap;
    void *main_sp, *co_sp;
    void *main_obj;      /* 0 for the kernels whose context is a stack pointer */
    ucontext_t main_uc;
    lk_regs_ctx main_lc;
    lk_copy_run run;
    lk_copy_ctx main_cc, co_cc;
    uint64_t co_in[LK_NREGPROBE], co_out[LK_NREGPROBE];
    uint32_t co_set[2], co_after[2];
    size_t use_bytes;
} side;

static void **save_main(side *d) { return d->main_obj ? (void **)d->main_obj : &d->main_sp; }
static void *load_main(side *d) { return d->main_obj ? d->main_obj : d->main_sp; }
static void **save_co(side *d) { return d->main_obj ? (void **)d->co_sp : &d->co_sp; }
static void *load_co(side *d) { return d->co_sp; }
/* An object context never moves: saving into it is fine. */

static void regtest_co(void *arg) {
    side *d = arg;
    /* Load our own sentinels and switch back: main checks its registers. */
    lk_regprobe(d->swap, save_co(d), load_main(d), d->co_in, d->co_out);
    /* Resumed: co_out holds what survived here. */
    for (;;) d->swap(save_co(d), load_main(d));
}

static int setup(int kernel, side *d, lk_stack *s, size_t size, void (*entry)(void *)) {
    const char *why;
    if (!lk_kernel_available(kernel, &why) || !lk_kernel_is_stackful(kernel)) return -1;
    memset(d, 0, sizeof *d);
    enum lk_handle h = lk_kernel_handle(kernel);
    d->swap = h == LK_HANDLE_uc ? uc_swap : lk_swap_of(kernel);
    if (lk_stack_alloc(s, size, 0, 0) != 0) return -1;
    if (h == LK_HANDLE_uc) d->main_obj = &d->main_uc;
    if (h == LK_HANDLE_regs) d->main_obj = &d->main_lc;
    if (h == LK_HANDLE_copy) {
        lk_copy_run_init(&d->run, s);
        lk_copy_main(&d->main_cc);
        d->main_obj = &d->main_cc;
        d->co_sp = lk_copy_make(&d->co_cc, &d->run, entry, d, 0) == 0 ? &d->co_cc : 0;
    } else {
        d->co_sp = lk_make(kernel, s, entry, d);
    }
    if (!d->co_sp) {
        lk_stack_free(s);
        return -1;
    }
    return 0;
}

static void teardown(side *d, lk_stack *s) {
    lk_copy_free(&d->co_cc);  /* zeroed unless copy_stack made it */
    lk_stack_free(s);
}

int lk_regtest(int kernel, uint64_t *main_in, uint64_t *main_out, uint64_t *co_in,
               uint64_t *co_out) {
    side d;
    lk_stack s;
    if (setup(kernel, &d, &s, 64 * 1024, regtest_co) != 0) return -1;
    for (int i = 0; i < LK_NREGPROBE; i++) {
        main_in[i] = 0x1111111111111111ull * (uint64_t)(i + 1) ^ 0xA5A5000000000000ull;
        d.co_in[i] = 0x0F0F0F0F0F0F0F0Full + (uint64_t)i * 0x0101010101010101ull;
    }
    /* main loads its sentinels and switches into co, which loads its own
     * (clobbering every callee-saved register) and switches back. */
    lk_regprobe(d.swap, save_main(&d), load_co(&d), main_in, main_out);
    /* Resume co: its probe returns and records what it holds. */
    d.swap(save_main(&d), load_co(&d));
    memcpy(co_in, d.co_in, sizeof d.co_in);
    memcpy(co_out, d.co_out, sizeof d.co_out);
    teardown(&d, &s);
    return 0;
}

static void fptest_co(void *arg) {
    side *d = arg;
    const uint32_t co[2] = {LK_FPCTL_CO0, LK_FPCTL_CO1};
    lk_fpctl_set(co);
    lk_fpctl_get(d->co_set);
    d->swap(save_co(d), load_main(d));
    lk_fpctl_get(d->co_after);
    for (;;) d->swap(save_co(d), load_main(d));
}

int lk_fptest(int kernel, uint32_t *main_set, uint32_t *main_after, uint32_t *co_set,
              uint32_t *co_after, uint32_t *masks) {
    side d;
    lk_stack s;
    uint32_t saved[2];
    const uint32_t mine[2] = {LK_FPCTL_MAIN0, LK_FPCTL_MAIN1};
    const uint32_t dflt[2] = {LK_FPCTL_DEFAULT0, LK_FPCTL_DEFAULT1};
    lk_fpctl_get(saved);
    lk_fpctl_set(dflt);  /* co starts from defaults (lk_make copies them) */
    if (setup(kernel, &d, &s, 64 * 1024, fptest_co) != 0) {
        lk_fpctl_set(saved);
        return -1;
    }
    lk_fpctl_set(mine);
    lk_fpctl_get(main_set);
    d.swap(save_main(&d), load_co(&d));  /* co sets its own values and comes back */
    lk_fpctl_get(main_after);
    lk_fpctl_set(mine);                  /* make sure co sees ours, not its own, if it leaks */
    d.swap(save_main(&d), load_co(&d));  /* co records what it holds after resuming */
    lk_fpctl_set(saved);
    memcpy(co_set, d.co_set, sizeof d.co_set);
    memcpy(co_after, d.co_after, sizeof d.co_after);
    masks[0] = LK_FPCTL_MASK0;
    masks[1] = LK_FPCTL_MASK1;
    teardown(&d, &s);
    return 0;
}

/* Uses about 512 bytes of stack a level. Each level writes into its parent's
 * buffer, so every buffer's address escapes and each level needs a frame of its
 * own: without that, gcc turns the recursion into a loop over one buffer. */
__attribute__((noinline)) static size_t burn_stack(size_t left, volatile char *parent) {
    volatile char buf[512];
    buf[0] = (char)left;
    buf[sizeof buf - 1] = 1;
    if (parent) parent[1] = buf[0];
    if (left <= sizeof buf) return sizeof buf;
    size_t below = burn_stack(left - sizeof buf, buf);
    return sizeof buf + below + (size_t)(buf[1] & 0);
}

static void probe_co(void *arg) {
    side *d = arg;
    d->use_bytes = burn_stack(d->use_bytes, 0);
    for (;;) d->swap(save_co(d), load_main(d));
}

int lk_stack_probe(int kernel, size_t stack_size, size_t use_bytes) {
    side d;
    lk_stack s;
    if (setup(kernel, &d, &s, stack_size, probe_co) != 0) return -1;
    d.use_bytes = use_bytes;
    d.swap(save_main(&d), load_co(&d));
    teardown(&d, &s);
    return 0;
}
