/* checks.c -- the correctness checks the tests run (labkit.core.checks, the C self-test):
 * do a kernel's switches keep the registers and the FP control state they must, and is
 * its stack guarded. Above everything else in the C core: it makes contexts of every kind. */
#define _GNU_SOURCE
#include "labkit_core.h"

#include <string.h>
#include <ucontext.h>

#include "switch_platform.h"

void lk_regprobe(lk_swap_fn fn, void **save, void *load, const uint64_t *in, uint64_t *out);

/* swapcontext behind the asm kernels' prototype. */
static void uc_swap(void **save, void *load) {
    swapcontext((ucontext_t *)save, (ucontext_t *)load);
}

int lk_regprobe_count(void) { return LK_NREGPROBE; }
const char *lk_regprobe_name(int i) {
    return (i >= 0 && i < LK_NREGPROBE) ? lk_regprobe_names[i] : "?";
}

/* The two contexts a check switches between: main and one other ("co"). For the kernels
 * whose context is an object (ucontext_t, lk_regs_ctx, lk_copy_ctx) the save/load words point at the objects
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
} pair;

static void **save_main(pair *d) { return d->main_obj ? (void **)d->main_obj : &d->main_sp; }
static void *load_main(pair *d) { return d->main_obj ? d->main_obj : d->main_sp; }
static void **save_co(pair *d) { return d->main_obj ? (void **)d->co_sp : &d->co_sp; }
static void *load_co(pair *d) { return d->co_sp; }
/* An object context never moves: saving into it is fine. */

/* A switch of a check, made through lk_regprobe, which gives its caller back its own
 * callee-saved registers whatever the switch did with them: a switch that loses one fails
 * the register check instead of corrupting the checks' own code. */
static void probed_swap(lk_swap_fn swap, void **save, void *load) {
    const uint64_t in[LK_NREGPROBE] = {0};
    uint64_t out[LK_NREGPROBE];
    lk_regprobe(swap, save, load, in, out);
}
static void main_swap(pair *d) { probed_swap(d->swap, save_main(d), load_co(d)); }
static void co_swap(pair *d) { probed_swap(d->swap, save_co(d), load_main(d)); }

static void regtest_co(void *arg) {
    pair *d = arg;
    /* Load our own sentinels and switch back: main checks its registers. */
    lk_regprobe(d->swap, save_co(d), load_main(d), d->co_in, d->co_out);
    /* Resumed: co_out holds what survived here. */
    for (;;) co_swap(d);
}

/* The switch a check runs: kernel's, or (kernel < 0) an outside one given by its switch and
 * its maker (a user's, csrc/user_switch.c), whose context is a handle saved through *save. */
static int setup(int kernel, lk_swap_fn swap, lk_make_fn make, pair *d, lk_stack *s,
                 size_t size, void (*fn)(void *)) {
    const char *why;
    if (kernel < 0) {
        memset(d, 0, sizeof *d);
        d->swap = swap;
        if (!swap || !make || lk_stack_alloc(s, size, 0, 0) != 0) return -1;
        d->co_sp = make(s->top - s->usable, s->usable, fn, d);
        if (!d->co_sp) {
            lk_stack_free(s);
            return -1;
        }
        return 0;
    }
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
        d->co_sp = lk_copy_make(&d->co_cc, &d->run, fn, d, 0) == 0 ? &d->co_cc : 0;
    } else {
        d->co_sp = lk_make(kernel, s, fn, d);
    }
    if (!d->co_sp) {
        lk_stack_free(s);
        return -1;
    }
    return 0;
}

static void teardown(pair *d, lk_stack *s) {
    lk_copy_free(&d->co_cc);  /* zeroed unless copy_stack made it */
    lk_stack_free(s);
}

static int regtest(int kernel, lk_swap_fn swap, lk_make_fn make, uint64_t *main_in,
                   uint64_t *main_out, uint64_t *co_in, uint64_t *co_out) {
    pair d;
    lk_stack s;
    if (setup(kernel, swap, make, &d, &s, 64 * 1024, regtest_co) != 0) return -1;
    for (int i = 0; i < LK_NREGPROBE; i++) {
        main_in[i] = 0x1111111111111111ull * (uint64_t)(i + 1) ^ 0xA5A5000000000000ull;
        d.co_in[i] = 0x0F0F0F0F0F0F0F0Full + (uint64_t)i * 0x0101010101010101ull;
    }
    /* main loads its sentinels and switches into co, which loads its own
     * (clobbering every callee-saved register) and switches back. */
    lk_regprobe(d.swap, save_main(&d), load_co(&d), main_in, main_out);
    /* Resume co: its probe returns and records what it holds. */
    main_swap(&d);
    memcpy(co_in, d.co_in, sizeof d.co_in);
    memcpy(co_out, d.co_out, sizeof d.co_out);
    teardown(&d, &s);
    return 0;
}

int lk_regtest(int kernel, uint64_t *main_in, uint64_t *main_out, uint64_t *co_in,
               uint64_t *co_out) {
    return kernel < 0 ? -1 : regtest(kernel, 0, 0, main_in, main_out, co_in, co_out);
}

int lk_regtest_ext(lk_swap_fn swap, lk_make_fn make, uint64_t *main_in, uint64_t *main_out,
                   uint64_t *co_in, uint64_t *co_out) {
    return regtest(-1, swap, make, main_in, main_out, co_in, co_out);
}

static void fptest_co(void *arg) {
    pair *d = arg;
    const uint32_t co[2] = {LK_FPCTL_CO0, LK_FPCTL_CO1};
    lk_fpctl_set(co);
    lk_fpctl_get(d->co_set);
    co_swap(d);
    lk_fpctl_get(d->co_after);
    for (;;) co_swap(d);
}

static int fptest(int kernel, lk_swap_fn swap, lk_make_fn make, uint32_t *main_set,
                  uint32_t *main_after, uint32_t *co_set, uint32_t *co_after, uint32_t *masks) {
    pair d;
    lk_stack s;
    uint32_t saved[2];
    const uint32_t mine[2] = {LK_FPCTL_MAIN0, LK_FPCTL_MAIN1};
    const uint32_t dflt[2] = {LK_FPCTL_DEFAULT0, LK_FPCTL_DEFAULT1};
    lk_fpctl_get(saved);
    lk_fpctl_set(dflt);  /* co starts from defaults (lk_make copies them) */
    if (setup(kernel, swap, make, &d, &s, 64 * 1024, fptest_co) != 0) {
        lk_fpctl_set(saved);
        return -1;
    }
    lk_fpctl_set(mine);
    lk_fpctl_get(main_set);
    main_swap(&d);                       /* co sets its own values and comes back */
    lk_fpctl_get(main_after);
    lk_fpctl_set(mine);                  /* make sure co sees ours, not its own, if it leaks */
    main_swap(&d);                       /* co records what it holds after resuming */
    lk_fpctl_set(saved);
    memcpy(co_set, d.co_set, sizeof d.co_set);
    memcpy(co_after, d.co_after, sizeof d.co_after);
    masks[0] = LK_FPCTL_MASK0;
    masks[1] = LK_FPCTL_MASK1;
    teardown(&d, &s);
    return 0;
}

int lk_fptest(int kernel, uint32_t *main_set, uint32_t *main_after, uint32_t *co_set,
              uint32_t *co_after, uint32_t *masks) {
    return kernel < 0 ? -1 : fptest(kernel, 0, 0, main_set, main_after, co_set, co_after, masks);
}

int lk_fptest_ext(lk_swap_fn swap, lk_make_fn make, uint32_t *main_set, uint32_t *main_after,
                  uint32_t *co_set, uint32_t *co_after, uint32_t *masks) {
    return fptest(-1, swap, make, main_set, main_after, co_set, co_after, masks);
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
    pair *d = arg;
    d->use_bytes = burn_stack(d->use_bytes, 0);
    for (;;) co_swap(d);
}

int lk_stack_probe(int kernel, size_t stack_size, size_t use_bytes) {
    pair d;
    lk_stack s;
    if (kernel < 0 || setup(kernel, 0, 0, &d, &s, stack_size, probe_co) != 0) return -1;
    d.use_bytes = use_bytes;
    main_swap(&d);
    teardown(&d, &s);
    return 0;
}
