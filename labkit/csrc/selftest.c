/* selftest.c -- the kernels' correctness checks as a plain C program, without Python.
 * Built natively by the tests, and with a cross compiler to run under qemu-user
 * (AArch64). Prints one line per check and exits non-zero if any failed. */
#include <stdio.h>
#include <string.h>

#include "labkit_core.h"

static int failures = 0;

static void check(int ok, const char *kernel, const char *what) {
    printf("%s %s %s\n", ok ? "ok" : "FAIL", kernel, what);
    if (!ok) failures++;
}

int main(void) {
    printf("arch %s\n", lk_arch_name());
    for (int k = 0; k < LK_NKERNELS; k++) {
        const char *why, *name = lk_kernel_name(k);
        if (!lk_kernel_available(k, &why)) {
            printf("skip %s %s\n", name, why);
            continue;
        }
        if (lk_kernel_is_stackful(k)) {
            uint64_t mi[32], mo[32], ci[32], co[32];
            int n = lk_regprobe_count();
            check(lk_regtest(k, mi, mo, ci, co) == 0, name, "regtest ran");
            for (int i = 0; i < n; i++) {
                char what[64];
                snprintf(what, sizeof what, "%s survives in main", lk_regprobe_name(i));
                check(mi[i] == mo[i], name, what);
                snprintf(what, sizeof what, "%s survives in the other context", lk_regprobe_name(i));
                check(ci[i] == co[i], name, what);
            }
            uint32_t ms[2], ma[2], cs[2], ca[2], mask[2];
            check(lk_fptest(k, ms, ma, cs, ca, mask) == 0, name, "fptest ran");
            int keeps = ((ms[0] ^ ma[0]) & mask[0]) == 0 && ((ms[1] ^ ma[1]) & mask[1]) == 0 &&
                        ((cs[0] ^ ca[0]) & mask[0]) == 0 && ((cs[1] ^ ca[1]) & mask[1]) == 0;
            /* The kernels that keep no FP control state by design (asm, asm_ret,
             * libco_design) must leak it. */
            int should_keep = lk_kernel_keeps_fp_control(k);
            check(keeps == should_keep, name,
                  should_keep ? "FP control state survives" : "FP control state leaks, as documented");
            check(lk_stack_probe(k, 64 * 1024, 16 * 1024) == 0, name, "16 KiB of a 64 KiB stack usable");
        }
        if (lk_kernel_handle(k) == LK_HANDLE_copy) {
            /* Each round trip copies the other coroutine out and this one in: 4 KiB more
             * in use is 2 x 4 KiB more copied a round, exactly. */
            lk_sample c[1];
            char cerr[256];
            uint64_t copied[2];
            for (int i = 0; i < 2; i++) {
                lk_set_stack_in_use(i ? 4096 : 0);
                /* The warm-up takes each coroutine to its switch, so the copies are steady. */
                int crc = lk_pingpong(k, 64 * 1024, 1, 1000, 1, 1, c, cerr, sizeof cerr);
                copied[i] = crc == 0 ? c[0].copied_bytes : 0;
            }
            lk_set_stack_in_use(0);
            check(copied[0] > 0 && copied[1] - copied[0] == 1000ull * 2 * 4096, name,
                  "4 KiB more in use copies 8 KiB more a round trip");
        } else if (lk_kernel_is_stackful(k)) {
            lk_sample r[1];
            char rerr[256];
            for (int asym = 0; asym < 2; asym++) {
                int rc = lk_ring(k, 5, asym, 16 * 1024, asym ? 64 : 0, 0, 100, 1, 1, r, rerr, sizeof rerr);
                uint64_t want = asym ? 100 * 10 : 100 * 6;
                check(rc == 0 && r[0].counted == want && r[0].switches == want, name,
                      asym ? "asymmetric scheduler of 5: every transfer counted"
                           : "symmetric ring of 5: every transfer counted");
            }
        }
        lk_sample s[2];
        char err[256];
        int rc = lk_pingpong(k, 64 * 1024, 1, 1000, 1, 2, s, err, sizeof err);
        check(rc == 0 && s[0].counted == 2000 && s[1].counted == 2000 && s[1].switches == 2000,
              name, "2000 switches counted");
    }
    printf("%s\n", failures ? "SELFTEST FAILED" : "SELFTEST PASSED");
    return failures ? 1 : 0;
}
