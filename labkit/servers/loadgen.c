/* loadgen.c -- labkit's echo load generator: closed loop, N connections on 127.0.0.1,
 * one request outstanding per connection, every response checked byte for byte.
 *
 *   lk_echo_load --port P [--connections N] [--requests R] [--duration S]
 *                [--message-bytes B] [--warmup-per-conn W] [--cpu C] [--timeout S]
 *                [--seed X] [--stats 0|1]
 *
 * A run: connect N sockets; W warm-up requests on each (connection set-up, buffers and
 * frame pools grow here, not in the measured window); the server's counters (a stats
 * request on a connection of its own, opened first so that no accept falls inside the
 * window); the measured phase, which issues requests until R have been issued or S
 * seconds have passed, whichever comes first, and then waits for the ones in flight; the
 * counters again. It always stops: a hard deadline (--timeout, default S + 10 s) ends
 * the run, reporting the responses that never came as missing.
 *
 * Output on stdout, one JSON object per line: "STATS_BEGIN {..}", "STATS_END {..}" (the
 * server's own text) and "RESULT {..}" with requests/s and the latency percentiles of an
 * HDR-style histogram (log-linear buckets, 1/128 relative width).
 *
 * Exit status: 0 all good; 2 bad usage; 1 could not connect; 3 deadline hit with
 * responses missing; 4 a response differed from its request, or the server closed a
 * connection that had a request in flight. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAGIC_ECHO 0x4C4B4531u
#define MAGIC_STATS 0x4C4B533Fu
#define MAGIC_REPLY 0x4C4B5321u
#define HDR 8
#define MAX_CONNS 10000
#define MAX_MESSAGE (1u << 20)

/* ---- an HDR-style histogram: exact below 256 ns, then 128 buckets per power of two ---- */
#define SUB_BITS 7
#define SUB (1u << SUB_BITS)
#define NBUCKETS (2 * SUB + 56 * SUB)
static uint64_t hist[NBUCKETS];
static uint64_t hist_n, hist_max, hist_sum;

static unsigned bucket_of(uint64_t v) {
    if (v < 2 * SUB) return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = msb - SUB_BITS;  /* v >> shift lies in [SUB, 2*SUB) */
    return 2 * SUB + (shift - 1) * SUB + (unsigned)((v >> shift) - SUB);
}

/* The middle of a bucket: its value with half a bucket's width of error at most. */
static double value_of(unsigned b) {
    if (b < 2 * SUB) return b;
    unsigned shift = (b - 2 * SUB) / SUB + 1;
    uint64_t lo = ((uint64_t)((b - 2 * SUB) % SUB) + SUB) << shift;
    return (double)lo + (double)((uint64_t)1 << shift) / 2.0;
}

static void record(uint64_t ns) {
    unsigned b = bucket_of(ns);
    if (b >= NBUCKETS) b = NBUCKETS - 1;
    hist[b]++;
    hist_n++;
    hist_sum += ns;
    if (ns > hist_max) hist_max = ns;
}

static double percentile(double q) {
    if (!hist_n) return 0;
    uint64_t rank = (uint64_t)(q * (double)hist_n + 0.5);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (unsigned b = 0; b < NBUCKETS; b++) {
        seen += hist[b];
        if (seen >= rank) return value_of(b);
    }
    return (double)hist_max;
}

/* ---- options ---- */
static int port = -1, nconns = 100, cpu = -1, want_stats = 1;
static uint64_t max_requests = 100000, warmup_per_conn = 2, seed = 1;
static double duration = 2.0, hard_timeout = -1;
static size_t msg_bytes = 64;

static void usage(const char *why) {
    fprintf(stderr, "lk_echo_load: %s\n", why);
    printf("RESULT {\"error\":\"usage: %s\"}\n", why);
    exit(2);
}

static double num(const char *opt, const char *s, double lo, double hi) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !(v >= lo && v <= hi)) {
        char why[200];
        snprintf(why, sizeof why, "%s must be a number from %g to %g, got '%s'", opt, lo, hi, s);
        usage(why);
    }
    return v;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* This process's user + system time: beside the server's, it shows which side was busy.
 * Its involuntary context switches: how often something else took its CPU. */
static double cpu_seconds(long *preempted) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *preempted = ru.ru_nivcsw;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ---- connections ---- */
enum { IDLE, BUSY, DEAD };

struct conn {
    int fd;
    int state;
    int want_out;       /* registered for EPOLLOUT: a request did not fit the socket */
    uint32_t id;
    uint64_t seq;
    uint64_t t0;        /* when its request went out */
    int measured;       /* the request belongs to the measured phase */
    unsigned char *req; /* header + payload: what must come back */
    unsigned char *resp;
    size_t len, sent, got;
};

static struct conn *conns;
static int ep;
static uint64_t deadline_ns;
static uint64_t issued_measured, done_measured, done_warmup, corrupt, dropped, outstanding;
static uint64_t measure_end_ns;  /* no measured request is issued at or after this */
static int phase;                /* 0 warm-up, 1 measured, 2 draining */
static char first_error[256];

/* Keeps the first thing that went wrong, for the RESULT line (id < 0: no connection). */
static void note_error(const char *what, long id) {
    if (first_error[0]) return;
    if (id < 0) snprintf(first_error, sizeof first_error, "%s", what);
    else snprintf(first_error, sizeof first_error, "connection %ld: %s", id, what);
}

static uint64_t rng_state;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void kill_conn(struct conn *c) {
    if (c->state == BUSY) outstanding--;
    c->state = DEAD;
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
}

static void set_out(struct conn *c, int on) {
    if (c->want_out == on) return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.u32 = c->id};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = on;
}

static void flush_req(struct conn *c) {
    while (c->sent < c->len) {
        ssize_t n = send(c->fd, c->req + c->sent, c->len - c->sent, MSG_NOSIGNAL);
        if (n > 0) {
            c->sent += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            set_out(c, 1);
            return;
        } else {
            dropped++;
            note_error("the server closed it while a request was going out", (long)c->id);
            kill_conn(c);
            return;
        }
    }
    set_out(c, 0);
}

/* Sends the connection's next request: a new sequence number in the first payload bytes,
 * so that a stale or misrouted response cannot pass for this one. */
static void issue(struct conn *c, int measured) {
    c->seq++;
    uint64_t tag = (uint64_t)c->id << 40 | (c->seq & ((1ull << 40) - 1));
    size_t k = msg_bytes < 8 ? msg_bytes : 8;
    for (size_t i = 0; i < k; i++) c->req[HDR + i] = (unsigned char)(tag >> (8 * i));
    c->sent = c->got = 0;
    c->measured = measured;
    c->state = BUSY;
    outstanding++;
    if (measured) issued_measured++;
    c->t0 = now_ns();
    flush_req(c);
}

static void next(struct conn *c) {
    if (phase == 0) {
        if (c->seq < warmup_per_conn) issue(c, 0);
        return;
    }
    if (phase == 1 && issued_measured < max_requests && now_ns() < measure_end_ns) issue(c, 1);
}

static void on_readable(struct conn *c) {
    if (c->state != BUSY) {
        /* Nothing is owed on an idle connection: any byte is too many, and an end of
         * stream is the server dropping a connection the measurement counts on. (A recv
         * of the remaining len - got bytes would ask for 0 and see neither.) */
        char extra;
        ssize_t n = recv(c->fd, &extra, 1, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (n > 0) {
            corrupt++;
            note_error("bytes came with no request in flight", (long)c->id);
        } else {
            dropped++;
            note_error("the server closed an idle connection", (long)c->id);
        }
        kill_conn(c);
        return;
    }
    for (;;) {
        ssize_t n = recv(c->fd, c->resp + c->got, c->len - c->got, 0);
        if (n > 0) {
            c->got += (size_t)n;
            if (c->got < c->len) continue;
            uint64_t t = now_ns();
            c->state = IDLE;
            outstanding--;
            if (memcmp(c->resp, c->req, c->len) != 0) {
                corrupt++;
                note_error("a response differs from its request", (long)c->id);
                kill_conn(c);
                return;
            }
            if (c->measured) {
                record(t - c->t0);
                done_measured++;
            } else {
                done_warmup++;
            }
            /* The next response cannot be here yet: back to epoll (level-triggered) rather
             * than a recv that can only say EAGAIN. Client system calls are the budget
             * that bounds what a one-core client can measure. */
            next(c);
            return;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (c->state == BUSY) {
            dropped++;
            note_error("the server closed it with a request in flight", (long)c->id);
        }
        kill_conn(c);
        return;
    }
}

static void pump(int timeout_ms) {
    static struct epoll_event evs[512];
    int n = epoll_wait(ep, evs, 512, timeout_ms);
    for (int i = 0; i < n; i++) {
        struct conn *c = &conns[evs[i].data.u32];
        if (c->state == DEAD) continue;
        if (evs[i].events & EPOLLOUT && c->state == BUSY && c->sent < c->len) flush_req(c);
        if (c->state != DEAD && evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(c);
    }
}

static int wait_ms(uint64_t until) {
    uint64_t t = now_ns();
    if (t >= until) return 0;
    uint64_t ms = (until - t) / 1000000 + 1;
    return ms > 50 ? 50 : (int)ms;
}

/* Runs the loop until nothing is in flight, or the hard deadline. */
static int drain(void) {
    while (outstanding) {
        if (now_ns() >= deadline_ns) return -1;
        int ms = wait_ms(deadline_ns);
        if (phase == 1 && measure_end_ns > now_ns()) {
            int m = wait_ms(measure_end_ns);
            if (m < ms) ms = m;
        }
        pump(ms);
    }
    return 0;
}

static int connect_one(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Waits until fd is writable (connected) or readable, within the hard deadline. */
static int wait_fd(int fd, short what) {
    for (;;) {
        int ms = wait_ms(deadline_ns);
        if (ms == 0) return -1;
        struct pollfd p = {.fd = fd, .events = what};
        int r = poll(&p, 1, ms);
        if (r > 0) return p.revents & (POLLERR | POLLNVAL) ? -1 : 0;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static int stats_fd = -1;
static char stats_text[8192];

/* One stats request on the stats connection: the server's counters as JSON text. */
static int stats_request(const char *label) {
    unsigned char h[HDR];
    put32(h, MAGIC_STATS);
    put32(h + 4, 0);
    if (send(stats_fd, h, HDR, MSG_NOSIGNAL) != HDR) return -1;
    size_t got = 0, need = HDR;
    unsigned char *buf = (unsigned char *)stats_text;
    while (got < need) {
        if (wait_fd(stats_fd, POLLIN) != 0) return -1;
        ssize_t n = recv(stats_fd, buf + got, need - got, 0);
        if (n <= 0) {
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            return -1;
        }
        got += (size_t)n;
        if (got == HDR && need == HDR) {
            uint32_t len = get32(buf + 4);
            if (get32(buf) != MAGIC_REPLY || len > sizeof stats_text - HDR - 1) return -1;
            need = HDR + len;
        }
    }
    stats_text[need] = 0;
    printf("%s %s\n", label, stats_text + HDR);
    return 0;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage("every option takes a value");
        const char *v = argv[++i];
        if (!strcmp(a, "--port")) port = (int)num(a, v, 1, 65535);
        else if (!strcmp(a, "--connections")) nconns = (int)num(a, v, 1, MAX_CONNS);
        else if (!strcmp(a, "--requests")) max_requests = (uint64_t)num(a, v, 1, 1e12);
        else if (!strcmp(a, "--duration")) duration = num(a, v, 0.001, 3600);
        else if (!strcmp(a, "--message-bytes")) msg_bytes = (size_t)num(a, v, 0, MAX_MESSAGE);
        else if (!strcmp(a, "--warmup-per-conn")) warmup_per_conn = (uint64_t)num(a, v, 0, 1e6);
        else if (!strcmp(a, "--cpu")) cpu = (int)num(a, v, -1, CPU_SETSIZE - 1);
        else if (!strcmp(a, "--timeout")) hard_timeout = num(a, v, 0.01, 7200);
        else if (!strcmp(a, "--seed")) seed = (uint64_t)num(a, v, 0, 1e15);
        else if (!strcmp(a, "--stats")) want_stats = (int)num(a, v, 0, 1);
        else usage("unknown option");
    }
    if (port < 0) usage("--port is required");
    if (hard_timeout < 0) hard_timeout = duration + 10.0;
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) usage("--cpu: cannot run on that CPU");
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    uint64_t start = now_ns();
    deadline_ns = start + (uint64_t)(hard_timeout * 1e9);
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;

    if (want_stats) {
        stats_fd = connect_one();
        if (stats_fd < 0 || wait_fd(stats_fd, POLLOUT) != 0) {
            printf("RESULT {\"error\":\"cannot connect to 127.0.0.1:%d\"}\n", port);
            return 1;
        }
    }
    conns = (struct conn *)calloc((size_t)nconns, sizeof *conns);
    ep = epoll_create1(EPOLL_CLOEXEC);
    size_t len = HDR + msg_bytes;
    for (int i = 0; i < nconns; i++) {
        struct conn *c = &conns[i];
        c->id = (uint32_t)i;
        c->len = len;
        c->req = (unsigned char *)malloc(len);
        c->resp = (unsigned char *)malloc(len);
        if (!c->req || !c->resp) usage("out of memory");
        put32(c->req, MAGIC_ECHO);
        put32(c->req + 4, (uint32_t)msg_bytes);
        for (size_t k = 0; k < msg_bytes; k++) c->req[HDR + k] = (unsigned char)rng();
        c->fd = connect_one();
        if (c->fd < 0) {
            printf("RESULT {\"error\":\"cannot connect connection %d to 127.0.0.1:%d: %s\"}\n",
                   i, port, strerror(errno));
            return 1;
        }
        c->state = IDLE;
    }
    for (int i = 0; i < nconns; i++) {
        int err = 0;
        socklen_t el = sizeof err;
        if (wait_fd(conns[i].fd, POLLOUT) != 0 ||
            getsockopt(conns[i].fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
            printf("RESULT {\"error\":\"connection %d to 127.0.0.1:%d failed: %s\"}\n", i, port,
                   strerror(err ? err : ETIMEDOUT));
            return 1;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    }
    uint64_t connected = now_ns();

    /* Warm-up: at most a quarter of the run's duration. */
    phase = 0;
    for (int i = 0; i < nconns; i++) next(&conns[i]);
    uint64_t warm_end = connected + (uint64_t)(duration * 0.25e9);
    while (outstanding && now_ns() < warm_end && now_ns() < deadline_ns) pump(wait_ms(warm_end));
    phase = 2;  /* stop issuing warm-up requests; wait for those in flight */
    int ok = drain() == 0;
    if (ok && want_stats && stats_request("STATS_BEGIN") != 0) {
        printf("RESULT {\"error\":\"the stats request failed\"}\n");
        return 1;
    }

    /* The measured phase. */
    long preempt_start, preempt_end;
    double cpu_start = cpu_seconds(&preempt_start);
    uint64_t t_start = now_ns();
    measure_end_ns = t_start + (uint64_t)(duration * 1e9);
    phase = 1;
    if (ok)
        for (int i = 0; i < nconns; i++)
            if (conns[i].state == IDLE) next(&conns[i]);
    ok = ok && drain() == 0;
    uint64_t t_end = now_ns();
    double cpu_used = cpu_seconds(&preempt_end) - cpu_start;
    phase = 2;
    const char *stopped_by = issued_measured >= max_requests ? "requests" : "duration";

    /* Anything left in a socket now came with no request: the server sent too much. */
    for (int i = 0; i < nconns && ok; i++) {
        struct conn *c = &conns[i];
        if (c->state == DEAD) continue;
        unsigned char extra;
        ssize_t n = recv(c->fd, &extra, 1, MSG_DONTWAIT);
        if (n > 0) {
            corrupt++;
            note_error("the server sent bytes no request asked for", (long)c->id);
        }
    }
    if (ok && want_stats && stats_request("STATS_END") != 0) note_error("the final stats request failed", -1);

    /* Close with a reset: a thousand sockets per run in TIME_WAIT would use up the
     * ephemeral ports over a sweep. */
    struct linger lin = {.l_onoff = 1, .l_linger = 0};
    for (int i = 0; i < nconns; i++) {
        setsockopt(conns[i].fd, SOL_SOCKET, SO_LINGER, &lin, sizeof lin);
        close(conns[i].fd);
    }
    if (stats_fd >= 0) {
        setsockopt(stats_fd, SOL_SOCKET, SO_LINGER, &lin, sizeof lin);
        close(stats_fd);
    }

    double secs = (double)(t_end - t_start) / 1e9;
    uint64_t missing = ok ? 0 : outstanding;
    if (!ok) note_error("the deadline came with responses missing", -1);
    printf("RESULT {\"connections\":%d,\"message_bytes\":%zu,\"requests_limit\":%llu,"
           "\"duration_limit_s\":%g,\"issued\":%llu,\"completed\":%llu,\"warmup_completed\":%llu,"
           "\"elapsed_s\":%.6f,\"connect_s\":%.6f,\"rps\":%.3f,\"stopped_by\":\"%s\","
           "\"p50_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,"
           "\"mean_us\":%.3f,\"client_cpu_s\":%.6f,\"client_preempted\":%ld,\"corrupt\":%llu,\"dropped\":%llu,\"missing\":%llu,\"error\":\"%s\"}\n",
           nconns, msg_bytes, (unsigned long long)max_requests, duration,
           (unsigned long long)issued_measured, (unsigned long long)done_measured,
           (unsigned long long)done_warmup, secs, (double)(connected - start) / 1e9,
           secs > 0 ? (double)done_measured / secs : 0.0, stopped_by, percentile(0.50) / 1e3,
           percentile(0.90) / 1e3, percentile(0.99) / 1e3, percentile(0.999) / 1e3,
           (double)hist_max / 1e3, hist_n ? (double)hist_sum / (double)hist_n / 1e3 : 0.0, cpu_used,
           preempt_end - preempt_start,
           (unsigned long long)corrupt, (unsigned long long)dropped,
           (unsigned long long)missing, first_error);
    fflush(stdout);
    if (!ok) return 3;
    if (corrupt || dropped) return 4;
    return 0;
}
