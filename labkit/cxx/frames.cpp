/* frames.cpp -- C++20 coroutine frames: how big the compiler makes them, what allocating
 * them costs (heap against free-list pools), and what a million suspended coroutines, or
 * a million stackful contexts, keep resident. The API is in frames.h; notebooks 07a, 07b and
 * labkit/experiments/frames.py call it through ctypes inside a worker process.
 *
 * Frame sizes are read where the compiler states them: the promise's operator new gets
 * the frame's size as its argument. Resident memory is read from /proc/self/status while
 * the objects are alive, by this code, so that nothing else allocates in between. */
#include "frames.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <coroutine>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/detail/fcontext.hpp>

#include "../csrc/lk_timer.h"

namespace {

/* noipa: the compiler must not see through these, or it could drop the stores that
 * make a local worth keeping, or fold the seed into constants. */
#define LKF_OPAQUE __attribute__((noipa))
#define LKF_NOINLINE __attribute__((noinline))

void fail(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

volatile uint64_t g_sink;

LKF_OPAQUE uint64_t opaque_seed() { return 0x9e3779b97f4a7c15ull; }
LKF_OPAQUE bool opaque_false() { return false; }
LKF_OPAQUE void fill(void *p, size_t n) { memset(p, 0x5a, n); }
LKF_OPAQUE void consume(const void *p, size_t n) {
    const unsigned char *c = static_cast<const unsigned char *>(p);
    g_sink = g_sink + c[0] + (n ? c[n - 1] : 0);
}
LKF_OPAQUE void consume_u64(uint64_t v) { g_sink = g_sink + v; }

/* Keeps a pointer and everything written through it observable, at no instruction cost. */
inline void escape(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

/* ---- the pools ---- */

constexpr size_t kSmallStep = 16;            /* classes of 16 B up to 4 KiB ... */
constexpr size_t kSmallMax = 4096;
constexpr size_t kPage = 4096;               /* ... then whole pages up to 1 MiB */
constexpr size_t kLargeMax = 1 << 20;
constexpr size_t kSmallClasses = kSmallMax / kSmallStep;
constexpr size_t kClasses = kSmallClasses + kLargeMax / kPage + 1;
constexpr size_t kNoClass = ~size_t(0);
constexpr size_t kChunkBytes = 1 << 20;

size_t class_of(size_t n) {
    if (n == 0) n = 1;  /* operator new(0) still owes a distinct pointer */
    if (n <= kSmallMax) return (n + kSmallStep - 1) / kSmallStep - 1;
    if (n <= kLargeMax) return kSmallClasses + (n + kPage - 1) / kPage;
    return kNoClass;
}

size_t class_bytes(size_t c) {
    return c < kSmallClasses ? (c + 1) * kSmallStep : (c - kSmallClasses) * kPage;
}

struct free_block { free_block *next; };

/* Where the pools' blocks come from: mmapped chunks, cut by a bump pointer per size
 * class and only as blocks are asked for, so a chunk's unused tail costs address space
 * only. Blocks never come back here: the pools keep them on free lists until the whole
 * source is released. */
class chunk_source {
public:
    void *carve(size_t c) {
        const size_t bytes = class_bytes(c);
        bump_range &r = ranges_[c];
        if (static_cast<size_t>(r.end - r.bump) < bytes) {
            /* The rest of the old chunk is abandoned: never written, never resident. */
            size_t want = std::max(kChunkBytes, sizeof(chunk) + 8 * bytes);
            want = (want + kPage - 1) / kPage * kPage;
            void *m = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
            if (m == MAP_FAILED) throw std::bad_alloc();
            /* With THP set to "always", touching one block could commit 2 MiB. */
            madvise(m, want, MADV_NOHUGEPAGE);
            chunk *k = static_cast<chunk *>(m);
            k->next = chunks_;
            k->bytes = want;
            chunks_ = k;
            r.bump = static_cast<char *>(m) + sizeof(chunk);
            r.end = static_cast<char *>(m) + want;
        }
        void *p = r.bump;
        r.bump += bytes;
        ++carved_;
        return p;
    }

    void fill_stats(lkf_pool_stats &s) const {
        s.carved = carved_;
        for (chunk *k = chunks_; k; k = k->next) {
            s.chunks++;
            s.chunk_bytes += k->bytes;
        }
    }

    void release() {
        while (chunks_) {
            chunk *k = chunks_;
            chunks_ = k->next;
            munmap(k, k->bytes);
        }
        for (bump_range &r : ranges_) r = bump_range{};
        carved_ = 0;
    }

private:
    struct bump_range { char *bump, *end; };
    /* At the start of each chunk; 16 bytes keep the blocks after it 16-byte aligned,
     * as operator new must. */
    struct alignas(16) chunk { chunk *next; size_t bytes; };

    bump_range ranges_[kClasses]{};
    chunk *chunks_ = nullptr;
    uint64_t carved_ = 0;
};

/* Fixed-size blocks per size class, each class a LIFO free list: a freed block is the
 * next one handed out, still warm in the cache. One thread only, no atomics. */
class frame_pool {
public:
    void *allocate(size_t n) {
        size_t c = class_of(n);
        if (c == kNoClass) {
            ++passthrough_;
            return ::operator new(n);
        }
        if (free_block *b = heads_[c]) {
            heads_[c] = b->next;
            ++allocs_;
            return b;
        }
        void *p = source_.carve(c);
        ++allocs_;
        return p;
    }

    void deallocate(void *p, size_t n) noexcept {
        size_t c = class_of(n);
        if (c == kNoClass) {
            ::operator delete(p, n);
            return;
        }
        ++frees_;
        free_block *b = static_cast<free_block *>(p);
        b->next = heads_[c];
        heads_[c] = b;
    }

    lkf_pool_stats stats() const {
        lkf_pool_stats s{};
        s.allocs = allocs_;
        s.frees = frees_;
        s.in_use = allocs_ - frees_;
        for (free_block *h : heads_)
            for (free_block *b = h; b; b = b->next) s.free_blocks++;
        source_.fill_stats(s);
        s.passthrough = passthrough_;
        return s;
    }

    bool release() {
        if (allocs_ != frees_) return false;
        source_.release();
        for (free_block *&h : heads_) h = nullptr;
        allocs_ = frees_ = passthrough_ = 0;
        return true;
    }

private:
    free_block *heads_[kClasses]{};
    chunk_source source_;
    uint64_t allocs_ = 0, frees_ = 0, passthrough_ = 0;
};

/* The kind of pool article 001 shows: free lists any thread may pop and push with a
 * compare-and-swap, and a lock only when a list is empty and a block must be carved.
 * Like the article's, it does not guard against ABA (a pop racing a pop and a push);
 * here one thread uses it, so that cannot happen, and the cost measured is the cost of
 * the atomic instructions. It keeps no allocs/frees counters, which would need atomics
 * of their own: in_use is carved - free_blocks. */
class atomic_pool {
public:
    void *allocate(size_t n) {
        size_t c = class_of(n);
        if (c == kNoClass) {
            passthrough_.fetch_add(1, std::memory_order_relaxed);
            return ::operator new(n);
        }
        std::atomic<free_block *> &head = heads_[c];
        free_block *b = head.load(std::memory_order_acquire);
        while (b && !head.compare_exchange_weak(b, b->next, std::memory_order_acquire,
                                                std::memory_order_acquire)) {
        }
        if (b) return b;
        std::lock_guard<std::mutex> hold(carving_);
        return source_.carve(c);
    }

    void deallocate(void *p, size_t n) noexcept {
        size_t c = class_of(n);
        if (c == kNoClass) {
            ::operator delete(p, n);
            return;
        }
        free_block *b = static_cast<free_block *>(p);
        std::atomic<free_block *> &head = heads_[c];
        b->next = head.load(std::memory_order_relaxed);
        while (!head.compare_exchange_weak(b->next, b, std::memory_order_release,
                                           std::memory_order_relaxed)) {
        }
    }

    lkf_pool_stats stats() {
        lkf_pool_stats s{};
        std::lock_guard<std::mutex> hold(carving_);
        for (std::atomic<free_block *> &h : heads_)
            for (free_block *b = h.load(std::memory_order_acquire); b; b = b->next)
                s.free_blocks++;
        source_.fill_stats(s);
        s.in_use = s.carved - s.free_blocks;
        s.passthrough = passthrough_.load(std::memory_order_relaxed);
        return s;
    }

    bool release() {
        if (stats().in_use != 0) return false;
        std::lock_guard<std::mutex> hold(carving_);
        source_.release();
        for (std::atomic<free_block *> &h : heads_) h.store(nullptr, std::memory_order_relaxed);
        passthrough_.store(0, std::memory_order_relaxed);
        return true;
    }

private:
    std::atomic<free_block *> heads_[kClasses]{};
    std::mutex carving_;
    chunk_source source_;
    std::atomic<uint64_t> passthrough_{0};
};

frame_pool g_pool;
atomic_pool g_atomic_pool;

/* initial-exec: one load from %fs, what a pool in the program itself would pay; the
 * default model in a shared library would add a __tls_get_addr call to every access.
 * The pool it points to lives as long as the process (this lab never ends threads that
 * used it). */
__attribute__((tls_model("initial-exec"))) thread_local frame_pool *tl_pool;

frame_pool &this_thread_pool() {
    frame_pool *p = tl_pool;
    if (__builtin_expect(p == nullptr, 0)) p = tl_pool = new frame_pool;
    return *p;
}

struct heap_alloc {
    static void *allocate(size_t n) { return ::operator new(n); }
    static void deallocate(void *p, size_t n) noexcept { ::operator delete(p, n); }
};
struct pool_alloc {
    static void *allocate(size_t n) { return g_pool.allocate(n); }
    static void deallocate(void *p, size_t n) noexcept { g_pool.deallocate(p, n); }
};
struct tlpool_alloc {
    static void *allocate(size_t n) { return this_thread_pool().allocate(n); }
    static void deallocate(void *p, size_t n) noexcept { this_thread_pool().deallocate(p, n); }
};
struct atomic_alloc {
    static void *allocate(size_t n) { return g_atomic_pool.allocate(n); }
    static void deallocate(void *p, size_t n) noexcept { g_atomic_pool.deallocate(p, n); }
};

bool pool_stats(int allocator, lkf_pool_stats *out) {
    switch (allocator) {
    case LKF_POOL: *out = g_pool.stats(); return true;
    case LKF_TLPOOL: *out = this_thread_pool().stats(); return true;
    case LKF_ATOMIC_POOL: *out = g_atomic_pool.stats(); return true;
    default: return false;
    }
}

bool pool_release(int allocator) {
    switch (allocator) {
    case LKF_POOL: return g_pool.release();
    case LKF_TLPOOL: return this_thread_pool().release();
    case LKF_ATOMIC_POOL: return g_atomic_pool.release();
    default: return false;
    }
}

/* ---- the coroutines ---- */

size_t g_last_frame;

/* Starts suspended and stays in its frame after the end, so that its owner decides when
 * the frame goes. The promise carries one word, as a real one carries a result or an id. */
template <class Alloc>
struct task {
    struct promise_type {
        uint64_t id = 0;
        task get_return_object() noexcept {
            return task{std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
        static void *operator new(size_t n) {
            g_last_frame = n;
            return Alloc::allocate(n);
        }
        static void operator delete(void *p, size_t n) noexcept { Alloc::deallocate(p, n); }
    };
    std::coroutine_handle<promise_type> h;
};

constexpr size_t kArray = 65536;
struct large { uint64_t words[kArray / sizeof(uint64_t)]; };

/* Connection-like state: a descriptor, a state word, a byte count and a read buffer.
 * The buffers are sized so that GCC's frames come to 256 and 192 bytes, the article's
 * two sizes: the buffer plus 64 bytes of header, promise, scalars and padding. */
constexpr size_t kConn256Buffer = 192;
constexpr size_t kConn192Buffer = 128;

template <class A> task<A> v_empty() { co_return; }

template <class A> task<A> v_suspend() { co_await std::suspend_always{}; }

template <class A> task<A> v_locals() {
    uint64_t a = opaque_seed();
    double b = static_cast<double>(a) * 0.5;
    void *c = &a;
    uint32_t d = static_cast<uint32_t>(a >> 7);
    co_await std::suspend_always{};
    consume_u64(a + static_cast<uint64_t>(b) + d);
    consume(c, 1);
}
constexpr size_t kLocalsLive = sizeof(uint64_t) + sizeof(double) + sizeof(void *) + sizeof(uint32_t);

template <class A> task<A> v_params(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    co_await std::suspend_always{};
    consume_u64(a + b + c + d);
}
constexpr size_t kParamsLive = 4 * sizeof(uint64_t);

template <class A> task<A> v_array_alive() {
    char buf[kArray];
    fill(buf, sizeof buf);
    co_await std::suspend_always{};
    consume(buf, sizeof buf);
}

template <class A> task<A> v_array_dead() {
    char buf[kArray];
    fill(buf, sizeof buf);
    consume(buf, sizeof buf);
    co_await std::suspend_always{};
}

template <class A> task<A> v_array_scoped() {
    {
        char buf[kArray];
        fill(buf, sizeof buf);
        consume(buf, sizeof buf);
    }
    co_await std::suspend_always{};
}

/* An ordinary function: its locals live on the stack of whoever resumed the coroutine,
 * and are gone before the coroutine suspends. */
LKF_OPAQUE void buffer_in_callee() {
    char buf[kArray];
    fill(buf, sizeof buf);
    consume(buf, sizeof buf);
}

template <class A> task<A> v_array_callee() {
    buffer_in_callee();
    co_await std::suspend_always{};
}

template <class A> task<A> v_optional_large() {
    std::optional<large> heavy;
    if (opaque_false()) heavy.emplace();
    co_await std::suspend_always{};
    if (heavy) consume(heavy->words, sizeof heavy->words);
}

template <class A, size_t Buffer> task<A> v_conn() {
    int fd = static_cast<int>(opaque_seed() & 0xffff);
    uint32_t state = 1;
    uint64_t bytes = 0;
    char buf[Buffer];
    fill(buf, sizeof buf);
    bytes += sizeof buf;
    co_await std::suspend_always{};
    consume(buf, sizeof buf);
    consume_u64(bytes + fd + state);
}
constexpr size_t conn_live(size_t buffer) {
    return sizeof(int) + sizeof(uint32_t) + sizeof(uint64_t) + buffer;
}

/* The reuse strategy: connections are plain records, and a fixed pool of coroutines
 * serves them one after another. A worker's frame is made once and never freed: it
 * waits idle, is handed a connection, reads into its buffer, waits for the I/O, answers,
 * and goes back to waiting for the next connection. */
struct reuse_slot {
    lkf_conn *conn;     /* the connection this worker serves now (set by the scheduler) */
    uint64_t served;    /* connections it finished */
};

template <class A> task<A> v_reuse_worker(reuse_slot *slot) {
    for (;;) {
        co_await std::suspend_always{};  /* idle in the pool */
        lkf_conn *c = slot->conn;
        char buf[kConn192Buffer];
        fill(buf, sizeof buf);
        c->bytes += sizeof buf;
        co_await std::suspend_always{};  /* waiting for its I/O, the buffer alive */
        consume(buf, sizeof buf);
        c->state++;
        slot->served++;
    }
}

template <class A> std::coroutine_handle<> make(int variant) {
    switch (variant) {
    case LKF_EMPTY: return v_empty<A>().h;
    case LKF_SUSPEND: return v_suspend<A>().h;
    case LKF_LOCALS: return v_locals<A>().h;
    case LKF_PARAMS: {
        uint64_t s = opaque_seed();
        return v_params<A>(s, s + 1, s + 2, s + 3).h;
    }
    case LKF_ARRAY_ALIVE: return v_array_alive<A>().h;
    case LKF_ARRAY_DEAD: return v_array_dead<A>().h;
    case LKF_ARRAY_SCOPED: return v_array_scoped<A>().h;
    case LKF_ARRAY_CALLEE: return v_array_callee<A>().h;
    case LKF_OPTIONAL_LARGE: return v_optional_large<A>().h;
    case LKF_CONN256: return v_conn<A, kConn256Buffer>().h;
    case LKF_CONN192: return v_conn<A, kConn192Buffer>().h;
    default: return nullptr;
    }
}

std::coroutine_handle<> make_with(int allocator, int variant) {
    switch (allocator) {
    case LKF_HEAP: return make<heap_alloc>(variant);
    case LKF_POOL: return make<pool_alloc>(variant);
    case LKF_TLPOOL: return make<tlpool_alloc>(variant);
    case LKF_ATOMIC_POOL: return make<atomic_alloc>(variant);
    default: return nullptr;
    }
}

/* Owns the coroutines of a run, so that an allocation failure halfway still frees
 * the ones already made. */
struct handles {
    std::vector<std::coroutine_handle<>> h;
    size_t alive = 0;
    explicit handles(size_t n) : h(n) {}  /* value-initialised: every page written now */
    void destroy_all() {
        for (size_t i = 0; i < alive; i++) h[i].destroy();
        alive = 0;
    }
    ~handles() { destroy_all(); }
};

/* ---- /proc/self/status ---- */

struct status_kb { uint64_t rss, anon, pte; };

/* The memory columns of a report: before anything was made, with everything alive, and
 * after everything was destroyed. */
void put_memory(lkf_mem_report *out, const status_kb &before, const status_kb &alive,
                const status_kb &after) {
    out->rss_before_kb = before.rss;
    out->rss_alive_kb = alive.rss;
    out->rss_after_kb = after.rss;
    out->anon_before_kb = before.anon;
    out->anon_alive_kb = alive.anon;
    out->anon_after_kb = after.anon;
    out->pte_before_kb = before.pte;
    out->pte_alive_kb = alive.pte;
    out->pte_after_kb = after.pte;
}

uint64_t field_kb(const char *text, const char *name) {
    const char *p = strstr(text, name);
    return p ? strtoull(p + strlen(name), nullptr, 10) : 0;
}

/* Read with open/read into a stack buffer: stdio would allocate while we measure. */
status_kb read_status() {
    char buf[8192];
    status_kb s{};
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return s;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return s;
    buf[n] = '\0';
    s.rss = field_kb(buf, "\nVmRSS:");
    s.anon = field_kb(buf, "\nRssAnon:");
    s.pte = field_kb(buf, "\nVmPTE:");
    return s;
}

/* ---- the allocation benchmark ---- */

/* What a new frame gets first: its resume and destroy pointers. */
inline void write_header(void *p) {
    uint64_t *w = static_cast<uint64_t *>(p);
    w[0] = reinterpret_cast<uint64_t>(p);
    w[1] = 1;
    escape(p);
}

alignas(64) unsigned char g_scratch[64];

template <class A> LKF_NOINLINE void loop_one(size_t block, uint64_t pairs, void **, uint64_t) {
    for (uint64_t i = 0; i < pairs; i++) {
        void *p = A::allocate(block);
        write_header(p);
        A::deallocate(p, block);
    }
}
LKF_NOINLINE void base_one(size_t, uint64_t pairs, void **, uint64_t) {
    for (uint64_t i = 0; i < pairs; i++) write_header(g_scratch);
}

inline uint64_t xorshift(uint64_t x) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}
/* A slot in [0, live) without a division (Lemire's multiply-shift). */
inline uint64_t pick(uint64_t x, uint64_t live) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(x) * live) >> 64);
}

template <class A>
LKF_NOINLINE void loop_live(size_t block, uint64_t pairs, void **slots, uint64_t live) {
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (uint64_t i = 0; i < pairs; i++) {
        x = xorshift(x);
        uint64_t j = pick(x, live);
        A::deallocate(slots[j], block);
        void *p = A::allocate(block);
        write_header(p);
        slots[j] = p;
    }
}
/* The same slot choice and the same write to a live block (its cache miss included),
 * without the allocator. */
LKF_NOINLINE void base_live(size_t, uint64_t pairs, void **slots, uint64_t live) {
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (uint64_t i = 0; i < pairs; i++) {
        x = xorshift(x);
        uint64_t j = pick(x, live);
        void *p = slots[j];
        write_header(p);
        slots[j] = p;
    }
}

using bench_loop = void (*)(size_t, uint64_t, void **, uint64_t);

void time_loop(bench_loop f, size_t block, uint64_t pairs, void **slots, uint64_t live,
               uint64_t *ns, uint64_t *ticks, uint64_t *faults) {
    lk_span span = lk_span_begin();
    f(block, pairs, slots, live);
    span = lk_span_end(span);
    *ns = span.ns;
    *ticks = span.ticks;
    if (faults) *faults = span.faults;
}

template <class A>
int alloc_bench(size_t block, uint64_t pairs, uint64_t live, int warmup, int repeats,
                lkf_sample *out) {
    std::vector<void *> slots(live);
    for (uint64_t i = 0; i < live; i++) {
        slots[i] = A::allocate(block);
        write_header(slots[i]);
    }
    bench_loop loop = live ? loop_live<A> : loop_one<A>;
    bench_loop base = live ? base_live : base_one;
    void **s = slots.data();
    uint64_t ns, ticks;
    for (int w = 0; w < warmup; w++) {
        time_loop(base, block, pairs, s, live, &ns, &ticks, nullptr);
        time_loop(loop, block, pairs, s, live, &ns, &ticks, nullptr);
    }
    /* Each sample times the two loops in the order base, loop, loop, base, half the pairs
     * each time, and adds the halves up: a drift across the sample (the cache and TLB
     * state the previous loop left, the clock, a neighbour's load) then weighs on both
     * loops alike instead of on whichever ran second. */
    const uint64_t first = pairs / 2 ? pairs / 2 : pairs, second = pairs - first;
    for (int r = 0; r < repeats; r++) {
        lkf_sample *o = &out[r];
        uint64_t b_ns[2] = {0, 0}, b_ticks[2] = {0, 0}, l_ns[2] = {0, 0}, l_ticks[2] = {0, 0};
        uint64_t f[2] = {0, 0};
        time_loop(base, block, first, s, live, &b_ns[0], &b_ticks[0], nullptr);
        time_loop(loop, block, first, s, live, &l_ns[0], &l_ticks[0], &f[0]);
        if (second) {
            time_loop(loop, block, second, s, live, &l_ns[1], &l_ticks[1], &f[1]);
            time_loop(base, block, second, s, live, &b_ns[1], &b_ticks[1], nullptr);
        }
        o->base_ns = b_ns[0] + b_ns[1];
        o->base_ticks = b_ticks[0] + b_ticks[1];
        o->loop_ns = l_ns[0] + l_ns[1];
        o->loop_ticks = l_ticks[0] + l_ticks[1];
        o->minor_faults = f[0] + f[1];
        o->pairs = pairs;
    }
    for (uint64_t i = 0; i < live; i++) A::deallocate(slots[i], block);
    return 0;
}

/* ---- stackful contexts ---- */

namespace bcd = boost::context::detail;

/* Runs once, on its own stack, and hands control straight back: the context then stays
 * suspended inside jump_fcontext, its registers saved near the top of its stack. */
void parked(bcd::transfer_t t) {
    bcd::jump_fcontext(t.fctx, nullptr);
    std::abort();  /* never resumed */
}

const char *kVariantNames[LKF_NVARIANTS] = {
    "empty", "suspend", "locals", "params", "array_alive", "array_dead", "array_scoped",
    "array_callee", "optional_large", "conn256", "conn192",
};
const char *kAllocatorNames[LKF_NALLOCATORS] = {"heap", "pool", "tlpool", "atomic"};

}  // namespace

extern "C" {

const char *lkf_variant_name(int variant) {
    return variant >= 0 && variant < LKF_NVARIANTS ? kVariantNames[variant] : "?";
}

const char *lkf_allocator_name(int allocator) {
    return allocator >= 0 && allocator < LKF_NALLOCATORS ? kAllocatorNames[allocator] : "?";
}

size_t lkf_frame_bytes(int variant) {
    if (variant < 0 || variant >= LKF_NVARIANTS) return 0;
    try {
        g_last_frame = 0;
        std::coroutine_handle<> h = make<heap_alloc>(variant);
        size_t n = g_last_frame;
        while (!h.done()) h.resume();
        h.destroy();
        return n;
    } catch (...) {
        return 0;
    }
}

size_t lkf_live_bytes(int variant) {
    switch (variant) {
    case LKF_LOCALS: return kLocalsLive;
    case LKF_PARAMS: return kParamsLive;
    case LKF_ARRAY_ALIVE: return kArray;
    case LKF_OPTIONAL_LARGE: return sizeof(std::optional<large>);
    case LKF_CONN256: return conn_live(kConn256Buffer);
    case LKF_CONN192: return conn_live(kConn192Buffer);
    default: return 0;
    }
}

size_t lkf_promise_bytes(void) { return sizeof(task<heap_alloc>::promise_type); }

int lkf_alloc_bench(int allocator, size_t block, uint64_t pairs, uint64_t live, int warmup,
                    int repeats, lkf_sample *out, char *err, size_t errlen) {
    if (block < 16 || block > kLargeMax) {
        fail(err, errlen, "block must be 16 .. %zu bytes; got %zu", kLargeMax, block);
        return -1;
    }
    if (pairs == 0 || repeats < 1 || warmup < 0) {
        fail(err, errlen, "pairs and repeats must be >= 1, warmup >= 0");
        return -1;
    }
    try {
        switch (allocator) {
        case LKF_HEAP: return alloc_bench<heap_alloc>(block, pairs, live, warmup, repeats, out);
        case LKF_POOL: return alloc_bench<pool_alloc>(block, pairs, live, warmup, repeats, out);
        case LKF_TLPOOL:
            return alloc_bench<tlpool_alloc>(block, pairs, live, warmup, repeats, out);
        case LKF_ATOMIC_POOL:
            return alloc_bench<atomic_alloc>(block, pairs, live, warmup, repeats, out);
        default: fail(err, errlen, "unknown allocator %d", allocator); return -1;
        }
    } catch (const std::bad_alloc &) {
        fail(err, errlen, "out of memory: %llu live blocks of %zu bytes",
             static_cast<unsigned long long>(live), block);
    } catch (...) {
        fail(err, errlen, "unknown C++ exception");
    }
    return -1;
}

int lkf_pool_release(int allocator) { return pool_release(allocator) ? 0 : -1; }

int lkf_coro_run(int variant, int allocator, uint64_t n, uint64_t batch, int release_pool,
                 lkf_mem_report *out, lkf_pool_stats *pool, char *err, size_t errlen) {
    if (variant < 0 || variant >= LKF_NVARIANTS || allocator < 0 ||
        allocator >= LKF_NALLOCATORS) {
        fail(err, errlen, "unknown variant %d or allocator %d", variant, allocator);
        return -1;
    }
    if (n == 0 || batch == 0 || batch > n) {
        fail(err, errlen, "need 1 <= batch <= n; got n=%llu batch=%llu",
             static_cast<unsigned long long>(n), static_cast<unsigned long long>(batch));
        return -1;
    }
    memset(out, 0, sizeof *out);
    memset(pool, 0, sizeof *pool);
    try {
        const bool pooled = allocator != LKF_HEAP;
        /* Start from an empty pool, so its counters speak of this run alone. */
        if (pooled && !pool_release(allocator)) {
            pool_stats(allocator, pool);
            fail(err, errlen, "the %s pool still has %llu blocks in use",
                 lkf_allocator_name(allocator), static_cast<unsigned long long>(pool->in_use));
            return -1;
        }
        handles hs(batch);
        /* Hand the heap's free pages back first: frames placed in memory that earlier
         * code freed but kept resident would not move RSS at all. */
        malloc_trim(0);
        status_kb before = read_status(), alive{};
        uint64_t f0 = lk_minor_faults(), faults = 0, create = 0, destroy = 0;
        for (uint64_t made = 0; made < n;) {
            uint64_t k = std::min(batch, n - made);
            uint64_t t0 = lk_now_ns();
            for (uint64_t i = 0; i < k; i++) {
                hs.h[i] = make_with(allocator, variant);
                hs.alive = i + 1;
                hs.h[i].resume();  /* to its suspension point, its locals written */
            }
            uint64_t t1 = lk_now_ns();
            made += k;
            faults = lk_minor_faults() - f0;
            if (made == n) alive = read_status();
            uint64_t t2 = lk_now_ns();
            hs.destroy_all();
            uint64_t t3 = lk_now_ns();
            create += t1 - t0;
            destroy += t3 - t2;
        }
        status_kb after = read_status();
        out->n = n;
        out->object_bytes = out->used_bytes = g_last_frame;
        put_memory(out, before, alive, after);
        out->create_ns = create;
        out->destroy_ns = destroy;
        out->minor_faults = faults;
        out->rss_released_kb = after.rss;
        if (pooled) {
            pool_stats(allocator, pool);
            if (release_pool && pool_release(allocator)) out->rss_released_kb = read_status().rss;
        }
        return 0;
    } catch (const std::bad_alloc &) {
        fail(err, errlen, "out of memory making %llu %s coroutines",
             static_cast<unsigned long long>(n), lkf_variant_name(variant));
    } catch (...) {
        fail(err, errlen, "unknown C++ exception");
    }
    return -1;
}

int lkf_pool_reuse_run(uint64_t n, uint64_t pool_size, lkf_mem_report *out,
                       lkf_pool_stats *pool, uint64_t *served, char *err, size_t errlen) {
    if (n == 0 || pool_size == 0 || pool_size > n) {
        fail(err, errlen, "need 1 <= pool_size <= n; got n=%llu pool_size=%llu",
             static_cast<unsigned long long>(n), static_cast<unsigned long long>(pool_size));
        return -1;
    }
    memset(out, 0, sizeof *out);
    memset(pool, 0, sizeof *pool);
    *served = 0;
    try {
        if (!pool_release(LKF_POOL)) {
            fail(err, errlen, "the pool still has blocks in use");
            return -1;
        }
        /* The scheduler's own tables (a handle and a slot per worker) are written before
         * the first reading, as the default design's handle array is: what is measured
         * is the connections' records and the workers' frames. */
        std::vector<task<pool_alloc>> workers;
        workers.reserve(pool_size);
        std::vector<reuse_slot> slots(pool_size);
        struct owner {  /* destroys the workers however the run ends */
            std::vector<task<pool_alloc>> &w;
            ~owner() { for (auto &t : w) t.h.destroy(); }
        } own{workers};
        malloc_trim(0);
        status_kb before = read_status(), alive{};
        uint64_t f0 = lk_minor_faults();
        uint64_t t0 = lk_now_ns();
        std::vector<lkf_conn> conns(n);  /* value-initialised: every record written */
        for (uint64_t k = 0; k < pool_size; k++) {
            workers.push_back(v_reuse_worker<pool_alloc>(&slots[k]));
            workers.back().h.resume();  /* to its idle suspension */
        }
        uint64_t t1 = lk_now_ns();
        /* Rounds of pool_size connections in flight: each worker is handed one, reads and
         * waits for its I/O; with the last round in flight the memory is read; then each
         * answers and is idle again. */
        for (uint64_t first = 0; first < n; first += pool_size) {
            uint64_t k_end = std::min(pool_size, n - first);
            for (uint64_t k = 0; k < k_end; k++) {
                slots[k].conn = &conns[first + k];
                conns[first + k].fd = static_cast<int32_t>(first + k);
                workers[k].h.resume();
            }
            if (first + pool_size >= n) alive = read_status();
            for (uint64_t k = 0; k < k_end; k++) workers[k].h.resume();
        }
        uint64_t faults = lk_minor_faults() - f0;
        for (const reuse_slot &sl : slots) *served += sl.served;
        pool_stats(LKF_POOL, pool);  /* allocs == pool_size: no frame per connection */
        uint64_t t2 = lk_now_ns();
        for (auto &t : workers) t.h.destroy();
        workers.clear();
        std::vector<lkf_conn>().swap(conns);
        uint64_t t3 = lk_now_ns();
        status_kb after = read_status();
        out->n = n;
        out->object_bytes = out->used_bytes = g_last_frame;
        put_memory(out, before, alive, after);
        out->create_ns = t1 - t0;
        out->destroy_ns = t3 - t2;
        out->minor_faults = faults;
        out->rss_released_kb = after.rss;
        if (pool_release(LKF_POOL)) out->rss_released_kb = read_status().rss;
        return 0;
    } catch (const std::bad_alloc &) {
        fail(err, errlen, "out of memory for %llu connections and %llu workers",
             static_cast<unsigned long long>(n), static_cast<unsigned long long>(pool_size));
    } catch (...) {
        fail(err, errlen, "unknown C++ exception");
    }
    return -1;
}

size_t lkf_conn_bytes(void) { return sizeof(lkf_conn); }

int lkf_stackful_run(size_t stack_size, int touch, int guard, uint64_t n,
                     lkf_mem_report *out, char *err, size_t errlen) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    if (stack_size < page || stack_size % page) {
        fail(err, errlen, "stack_size must be a whole number of %zu-byte pages; got %zu", page,
             stack_size);
        return -1;
    }
    if (n == 0) {
        fail(err, errlen, "n must be >= 1");
        return -1;
    }
    const size_t slot = stack_size + (guard ? page : 0);
    if (n > SIZE_MAX / slot) {
        fail(err, errlen, "%llu stacks of %zu bytes overflow the address space",
             static_cast<unsigned long long>(n), slot);
        return -1;
    }
    memset(out, 0, sizeof *out);
    try {
        std::vector<bcd::fcontext_t> ctx(n);  /* written now, before the first reading */
        status_kb before = read_status();
        uint64_t f0 = lk_minor_faults();
        uint64_t t0 = lk_now_ns();
        const size_t total = slot * n;
        /* One mapping for all stacks: one VMA (two a stack with guards), and NORESERVE
         * so the heuristic overcommit check does not count pages never touched. */
        char *map = static_cast<char *>(mmap(nullptr, total, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
        if (map == MAP_FAILED) {
            fail(err, errlen, "mmap of %llu stacks (%zu bytes) failed: %s",
                 static_cast<unsigned long long>(n), total, strerror(errno));
            return -1;
        }
        /* Under THP "always" a touched top page could bring a 2 MiB page with it. */
        madvise(map, total, MADV_NOHUGEPAGE);
        if (guard) {
            for (uint64_t i = 0; i < n; i++) {
                if (mprotect(map + i * slot, page, PROT_NONE) != 0) {
                    int e = errno;
                    munmap(map, total);
                    fail(err, errlen, "guard page %llu of %llu: mprotect failed (%s); each "
                         "guard splits the mapping, see vm.max_map_count",
                         static_cast<unsigned long long>(i), static_cast<unsigned long long>(n),
                         strerror(e));
                    return -1;
                }
            }
        }
        uint64_t deepest = 0;
        for (uint64_t i = 0; i < n; i++) {
            char *lo = map + i * slot + (guard ? page : 0);
            char *top = lo + stack_size;
            if (touch)
                for (char *p = lo; p < top; p += page) *reinterpret_cast<volatile char *>(p) = 0;
            bcd::fcontext_t c = bcd::make_fcontext(top, stack_size, parked);
            ctx[i] = bcd::jump_fcontext(c, nullptr).fctx;
            uint64_t used = static_cast<uint64_t>(top - static_cast<char *>(ctx[i]));
            deepest = std::max(deepest, used);
        }
        uint64_t t1 = lk_now_ns();
        uint64_t faults = lk_minor_faults() - f0;
        status_kb alive = read_status();
        uint64_t t2 = lk_now_ns();
        munmap(map, total);  /* every context is abandoned while suspended: nothing to unwind */
        uint64_t t3 = lk_now_ns();
        status_kb after = read_status();
        out->n = n;
        out->object_bytes = stack_size;
        out->used_bytes = deepest;
        put_memory(out, before, alive, after);
        out->rss_released_kb = after.rss;
        out->create_ns = t1 - t0;
        out->destroy_ns = t3 - t2;
        out->minor_faults = faults;
        out->guard_pages = guard ? 1 : 0;
        return 0;
    } catch (const std::bad_alloc &) {
        fail(err, errlen, "out of memory for %llu context handles",
             static_cast<unsigned long long>(n));
    } catch (...) {
        fail(err, errlen, "unknown C++ exception");
    }
    return -1;
}

/* What labkit/core/structs.py reads these structs by (lk_layout.h). */
LK_LAYOUT(lkf_sample, LKF_SAMPLE_FIELDS)
LK_LAYOUT(lkf_pool_stats, LKF_POOL_STATS_FIELDS)
LK_LAYOUT(lkf_mem_report, LKF_MEM_REPORT_FIELDS)

}  // extern "C"
