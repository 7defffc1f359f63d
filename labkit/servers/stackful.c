/* stackful.c -- the stackful-coroutine echo server: one coroutine per connection, each on a
 * guarded stack of its own, switched with labkit's asm_fpu kernel (the one that saves what
 * Boost's jump_fcontext saves); the event loop (epoll, edge-triggered) runs on the main
 * stack and resumes a coroutine when its socket is ready.
 *
 * The connection's code reads like blocking code: read, and if the socket has nothing,
 * switch to the loop until it has. A "suspension" is exactly one such switch. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../csrc/labkit_core.h"
#include "lk_srv.h"

enum { WAIT_NONE, WAIT_IN, WAIT_OUT };
enum { RUNNING, CLOSE_CLEAN, CLOSE_BAD, CLOSE_ERR };

struct co {
    int fd;
    uint32_t gen;
    void *sp;        /* the suspended coroutine's stack pointer */
    lk_stack stack;
    int wait;        /* what it waits for, while suspended */
    int done;        /* RUNNING, or how it ended (it then never runs again) */
    int partial;     /* it ended in the middle of a frame */
    struct lk_msg m;
};

static struct lk_opts opt;
static lk_swap_fn swap_fn;
static void *main_sp;
static int ep;
static struct co **table;
static size_t table_len;
static uint32_t next_gen = 1;

static void suspend(struct co *c, int what) {
    c->wait = what;
    swap_fn(&c->sp, main_sp);
    c->wait = WAIT_NONE;
}

static void destroy(struct co *c) {
    if (c->done == CLOSE_BAD) lk_st.closed_bad++;
    else if (c->partial) lk_st.closed_mid++;
    else if (c->done == CLOSE_ERR) lk_st.closed_err++;
    table[c->fd] = NULL;
    close(c->fd);
    lk_msg_free(&c->m);
    lk_stack_free(&c->stack);
    free(c);
    lk_st.conns_open--;
}

static void resume(struct co *c) {
    lk_st.dispatches++;
    swap_fn(&main_sp, c->sp);
    /* Its stack can only be unmapped from here, once nothing runs on it. */
    if (c->done != RUNNING) destroy(c);
}

/* >0 bytes, 0 at end of stream, -1 on an error. */
static ssize_t co_read(struct co *c, unsigned char *p, size_t n) {
    for (;;) {
        ssize_t r = read(c->fd, p, n);
        lk_st.reads++;
        if (r >= 0) return r;
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -1;
        lk_st.read_waits++;
        suspend(c, WAIT_IN);
    }
}

static int co_write_all(struct co *c, const unsigned char *p, size_t n) {
    while (n) {
        ssize_t r = write(c->fd, p, n);
        lk_st.writes++;
        if (r > 0) {
            p += r;
            n -= (size_t)r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && errno == EAGAIN) {
            lk_st.write_waits++;
            suspend(c, WAIT_OUT);
        } else {
            return -1;
        }
    }
    return 0;
}

/* The whole life of one connection. It must not return (there is nothing to return to):
 * it records how it ended and switches to the loop for good. */
static void serve(void *arg) {
    struct co *c = (struct co *)arg;
    int status = LK_MORE, why = CLOSE_CLEAN;
    for (;;) {
        while (status == LK_MORE) {
            unsigned char *at;
            size_t want = lk_msg_want(&c->m, &opt, &at);
            ssize_t n = co_read(c, at, want);
            if (n <= 0) {
                why = n == 0 ? CLOSE_CLEAN : CLOSE_ERR;
                goto out;
            }
            status = lk_msg_got(&c->m, (size_t)n, &opt);
        }
        if (status == LK_BAD) {
            why = CLOSE_BAD;
            goto out;
        }
        const unsigned char *reply;
        size_t len = lk_msg_reply(&c->m, &reply);
        if (co_write_all(c, reply, len) != 0) {
            c->partial = 1;
            why = CLOSE_ERR;
            goto out;
        }
        status = lk_msg_consume(&c->m, &opt);
    }
out:
    if (c->m.have) c->partial = 1;
    c->done = why;
    swap_fn(&c->sp, main_sp);
    abort();  /* never resumed */
}

static void accept_all(int lfd) {
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return;
        }
        struct co *c = NULL;
        if ((size_t)fd < table_len && lk_st.conns_open < (uint64_t)opt.max_conns)
            c = (struct co *)calloc(1, sizeof *c);
        if (c && lk_msg_init(&c->m) != 0) {
            free(c);
            c = NULL;
        }
        if (c && lk_stack_alloc(&c->stack, opt.stack, 0, 0) != 0) {
            lk_msg_free(&c->m);
            free(c);
            c = NULL;
        }
        if (!c) {
            lk_st.conns_refused++;
            close(fd);
            continue;
        }
        lk_st.stacks++;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->fd = fd;
        c->gen = next_gen++;
        c->sp = lk_make(LK_ASM_FPU, &c->stack, serve, c);
        table[fd] = c;
        lk_st.conns_open++;
        lk_st.conns_total++;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                                 .data.u64 = (uint64_t)c->gen << 32 | (uint32_t)fd};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        resume(c);  /* it reads until the socket is empty, then waits */
    }
}

int main(int argc, char **argv) {
    lk_parse(argc, argv, &opt, "stackful_epoll");
    lk_setup(&opt);
    swap_fn = lk_swap_asm_fpu;
    int sfd = lk_signalfd();
    table_len = lk_fd_table_len();
    table = (struct co **)calloc(table_len, sizeof *table);
    int lfd = lk_listen(&opt);
    ep = lk_epoll_with(lfd, sfd);
    static struct epoll_event evs[512];
    int stop = 0;
    while (!stop) {
        int n = epoll_wait(ep, evs, 512, -1);
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < n; i++) {
            uint64_t key = evs[i].data.u64;
            uint32_t e = evs[i].events;
            if (key == (uint64_t)lfd) {
                accept_all(lfd);
            } else if (key == (uint64_t)sfd) {
                stop = 1;
            } else {
                struct co *c = table[(uint32_t)key];
                if (!c || c->gen != (uint32_t)(key >> 32)) continue;
                uint32_t wanted = c->wait == WAIT_IN ? EPOLLIN | EPOLLRDHUP
                                : c->wait == WAIT_OUT ? EPOLLOUT : 0;
                if (e & (wanted | EPOLLERR | EPOLLHUP)) resume(c);
            }
        }
    }
    /* Suspended coroutines own nothing on their stacks: everything they hold is in
     * their struct co, so they can be dropped where they stand. */
    for (size_t fd = 0; fd < table_len; fd++) {
        struct co *c = table[fd];
        if (!c) continue;
        c->done = CLOSE_CLEAN;
        if (c->m.have) c->partial = 1;
        destroy(c);
    }
    free(table);
    close(lfd);
    close(ep);
    close(sfd);
    lk_print_final();
    return 0;
}
