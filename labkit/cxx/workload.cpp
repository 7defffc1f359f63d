/* workload.cpp -- the described workload on the C++ peers (see workload.h and
 * csrc/workload.h): N coroutines under a round-robin scheduler, W of work and u bytes
 * touched per step, each loop timed against the same steps called without switching.
 *
 * Counting, as in csrc/workload.c: main bumps its counter after each transfer back to it,
 * each coroutine its own before each transfer to main and its step counter in each step. */
#include "workload.h"

#include <cerrno>
#include <coroutine>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/detail/fcontext.hpp>
#include <boost/context/fiber.hpp>
#include <boost/context/preallocated.hpp>
#include <boost/context/stack_context.hpp>

#include "../csrc/lk_timer.h"

namespace bctx = boost::context;

namespace {

enum { LKW_DESIGN_ENUM_START = -1,
#define LKW_ENUM(name, STACKFUL) LKW_##name,
       LKW_DESIGNS(LKW_ENUM) LKW_NDESIGNS };
#define LKW_NAME(name, STACKFUL) #name,
const char *const design_names[LKW_NDESIGNS] = {LKW_DESIGNS(LKW_NAME)};
#define LKW_STACKFUL(name, STACKFUL) STACKFUL,
const int design_stackful[LKW_NDESIGNS] = {LKW_DESIGNS(LKW_STACKFUL)};

struct alignas(64) slot {
    void *h;                   /* fcontext: its fcontext_t; C++20: its handle's address */
    char *buf;                 /* the bytes in use */
    volatile uint64_t count;   /* transfers this context made */
    volatile uint64_t steps;   /* steps it ran */
};

struct wlx {
    int design;
    uint64_t n, cursor;
    size_t in_use;
    uint64_t units, sink;
    volatile uint64_t main_count;
    slot *c;
    char *map;
    size_t map_size, slot_bytes, page;
    int guard;
    std::vector<bctx::fiber> *fibers;
    bool open;
};

wlx g;  /* static: its address is stable and off the stacks being measured */

inline void inc(volatile uint64_t &v) { v = v + 1; }

__attribute__((noinline)) void step(slot *s) {
    g.sink = lk_wl_touch_work(s->buf, g.in_use, g.units, g.sink);
    inc(s->steps);
}

/* ---- Boost.Context fcontext ---- */

void fctx_body(bctx::detail::transfer_t t) {
    slot *s = static_cast<slot *>(t.data);
    s->buf = LK_WL_BUFFER(g.in_use);
    for (;;) {
        step(s);
        inc(s->count);
        t = bctx::detail::jump_fcontext(t.fctx, nullptr);
    }
}

LK_TIMED_LOOP void loop_fcontext(uint64_t resumptions) {
    slot *c = g.c;
    uint64_t i = g.cursor, n = g.n;
    for (uint64_t r = 0; r < resumptions; r++) {
        c[i].h = bctx::detail::jump_fcontext(c[i].h, &c[i]).fctx;
        inc(g.main_count);
        if (++i == n) i = 0;
    }
    g.cursor = i;
}

/* ---- Boost.Context fiber ---- */

/* Hands Boost the stack it is given: the slot of the one mapping, freed with it. */
struct given_stack {
    bctx::stack_context sc;
    bctx::stack_context allocate() { return sc; }
    void deallocate(bctx::stack_context &) noexcept {}
};

LK_TIMED_LOOP void loop_fiber(uint64_t resumptions) {
    std::vector<bctx::fiber> &f = *g.fibers;
    uint64_t i = g.cursor, n = g.n;
    for (uint64_t r = 0; r < resumptions; r++) {
        f[i] = std::move(f[i]).resume();
        inc(g.main_count);
        if (++i == n) i = 0;
    }
    g.cursor = i;
}

/* ---- C++20 coroutines ---- */

/* Where the last frame made ends: its coroutine's buffer is allocated with it, past it. */
thread_local char *g_frame_end;

struct wco {
    struct promise_type {
        wco get_return_object() {
            return wco{std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
        static void *operator new(size_t n) {
            size_t frame = (n + 63) & ~size_t(63);
            char *p = static_cast<char *>(::operator new(frame + g.in_use, std::align_val_t(64)));
            g_frame_end = p + frame;
            return p;
        }
        static void operator delete(void *q) noexcept { ::operator delete(q, std::align_val_t(64)); }
    };
    std::coroutine_handle<promise_type> h;
};

wco cxx20_body(slot *s) {
    for (;;) {
        step(s);
        inc(s->count);
        co_await std::suspend_always{};
    }
}

LK_TIMED_LOOP void loop_cxx20(uint64_t resumptions) {
    slot *c = g.c;
    uint64_t i = g.cursor, n = g.n;
    for (uint64_t r = 0; r < resumptions; r++) {
        std::coroutine_handle<>::from_address(c[i].h).resume();
        inc(g.main_count);
        if (++i == n) i = 0;
    }
    g.cursor = i;
}

/* ---- the baseline: the same steps in place ---- */

LK_TIMED_LOOP void loop_base(uint64_t resumptions) {
    slot *c = g.c;
    uint64_t i = g.cursor, n = g.n;
    for (uint64_t r = 0; r < resumptions; r++) {
        step(&c[i]);
        inc(c[i].count);
        inc(g.main_count);
        if (++i == n) i = 0;
    }
    g.cursor = i;
}

typedef void (*loop_fn)(uint64_t);

loop_fn loop_of(int design) {
    switch (design) {
    case LKW_boost_fcontext: return loop_fcontext;
    case LKW_boost_fiber: return loop_fiber;
    case LKW_cxx20_generator: return loop_cxx20;
    default: return nullptr;
    }
}

void fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void totals(uint64_t start, uint64_t resumptions, uint64_t *count, uint64_t *steps) {
    LK_WL_TOTALS(g.c, g.n, g.main_count, start, resumptions, count, steps);
}

lk_wl_part timed(loop_fn f, uint64_t resumptions) {
    uint64_t start = g.cursor, c0, s0, c1, s1;
    totals(start, resumptions, &c0, &s0);
    lk_span span = lk_span_begin();
    f(resumptions);
    span = lk_span_end(span);
    totals(start, resumptions, &c1, &s1);
    return {span.ns, span.ticks, c1 - c0, s1 - s0, span.faults, span.preempted};
}

void close_all() {
    if (g.fibers) {
        /* A suspended fiber's destructor unwinds it on its own stack: before the unmap. */
        delete g.fibers;
    }
    if (g.design == LKW_cxx20_generator && g.c) {
        for (uint64_t i = 0; i < g.n; i++)
            if (g.c[i].h) std::coroutine_handle<>::from_address(g.c[i].h).destroy();
    }
    if (g.map) munmap(g.map, g.map_size);
    if (g.c) munmap(g.c, g.n * sizeof(slot));
    g = wlx{};
}

int open_cxx(int design, uint64_t n, size_t stack_size, int guard, size_t in_use,
             uint64_t units, char *err, size_t errlen) {
    close_all();
    if (design < 0 || design >= LKW_NDESIGNS) {
        fail(err, errlen, "unknown design %d", design);
        return -1;
    }
    if (n < 1) {
        fail(err, errlen, "a workload needs at least one coroutine");
        return -1;
    }
    g.design = design;
    g.page = (size_t)sysconf(_SC_PAGESIZE);
    g.in_use = (in_use + LK_WL_LINE - 1) / LK_WL_LINE * LK_WL_LINE;
    g.units = 0;  /* the first steps, in here, touch but do no work */
    g.sink = 1;
    g.guard = guard;
    g.c = static_cast<slot *>(lk_wl_map(n * sizeof(slot), 0));
    if (!g.c) {
        fail(err, errlen, "mmap of the coroutines' slots failed: %s", strerror(errno));
        return -1;
    }
    g.n = n;
    if (design_stackful[design]) {
        g.slot_bytes = (stack_size + g.page - 1) / g.page * g.page + (guard ? g.page : 0);
        g.map_size = n * g.slot_bytes;
        g.map = static_cast<char *>(lk_wl_map(g.map_size, 1));
        if (!g.map) {
            fail(err, errlen, "mmap of %llu stacks of %zu bytes failed: %s",
                 (unsigned long long)n, g.slot_bytes, strerror(errno));
            close_all();
            return -1;
        }
        if (design == LKW_boost_fiber) g.fibers = new std::vector<bctx::fiber>(n);
        for (uint64_t i = 0; i < n; i++) {
            char *lo = g.map + i * g.slot_bytes, *top = lo + g.slot_bytes;
            if (guard && mprotect(lo, g.page, PROT_NONE) != 0) {
                fail(err, errlen, "the guard page of stack %llu failed (each guard splits the "
                     "mapping: vm.max_map_count?): %s", (unsigned long long)i, strerror(errno));
                close_all();
                return -1;
            }
            slot *s = &g.c[i];
            size_t usable = g.slot_bytes - (guard ? g.page : 0);
            if (design == LKW_boost_fcontext) {
                s->h = bctx::detail::make_fcontext(top, usable, fctx_body);
            } else {
                bctx::stack_context sc;
                sc.sp = top;
                sc.size = usable;
                (*g.fibers)[i] = bctx::fiber(
                    std::allocator_arg, bctx::preallocated(top, usable, sc), given_stack{sc},
                    [s](bctx::fiber &&back) {
                        s->buf = LK_WL_BUFFER(g.in_use);
                        for (;;) {
                            step(s);
                            inc(s->count);
                            back = std::move(back).resume();
                        }
                        return std::move(back);
                    });
            }
        }
    } else {
        for (uint64_t i = 0; i < n; i++) {
            wco co = cxx20_body(&g.c[i]);
            g.c[i].h = co.h.address();
            g.c[i].buf = g.in_use ? g_frame_end : nullptr;
        }
    }
    g.open = true;
    /* Start each coroutine once, in order: buffers made and touched, pages committed. */
    loop_of(design)(n);
    g.cursor = 0;
    g.units = units;
    return 0;
}

int run_cxx(uint64_t resumptions, int warmup, int repeats, lk_wl_sample *out, char *err,
            size_t errlen) {
    loop_fn loop = g.open ? loop_of(g.design) : nullptr;
    if (!loop) {
        fail(err, errlen, "no workload is open (lkw_open first)");
        return -1;
    }
    if (resumptions < 1) {
        fail(err, errlen, "resumptions must be at least 1");
        return -1;
    }
    /* base, loop, loop, base, half the resumptions each, as csrc/workload.c. */
    const uint64_t first = resumptions / 2 ? resumptions / 2 : resumptions;
    const uint64_t halves[2] = {first, resumptions - first};
    for (int k = 0; k < warmup + repeats; k++) {
        lk_wl_sample scratch, *o = k < warmup ? &scratch : &out[k - warmup];
        std::memset(o, 0, sizeof *o);
        for (int h = 0; h < 2; h++) {
            if (!halves[h]) continue;
            lk_wl_part b, l;
            if (h == 0) {
                b = timed(loop_base, halves[h]);
                l = timed(loop, halves[h]);
            } else {
                l = timed(loop, halves[h]);
                b = timed(loop_base, halves[h]);
            }
            lk_wl_add(o, &b, &l);
        }
        o->resumptions = resumptions;
        o->switches = 2 * resumptions;
    }
    return 0;
}

}  // namespace

extern "C" {

const char *lkw_design_name(int design) {
    return (design >= 0 && design < LKW_NDESIGNS) ? design_names[design] : "?";
}

int lkw_open(int design, uint64_t n, size_t stack_size, int guard, size_t in_use,
             uint64_t units, char *err, size_t errlen) {
    /* Nothing may unwind into ctypes. */
    try {
        return open_cxx(design, n, stack_size, guard, in_use, units, err, errlen);
    } catch (const std::bad_alloc &) {
        fail(err, errlen, "%s: out of memory for %llu coroutines", lkw_design_name(design),
             (unsigned long long)n);
    } catch (const std::exception &e) {
        fail(err, errlen, "%s: %s", lkw_design_name(design), e.what());
    }
    close_all();
    return -1;
}

int lkw_run(uint64_t resumptions, int warmup, int repeats, lk_wl_sample *out, char *err,
            size_t errlen) {
    try {
        return run_cxx(resumptions, warmup, repeats, out, err, errlen);
    } catch (const std::exception &e) {
        fail(err, errlen, "%s", e.what());
    }
    return -1;
}

size_t lkw_depth(void) {
    if (!g.open || !design_stackful[g.design] || !g.c[0].buf) return 0;
    return (size_t)(g.map + g.slot_bytes - g.c[0].buf);
}

void lkw_close(void) { close_all(); }

LK_LAYOUT(lk_wl_sample, LK_WL_SAMPLE_FIELDS)

}  // extern "C"
