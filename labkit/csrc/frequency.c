/* frequency.c -- switch frequency and batching (notebook 08, claim C000.7): how much of
 * the time goes to switching when coroutines do W ticks of work between switches, with
 * one task or a batch of tasks per resumption. See frequency.h for the shape.
 *
 * Counting: the scheduler bumps its counter after each transfer back to it, each coroutine
 * bumps its own before each transfer to the scheduler, and each task bumps its coroutine's
 * task counter; after R resumptions the switch counters must add up to 2R and the task
 * counters to R * batch, which the Python side checks before it believes any time. */
#define _GNU_SOURCE
#include "labkit_core.h"
#include "frequency.h"
#include "workload.h"
#include "xstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_timer.h"

typedef struct fq fq;
typedef struct {
    void *sp;                    /* the coroutine's stored stack pointer while it is suspended */
    fq *q;
    volatile uint64_t count;     /* transfers this coroutine made back to the scheduler */
    volatile uint64_t tasks;     /* tasks this coroutine ran */
} __attribute__((aligned(64))) fq_slot;  /* a cache line each, as in ring.c */

struct fq {
    void *main_sp;
    int n;
    uint32_t batch;
    void (*task)(fq *, fq_slot *);  /* the task of the run's kind of work */
    uint64_t units;
    uint64_t sink;               /* the busy loop's running value, stored so it is kept */
    fq_slot *w;
    volatile uint64_t main_count;
};

/* One task. Both loops, and the calibration, call this same out-of-line function, so a
 * unit costs the same wherever it runs. Every task starts from the value the previous
 * one left in q->sink, whichever coroutine ran it: the tasks form one serial chain, so a
 * task takes its W ticks in every mode. (With a chain per coroutine, the tasks of two
 * different coroutines would overlap in the out-of-order core and one task per switch
 * would get more work done per tick than batches do.) Switches are not fenced off:
 * the core may run them beside the chain, as it would beside real work. */
__attribute__((noinline)) static void fq_task(fq *q, fq_slot *s) {
    /* No buffer: only the work chain of workload.h (LK_WL_MUL/LK_WL_ADD), whose rounds
     * each wait on the one before, so the loop's time is its latency. */
    q->sink = lk_wl_touch_work(0, 0, q->units, q->sink);
    s->tasks++;
}

/* The independent task: six add chains side by side, each round 6 adds, the counter and
 * the loop branch, more than a 4-wide core issues in a cycle. Every slot is taken, so an
 * instruction of a switch run beside it costs time of its own. It starts from and leaves
 * q->sink as fq_task does, so tasks still follow one another. */
__attribute__((noinline)) static void fq_task_independent(fq *q, fq_slot *s) {
    uint64_t a = q->sink, b = a + 1, c = a + 2, d = a + 3, e = a + 4, f = a + 5;
    for (uint64_t i = 0, n = q->units; i < n; i++) {
        a += LK_WL_ADD;
        b += LK_WL_MUL;
        c += LK_WL_ADD;
        d += LK_WL_MUL;
        e += LK_WL_ADD;
        f += LK_WL_MUL;
        __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f));
    }
    q->sink = a ^ b ^ c ^ d ^ e ^ f;
    s->tasks++;
}

typedef void (*fq_task_fn)(fq *, fq_slot *);

static fq_task_fn fq_task_of(int work) {
    switch (work) {
    case LK_FREQ_DEPENDENT: return fq_task;
    case LK_FREQ_INDEPENDENT: return fq_task_independent;
    default: return NULL;
    }
}

static void fq_worker(void *arg) {
    fq_slot *s = arg;
    fq *q = s->q;
    for (;;) {
        for (uint32_t b = 0; b < q->batch; b++) q->task(q, s);
        s->count++;
        lk_swap_asm_fpu(&s->sp, q->main_sp);
    }
}

/* The scheduler: resumes the coroutines round-robin, so with N coroutines each stack top is
 * revisited only after N-1 others, as in a pool with a shared run queue. */
LK_TIMED_LOOP static void fq_switching(fq *q, uint64_t resumptions) {
    int i = 0;
    for (uint64_t r = 0; r < resumptions; r++) {
        lk_swap_asm_fpu(&q->main_sp, q->w[i].sp);
        q->main_count++;
        if (++i == q->n) i = 0;
    }
}

/* The same tasks for the same coroutines' slots in the same order, every counter bumped as
 * often as above, but called in place: no transfer, no other stack. */
LK_TIMED_LOOP static void fq_work_only(fq *q, uint64_t resumptions) {
    int i = 0;
    for (uint64_t r = 0; r < resumptions; r++) {
        fq_slot *s = &q->w[i];
        for (uint32_t b = 0; b < q->batch; b++) q->task(q, s);
        s->count++;
        q->main_count++;
        if (++i == q->n) i = 0;
    }
}

static void fq_totals(fq *q, uint64_t *switches, uint64_t *tasks) {
    uint64_t sw = q->main_count, t = 0;
    for (int i = 0; i < q->n; i++) {
        sw += q->w[i].count;
        t += q->w[i].tasks;
    }
    *switches = sw;
    *tasks = t;
}

typedef void (*fq_loop)(fq *, uint64_t);

static void fq_timed(fq_loop f, fq *q, uint64_t resumptions, uint64_t *ns, uint64_t *ticks,
                     uint64_t *counted, uint64_t *tasks, uint64_t *faults, uint64_t *preempted) {
    uint64_t s0, t0c, s1, t1c;
    fq_totals(q, &s0, &t0c);
    lk_span span = lk_span_begin();
    f(q, resumptions);
    span = lk_span_end(span);
    fq_totals(q, &s1, &t1c);
    *ns = span.ns;
    *ticks = span.ticks;
    *faults = span.faults;
    *preempted = span.preempted;
    *counted = s1 - s0;
    *tasks = t1c - t0c;
}

double lk_freq_ticks_per_unit(int work, uint64_t units, int tries) {
    /* Off any measured stack; their counters are never checked. */
    static fq probe_q;
    static fq_slot probe_s;
    double best = 0;
    fq_task_fn task = fq_task_of(work);
    if (units == 0 || tries < 1 || !task) return 0;
    probe_q.units = units;
    probe_q.sink = 1;
    for (int k = 0; k < tries; k++) {
        uint64_t t0 = lk_ticks_begin();
        task(&probe_q, &probe_s);
        uint64_t t1 = lk_ticks_end();
        double per = (double)(t1 - t0) / (double)units;
        /* The fastest run is the one least disturbed by interrupts and steal time. */
        if (k == 0 || per < best) best = per;
    }
    return best;
}

int lk_freq_run(size_t stack_size, int coroutines, uint32_t batch, int work, uint64_t units,
                uint64_t tasks, int warmup, int repeats, lk_freq_sample *out, char *err,
                size_t errlen) {
    if (!fq_task_of(work)) {
        snprintf(err, errlen, "unknown work %d", work);
        return -1;
    }
    if (coroutines < 1 || batch < 1 || tasks < batch || tasks % batch) {
        snprintf(err, errlen, "need coroutines >= 1, batch >= 1 and tasks a positive multiple "
                 "of batch; got coroutines=%d batch=%u tasks=%llu", coroutines, batch,
                 (unsigned long long)tasks);
        return -1;
    }
    fq *q = calloc(1, sizeof *q);
    lk_stack *stacks = calloc((size_t)coroutines, sizeof *stacks);
    fq_slot *w = aligned_alloc(64, sizeof(fq_slot) * (size_t)coroutines);
    int rc = -1, made = 0;
    if (!q || !stacks || !w) {
        snprintf(err, errlen, "out of memory for %d coroutines", coroutines);
        goto done;
    }
    memset(w, 0, sizeof(fq_slot) * (size_t)coroutines);
    q->n = coroutines;
    q->batch = batch;
    q->units = units;
    q->task = fq_task_of(work);
    q->sink = 1;
    q->w = w;
    for (int i = 0; i < coroutines; i++, made++) {
        int e = lk_stack_alloc(&stacks[i], stack_size, 0, 0);
        if (e != 0) {
            snprintf(err, errlen, "mmap of coroutine %d's stack (%zu bytes) failed: %s", i,
                     stack_size, strerror(-e));
            goto done;
        }
        w[i].q = q;
        w[i].sp = lk_make(LK_ASM_FPU, &stacks[i], fq_worker, &w[i]);
        if (!w[i].sp) {
            lk_stack_free(&stacks[i]);
            snprintf(err, errlen, "could not make coroutine %d", i);
            goto done;
        }
    }
    uint64_t resumptions = tasks / batch;
    uint64_t ns, ticks, counted, done_tasks, faults, pre_work, pre_total;
    /* The warm-up also takes each stack's first-touch page faults out of the samples. */
    for (int k = 0; k < warmup; k++) {
        fq_timed(fq_work_only, q, resumptions, &ns, &ticks, &counted, &done_tasks, &faults,
                 &pre_work);
        fq_timed(fq_switching, q, resumptions, &ns, &ticks, &counted, &done_tasks, &faults,
                 &pre_total);
    }
    /* Each sample runs the two loops in the order work-only, switching, switching,
     * work-only, half the resumptions each time, and adds the halves up: a drift across
     * the sample (the clock, a neighbour's load, what the previous loop left in the
     * caches) then weighs on both loops alike instead of on whichever ran second. */
    const uint64_t first = resumptions / 2 ? resumptions / 2 : resumptions;
    const uint64_t halves[2] = {first, resumptions - first};
    for (int k = 0; k < repeats; k++) {
        lk_freq_sample *o = &out[k];
        memset(o, 0, sizeof *o);
        for (int h = 0; h < 2; h++) {
            if (!halves[h]) continue;
            uint64_t w_ns, w_ticks, w_tasks, s_ns, s_ticks, s_counted, s_tasks, s_faults;
            if (h == 0) {
                fq_timed(fq_work_only, q, halves[h], &w_ns, &w_ticks, &counted, &w_tasks,
                         &faults, &pre_work);
                fq_timed(fq_switching, q, halves[h], &s_ns, &s_ticks, &s_counted, &s_tasks,
                         &s_faults, &pre_total);
            } else {
                fq_timed(fq_switching, q, halves[h], &s_ns, &s_ticks, &s_counted, &s_tasks,
                         &s_faults, &pre_total);
                fq_timed(fq_work_only, q, halves[h], &w_ns, &w_ticks, &counted, &w_tasks,
                         &faults, &pre_work);
            }
            o->work_ns += w_ns;
            o->work_ticks += w_ticks;
            o->work_tasks_counted += w_tasks;
            o->total_ns += s_ns;
            o->total_ticks += s_ticks;
            o->counted += s_counted;
            o->tasks_counted += s_tasks;
            o->minor_faults += s_faults;
            o->preemptions += pre_work + pre_total;
        }
        o->switches = 2 * resumptions;
        o->tasks = tasks;
    }
    rc = 0;
done:
    /* The coroutines stay suspended for good; their stacks simply go away. */
    for (int i = 0; i < made; i++) lk_stack_free(&stacks[i]);
    free(w);
    free(stacks);
    free(q);
    return rc;
}

/* What labkit/core/structs.py reads an lk_freq_sample by, and what labkit/core/native.py
 * types this library's functions by (lk_layout.h): frequency.c, the last source of
 * liblabkit_c-<tag>.so and in no other build, exports the whole library's list. */
LK_LAYOUT(lk_freq_sample, LK_FREQ_SAMPLE_FIELDS)
#define LK_LIBRARY_FUNCTIONS(F) \
    LK_CORE_FUNCTIONS(F) LK_FREQ_FUNCTIONS(F) LK_XSTATE_FUNCTIONS(F) LK_WL_FUNCTIONS(F)
LK_FUNCTIONS(LK_LIBRARY_FUNCTIONS)
