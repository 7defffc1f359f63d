/* handoff_selftest.c -- the kernel-switch measurements as a plain C program.
 *
 * What is measured (see handoff.c): two kernel tasks hand a turn back and forth,
 * lmbench lat_ctx style; one round trip is two hand-offs, so one-way cost is
 * (loop - baseline) / hand-offs. CPUs 0,0 is a real switch per hand-off; CPUs 0,1
 * is a cross-CPU wake-up per hand-off (the other CPU idles, it does not switch).
 *
 * Hard checks (a failure means the code is wrong, not the machine slow):
 *   - every call returns 0;
 *   - every hand-off was counted by the task that made it (counted == switches);
 *   - on one CPU the kernel switched at least once per hand-off: the two tasks
 *     cannot both run there, so vol + invol >= switches (a little slack for the
 *     one-off count races documented in handoff.c);
 *   - the yield runs did all their units.
 * Everything else is printed for a human: one-way ns per switch, and the kernel's
 * voluntary switches against the hand-offs (one per hand-off when the receiver
 * blocks; a wake-up that preempts the sender shows up as involuntary instead).
 * The machine is a shared, noisy VM, so no timing is checked. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "handoff.h"

static int failures = 0;

static void check(int ok, const char *what) {
    if (!ok) {
        printf("FAIL %s\n", what);
        failures++;
    }
}

static int cpu_allowed(int cpu) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    return CPU_ISSET(cpu, &set);
}

int main(void) {
    const uint64_t rounds = 2000;
    enum { REPEATS = 2 };
    int two = sysconf(_SC_NPROCESSORS_ONLN) >= 2 && cpu_allowed(0) && cpu_allowed(1);
    int pairs[2][2] = {{0, 0}, {0, 1}};
    setvbuf(stdout, NULL, _IOLBF, 0);   /* progress shows even when piped */

    printf("%-15s %-5s %3s %10s %10s %10s %8s %8s %8s\n", "mode", "cpus", "rep", "loop_ns",
           "base_ns", "one-way_ns", "switches", "vol", "invol");
    for (int p = 0; p < (two ? 2 : 1); p++) {
        int ca = pairs[p][0], cb = pairs[p][1];
        for (int m = 0; m < LK_HANDOFF_NMODES; m++) {
            lk_handoff_sample s[REPEATS];
            char err[256] = "", what[320];
            int rc = lk_handoff_pingpong(m, ca, cb, rounds, 1, REPEATS, s, err, sizeof err);
            snprintf(what, sizeof what, "%s on CPUs %d,%d: %s", lk_handoff_mode_name(m), ca, cb,
                     rc == 0 ? "ran" : err);
            check(rc == 0, what);
            if (rc != 0) continue;
            for (int r = 0; r < REPEATS; r++) {
                const lk_handoff_sample *o = &s[r];
                double one_way = ((double)o->loop_ns - (double)o->base_ns) / (double)o->switches;
                printf("%-15s %d,%-3d %3d %10llu %10llu %10.1f %8llu %8llu %8llu\n",
                       lk_handoff_mode_name(m), ca, cb, r, (unsigned long long)o->loop_ns,
                       (unsigned long long)o->base_ns, one_way, (unsigned long long)o->switches,
                       (unsigned long long)o->vol_ctxsw, (unsigned long long)o->invol_ctxsw);
                snprintf(what, sizeof what, "%s on CPUs %d,%d: counted %llu of %llu hand-offs",
                         lk_handoff_mode_name(m), ca, cb, (unsigned long long)o->counted,
                         (unsigned long long)o->switches);
                check(o->counted == o->switches && o->switches == 2 * rounds, what);
                if (ca == cb) {
                    snprintf(what, sizeof what,
                             "%s on one CPU: the kernel switched only %llu times for %llu hand-offs",
                             lk_handoff_mode_name(m),
                             (unsigned long long)(o->vol_ctxsw + o->invol_ctxsw),
                             (unsigned long long)o->switches);
                    check(o->vol_ctxsw + o->invol_ctxsw + 4 >= o->switches, what);
                }
            }
        }
    }
    if (!two) printf("skip: cross-CPU runs need CPUs 0 and 1\n");

    /* Error paths must fail cleanly, not hang or leave anything behind. */
    {
        lk_handoff_sample s[1];
        char err[256] = "";
        check(lk_handoff_pingpong(LK_HANDOFF_NMODES, 0, 0, 10, 0, 1, s, err, sizeof err) == -1, "bad mode rejected");
        int bad = CPU_SETSIZE - 1;   /* a CPU number no machine here has */
        for (int m = 0; m < LK_HANDOFF_NMODES; m++) {
            int rc = lk_handoff_pingpong(m, 0, bad, 10, 0, 1, s, err, sizeof err);
            printf("expected error, %s: %s\n", lk_handoff_mode_name(m), rc ? err : "(none)");
            check(rc == -1, "pinning task B to a missing CPU fails cleanly");
            rc = lk_handoff_pingpong(m, bad, 0, 10, 0, 1, s, err, sizeof err);
            check(rc == -1, "pinning task A to a missing CPU fails cleanly");
        }
    }

    const uint64_t units = 20000;
    printf("yield: 2 threads on CPU 0, %llu units each of %llu multiply-adds\n",
           (unsigned long long)units, (unsigned long long)lk_yield_unit_iters());
    printf("%6s %12s %10s %12s %8s %8s\n", "k", "ns", "units", "ns/unit", "vol", "invol");
    const uint64_t ks[] = {0, 1, 10, 100};
    uint64_t sw[4] = {0};
    for (int i = 0; i < 4; i++) {
        lk_yield_sample y;
        char err[256] = "", what[320];
        int rc = lk_yield_run(0, units, ks[i], &y, err, sizeof err);
        snprintf(what, sizeof what, "yield k=%llu: %s", (unsigned long long)ks[i], rc == 0 ? "ran" : err);
        check(rc == 0, what);
        if (rc != 0) continue;
        check(y.units_done == 2 * units, "yield: every unit done");
        sw[i] = y.vol_ctxsw + y.invol_ctxsw;
        printf("%6llu %12llu %10llu %12.1f %8llu %8llu\n", (unsigned long long)ks[i],
               (unsigned long long)y.ns, (unsigned long long)y.units_done,
               (double)y.ns / (double)y.units_done, (unsigned long long)y.vol_ctxsw,
               (unsigned long long)y.invol_ctxsw);
    }
    if (sw[1] <= sw[0]) printf("note: yielding every unit did not add kernel switches here\n");

    if (failures) printf("HANDOFF SELFTEST FAILED (%d checks)\n", failures);
    else printf("HANDOFF SELFTEST PASSED\n");
    return failures ? 1 : 0;
}
