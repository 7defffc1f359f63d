/* stack.c -- guarded stacks and new contexts: the lowest layer of the C core, and the one
 * file that holds the switches themselves (the architecture's switch file, emitted here).
 * It calls nothing of labkit's: the copy stacks, the kernel table, the timed loops and the
 * stackful echo server build on it. */
#define _GNU_SOURCE
#include "labkit_core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define LK_SWITCH_CODE
#include "switch_platform.h"

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
    void (*fn)(void *) = (void (*)(void *))(((uintptr_t)fhi << 32) | flo);
    fn(arg);
    abort();  /* start functions never return */
}

/* Apart from lk_make: getcontext returns twice, and the compiler then fears for
 * every local of the function that calls it. */
__attribute__((noinline)) static void *make_ucontext(lk_stack *s, void (*fn)(void *), void *arg) {
    {
        /* The ucontext_t sits at the top of the stack it describes. */
        ucontext_t *volatile uc = (ucontext_t *)(((uintptr_t)s->top - sizeof(ucontext_t)) & ~(uintptr_t)63);
        if (getcontext(uc) != 0) return 0;
        uc->uc_stack.ss_sp = (char *)s->map + lk_page_size();
        uc->uc_stack.ss_size = (size_t)((char *)uc - (char *)uc->uc_stack.ss_sp);
        uc->uc_link = 0;
        uintptr_t a = (uintptr_t)arg, f = (uintptr_t)fn;
        makecontext(uc, (void (*)(void))uc_entry, 4, (unsigned)(a >> 32), (unsigned)a,
                    (unsigned)(f >> 32), (unsigned)f);
        return uc;
    }
}

void *lk_make(int kernel, lk_stack *s, void (*fn)(void *), void *arg) {
    enum lk_handle h = lk_handle_of(kernel);
    if (h == LK_HANDLE_uc) return make_ucontext(s, fn, arg);
    if (h == LK_HANDLE_copy) return 0;  /* needs a run stack: lk_copy_make */
    return lk_arch_make(kernel, s->top, fn, arg);
}
