// cxx20.cpp -- the C++20-coroutine echo server: one coroutine per connection on an
// edge-triggered epoll loop, which awaits a child coroutine to read each frame and another
// to write the reply, the way a coroutine server is usually layered. Five builds, the five
// strategies of 004_dfc61b1060864bf1.txt's table (C004.1):
//
//   cxx20_new       LK_POOL=0 LK_SYMMETRIC=0   every frame from the global operator new;
//                                              a finished child hands control back by
//                                              posting its parent to the loop's run queue
//   cxx20_pool      LK_POOL=1 LK_SYMMETRIC=0   frames from a free-list pool, kept for reuse
//   cxx20_lean      LK_POOL=0 LK_LEAN=1        fewer live locals, default new: the read and
//                                              write awaiters live in the connection's
//                                              frame, so a child's frame keeps only a
//                                              reference to one across its suspension
//   cxx20_pool_sym  LK_POOL=1 LK_SYMMETRIC=1   pool + symmetric transfer: await_suspend and
//                                              final_suspend return the next coroutine, which
//                                              runs at once, without the run queue
//   cxx20_reuse     LK_POOL=1 LK_SYMMETRIC=1   + coroutine reuse: each connection keeps one
//                   LK_REUSE=1                 reader and one writer coroutine that loop, a
//                                              request per resumption: a finished request
//                                              resets them, no frame is made or freed per
//                                              message
//
// (C001.1's plain and optimised coroutines are cxx20_new and cxx20_pool_sym.) The read and
// write awaiters try the system call first and suspend only when the socket says EAGAIN.
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <utility>
#include <vector>

#include "lk_srv.h"

#ifndef LK_POOL
#define LK_POOL 0
#endif
#ifndef LK_SYMMETRIC
#define LK_SYMMETRIC 0
#endif
#ifndef LK_LEAN
#define LK_LEAN 0
#endif
#ifndef LK_REUSE
#define LK_REUSE 0
#endif
// A reused child hands control straight back to its parent: reuse is built on symmetric
// transfer, as in the article's table, where each row adds to the one above.
static_assert(!LK_REUSE || LK_SYMMETRIC, "LK_REUSE needs LK_SYMMETRIC");
static_assert(!(LK_LEAN && LK_REUSE), "LK_LEAN and LK_REUSE are separate builds");
#ifndef LK_NAME
#define LK_NAME "cxx20"
#endif

namespace {

lk_opts opt;

// ---- frames -------------------------------------------------------------------------

#if LK_POOL
// Free lists by 64-byte size class. A frame freed goes on its list and the next frame of
// that class takes it back: after the first requests no frame touches the heap. The
// blocks are never given back; the pool is as large as the most frames ever alive at once.
namespace pool {
constexpr std::size_t kStep = 64, kClasses = 32;  // frames up to 2 KiB; larger go to the heap
struct node { node *next; };
node *heads[kClasses + 1];

void *get(std::size_t n) {
    std::size_t k = (n + kStep - 1) / kStep;
    if (k > kClasses) return ::operator new(n);
    if (node *p = heads[k]) {
        heads[k] = p->next;
        return p;
    }
    lk_st.pool_refills++;
    lk_st.pool_blocks++;
    return ::operator new(k * kStep);
}

void put(void *p, std::size_t n) {
    std::size_t k = (n + kStep - 1) / kStep;
    if (k > kClasses) {
        ::operator delete(p);
        return;
    }
    auto *x = static_cast<node *>(p);
    x->next = heads[k];
    heads[k] = x;
}
}  // namespace pool
#endif

// Promise types derive from this: with LK_POOL it routes their frames to the pool (the
// compiler looks up operator new in the promise type first, and passes the frame's size).
struct frame_alloc {
#if LK_POOL
    static void *operator new(std::size_t n) { return pool::get(n); }
    static void operator delete(void *p, std::size_t n) { pool::put(p, n); }
#endif
};

// ---- the loop -----------------------------------------------------------------------

// Handles posted to run at the loop's next turn; two vectors swapped, so that steady
// state allocates nothing.
std::vector<std::coroutine_handle<>> ready, running;
[[maybe_unused]] void post(std::coroutine_handle<> h) { ready.push_back(h); }

// ---- task<T>: a lazily started child coroutine with a result --------------------------

template <class T>
class task {
public:
    struct promise_type : frame_alloc {
        std::coroutine_handle<> parent;
        T value{};
        task get_return_object() { return task{handle::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        struct final_awaiter {
            bool await_ready() noexcept { return false; }
#if LK_SYMMETRIC
            std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
                return h.promise().parent;
            }
#else
            // Without symmetric transfer, resuming the parent from here would nest one
            // more call on the stack for every child that finishes without suspending;
            // a client that pipelines could then overflow it. So the loop resumes it.
            void await_suspend(std::coroutine_handle<promise_type> h) noexcept {
                post(h.promise().parent);
            }
#endif
            void await_resume() noexcept {}
        };
        final_awaiter final_suspend() noexcept { return {}; }
        void return_value(T v) { value = v; }
        void unhandled_exception() { std::terminate(); }
    };
    using handle = std::coroutine_handle<promise_type>;

    explicit task(handle h) : h_(h) {}
    task(task &&o) noexcept : h_(std::exchange(o.h_, {})) {}
    task(const task &) = delete;
    ~task() {
        if (h_) h_.destroy();
    }

    bool await_ready() noexcept { return false; }
#if LK_SYMMETRIC
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> parent) noexcept {
        h_.promise().parent = parent;
        return h_;
    }
#else
    void await_suspend(std::coroutine_handle<> parent) noexcept {
        h_.promise().parent = parent;
        post(h_);
    }
#endif
    T await_resume() noexcept { return h_.promise().value; }

private:
    handle h_;
};

// ---- a connection's coroutine ---------------------------------------------------------

// A top-level coroutine nobody awaits: it starts at once and frees its frame at the end.
struct detached {
    struct promise_type : frame_alloc {
        detached get_return_object() { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() {}
        void unhandled_exception() { std::terminate(); }
    };
};

// Gives a coroutine its own handle without suspending it.
struct this_handle {
    std::coroutine_handle<> h;
    bool await_ready() noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> me) noexcept {
        h = me;
        return false;
    }
    std::coroutine_handle<> await_resume() noexcept { return h; }
};

struct io_op;
int ep;
uint32_t next_gen = 1;

struct conn;
std::vector<conn *> table;  // by descriptor: events for a closed connection find nothing

struct conn {
    int fd;
    uint32_t gen;
    lk_msg m{};
    io_op *waiting = nullptr;       // the awaiter it is suspended in, if any
    std::coroutine_handle<> self;   // its serve() coroutine, for shutdown
    int why = 0;

    explicit conn(int fd_) : fd(fd_), gen(next_gen++) {}
    ~conn() {
        table[fd] = nullptr;
        ::close(fd);
        lk_msg_free(&m);
        lk_st.conns_open--;
    }
};

enum { ENDED_EOF = 2, ENDED_ERR = 3 };

struct io_op {
    conn &c;
    uint32_t want;
    std::coroutine_handle<> h;
    io_op(conn &c_, uint32_t w) : c(c_), want(w) {}
    // Called by the loop when the socket is ready: true to resume the coroutine.
    virtual bool on_ready() = 0;
};

// Reads until a whole frame is in (whole mode) or for one read that got bytes (some
// mode), suspending only while the socket has nothing to give.
struct read_op : io_op {
    int status = LK_MORE;
    explicit read_op(conn &c_) : io_op(c_, EPOLLIN | EPOLLRDHUP) {}
    bool step() {
        for (;;) {
            unsigned char *at;
            std::size_t want_bytes = lk_msg_want(&c.m, &opt, &at);
            ssize_t n = ::read(c.fd, at, want_bytes);
            lk_st.reads++;
            if (n > 0) {
                status = lk_msg_got(&c.m, static_cast<std::size_t>(n), &opt);
                if (status != LK_MORE || opt.some) return true;
                continue;
            }
            if (n == 0) {
                status = ENDED_EOF;
                return true;
            }
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return false;
            status = ENDED_ERR;
            return true;
        }
    }
    bool await_ready() { return step(); }
    void await_suspend(std::coroutine_handle<> me) {
        h = me;
        c.waiting = this;
        lk_st.read_waits++;
    }
    int await_resume() { return status; }
    bool on_ready() override {
        if (!step()) return false;
        c.waiting = nullptr;
        return true;
    }
};

struct write_op : io_op {
    const unsigned char *p;
    std::size_t n;
    int status = 0;
    write_op(conn &c_, const unsigned char *p_, std::size_t n_) : io_op(c_, EPOLLOUT), p(p_), n(n_) {}
    bool step() {
        while (n) {
            ssize_t r = ::write(c.fd, p, n);
            lk_st.writes++;
            if (r > 0) {
                p += r;
                n -= static_cast<std::size_t>(r);
            } else if (r < 0 && errno == EINTR) {
                continue;
            } else if (r < 0 && errno == EAGAIN) {
                return false;
            } else {
                status = ENDED_ERR;
                return true;
            }
        }
        return true;
    }
    bool await_ready() { return step(); }
    void await_suspend(std::coroutine_handle<> me) {
        h = me;
        c.waiting = this;
        lk_st.write_waits++;
    }
    int await_resume() { return status; }
    bool on_ready() override {
        if (!step()) return false;
        c.waiting = nullptr;
        return true;
    }
};

#if LK_LEAN
// Awaits an awaiter that lives elsewhere (in the connection's frame): what the child's
// frame keeps across the suspension is this one reference.
template <class Op>
struct by_ref {
    Op &op;
    bool await_ready() { return op.await_ready(); }
    void await_suspend(std::coroutine_handle<> me) { op.await_suspend(me); }
    int await_resume() { return op.await_resume(); }
};

task<int> read_frame(read_op &op) {
    op.status = LK_MORE;
    while (op.status == LK_MORE) co_await by_ref<read_op>{op};
    co_return op.status;
}

task<int> write_reply(write_op &op) {
    op.n = lk_msg_reply(&op.c.m, &op.p);
    op.status = 0;
    co_return co_await by_ref<write_op>{op};
}
#elif !LK_REUSE
task<int> read_frame(conn &c) {
    int status = LK_MORE;
    while (status == LK_MORE) status = co_await read_op{c};
    co_return status;
}

task<int> write_reply(conn &c) {
    const unsigned char *p;
    std::size_t n = lk_msg_reply(&c.m, &p);
    co_return co_await write_op{c, p, n};
}
#endif

#if LK_REUSE
// ---- worker<T>: a child coroutine made once per connection and reused --------------------
//
// Its body loops: each resumption serves one request and hands the result back to the
// parent by symmetric transfer, then waits for the next. It is destroyed with its
// connection, never per message.
class worker {
public:
    struct promise_type : frame_alloc {
        std::coroutine_handle<> parent;
        int value = 0;
        worker get_return_object() { return worker{handle::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() {}
        void unhandled_exception() { std::terminate(); }
    };
    using handle = std::coroutine_handle<promise_type>;

    explicit worker(handle h) : h_(h) {}
    worker(worker &&o) noexcept : h_(std::exchange(o.h_, {})) {}
    worker(const worker &) = delete;
    ~worker() {
        if (h_) h_.destroy();
    }

    // co_await w.run(): resume the worker for one request; its result comes back.
    struct run_awaiter {
        handle h;
        bool await_ready() noexcept { return false; }
        std::coroutine_handle<> await_suspend(std::coroutine_handle<> parent) noexcept {
            h.promise().parent = parent;
            return h;
        }
        int await_resume() noexcept { return h.promise().value; }
    };
    run_awaiter run() { return {h_}; }

private:
    handle h_;
};

// Inside a worker: give `value` to the parent and wait for the next request.
struct done_with {
    int value;
    bool await_ready() noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<worker::promise_type> me) noexcept {
        me.promise().value = value;
        return me.promise().parent;
    }
    void await_resume() noexcept {}
};

worker reader(conn &c) {
    for (;;) {
        int status = LK_MORE;
        while (status == LK_MORE) status = co_await read_op{c};
        co_await done_with{status};
    }
}

worker writer(conn &c) {
    for (;;) {
        const unsigned char *p;
        std::size_t n = lk_msg_reply(&c.m, &p);
        co_await done_with{co_await write_op{c, p, n}};
    }
}
#endif

detached serve(int fd) {
    conn c(fd);
    c.self = co_await this_handle{};
    table[fd] = &c;
    lk_st.conns_open++;
    lk_st.conns_total++;
    if (lk_msg_init(&c.m) != 0) co_return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = static_cast<uint64_t>(c.gen) << 32 | static_cast<uint32_t>(fd);
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) co_return;
    int status = LK_MORE;
#if LK_LEAN
    read_op rd{c};
    write_op wr{c, nullptr, 0};
#define LK_READ read_frame(rd)
#define LK_WRITE write_reply(wr)
#elif LK_REUSE
    worker rd = reader(c), wr = writer(c);
#define LK_READ rd.run()
#define LK_WRITE wr.run()
#else
#define LK_READ read_frame(c)
#define LK_WRITE write_reply(c)
#endif
    for (;;) {
        if (status == LK_MORE) status = co_await LK_READ;
        if (status != LK_DONE) break;
        if (co_await LK_WRITE != 0) {
            lk_st.closed_mid++;
            co_return;
        }
        status = lk_msg_consume(&c.m, &opt);
    }
    if (status == LK_BAD) lk_st.closed_bad++;
    else if (c.m.have) lk_st.closed_mid++;
    else if (status == ENDED_ERR) lk_st.closed_err++;
}

void accept_all(int lfd) {
    for (;;) {
        int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return;
        }
        if (static_cast<std::size_t>(fd) >= table.size() ||
            lk_st.conns_open >= static_cast<uint64_t>(opt.max_conns)) {
            lk_st.conns_refused++;
            ::close(fd);
            continue;
        }
        serve(fd);
    }
}

void run_ready() {
    while (!ready.empty()) {
        std::swap(ready, running);
        for (auto h : running) {
            lk_st.dispatches++;
            h.resume();
        }
        running.clear();
    }
}

}  // namespace

int main(int argc, char **argv) {
    lk_parse(argc, argv, &opt, LK_NAME);
    lk_setup(&opt);
    int sfd = lk_signalfd();
    table.assign(lk_fd_table_len(), nullptr);
    ready.reserve(4096);
    running.reserve(4096);
    int lfd = lk_listen(&opt);
    ep = lk_epoll_with(lfd, sfd);
    static epoll_event evs[512];
    bool stop = false;
    while (!stop) {
        run_ready();
        int n = epoll_wait(ep, evs, 512, -1);
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < n; i++) {
            uint64_t key = evs[i].data.u64;
            uint32_t e = evs[i].events;
            if (key == static_cast<uint64_t>(lfd)) {
                accept_all(lfd);
            } else if (key == static_cast<uint64_t>(sfd)) {
                stop = true;
            } else {
                conn *c = table[static_cast<uint32_t>(key)];
                if (!c || c->gen != static_cast<uint32_t>(key >> 32) || !c->waiting) continue;
                io_op *op = c->waiting;
                if ((e & (op->want | EPOLLERR | EPOLLHUP)) && op->on_ready()) {
                    lk_st.dispatches++;
                    op->h.resume();
                }
            }
        }
    }
    // Destroying a suspended serve() frame runs ~conn and destroys the child it awaits.
    for (std::size_t fd = 0; fd < table.size(); fd++)
        if (table[fd]) table[fd]->self.destroy();
    ready.clear();
    ::close(lfd);
    ::close(ep);
    ::close(sfd);
    lk_print_final();
    return 0;
}
