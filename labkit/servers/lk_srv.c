/* lk_srv.c -- the parts of the echo servers that are the same for all of them (lk_srv.h). */
#define _GNU_SOURCE
#include "lk_srv.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct lk_stats lk_st;
static const struct lk_opts *g_opts;

static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void usage(const char *name, const char *why) {
    fprintf(stderr,
            "%s: %s\nusage: %s [--port N] [--cpu N] [--read-mode whole|some] [--chunk BYTES]\n"
            "       [--max-message BYTES] [--max-conns N] [--stack BYTES]\n",
            name, why, name);
    exit(2);
}

static unsigned long long number(const char *name, const char *opt, const char *s,
                                 unsigned long long lo, unsigned long long hi) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        char why[160];
        snprintf(why, sizeof why, "%s must be an integer from %llu to %llu, got '%s'", opt, lo,
                 hi, s);
        usage(name, why);
    }
    return v;
}

void lk_parse(int argc, char **argv, struct lk_opts *o, const char *name) {
    o->name = name;
    o->port = 0;
    o->cpu = -1;
    o->some = 0;
    o->chunk = 4096;
    o->max_msg = 1 << 20;
    o->max_conns = 4096;
    o->stack = 64 * 1024;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage(name, "every option takes a value");
        const char *v = argv[++i];
        if (!strcmp(a, "--port"))
            o->port = (int)number(name, a, v, 0, 65535);
        else if (!strcmp(a, "--cpu"))
            o->cpu = !strcmp(v, "-1") ? -1 : (int)number(name, a, v, 0, CPU_SETSIZE - 1);
        else if (!strcmp(a, "--read-mode")) {
            if (!strcmp(v, "whole")) o->some = 0;
            else if (!strcmp(v, "some")) o->some = 1;
            else usage(name, "--read-mode must be 'whole' or 'some'");
        } else if (!strcmp(a, "--chunk"))
            o->chunk = (size_t)number(name, a, v, 1, 1 << 24);
        else if (!strcmp(a, "--max-message"))
            o->max_msg = (size_t)number(name, a, v, 0, 1u << 30);
        else if (!strcmp(a, "--max-conns"))
            o->max_conns = (int)number(name, a, v, 1, 1 << 20);
        else if (!strcmp(a, "--stack"))
            o->stack = (size_t)number(name, a, v, 16 * 1024, 64u << 20);
        else
            usage(name, "unknown option");
    }
    g_opts = o;
}

void lk_setup(const struct lk_opts *o) {
    if (o->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(o->cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            perror("sched_setaffinity");
            exit(1);
        }
    }
    /* A thousand connections, plus the listener and the stats connection. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
}

size_t lk_fd_table_len(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 20) ? (1u << 20)
                                                                     : (size_t)rl.rlim_cur;
}

int lk_listen(const struct lk_opts *o) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        perror("socket");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)o->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  /* loopback only, never another host */
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, SOMAXCONN) != 0) {
        perror("bind/listen");
        exit(1);
    }
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    printf("LISTENING %d\n", ntohs(sa.sin_port));
    fflush(stdout);
    return fd;
}

int lk_epoll_with(int lfd, int sfd) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
        perror("epoll_create1");
        exit(1);
    }
    int fds[2] = {lfd, sfd};
    for (int i = 0; i < 2; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)fds[i]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) != 0) {
            perror("epoll_ctl");
            exit(1);
        }
    }
    return ep;
}

int lk_signalfd(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        perror("sigprocmask");
        exit(1);
    }
    int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) {
        perror("signalfd");
        exit(1);
    }
    return fd;
}

/* VmRSS and VmHWM in KiB, read without stdio: the stats path must not allocate. */
static void rss(uint64_t *now_kb, uint64_t *peak_kb) {
    char text[4096];
    *now_kb = *peak_kb = 0;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return;
    text[n] = 0;
    const char *p = strstr(text, "VmRSS:");
    if (p) *now_kb = strtoull(p + 6, NULL, 10);
    p = strstr(text, "VmHWM:");
    if (p) *peak_kb = strtoull(p + 6, NULL, 10);
}

size_t lk_stats_json(char *out, size_t cap) {
    uint64_t allocs, frees, bytes, rss_kb, hwm_kb;
    lk_alloc_counts(&allocs, &frees, &bytes);
    rss(&rss_kb, &hwm_kb);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const struct lk_opts *o = g_opts;
    int n = snprintf(
        out, cap,
        "{\"server\":\"%s\",\"pid\":%d,\"read_mode\":\"%s\",\"chunk\":%zu,"
        "\"now_ns\":%llu,\"msgs\":%llu,\"stats_reqs\":%llu,\"reads\":%llu,\"writes\":%llu,"
        "\"read_waits\":%llu,\"write_waits\":%llu,\"dispatches\":%llu,"
        "\"conns_open\":%llu,\"conns_total\":%llu,\"conns_refused\":%llu,"
        "\"closed_bad\":%llu,\"closed_mid\":%llu,\"closed_err\":%llu,"
        "\"allocs\":%llu,\"frees\":%llu,\"alloc_bytes\":%llu,\"live_allocs\":%lld,"
        "\"pool_blocks\":%llu,\"pool_refills\":%llu,\"stacks\":%llu,"
        "\"rss_kb\":%llu,\"hwm_kb\":%llu,\"utime_us\":%lld,\"stime_us\":%lld,"
        "\"nvcsw\":%ld,\"nivcsw\":%ld}",
        o ? o->name : "?", (int)getpid(), o && o->some ? "some" : "whole", o ? o->chunk : 0,
        (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
        (unsigned long long)lk_st.msgs, (unsigned long long)lk_st.stats_reqs,
        (unsigned long long)lk_st.reads, (unsigned long long)lk_st.writes,
        (unsigned long long)lk_st.read_waits, (unsigned long long)lk_st.write_waits,
        (unsigned long long)lk_st.dispatches, (unsigned long long)lk_st.conns_open,
        (unsigned long long)lk_st.conns_total, (unsigned long long)lk_st.conns_refused,
        (unsigned long long)lk_st.closed_bad, (unsigned long long)lk_st.closed_mid,
        (unsigned long long)lk_st.closed_err, (unsigned long long)allocs,
        (unsigned long long)frees, (unsigned long long)bytes, (long long)(allocs - frees),
        (unsigned long long)lk_st.pool_blocks, (unsigned long long)lk_st.pool_refills,
        (unsigned long long)lk_st.stacks, (unsigned long long)rss_kb,
        (unsigned long long)hwm_kb,
        (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
        (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec, ru.ru_nvcsw,
        ru.ru_nivcsw);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

void lk_print_final(void) {
    char buf[2048];
    lk_stats_json(buf, sizeof buf);
    printf("STATS %s\n", buf);
    fflush(stdout);
}

/* ---- frames ---- */

int lk_msg_init(struct lk_msg *m) {
    m->buf = (unsigned char *)malloc(LK_MIN_BUF);
    m->cap = m->buf ? LK_MIN_BUF : 0;
    m->have = m->frame = 0;
    m->magic = 0;
    return m->buf ? 0 : -1;
}

void lk_msg_free(struct lk_msg *m) {
    free(m->buf);
    m->buf = NULL;
    m->cap = m->have = m->frame = 0;
}

size_t lk_msg_want(const struct lk_msg *m, const struct lk_opts *o, unsigned char **at) {
    size_t n = m->frame ? m->frame - m->have : m->cap - m->have;
    if (o->some && n > o->chunk) n = o->chunk;
    *at = m->buf + m->have;
    return n;
}

/* Looks at the header once it is in: sets frame and grows the buffer to hold it. */
static int parse(struct lk_msg *m, const struct lk_opts *o) {
    if (m->frame || m->have < LK_HDR) return m->frame && m->have >= m->frame ? LK_DONE : LK_MORE;
    uint32_t magic = get32(m->buf), len = get32(m->buf + 4);
    if (magic == LK_MAGIC_STATS ? len != 0 : magic != LK_MAGIC_ECHO || len > o->max_msg)
        return LK_BAD;
    m->magic = magic;
    m->frame = LK_HDR + (size_t)len;
    if (m->frame > m->cap) {
        size_t cap = m->cap;
        while (cap < m->frame) cap *= 2;
        unsigned char *b = (unsigned char *)realloc(m->buf, cap);
        if (!b) return LK_BAD;
        m->buf = b;
        m->cap = cap;
    }
    return m->have >= m->frame ? LK_DONE : LK_MORE;
}

int lk_msg_got(struct lk_msg *m, size_t n, const struct lk_opts *o) {
    m->have += n;
    return parse(m, o);
}

size_t lk_msg_reply(struct lk_msg *m, const unsigned char **out) {
    if (m->magic == LK_MAGIC_ECHO) {
        lk_st.msgs++;
        *out = m->buf;
        return m->frame;
    }
    /* One stats reply at a time: single-threaded servers, and the client waits for it. */
    static unsigned char reply[LK_MIN_BUF];
    size_t n = lk_stats_json((char *)reply + LK_HDR, sizeof reply - LK_HDR);
    put32(reply, LK_MAGIC_REPLY);
    put32(reply + 4, (uint32_t)n);
    lk_st.stats_reqs++;
    *out = reply;
    return LK_HDR + n;
}

int lk_msg_consume(struct lk_msg *m, const struct lk_opts *o) {
    size_t rest = m->have - m->frame;
    if (rest) memmove(m->buf, m->buf + m->frame, rest);
    m->have = rest;
    m->frame = 0;
    m->magic = 0;
    return parse(m, o);
}

size_t lk_frame_needs(const unsigned char *buf, size_t total, size_t cap, size_t max_msg) {
    if (total < LK_HDR) return cap - total;  /* header and, with luck, the payload in one go */
    uint32_t magic = get32(buf), len = get32(buf + 4);
    if (magic != LK_MAGIC_ECHO && magic != LK_MAGIC_STATS) return 0;
    if (len > max_msg) return 0;
    size_t frame = LK_HDR + (size_t)len;
    if (frame > cap || total >= frame) return 0;
    return frame - total;
}
