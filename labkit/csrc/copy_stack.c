/* copy_stack.c -- copy stacks: coroutines that share one run stack (libco's shared-stack
 * mode, libaco's copy stacks), and the held coroutines whose memory notebook 07b counts.
 *
 * A coroutine's used stack is [sp, run->top). While it runs, that is on the run stack;
 * while it is suspended and another coroutine needs the run stack, it is a heap buffer
 * of exactly that many bytes. The copy is lazy: switching to the coroutine that already
 * owns the run stack (or to main) copies nothing, so a switch costs in proportion to the
 * bytes in use only when coroutines take turns. The registers are asm_fpu's (callee-saved
 * GPRs, MXCSR and x87 control word, or FPCR), pushed on the coroutine's own stack and so
 * copied with it. */
#define _GNU_SOURCE
#include "labkit_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lk_copy_run_init(lk_copy_run *r, lk_stack *s) {
    r->top = (char *)((uintptr_t)s->top & ~(uintptr_t)15);
    r->owner = 0;
    r->copied = 0;
}

void lk_copy_main(lk_copy_ctx *c) { memset(c, 0, sizeof *c); }

void lk_copy_free(lk_copy_ctx *c) {
    free(c->saved);
    memset(c, 0, sizeof *c);
}

/* The new coroutine's first frame is laid out in a scratch buffer and kept as its saved
 * stack: its frame holds no address of its own stack, so it can go anywhere. */
int lk_copy_make(lk_copy_ctx *c, lk_copy_run *r, void (*fn)(void *), void *arg,
                 size_t reserve) {
    char scratch[256] __attribute__((aligned(64)));
    char *end = scratch + sizeof scratch;
    lk_stack tmp = {.top = end};
    char *frame = lk_make(LK_ASM_FPU, &tmp, fn, arg);
    size_t bytes = (size_t)(end - frame);
    memset(c, 0, sizeof *c);
    c->capacity = bytes > reserve ? bytes : reserve;
    c->saved = malloc(c->capacity);
    if (!c->saved) return -1;
    memcpy(c->saved, frame, bytes);
    c->saved_bytes = bytes;
    c->sp = r->top - bytes;
    c->run = r;
    return 0;
}

/* The owner's frames, off the run stack into its buffer (grown when it used more). */
static void copy_out(lk_copy_ctx *o) {
    size_t bytes = (size_t)(o->run->top - (char *)o->sp);
    if (bytes > o->capacity) {
        char *grown = realloc(o->saved, bytes);
        if (!grown) abort();  /* inside a switch there is no one to report to */
        o->saved = grown;
        o->capacity = bytes;
    }
    memcpy(o->saved, o->sp, bytes);
    o->saved_bytes = bytes;
    o->run->copied += bytes;
}

void lk_swap_copy_stack(void **save, void *load) {
    lk_copy_ctx *from = (lk_copy_ctx *)save, *to = load;
    lk_copy_run *run = to->run;
    if (run && run->owner != to) {
        if (from->run == run) abort();  /* we run on the stack we would overwrite */
        if (run->owner) copy_out(run->owner);
        memcpy(to->sp, to->saved, to->saved_bytes);
        run->copied += to->saved_bytes;
        run->owner = to;
    }
    lk_swap_asm_fpu(&from->sp, to->sp);
}

/* ---------------------------------------------------------------- held coroutines */

/* Each held coroutine takes stack_in_use bytes of stack, then suspends for good; main
 * resumes each once. */
typedef struct {
    lk_copy_ctx main;
    size_t in_use;
} holder;

static lk_stack hold_stack;
static lk_copy_run hold_run;
static lk_copy_ctx *held;
static uint64_t held_n;
static holder hold_main;

static void hold_entry(void *arg) {
    lk_copy_ctx *self = arg;
    size_t n = hold_main.in_use;
    char *pad = __builtin_alloca(n);
    memset(pad, 0x5a, n);                        /* really in use: written, so copied */
    __asm__ volatile("" : : "r"(pad) : "memory");
    for (;;) lk_swap_copy_stack((void **)self, &hold_main.main);
}

void lk_copy_hold_release(void) {
    for (uint64_t i = 0; i < held_n; i++) lk_copy_free(&held[i]);
    free(held);
    held = 0;
    held_n = 0;
    lk_stack_free(&hold_stack);
}

int lk_copy_hold(uint64_t n, size_t stack_in_use, uint64_t *saved_bytes, char *err,
                 size_t errlen) {
    lk_copy_hold_release();
    if (lk_stack_alloc(&hold_stack, stack_in_use + 64 * 1024, 0, 1) != 0) {
        snprintf(err, errlen, "mmap of the run stack failed");
        return -1;
    }
    lk_copy_run_init(&hold_run, &hold_stack);
    lk_copy_main(&hold_main.main);
    hold_main.in_use = stack_in_use;
    held = calloc(n ? n : 1, sizeof *held);
    if (!held) {
        snprintf(err, errlen, "out of memory for %llu contexts", (unsigned long long)n);
        lk_stack_free(&hold_stack);
        return -1;
    }
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (lk_copy_make(&held[i], &hold_run, hold_entry, &held[i], 0) != 0) {
            held_n = i;
            lk_copy_hold_release();
            snprintf(err, errlen, "out of memory at context %llu", (unsigned long long)i);
            return -1;
        }
        held_n = i + 1;
        /* Run it to its suspension; the next one's resume copies it out. */
        lk_swap_copy_stack((void **)&hold_main.main, &held[i]);
    }
    if (hold_run.owner) copy_out(hold_run.owner);  /* the last one off the run stack too */
    hold_run.owner = 0;
    /* What stays is the suspended coroutines alone: their buffers and contexts. */
    lk_stack_free(&hold_stack);
    for (uint64_t i = 0; i < n; i++) total += held[i].saved_bytes;
    *saved_bytes = total;
    return 0;
}
