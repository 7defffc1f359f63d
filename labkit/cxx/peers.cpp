/* peers.cpp -- the real peer systems, timed exactly as harness.c times the lab's kernels.
 *
 * Each peer is a loop of R rounds = 2R transfers of control. Each side bumps its own
 * volatile counter once per transfer it makes, so the two counters must add up to 2R;
 * the same loop without the transfer (the two increments only) is timed right before
 * each sample and is the baseline. For the plain calls and the syscall, a "transfer" is
 * one call: two per round, each bumping one counter.
 *
 * Build: g++ -std=c++20 -O2 -fPIC -c peers.cpp; link with -lboost_context -lboost_fiber. */
#include "peers.h"
#include "frames.h"
#include "workload.h"

#include <coroutine>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <new>
#include <utility>

#include <sys/syscall.h>
#include <unistd.h>

#include <boost/context/detail/fcontext.hpp>
#include <boost/context/fiber.hpp>
#include <boost/context/fixedsize_stack.hpp>
#include <boost/fiber/fiber.hpp>
#include <boost/fiber/fixedsize_stack.hpp>
#include <boost/fiber/operations.hpp>
/* Boost.Coroutine2 is header-only, over Boost.Context; its headers come with Boost's. */
#if __has_include(<boost/coroutine2/coroutine.hpp>)
#include <boost/coroutine2/coroutine.hpp>
#include <boost/coroutine2/fixedsize_stack.hpp>
#define LKX_HAVE_COROUTINE2 1
#else
#define LKX_HAVE_COROUTINE2 0
#endif

#include "../csrc/lk_timer.h"

namespace bctx = boost::context;

namespace {

/* noipa, not just noinline: GCC would otherwise use what it knows of the callee (which
 * registers it leaves alone) and the call would be cheaper than a call to code the
 * compiler has not seen, such as a library function. */
#define LKX_OPAQUE __attribute__((noipa))

struct fibers_pair;

/* One ping-pong's state. Kept in a static, as harness.c does, so that its address is
 * stable and it lies on none of the stacks being switched. */
struct pingpong {
    volatile uint64_t main_count, co_count;
    uint64_t rounds;                        /* symmetric: round trips per run */
    bool stop;                              /* fiber: asks the other side to return */
    size_t stack_size;                      /* fibers_yield: each new fiber's stack */
    std::coroutine_handle<> gen, sym_a, sym_b;
    bctx::detail::fcontext_t fctx;          /* the suspended side of the fcontext pair */
    bctx::fiber *fiber;
    fibers_pair *pair;
    void *coro2;                            /* coroutine2: the pull_type main resumes */
};

pingpong g_pp;

void reset(pingpong *p) {
    p->main_count = 0;
    p->co_count = 0;
    p->rounds = 0;
    p->stop = false;
    p->stack_size = 0;
    p->gen = p->sym_a = p->sym_b = nullptr;
    p->fctx = nullptr;
    p->fiber = nullptr;
    p->pair = nullptr;
    p->coro2 = nullptr;
}

typedef void (*loop_fn)(pingpong *, uint64_t);

/* C++20 deprecates ++ on a volatile; this is the same load, add, store. */
inline void inc(volatile uint64_t &c) { c = c + 1; }

/* ---- the baseline: harness.c's loop_base, the same counters and loop control ---- */

LK_TIMED_LOOP void loop_base(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        inc(p->co_count);
        inc(p->main_count);
    }
}

/* ---- plain calls: each call stands for one transfer, so two calls per round ---- */

LKX_OPAQUE void bump_co(pingpong *p) { inc(p->co_count); }
LKX_OPAQUE void bump_main(pingpong *p) { inc(p->main_count); }

LK_TIMED_LOOP void loop_direct(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        bump_co(p);
        bump_main(p);
    }
}

/* Volatile: the pointer is loaded afresh at each call and the target cannot be proven. */
void (*volatile g_ind_co)(pingpong *) = bump_co;
void (*volatile g_ind_main)(pingpong *) = bump_main;

LK_TIMED_LOOP void loop_indirect(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        g_ind_co(p);
        g_ind_main(p);
    }
}

/* Two overriders, so that no call site has a single likely target for GCC to guess
 * (speculative devirtualisation); the objects are reached through volatile pointers. */
struct side {
    virtual void bump(pingpong *p) = 0;
protected:
    ~side() = default;
};
struct co_side final : side {
    void bump(pingpong *p) override { inc(p->co_count); }
};
struct main_side final : side {
    void bump(pingpong *p) override { inc(p->main_count); }
};
co_side g_co_side;
main_side g_main_side;
side *volatile g_virt_co = &g_co_side;
side *volatile g_virt_main = &g_main_side;

LK_TIMED_LOOP void loop_virtual(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        g_virt_co->bump(p);
        g_virt_main->bump(p);
    }
}

/* getppid: it cannot fail, takes no lock worth the name, and glibc does not cache it. */
LK_TIMED_LOOP void loop_syscall(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        syscall(SYS_getppid);
        inc(p->co_count);
        syscall(SYS_getppid);
        inc(p->main_count);
    }
}

/* ---- C++20 coroutines ---- */

thread_local size_t g_frame_bytes;

/* An owning handle to a coroutine that starts suspended and stays in its frame after
 * the end, so that destroy() is always the one way it goes away. */
struct coro {
    struct promise_type {
        coro get_return_object() {
            return coro{std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
        /* The size the compiler computed for the frame: promise, parameters, the locals
         * that live across a suspension, the resume index and the resume/destroy pointers. */
        static void *operator new(size_t n) {
            g_frame_bytes = n;
            return ::operator new(n);
        }
        static void operator delete(void *q, size_t n) noexcept { ::operator delete(q, n); }
    };

    std::coroutine_handle<promise_type> h;

    explicit coro(std::coroutine_handle<promise_type> h_) : h(h_) {}
    coro(coro &&o) noexcept : h(std::exchange(o.h, nullptr)) {}
    coro(const coro &) = delete;
    coro &operator=(const coro &) = delete;
    coro &operator=(coro &&) = delete;
    ~coro() {
        if (h) h.destroy();
    }
};

/* The generator: each resume() runs to the next suspension, one resume + one suspend =
 * two transfers, one counted on each side, like harness.c's stackless kernel. */
coro gen_body(pingpong *p) {
    for (;;) {
        inc(p->co_count);
        co_await std::suspend_always{};
    }
}

LK_TIMED_LOOP void loop_generator(pingpong *p, uint64_t rounds) {
    std::coroutine_handle<> h = p->gen;
    for (uint64_t i = 0; i < rounds; i++) {
        h.resume();
        inc(p->main_count);
    }
}

/* Symmetric transfer: returning a handle from await_suspend makes the compiler jump
 * straight to that coroutine's resume function, with no return to a caller between. */
struct transfer_to {
    std::coroutine_handle<> to;
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<>) const noexcept { return to; }
    void await_resume() const noexcept {}
};

/* The two handles of the symmetric pair, in statics: each transfer loads the next
 * handle with one RIP-relative load that depends on nothing before it. Reached through
 * `p` (kept in the frame) instead, the next coroutine's frame address would hang on two
 * dependent loads (the current frame -> p -> the handle), and every transfer would wait
 * for them: a standalone comparison (same loop, counters, -O2) measured 2.7 ns per
 * transfer that way against 1.6 ns with the handles in statics, the same instruction
 * count (callgrind) either way. What that chain costs belongs to where a program keeps
 * its handles, not to the transfer. */
std::coroutine_handle<> g_sym_a, g_sym_b;

/* A plays main's part, B the other side's. Main resumes A once per timed run; A and B
 * pass control 2*rounds times; then A suspends and main's resume() returns. That one
 * resume and return per run stand where the call of the loop function stands for the
 * other peers, and are not counted. */
coro sym_a_body(pingpong *p) {
    for (;;) {
        for (uint64_t i = 0, n = p->rounds; i < n; i++) {
            inc(p->main_count);
            co_await transfer_to{g_sym_b};
        }
        co_await std::suspend_always{};
    }
}

coro sym_b_body(pingpong *p) {
    for (;;) {
        inc(p->co_count);
        co_await transfer_to{g_sym_a};
    }
}

LK_TIMED_LOOP void loop_symmetric(pingpong *p, uint64_t rounds) {
    p->rounds = rounds;
    p->sym_a.resume();
}

/* Symmetric transfer is a tail jump only where GCC optimises sibling calls (-O2 and up);
 * below that each transfer is a call nested in the last one, and a long ping-pong runs
 * off the end of the stack. Two probe coroutines, made like the measured pair, tell
 * which before anything runs: A's frame address must not move from one entry to the next. */
struct sym_probe {
    std::coroutine_handle<> a, b;
    char *first, *last;
};

coro probe_a_body(sym_probe *s) {
    s->first = static_cast<char *>(__builtin_frame_address(0));
    for (int i = 0; i < 16; i++) {
        s->last = static_cast<char *>(__builtin_frame_address(0));
        co_await transfer_to{s->b};
    }
    co_await std::suspend_always{};
}

coro probe_b_body(sym_probe *s) {
    for (;;) co_await transfer_to{s->a};
}

bool symmetric_is_tail_jump() {
    sym_probe s{};
    coro a = probe_a_body(&s);
    coro b = probe_b_body(&s);
    s.a = a.h;
    s.b = b.h;
    a.h.resume();
    return s.first != nullptr && s.first == s.last;
}

/* ---- Boost.Context, the bare fcontext layer ---- */

/* Entered on the first jump, with main's context in t.fctx; never returns, because
 * returning from a make_fcontext entry ends the process. */
void fctx_entry(bctx::detail::transfer_t t) {
    pingpong *p = static_cast<pingpong *>(t.data);
    for (;;) {
        inc(p->co_count);
        t = bctx::detail::jump_fcontext(t.fctx, nullptr);
    }
}

LK_TIMED_LOOP void loop_fcontext(pingpong *p, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        /* p travels on every jump (one register); the other side reads it on entry only. */
        p->fctx = bctx::detail::jump_fcontext(p->fctx, p).fctx;
        inc(p->main_count);
    }
}

/* ---- Boost.Context, fiber ---- */

LK_TIMED_LOOP void loop_fiber(pingpong *p, uint64_t rounds) {
    bctx::fiber &f = *p->fiber;
    for (uint64_t i = 0; i < rounds; i++) {
        f = std::move(f).resume();
        inc(p->main_count);
    }
}

/* ---- Boost.Coroutine2: an asymmetric coroutine, pulled by main ---- */

#if LKX_HAVE_COROUTINE2
using coro2 = boost::coroutines2::coroutine<void>;

/* Each source() resumes the coroutine, which runs to its next sink(): two transfers. */
LK_TIMED_LOOP void loop_coroutine2(pingpong *p, uint64_t rounds) {
    coro2::pull_type &source = *static_cast<coro2::pull_type *>(p->coro2);
    for (uint64_t i = 0; i < rounds; i++) {
        source();
        inc(p->main_count);
    }
}
#endif

/* ---- Boost.Fiber: two fibers yielding to each other through the scheduler ---- */

struct fibers_pair {
    boost::fibers::fiber a, b;
};

/* New fibers for each sample: a fiber that has run its rounds is finished. They are
 * made before the clock starts (launch::post only queues them) and joined inside. */
void fibers_prepare(pingpong *p, uint64_t rounds) {
    fibers_pair &fp = *p->pair;
    fp.a = boost::fibers::fiber(std::allocator_arg, boost::fibers::fixedsize_stack(p->stack_size),
                                [p, rounds] {
                                    for (uint64_t i = 0; i < rounds; i++) {
                                        inc(p->co_count);
                                        boost::this_fiber::yield();
                                    }
                                });
    try {
        fp.b = boost::fibers::fiber(std::allocator_arg,
                                    boost::fibers::fixedsize_stack(p->stack_size),
                                    [p, rounds] {
                                        for (uint64_t i = 0; i < rounds; i++) {
                                            inc(p->main_count);
                                            boost::this_fiber::yield();
                                        }
                                    });
    } catch (...) {
        fp.a.join();  /* a joinable fiber's destructor would call std::terminate */
        throw;
    }
}

LK_TIMED_LOOP void loop_fibers_yield(pingpong *p, uint64_t) {
    p->pair->a.join();
    p->pair->b.join();
}

/* Finished fibers wait in the scheduler's terminated queue until its dispatcher runs;
 * one yield here lets it free their stacks now, not inside the next timed loop. */
void fibers_finish(pingpong *) { boost::this_fiber::yield(); }

/* ---- the timing, as in harness.c ---- */

/* For instruction counting (labkit.experiments.callgrind): 1 runs only the switch loops, 2 only the
 * empty loops. 0, the default, runs both. */
int g_only = 0;

#define LKX_COUNT(p) ((p)->main_count + (p)->co_count)
LK_TIMED_FN(timed_loop, pingpong, LKX_COUNT)

void timed(loop_fn f, pingpong *p, uint64_t rounds, uint64_t *ns, uint64_t *ticks,
           uint64_t *faults, uint64_t *counted) {
    if ((g_only == 1 && f == loop_base) || (g_only == 2 && f != loop_base)) {
        *ns = *ticks = *faults = *counted = 0;
        return;
    }
    timed_loop(f, p, rounds, ns, ticks, faults, counted);
}

/* The arguments of one lkx_pingpong call. */
struct run_args {
    size_t stack_size;
    uint64_t rounds;
    int warmup, repeats;
    lk_sample *out;
    char *err;
    size_t errlen;
};

/* Warm-up pairs are run and dropped; each sample is the baseline, then the loop, back
 * to back. prepare and finish run outside the clock. */
void run_samples(loop_fn loop, pingpong *p, const run_args &args,
                 void (*prepare)(pingpong *, uint64_t) = nullptr,
                 void (*finish)(pingpong *) = nullptr) {
    const uint64_t rounds = args.rounds;
    const int warmup = args.warmup, repeats = args.repeats;
    lk_sample *out = args.out;
    lk_sample scratch;
    for (int i = 0; i < warmup + repeats; i++) {
        lk_sample *o = i < warmup ? &scratch : &out[i - warmup];
        uint64_t faults, counted;
        /* Counting the empty loop alone (g_only == 2) makes no peer objects: fibers made
         * by prepare would be destroyed unjoined, which std::terminate()s. */
        bool peer_objects = g_only != 2;
        if (prepare && peer_objects) prepare(p, rounds);
        timed(loop_base, p, rounds, &o->base_ns, &o->base_ticks, &faults, &counted);
        timed(loop, p, rounds, &o->loop_ns, &o->loop_ticks, &o->minor_faults, &o->counted);
        if (finish && peer_objects) finish(p);
        o->switches = 2 * rounds;
        o->xinuse = -1;  /* not read here: the peers library does not carry the x86 probe */
    }
}

void fail(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* FP control words in the two contexts (labkit.measure's fp_control): 0 as they are;
 * 1 both at the ABI defaults; 2 main dirtied by an inexact division after the other
 * context was made, so their MXCSRs differ in the sticky PE flag (x86-64 only: on
 * AArch64 the division sets FPSR, which no switch saves). */
int g_fpctl_mode = 0;

#if defined(__x86_64__)
/* The ABI's initial values (labkit_core's LK_FPCTL_DEFAULT0/1 for x86-64). */
void fpctl_load(uint32_t mx, uint16_t cw) {
    __asm__ volatile("ldmxcsr %0\n\tfldcw %1" : : "m"(mx), "m"(cw));
}
void fpctl_save(uint32_t *mx, uint16_t *cw) {
    __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(*mx), "=m"(*cw));
}
void fpctl_reset() { fpctl_load(0x1F80, 0x037F); }
#else
/* labkit.core.native only offers fp_control for this peer on x86-64. */
void fpctl_load(uint32_t, uint16_t) {}
void fpctl_save(uint32_t *mx, uint16_t *cw) { *mx = 0; *cw = 0; }
void fpctl_reset() {}
#endif

void fpctl_divide() {
    volatile double a = 1.0, b = 3.0, c;
    c = a / b;
    (void)c;
}

/* Around making a context: both start from the defaults (the new context copies main's
 * control words when it is made), then main alone is dirtied if asked. */
struct fpctl_scope {
    explicit fpctl_scope(int mode) : mode(mode) {
        fpctl_save(&mx, &cw);
        if (mode) fpctl_reset();
    }
    /* The worker runs other measurements after this one: give main its words back. */
    ~fpctl_scope() { fpctl_load(mx, cw); }
    void made() const {
        if (mode == 2) fpctl_divide();
    }
    int mode;
    uint32_t mx;
    uint16_t cw;
};

/* Each peer's run, named after its row of the peer table (LKX_PEERS, peers.h): it makes
 * the peer's contexts, samples its loop and undoes them. Returns 0, or -1 with args.err
 * filled. */
#define LKX_RUN(name) int run_##name(pingpong *p, const run_args &args)

/* The run of a peer whose loop needs nothing made first: its samples alone. */
#define LKX_RUN_LOOP(name, loop)    \
    LKX_RUN(name) {                 \
        run_samples(loop, p, args); \
        return 0;                   \
    }

LKX_RUN_LOOP(direct_call, loop_direct)
LKX_RUN_LOOP(indirect_call, loop_indirect)
LKX_RUN_LOOP(virtual_call, loop_virtual)
LKX_RUN_LOOP(syscall_getppid, loop_syscall)

LKX_RUN(cxx20_generator) {
    coro g = gen_body(p);
    p->gen = g.h;
    run_samples(loop_generator, p, args);
    return 0;  /* ~coro destroys the suspended frame */
}

LKX_RUN(cxx20_symmetric) {
    if (!symmetric_is_tail_jump()) {
        fail(args.err, args.errlen,
             "cxx20_symmetric: this build does not turn symmetric transfer into a tail "
             "jump (GCC does only with -foptimize-sibling-calls, on from -O2), so every "
             "transfer would nest one call deeper and overflow the stack");
        return -1;
    }
    coro a = sym_a_body(p);
    coro b = sym_b_body(p);
    p->sym_a = g_sym_a = a.h;
    p->sym_b = g_sym_b = b.h;
    run_samples(loop_symmetric, p, args);
    return 0;  /* both frames are suspended; destroying them frees them */
}

LKX_RUN(boost_fcontext) {
    fpctl_scope fp(g_fpctl_mode);
    bctx::fixedsize_stack alloc(args.stack_size);
    bctx::stack_context sc = alloc.allocate();
    p->fctx = bctx::detail::make_fcontext(sc.sp, sc.size, fctx_entry);
    /* make_fcontext copied main's (default) MXCSR and CW into the new frame; now main
     * alone may be dirtied. */
    fp.made();
    run_samples(loop_fcontext, p, args);
    /* The other side is parked in jump_fcontext and holds nothing that needs a
     * destructor; its entry cannot return, so its stack is simply freed. */
    alloc.deallocate(sc);
    return 0;
}

LKX_RUN(boost_fiber) {
    bctx::fiber f(std::allocator_arg, bctx::fixedsize_stack(args.stack_size),
                  [p](bctx::fiber &&back) {
                      while (!p->stop) {
                          inc(p->co_count);
                          back = std::move(back).resume();
                      }
                      return std::move(back);
                  });
    p->fiber = &f;
    run_samples(loop_fiber, p, args);
    /* Let the lambda return: the fiber ends and Boost frees its stack. */
    p->stop = true;
    if (f) f = std::move(f).resume();
    if (f) {
        fail(args.err, args.errlen, "boost_fiber: the fiber did not finish when asked to");
        return -1;  /* ~fiber still unwinds it */
    }
    return 0;
}

LKX_RUN(boost_fibers_yield) {
    fibers_pair fp;
    p->pair = &fp;
    p->stack_size = args.stack_size;
    run_samples(loop_fibers_yield, p, args, fibers_prepare, fibers_finish);
    return 0;
}

LKX_RUN(boost_coroutine2) {
#if LKX_HAVE_COROUTINE2
    /* A pull_type runs its body at once, up to the first sink(): that first transfer
     * and its return happen here, outside the samples. */
    coro2::pull_type source(boost::coroutines2::fixedsize_stack(args.stack_size),
                            [p](coro2::push_type &sink) {
                                for (;;) {
                                    sink();
                                    if (p->stop) return;
                                    inc(p->co_count);
                                }
                            });
    p->coro2 = &source;
    run_samples(loop_coroutine2, p, args);
    /* Let the body return: the coroutine completes and Boost frees its stack. */
    p->stop = true;
    source();
    if (source) {
        fail(args.err, args.errlen,
             "boost_coroutine2: the coroutine did not finish when asked to");
        return -1;
    }
    return 0;
#else
    fail(args.err, args.errlen, "boost_coroutine2: %s",
         lkx_peer_why_not(LKX_PEER_boost_coroutine2));
    return -1;
#endif
}

#define LKX_RUN_CASE(name, KIND, FP_CONTROL, SAVES) \
    case LKX_PEER_##name: return run_##name(p, args);

int pingpong_cxx(int peer, const run_args &args) {
    pingpong *p = &g_pp;
    reset(p);
    switch (peer) {
    LKX_PEERS(LKX_RUN_CASE)
    default:
        fail(args.err, args.errlen, "unknown peer %d", peer);
        return -1;
    }
}

#define LKX_PEER_NAME(name, KIND, FP_CONTROL, SAVES) #name,
const char *const peer_names[LKX_NPEERS] = {LKX_PEERS(LKX_PEER_NAME)};

}  // namespace

extern "C" {

const char *lkx_peer_name(int peer) {
    return (peer >= 0 && peer < LKX_NPEERS) ? peer_names[peer] : "?";
}

const char *lkx_peer_why_not(int peer) {
    if (peer == LKX_PEER_boost_coroutine2 && !LKX_HAVE_COROUTINE2)
        return "missing here: install libboost-dev (<boost/coroutine2/coroutine.hpp> not "
               "found): apt-get install libboost-dev, then `make setup`";
    return "";
}

int lkx_pingpong(int peer, size_t stack_size, uint64_t rounds, int warmup, int repeats,
                 lk_sample *out, char *err, size_t errlen) {
    /* Nothing may unwind into the caller: ctypes (labkit/core/native.py) or lk_count's C. */
    try {
        return pingpong_cxx(peer, {stack_size, rounds, warmup, repeats, out, err, errlen});
    } catch (const std::bad_alloc &) {
        fail(err, errlen, "%s: out of memory (stack of %zu bytes)", lkx_peer_name(peer),
             stack_size);
    } catch (const std::exception &e) {
        fail(err, errlen, "%s: %s", lkx_peer_name(peer), e.what());
    } catch (...) {
        fail(err, errlen, "%s: unknown C++ exception", lkx_peer_name(peer));
    }
    return -1;
}

void lkx_set_only(int which) { g_only = which; }
void lkx_set_fpctl(int mode) { g_fpctl_mode = mode; }

#ifndef LKX_CFLAGS
#define LKX_CFLAGS "unknown"
#endif
const char *lkx_cflags(void) { return LKX_CFLAGS; }

size_t lkx_cxx20_frame_bytes(void) {
    try {
        pingpong dummy;
        reset(&dummy);
        g_frame_bytes = 0;
        coro g = gen_body(&dummy);  /* made suspended, never run, destroyed at scope end */
        return g_frame_bytes;
    } catch (...) {
        return 0;
    }
}

/* The peers fill lk_sample too; this library has no harness.c to export its layout. */
LK_LAYOUT(lk_sample, LK_SAMPLE_FIELDS)

/* What labkit/core/native.py types this library's functions by, the peers', the frames'
 * and the workload's (lk_layout.h). */
#define LKX_LIBRARY_FUNCTIONS(F) LKX_FUNCTIONS(F) LKF_FUNCTIONS(F) LKW_FUNCTIONS(F)
LK_FUNCTIONS(LKX_LIBRARY_FUNCTIONS)

}  // extern "C"
