/* callback.c -- the callback echo server: one state machine per connection, driven by the
 * event loop, nothing suspended anywhere (the "callback style" row of C001.1).
 *
 * Built twice from this file, the two twins of claim C001.3:
 *   callback_epoll  (default)      readiness: the loop says "readable", the handler reads
 *                                  until EAGAIN and returns;
 *   callback_uring  (-DLK_URING)   completions: the handler submits one recv or send and
 *                                  returns; the kernel does the I/O and queues the result.
 * The state machine (lk_msg + reply) is the same code in both; only the way bytes move
 * differs, so the ratio of the two is the price of the back end alone. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lk_srv.h"

#ifdef LK_URING
#include <liburing.h>
#define SERVER_NAME "callback_uring"
#else
#include <sys/epoll.h>
#define SERVER_NAME "callback_epoll"
#endif

enum { CLOSE_CLEAN, CLOSE_BAD, CLOSE_ERR };

struct conn {
    int fd;
    uint32_t gen;           /* tells a live connection from an earlier one on the same fd */
    int writing;
    const unsigned char *out;
    size_t out_len, sent;
    struct lk_msg m;
};

static struct lk_opts opt;
/* Connections by descriptor: an event that names a connection closed earlier in the same
 * batch finds NULL or another generation here, never freed memory. */
static struct conn **table;
static size_t table_len;
static uint32_t next_gen = 1;

static void table_init(void) {
    table_len = lk_fd_table_len();
    table = (struct conn **)calloc(table_len, sizeof *table);
    if (!table) {
        perror("calloc");
        exit(1);
    }
}

static void conn_close(struct conn *c, int why) {
    if (why == CLOSE_BAD) lk_st.closed_bad++;
    else if (c->m.have || c->writing) lk_st.closed_mid++;
    else if (why == CLOSE_ERR) lk_st.closed_err++;
    table[c->fd] = NULL;
    close(c->fd);
    lk_msg_free(&c->m);
    free(c);
    lk_st.conns_open--;
}

static struct conn *conn_new(int fd) {
    if ((size_t)fd >= table_len || lk_st.conns_open >= (uint64_t)opt.max_conns) {
        lk_st.conns_refused++;
        close(fd);
        return NULL;
    }
    struct conn *c = (struct conn *)malloc(sizeof *c);
    if (!c || lk_msg_init(&c->m) != 0) {
        free(c);
        lk_st.conns_refused++;
        close(fd);
        return NULL;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->fd = fd;
    c->gen = next_gen++;
    c->writing = 0;
    c->out = NULL;
    c->out_len = c->sent = 0;
    table[fd] = c;
    lk_st.conns_open++;
    lk_st.conns_total++;
    return c;
}

static void start_reply(struct conn *c) {
    c->out_len = lk_msg_reply(&c->m, &c->out);
    c->sent = 0;
    c->writing = 1;
}

/* The reply went out: drop its frame; returns 0 to read on, 1 if another whole frame was
 * already buffered (now being answered), -1 if what followed it is bad (c is closed). */
static int reply_done(struct conn *c) {
    c->writing = 0;
    int r = lk_msg_consume(&c->m, &opt);
    if (r == LK_BAD) {
        conn_close(c, CLOSE_BAD);
        return -1;
    }
    if (r == LK_DONE) {
        start_reply(c);
        return 1;
    }
    return 0;
}

static void close_all(void) {
    for (size_t fd = 0; fd < table_len; fd++)
        if (table[fd]) conn_close(table[fd], CLOSE_CLEAN);
    free(table);
}

#ifndef LK_URING
/* ================================ epoll ================================ */

static int ep;

/* Runs the state machine until the socket has nothing more to give or take. */
static void drive(struct conn *c) {
    lk_st.dispatches++;
    for (;;) {
        if (c->writing) {
            ssize_t n = write(c->fd, c->out + c->sent, c->out_len - c->sent);
            lk_st.writes++;
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN) {
                    lk_st.write_waits++;
                    return;
                }
                conn_close(c, CLOSE_ERR);
                return;
            }
            c->sent += (size_t)n;
            if (c->sent < c->out_len) continue;
            if (reply_done(c) < 0) return;
            continue;
        }
        unsigned char *at;
        size_t want = lk_msg_want(&c->m, &opt, &at);
        ssize_t n = read(c->fd, at, want);
        lk_st.reads++;
        if (n > 0) {
            int r = lk_msg_got(&c->m, (size_t)n, &opt);
            if (r == LK_BAD) {
                conn_close(c, CLOSE_BAD);
                return;
            }
            if (r == LK_DONE) start_reply(c);
            continue;
        }
        if (n == 0) {
            conn_close(c, CLOSE_CLEAN);
            return;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
            lk_st.read_waits++;
            return;
        }
        conn_close(c, CLOSE_ERR);
        return;
    }
}

static void accept_all(int lfd) {
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return;  /* EAGAIN, or out of descriptors: the rest wait in the backlog */
        }
        struct conn *c = conn_new(fd);
        if (!c) continue;
        /* Edge-triggered, registered once: no epoll_ctl per message. */
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                                 .data.u64 = (uint64_t)c->gen << 32 | (uint32_t)fd};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) conn_close(c, CLOSE_ERR);
    }
}

int main(int argc, char **argv) {
    lk_parse(argc, argv, &opt, SERVER_NAME);
    lk_setup(&opt);
    int sfd = lk_signalfd();
    table_init();
    int lfd = lk_listen(&opt);
    ep = lk_epoll_with(lfd, sfd);
    static struct epoll_event evs[512];
    int stop = 0;
    while (!stop) {
        int n = epoll_wait(ep, evs, 512, -1);
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < n; i++) {
            uint64_t key = evs[i].data.u64;
            int fd = (int)(uint32_t)key;
            uint32_t e = evs[i].events;
            if (key == (uint64_t)lfd) {
                accept_all(lfd);
            } else if (key == (uint64_t)sfd) {
                stop = 1;
            } else {
                struct conn *c = table[fd];
                if (!c || c->gen != (uint32_t)(key >> 32)) continue;
                /* Wake the handler only for what it waits on: an EPOLLOUT edge while it
                 * waits for a request would cost a read that can only say EAGAIN. */
                uint32_t wanted = c->writing ? EPOLLOUT : EPOLLIN | EPOLLRDHUP;
                if (e & (wanted | EPOLLERR | EPOLLHUP)) drive(c);
            }
        }
    }
    close_all();
    close(lfd);
    close(ep);
    close(sfd);
    lk_print_final();
    return 0;
}

#else
/* =============================== io_uring =============================== */

static struct io_uring ring;
enum { OP_RECV = 1, OP_SEND = 2 };
/* Tags for the two operations that are not a connection's; conns are 8-aligned. */
#define TAG_ACCEPT 1u
#define TAG_SIGNAL 2u

static struct io_uring_sqe *sqe_get(void) {
    struct io_uring_sqe *s = io_uring_get_sqe(&ring);
    while (!s) {
        io_uring_submit(&ring);
        s = io_uring_get_sqe(&ring);
    }
    return s;
}

static void submit_recv(struct conn *c) {
    unsigned char *at;
    size_t want = lk_msg_want(&c->m, &opt, &at);
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_recv(s, c->fd, at, want, 0);
    io_uring_sqe_set_data64(s, (uint64_t)(uintptr_t)c | OP_RECV);
    lk_st.read_waits++;
}

static void submit_send(struct conn *c) {
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_send(s, c->fd, c->out + c->sent, c->out_len - c->sent, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(s, (uint64_t)(uintptr_t)c | OP_SEND);
    lk_st.write_waits++;
}

static void submit_accept(int lfd) {
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_accept(s, lfd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(s, TAG_ACCEPT);
}

static struct signalfd_siginfo siginfo;
static void submit_signal(int sfd) {
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_read(s, sfd, &siginfo, sizeof siginfo, 0);
    io_uring_sqe_set_data64(s, TAG_SIGNAL);
}

static void on_recv(struct conn *c, int res) {
    lk_st.reads++;
    if (res == -EINTR || res == -EAGAIN) {
        submit_recv(c);
        return;
    }
    if (res <= 0) {
        conn_close(c, res == 0 ? CLOSE_CLEAN : CLOSE_ERR);
        return;
    }
    int r = lk_msg_got(&c->m, (size_t)res, &opt);
    if (r == LK_BAD) {
        conn_close(c, CLOSE_BAD);
    } else if (r == LK_DONE) {
        start_reply(c);
        submit_send(c);
    } else {
        submit_recv(c);
    }
}

static void on_send(struct conn *c, int res) {
    lk_st.writes++;
    if (res == -EINTR || res == -EAGAIN) {
        submit_send(c);
        return;
    }
    if (res < 0) {
        conn_close(c, CLOSE_ERR);
        return;
    }
    c->sent += (size_t)res;
    if (c->sent < c->out_len) {
        submit_send(c);
        return;
    }
    int r = reply_done(c);
    if (r == 1) submit_send(c);
    else if (r == 0) submit_recv(c);
}

int main(int argc, char **argv) {
    lk_parse(argc, argv, &opt, SERVER_NAME);
    lk_setup(&opt);
    int sfd = lk_signalfd();
    table_init();
    /* The ring before the listener: where io_uring is forbidden (a sysctl, a container's
     * seccomp filter) the server fails before it says LISTENING, and labkit reports why. */
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = 16384;
    int err = io_uring_queue_init_params(4096, &ring, &p);
    if (err < 0) {
        fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-err));
        return 1;
    }
    int lfd = lk_listen(&opt);
    submit_accept(lfd);
    submit_signal(sfd);
    int stop = 0;
    while (!stop) {
        err = io_uring_submit_and_wait(&ring, 1);
        if (err < 0 && err != -EINTR) {
            fprintf(stderr, "io_uring_submit_and_wait: %s\n", strerror(-err));
            break;
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            uint64_t tag = io_uring_cqe_get_data64(cqe);
            int res = cqe->res;
            if (tag == TAG_ACCEPT) {
                if (res >= 0) {
                    struct conn *c = conn_new(res);
                    if (c) submit_recv(c);
                }
                submit_accept(lfd);
            } else if (tag == TAG_SIGNAL) {
                stop = 1;
            } else {
                struct conn *c = (struct conn *)(uintptr_t)(tag & ~(uint64_t)7);
                lk_st.dispatches++;
                if ((tag & 7) == OP_RECV) on_recv(c, res);
                else on_send(c, res);
            }
        }
        io_uring_cq_advance(&ring, seen);
    }
    /* The ring goes first: it cancels the recvs still pending on the connections' buffers. */
    io_uring_queue_exit(&ring);
    close_all();
    close(lfd);
    close(sfd);
    lk_print_final();
    return 0;
}
#endif
