/* my_switch.c -- a minimal stackful switch for x86-64, System V ABI, in the shape labkit
 * measures from outside its package (docs/your_switch.md):
 *
 *     void *lk_user_make(void *stack_base, size_t stack_size, void (*fn)(void *), void *arg);
 *     void  lk_user_swap(void **save, void *to);
 *
 * lk_user_swap pushes the six callee-saved registers onto the running stack, stores the
 * stack pointer into *save, loads `to` (a stack pointer stored the same way, or made by
 * lk_user_make), pops the other context's registers and returns into it with `ret`.
 *
 * Saved frame, at the stored stack pointer (offsets in bytes, growing upwards):
 *
 *     0x00 r15    0x08 r14    0x10 r13    0x18 r12    0x20 rbx    0x28 rbp
 *     0x30 return address (a new context's: my_first_entry)
 *
 * Not saved: the caller-saved registers (the C caller spilled what it needs), MXCSR and the
 * x87 control word (so the contexts share them: measure it with keeps_fp_control=False).
 * A new context's first frame holds fn in r12 and arg in r13; my_first_entry calls fn(arg)
 * with rsp 16-aligned before the call, as the ABI asks. */
#include <stddef.h>
#include <stdint.h>

__asm__(
    ".text\n"
    ".globl lk_user_swap\n.type lk_user_swap,@function\n.p2align 4\n"
    "lk_user_swap:\n"
    "    pushq %rbp\n"             /* callee-saved: the caller expects it back */
    "    pushq %rbx\n"             /* callee-saved */
    "    pushq %r12\n"             /* callee-saved */
    "    pushq %r13\n"             /* callee-saved */
    "    pushq %r14\n"             /* callee-saved */
    "    pushq %r15\n"             /* callee-saved */
    "    movq  %rsp, (%rdi)\n"     /* *save = rsp: this context is stored */
    "    movq  %rsi, %rsp\n"       /* rsp = to: we are on the other context's stack */
    "    popq  %r15\n"             /* its registers, in the reverse order */
    "    popq  %r14\n"
    "    popq  %r13\n"
    "    popq  %r12\n"
    "    popq  %rbx\n"
    "    popq  %rbp\n"
    "    ret\n"                    /* into the other context, where its call returns */
    ".size lk_user_swap,.-lk_user_swap\n"

    /* A new context starts here, from the frame lk_user_make laid out. */
    ".type my_first_entry,@function\n.p2align 4\n"
    "my_first_entry:\n"
    "    movq  %r13, %rdi\n"       /* arg, from the r13 slot */
    "    callq *%r12\n"            /* fn, from the r12 slot; rsp is 16-aligned here */
    "    ud2\n"                    /* fn returned, which it must never do: crash loudly */
    ".size my_first_entry,.-my_first_entry\n"
    ".section .note.GNU-stack,\"\",@progbits\n"
    ".text\n");

void my_first_entry(void);

void *lk_user_make(void *stack_base, size_t stack_size, void (*fn)(void *), void *arg) {
    /* The frame sits just below the stack's 16-aligned top: after its six pops and the
     * ret, rsp is that top, 16-aligned when my_first_entry makes its call. */
    uintptr_t top = ((uintptr_t)stack_base + stack_size) & ~(uintptr_t)15;
    uint64_t *frame = (uint64_t *)top - 7;
    frame[0] = 0;                              /* r15 */
    frame[1] = 0;                              /* r14 */
    frame[2] = (uint64_t)(uintptr_t)arg;       /* r13: fn's argument */
    frame[3] = (uint64_t)(uintptr_t)fn;        /* r12: fn */
    frame[4] = 0;                              /* rbx */
    frame[5] = 0;                              /* rbp: 0 ends a frame-pointer walk */
    frame[6] = (uint64_t)(uintptr_t)&my_first_entry;  /* where the first ret goes */
    return frame;
}
