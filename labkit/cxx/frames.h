/* frames.h -- C++20 coroutine frames, what allocating them costs, and what a million
 * suspended coroutines or stackful contexts keep resident (notebooks 07a and 07b).
 *
 * Plain C so that ctypes can call it; the bodies are in frames.cpp, built into the C++
 * peers library (liblabkit_peers-<tag>.so) at every optimisation level. Every function
 * that can fail returns 0, or -1 with err filled; none lets a C++ exception out. */
#ifndef LABKIT_FRAMES_H
#define LABKIT_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "../csrc/lk_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The coroutine bodies whose frames are measured. All start suspended; none has
 * parameters except LKF_PARAMS, so that only what each name says differs. */
enum lkf_variant {
    LKF_EMPTY = 0,        /* co_return at once: no suspension point in the body */
    LKF_SUSPEND,          /* one co_await, nothing else: the base the others add to */
    LKF_LOCALS,           /* four scalars (8+8+8+4 bytes) alive across the suspension */
    LKF_PARAMS,           /* four uint64_t parameters by value, used after it */
    LKF_ARRAY_ALIVE,      /* a 64 KiB char array written before, read after the suspension */
    LKF_ARRAY_DEAD,       /* the same array, last used before the suspension */
    LKF_ARRAY_SCOPED,     /* the same, in a block that closes before the suspension */
    LKF_ARRAY_CALLEE,     /* the same array in an ordinary function called before it */
    LKF_OPTIONAL_LARGE,   /* std::optional<64 KiB struct>, left empty, alive across it */
    LKF_CONN256,          /* connection-like state sized for a 256-byte frame (GCC) */
    LKF_CONN192,          /* the same with fewer locals: a 192-byte frame (GCC) */
    LKF_NVARIANTS
};

/* Where frames (and the benchmark's blocks) come from. */
enum lkf_allocator {
    LKF_HEAP = 0,   /* ::operator new / ::operator delete (glibc malloc) */
    LKF_POOL,       /* one free-list pool, a global object */
    LKF_TLPOOL,     /* a free-list pool per thread, found through a thread_local pointer */
    LKF_ATOMIC_POOL,/* one lock-free free list (compare-and-swap), as article 001's pool */
    LKF_NALLOCATORS
};

/* One timed sample of the allocation benchmark. */
#define LKF_SAMPLE_FIELDS(F)                                                   \
    F(uint64_t, loop_ns) F(uint64_t, loop_ticks)  /* pairs allocate+free, timed */ \
    F(uint64_t, base_ns) F(uint64_t, base_ticks)  /* the same loop without allocating \
                                                     or freeing */                \
    F(uint64_t, pairs)                                                            \
    F(uint64_t, minor_faults)                     /* page faults in the timed loop */
LK_STRUCT(lkf_sample, LKF_SAMPLE_FIELDS)
LK_LAYOUT_DECL(lkf_sample)

/* A pool's own counters. Every block carved from a chunk is either in use or on a free
 * list: carved == in_use + free_blocks whenever no call is running. */
#define LKF_POOL_STATS_FIELDS(F)                                                 \
    F(uint64_t, allocs) F(uint64_t, frees)  /* served by the pool since it was last   \
                                               released */                          \
    F(uint64_t, in_use)       /* blocks handed out and not yet returned */           \
    F(uint64_t, carved)       /* blocks ever cut from chunks */                      \
    F(uint64_t, free_blocks)  /* blocks on the free lists (counted by walking them) */ \
    F(uint64_t, chunks) F(uint64_t, chunk_bytes)  /* memory the pool holds from mmap */ \
    F(uint64_t, passthrough)  /* requests too large for the pool, sent to the heap */
LK_STRUCT(lkf_pool_stats, LKF_POOL_STATS_FIELDS)
LK_LAYOUT_DECL(lkf_pool_stats)

/* What a run of many coroutines or contexts kept resident. The /proc/self/status
 * figures are in kB, read before anything is made (after the handle array is touched),
 * while everything is alive, and after everything is freed. */
#define LKF_MEM_REPORT_FIELDS(F)                                                    \
    F(uint64_t, n)             /* objects made */                                       \
    F(uint64_t, object_bytes)  /* frame bytes (coroutines) or usable stack bytes */     \
    F(uint64_t, rss_before_kb) F(uint64_t, rss_alive_kb) F(uint64_t, rss_after_kb)  /* VmRSS */ \
    F(uint64_t, anon_before_kb) F(uint64_t, anon_alive_kb) F(uint64_t, anon_after_kb) /* RssAnon */ \
    F(uint64_t, pte_before_kb) F(uint64_t, pte_alive_kb) F(uint64_t, pte_after_kb)  /* VmPTE: \
                                                                       page tables */   \
    F(uint64_t, rss_released_kb)  /* VmRSS after the pool gave its chunks back (pools) */ \
    F(uint64_t, create_ns)     /* making them all and running each to its suspension */ \
    F(uint64_t, destroy_ns)    /* freeing them all */                                   \
    F(uint64_t, minor_faults)  /* page faults while making them */                      \
    F(uint64_t, used_bytes)    /* frame bytes, or the deepest suspended stack: top - sp */ \
    F(uint64_t, guard_pages)   /* stackful: 1 if each stack has a PROT_NONE guard */
LK_STRUCT(lkf_mem_report, LKF_MEM_REPORT_FIELDS)
LK_LAYOUT_DECL(lkf_mem_report)

/* A connection's own state in the reuse strategy, outside any frame. */
typedef struct lkf_conn {
    int32_t fd;
    uint32_t state;
    uint64_t bytes;
} lkf_conn;

#define LKF_FUNCTIONS(F)                                                                     \
    F(const char *, lkf_variant_name, (int variant))                                         \
    F(const char *, lkf_allocator_name, (int allocator))                                     \
    /* Bytes the compiler asked the promise's operator new for, for one frame of the variant \
     * (the coroutine is made, run to its end and destroyed); 0 if no allocation happened    \
     * (the frame was elided) or the variant is unknown. */                                  \
    F(size_t, lkf_frame_bytes, (int variant))                                                \
    /* The sum of sizeof over the locals and parameters the variant keeps alive across its   \
     * suspension (0 for the variants with none). */                                         \
    F(size_t, lkf_live_bytes, (int variant))                                                 \
    /* sizeof the promise object every variant's frame holds. */                             \
    F(size_t, lkf_promise_bytes, (void))                                                     \
    /* pairs allocate+free pairs of block-byte blocks from allocator. live == 0: each block  \
     * is freed right after it is allocated (and written, as a new frame is). live > 0: live \
     * blocks are allocated first and stay allocated; each pair frees a pseudo-randomly      \
     * chosen one and allocates its replacement, as connections come and go. Each sample    \
     * times the loop and its baseline in the order base, loop, loop, base (half the pairs  \
     * each) and adds the halves. warmup samples are dropped; repeats are written to out. */\
    F(int, lkf_alloc_bench, (int allocator, size_t block, uint64_t pairs,                    \
                             uint64_t live, int warmup, int repeats, lkf_sample *out,        \
                             char *err, size_t errlen))                                      \
    /* Give every chunk back with munmap and zero the counters; -1 (nothing done) if blocks  \
     * are still in use. */                                                                  \
    F(int, lkf_pool_release, (int allocator))                                                \
    /* n coroutines of a variant with frames from allocator, made batch at a time: each is   \
     * made and resumed once, so that it sits at its suspension point with its locals        \
     * written; when batch are alive they are all destroyed and the next batch is made.      \
     * batch == n: all n alive together (the million run); batch == 1: create/destroy        \
     * cycles. pool is the pool's counters after the last batch is destroyed (zeros for      \
     * the heap). The pool starts empty (released first) and is given back afterwards only   \
     * if release_pool. The heap's free pages are returned first (malloc_trim), so that a    \
     * frame placed in memory freed earlier still shows in RSS. */                           \
    F(int, lkf_coro_run, (int variant, int allocator, uint64_t n, uint64_t batch,            \
                          int release_pool, lkf_mem_report *out, lkf_pool_stats *pool,       \
                          char *err, size_t errlen))                                         \
    /* n stackful contexts (Boost.Context fcontext) on mmapped stacks of stack_size usable   \
     * bytes (whole pages) cut from one mapping; guard puts a PROT_NONE page below each      \
     * (two VMAs a stack: mind vm.max_map_count). touch writes every page of each stack      \
     * before its context is made; otherwise only what making the context and running it to  \
     * its first suspension writes, at the top, is ever touched. Each context runs once and  \
     * suspends; the mapping is then unmapped with all of them suspended. */                 \
    F(int, lkf_stackful_run, (size_t stack_size, int touch, int guard, uint64_t n,           \
                              lkf_mem_report *out, char *err, size_t errlen))                \
    /* sizeof(lkf_conn). */                                                                  \
    F(size_t, lkf_conn_bytes, (void))                                                        \
    /* The coroutine-pool reuse strategy: n connection records served by pool_size           \
     * coroutines whose frames come from the pool (LKF_POOL) once and are reused, never      \
     * freed, for connection after connection (each worker: idle, handed a connection, reads \
     * into a 128-byte buffer, waits for the I/O, answers, idle again). Connections are      \
     * served in rounds of pool_size in flight; the memory is read with the last round in    \
     * flight, all n records and pool_size frames resident. served counts the connections    \
     * finished (must be n); pool's allocs must be pool_size. The pool starts empty and is   \
     * given back at the end. */                                                             \
    F(int, lkf_pool_reuse_run, (uint64_t n, uint64_t pool_size, lkf_mem_report *out,         \
                                lkf_pool_stats *pool, uint64_t *served, char *err,           \
                                size_t errlen))
LK_DECLARE(LKF_FUNCTIONS)

#ifdef __cplusplus
}
#endif

#endif
