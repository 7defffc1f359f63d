// asio_server.cpp -- the echo server on standalone asio (Debian libasio-dev) with
// co_spawn: one awaitable coroutine per connection, as in the article of claims C001.x.
// Built twice, the pair of claim C001.3:
//   asio_epoll  asio's default reactor on Linux
//   asio_uring  -DASIO_HAS_IO_URING -DASIO_DISABLE_EPOLL: asio's io_uring back end for
//               sockets too, linked with liburing
//
// Whole mode reads each frame with ONE asio::async_read whose completion condition knows
// the frame's length from its header (so header and payload come in one operation); some
// mode is a loop of async_read_some of at most --chunk bytes. read_waits counts the
// co_awaits on reads; dispatches counts the handlers the io_context ran (run_one), an
// independent count of how often control went through the loop.
#include <asio.hpp>
#include <asio/redirect_error.hpp>

#include <csignal>
#include <cstdio>
#include <exception>

#include "lk_srv.h"

#ifndef LK_NAME
#define LK_NAME "asio"
#endif

using asio::ip::tcp;

namespace {

lk_opts opt;

struct conn_guard;
conn_guard *live;  // every open connection, for shutdown

// Closes its socket's descriptor through asio and keeps the counters right, however the
// coroutine ends; while it lives, its connection is on the `live` list.
struct conn_guard {
    tcp::socket &s;
    lk_msg &m;
    int why = 0;  // 0 clean, 1 bad frame, 2 socket error
    conn_guard *prev = nullptr, *next = nullptr;
    conn_guard(tcp::socket &s_, lk_msg &m_) : s(s_), m(m_), next(live) {
        if (live) live->prev = this;
        live = this;
    }
    conn_guard(const conn_guard &) = delete;
    ~conn_guard() {
        (prev ? prev->next : live) = next;
        if (next) next->prev = prev;
        if (why == 1) lk_st.closed_bad++;
        else if (m.have) lk_st.closed_mid++;
        else if (why == 2) lk_st.closed_err++;
        asio::error_code ignored;
        s.close(ignored);
        lk_msg_free(&m);
        lk_st.conns_open--;
    }
};

asio::awaitable<void> serve(tcp::socket s) {
    lk_msg m{};
    lk_st.conns_open++;
    lk_st.conns_total++;
    conn_guard guard(s, m);
    if (lk_msg_init(&m) != 0) co_return;
    asio::error_code ec;
    s.set_option(tcp::no_delay(true), ec);
    int status = LK_MORE;
    for (;;) {
        while (status == LK_MORE) {
            std::size_t n;
            if (!opt.some) {
                // Reads from m.have to the end of the buffer, stopping as soon as the
                // frame is whole (or its header is bad, or it needs a bigger buffer).
                unsigned char *base = m.buf;
                std::size_t have = m.have, cap = m.cap;
                auto cond = [base, have, cap](const asio::error_code &e, std::size_t got) -> std::size_t {
                    if (e) return 0;
                    return lk_frame_needs(base, have + got, cap, opt.max_msg);
                };
                lk_st.read_waits++;
                n = co_await asio::async_read(s, asio::buffer(m.buf + m.have, m.cap - m.have), cond,
                                              asio::redirect_error(asio::use_awaitable, ec));
            } else {
                unsigned char *at;
                std::size_t want = lk_msg_want(&m, &opt, &at);
                lk_st.read_waits++;
                n = co_await s.async_read_some(asio::buffer(at, want),
                                               asio::redirect_error(asio::use_awaitable, ec));
            }
            // asio's reads do not say how many system calls they made; one completion is
            // counted as one read here (the whole-mode figure is then a lower bound).
            lk_st.reads++;
            if (n > 0) status = lk_msg_got(&m, n, &opt);
            if (ec) {
                if (status == LK_MORE || status == LK_BAD) {
                    guard.why = status == LK_BAD ? 1 : (ec == asio::error::eof ? 0 : 2);
                    co_return;
                }
            }
        }
        if (status == LK_BAD) {
            guard.why = 1;
            co_return;
        }
        const unsigned char *reply;
        std::size_t len = lk_msg_reply(&m, &reply);
        lk_st.write_waits++;
        co_await asio::async_write(s, asio::buffer(reply, len),
                                   asio::redirect_error(asio::use_awaitable, ec));
        lk_st.writes++;
        if (ec) {
            guard.why = 2;
            co_return;
        }
        status = lk_msg_consume(&m, &opt);
    }
}

asio::awaitable<void> listener(tcp::acceptor &acc) {
    for (;;) {
        asio::error_code ec;
        tcp::socket s = co_await acc.async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (!acc.is_open()) co_return;  // shutting down
        if (ec) continue;               // a connection that died in the backlog
        if (lk_st.conns_open >= static_cast<uint64_t>(opt.max_conns)) {
            lk_st.conns_refused++;
            continue;  // s closes here
        }
        asio::co_spawn(acc.get_executor(), serve(std::move(s)), asio::detached);
    }
}

}  // namespace

int main(int argc, char **argv) {
    lk_parse(argc, argv, &opt, LK_NAME);
    lk_setup(&opt);
    // Held back until asio's handler is in place: a SIGTERM right after LISTENING must
    // still end in a clean shutdown, not the default action.
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigaddset(&term, SIGINT);
    sigaddset(&term, SIGHUP);
    sigprocmask(SIG_BLOCK, &term, nullptr);
    try {
        asio::io_context ioc(1);  // one thread: no locking inside asio
        // Listening only once the io_context (and with asio_uring its ring) exists: a
        // back end that cannot start fails before the server says LISTENING.
        int lfd = lk_listen(&opt);
        tcp::acceptor acc(ioc, tcp::v4(), lfd);
        asio::signal_set sigs(ioc, SIGTERM, SIGINT, SIGHUP);
        // Shutdown by letting every coroutine finish, not by stopping the io_context:
        // closing the acceptor and the sockets makes each pending operation complete
        // with an error, each coroutine returns through its guard, and run_one() runs
        // out of work. (Destroying an io_context with operations still pending, as
        // ioc.stop() would leave them, reads freed memory in asio 1.22's io_uring back
        // end: found with AddressSanitizer.)
        sigs.async_wait([&](const asio::error_code &, int) {
            asio::error_code ignored;
            acc.close(ignored);
            for (conn_guard *g = live; g; g = g->next) g->s.close(ignored);
        });
        sigprocmask(SIG_UNBLOCK, &term, nullptr);
        asio::co_spawn(ioc, listener(acc), asio::detached);
        while (ioc.run_one()) lk_st.dispatches++;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: %s\n", LK_NAME, e.what());
        return 1;
    }
    lk_print_final();
    return 0;
}
