/* lk_alloc.c -- a counting allocator linked into every echo server.
 *
 * Defining malloc and friends in the executable interposes them for the whole process,
 * libstdc++'s operator new, asio and liburing included (ELF symbol lookup finds the
 * executable's definition first), so "allocations per second" counts every heap
 * allocation the server makes, whatever made it. Each call forwards to glibc's own
 * entry points (__libc_malloc ...), which glibc exports for exactly this purpose.
 *
 * The servers are single-threaded; the counters are still updated atomically (relaxed,
 * uncontended: a few cycles) in case a library starts a thread of its own. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static uint64_t n_allocs, n_frees, n_bytes;

static inline void count_alloc(size_t n) {
    __atomic_fetch_add(&n_allocs, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&n_bytes, n, __ATOMIC_RELAXED);
}

void lk_alloc_counts(uint64_t *allocs, uint64_t *frees, uint64_t *bytes) {
    *allocs = __atomic_load_n(&n_allocs, __ATOMIC_RELAXED);
    *frees = __atomic_load_n(&n_frees, __ATOMIC_RELAXED);
    *bytes = __atomic_load_n(&n_bytes, __ATOMIC_RELAXED);
}

void *malloc(size_t n) {
    void *p = __libc_malloc(n);
    if (p) count_alloc(n);
    return p;
}

void *calloc(size_t k, size_t n) {
    void *p = __libc_calloc(k, n);
    if (p) count_alloc(k * n);
    return p;
}

/* realloc(NULL, n) is a malloc and realloc(p, 0) a free; a move in between is neither:
 * it is counted as one more allocation, since that is what it costs. */
void *realloc(void *old, size_t n) {
    if (!old) return malloc(n);
    void *p = __libc_realloc(old, n);
    if (n == 0) {
        __atomic_fetch_add(&n_frees, 1, __ATOMIC_RELAXED);
    } else if (p) {
        count_alloc(n);
        __atomic_fetch_add(&n_frees, 1, __ATOMIC_RELAXED);
    }
    return p;
}

void free(void *p) {
    if (!p) return;
    __atomic_fetch_add(&n_frees, 1, __ATOMIC_RELAXED);
    __libc_free(p);
}

void *memalign(size_t align, size_t n) {
    void *p = __libc_memalign(align, n);
    if (p) count_alloc(n);
    return p;
}

void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }

int posix_memalign(void **out, size_t align, size_t n) {
    if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
    void *p = memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n) { return memalign((size_t)sysconf(_SC_PAGESIZE), n); }

void *pvalloc(size_t n) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return memalign(page, (n + page - 1) & ~(page - 1));
}
