/* handoff.c -- kernel context-switch ping-pongs (the lmbench lat_ctx idea) and the
 * two-threads-on-one-core yield experiment (claim C002.2).
 *
 * Method. Task A is the calling thread and does the timing; task B is a thread or a
 * forked child. A hands the turn to B, B hands it back: one round trip, two
 * hand-offs. Each task bumps its own counter once per hand-off it makes, so after
 * R rounds the counters have grown by 2R: proof that every hand-off happened.
 * Each task blocks in the kernel while it waits (nobody spins), so on one CPU
 * every hand-off is a switch from one task to the other, and one-way cost is the
 * round trip / 2. Pinned to two CPUs, the waiting CPU idles instead, and a
 * hand-off is a cross-CPU wake-up: a different quantity, reported as such.
 * Neither CPU then switches between our two tasks; each goes task -> idle and
 * idle -> task, and the time is the IPI plus the idle exit (in a VM, a halted
 * vCPU resumed by the hypervisor), typically far dearer than the switch itself.
 * On one CPU the woken task often preempts the waker at once (wake-up
 * preemption): that switch is counted as involuntary, so it is vol + invol, not
 * vol alone, that comes to about one per hand-off.
 *
 * Baseline. lat_ctx subtracts what passing the token costs without a switch; here
 * the baseline runs the same per-hand-off code in A alone, on objects nobody
 * waits on, so every wait condition is already met: futex = store + FUTEX_WAKE with
 * no waiter + counter; condvar = lock, check, store, unlock, signal with no
 * waiter; pipes = write one byte, read it back from the same pipe. What remains
 * after subtraction is blocking, scheduling, the switch (or wake-up) and the
 * kernel's wake path that only runs when someone sleeps.
 *
 * Kernel counts. Before and after each timed loop A reads its own counts
 * (getrusage(RUSAGE_THREAD)) and B's (/proc/self/task/<tid>/status, or
 * /proc/<pid>/status for the child). B is asleep when the "before" read happens
 * (the baseline ran in between); the "after" read can come just before B's final
 * sleep is recorded on two CPUs, so cross-CPU counts can be short by one. */
#define _GNU_SOURCE
#include "handoff.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lk_timer.h"

#define ERR(...) do { if (err && errlen) snprintf(err, errlen, __VA_ARGS__); } while (0)

static const char *const handoff_mode_names[LK_HANDOFF_NMODES] = {
    "thread_futex", "thread_condvar", "thread_pipe", "process_pipe",
};

const char *lk_handoff_mode_name(int mode) {
    return (mode >= 0 && mode < LK_HANDOFF_NMODES) ? handoff_mode_names[mode] : "?";
}

/* ---- small kernel helpers ---- */

static long futex_wait(int *addr, int expected) {
    return syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}
static long futex_wake(int *addr, int n) {
    return syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}
static int ld(int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void st(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* Blocks while *p == from, i.e. until someone stores another value and wakes us. */
static int wait_change(int *p, int from) {
    int v;
    while ((v = ld(p)) == from) futex_wait(p, from);
    return v;
}

/* EINTR is retried: a signal handler in the host program (Python installs some)
 * must not look like the other task going away. */
static int put1(int fd, char c) {
    for (;;) {
        ssize_t n = write(fd, &c, 1);
        if (n == 1) return 0;
        if (n < 0 && errno == EINTR) continue;
        return -1;
    }
}
static int get1(int fd, char *c) {
    for (;;) {
        ssize_t n = read(fd, c, 1);
        if (n == 1) return 0;
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) errno = EPIPE;   /* end of file: the writer is gone */
        return -1;
    }
}

static int pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static void self_ctxsw(uint64_t *vol, uint64_t *invol) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    *vol = (uint64_t)ru.ru_nvcsw;
    *invol = (uint64_t)ru.ru_nivcsw;
}

/* The counts of another task, from its status file. Only open/read/close: no stdio. */
static int task_ctxsw(const char *path, uint64_t *vol, uint64_t *invol) {
    char buf[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n, len = 0;
    while (len < (ssize_t)sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) != 0) {
        if (n < 0) {
            if (errno == EINTR) continue;
            close(fd);
            return -1;
        }
        len += n;
    }
    close(fd);
    buf[len] = 0;
    /* Anchored on the line start: "nonvoluntary_ctxt_switches" contains the other name. */
    const char *v = strstr(buf, "\nvoluntary_ctxt_switches:");
    const char *i = strstr(buf, "\nnonvoluntary_ctxt_switches:");
    if (!v || !i) return -1;
    *vol = strtoull(strchr(v, ':') + 1, NULL, 10);
    *invol = strtoull(strchr(i, ':') + 1, NULL, 10);
    return 0;
}

/* ---- the shared state ---- */

/* Each task's hot words on their own cache line, so a counter bump does not
 * steal the line the other task is about to read. It lives in a MAP_SHARED
 * mapping so that a forked child shares it too. */
typedef struct {
    _Alignas(64) int turn;             /* futex: 0 = A's turn, 1 = B's turn */
    int stop;                          /* all thread modes: B must return */
    int slot;                          /* condvar: the queue of length 1 (1 = full) */
    pthread_mutex_t m;
    pthread_cond_t not_empty, not_full;
    _Alignas(64) volatile uint64_t a_count;
    _Alignas(64) volatile uint64_t b_count;
    _Alignas(64) int ready;            /* thread B: 0 starting, 1 running, 2 failed */
    int b_errno;
    int b_tid;
    int mode, cpu_b;
    int p1[2], p2[2];                  /* pipes: A -> B, B -> A */
    /* Baseline objects: A's alone, never waited on. */
    _Alignas(64) int bword;
    int bslot;
    pthread_mutex_t bm;
    pthread_cond_t bne, bnf;
    int pb[2];
    volatile uint64_t ba, bb;
} handoff_shared;

/* ---- task B ---- */

static void b_futex(handoff_shared *s) {
    for (;;) {
        wait_change(&s->turn, 0);
        if (__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) return;
        s->b_count++;
        st(&s->turn, 0);
        futex_wake(&s->turn, 1);
    }
}

/* Signal after unlock: a woken consumer that finds the mutex still held would
 * block on it again and add a switch that is an artefact of the code, not of
 * the hand-off (the cppreference condition_variable example does the same). */
static void b_condvar(handoff_shared *s) {
    for (;;) {
        pthread_mutex_lock(&s->m);
        while (!s->slot && !s->stop) pthread_cond_wait(&s->not_empty, &s->m);
        if (s->stop) {
            pthread_mutex_unlock(&s->m);
            return;
        }
        s->slot = 0;
        s->b_count++;
        pthread_mutex_unlock(&s->m);
        pthread_cond_signal(&s->not_full);
    }
}

/* Used by the thread and by the child process: no stdio, no malloc, so it is
 * safe after fork() in a multi-threaded parent. Ends on end-of-file or error. */
static void b_pipe(int rfd, int wfd, volatile uint64_t *count) {
    char c;
    for (;;) {
        if (get1(rfd, &c) != 0) return;
        (*count)++;
        if (put1(wfd, c) != 0) return;
    }
}

static void announce(handoff_shared *s, int state) {
    st(&s->ready, state);
    futex_wake(&s->ready, 1);
}

static void *b_thread(void *arg) {
    handoff_shared *s = arg;
    s->b_tid = (int)syscall(SYS_gettid);
    if (s->cpu_b >= 0 && pin_self(s->cpu_b) != 0) {
        s->b_errno = errno;
        announce(s, 2);
        return NULL;
    }
    announce(s, 1);
    switch (s->mode) {
    case LK_HANDOFF_FUTEX: b_futex(s); break;
    case LK_HANDOFF_CONDVAR: b_condvar(s); break;
    case LK_HANDOFF_PIPE_THREADS: b_pipe(s->p1[0], s->p2[1], &s->b_count); break;
    }
    return NULL;
}

/* The child: only async-signal-safe calls, because the parent may have other
 * threads holding locks (malloc, stdio) at the moment of fork(). */
/* The fds come as arguments, read before fork(): the parent clears its copies
 * in the shared mapping right after fork(), and the child would see that. */
static _Noreturn void b_child(handoff_shared *s, pid_t parent, int rfd, int wfd, const int drop[4]) {
    /* PDEATHSIG covers the parent dying later; getppid() covers it having died
     * before the prctl took effect. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(3);
    /* The host's handlers (e.g. Python's) make no sense in the child: a Ctrl-C
     * should simply end it, and the parent then sees end-of-file. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGHUP, &dfl, NULL);
    sigaction(SIGQUIT, &dfl, NULL);
    for (int i = 0; i < 4; i++) close(drop[i]);
    if (s->cpu_b >= 0 && pin_self(s->cpu_b) != 0) {
        char msg[2] = {'E', (char)errno};
        if (write(wfd, msg, 2) < 0) _exit(4);
        _exit(2);
    }
    if (put1(wfd, 'R') != 0) _exit(4);
    b_pipe(rfd, wfd, &s->b_count);
    _exit(0);
}

/* ---- task A: the timed loops ---- */

__attribute__((noinline)) static int a_futex(handoff_shared *s, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        s->a_count++;
        st(&s->turn, 1);
        futex_wake(&s->turn, 1);
        wait_change(&s->turn, 1);
    }
    return 0;
}

__attribute__((noinline)) static int a_condvar(handoff_shared *s, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        pthread_mutex_lock(&s->m);
        while (s->slot) pthread_cond_wait(&s->not_full, &s->m);
        s->slot = 1;
        s->a_count++;
        pthread_mutex_unlock(&s->m);
        pthread_cond_signal(&s->not_empty);
    }
    /* The last item must be taken too, or the loop would end half a round early. */
    pthread_mutex_lock(&s->m);
    while (s->slot) pthread_cond_wait(&s->not_full, &s->m);
    pthread_mutex_unlock(&s->m);
    return 0;
}

__attribute__((noinline)) static int a_pipe(handoff_shared *s, uint64_t rounds) {
    int w = s->p1[1], r = s->p2[0];
    char c;
    for (uint64_t i = 0; i < rounds; i++) {
        s->a_count++;
        if (put1(w, 'x') != 0 || get1(r, &c) != 0) return -1;
    }
    return 0;
}

/* ---- the baselines: the same per-hand-off work, one task, nobody waits ---- */

__attribute__((noinline)) static int base_futex(handoff_shared *s, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        s->ba++;
        st(&s->bword, 1);
        futex_wake(&s->bword, 1);
        wait_change(&s->bword, 0);   /* condition already met: no FUTEX_WAIT, like a woken task */
        s->bb++;
        st(&s->bword, 0);
        futex_wake(&s->bword, 1);
        wait_change(&s->bword, 1);
    }
    return 0;
}

__attribute__((noinline)) static int base_condvar(handoff_shared *s, uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; i++) {
        pthread_mutex_lock(&s->bm);
        while (s->bslot) pthread_cond_wait(&s->bnf, &s->bm);
        s->bslot = 1;
        s->ba++;
        pthread_mutex_unlock(&s->bm);
        pthread_cond_signal(&s->bne);
        pthread_mutex_lock(&s->bm);
        while (!s->bslot) pthread_cond_wait(&s->bne, &s->bm);
        s->bslot = 0;
        s->bb++;
        pthread_mutex_unlock(&s->bm);
        pthread_cond_signal(&s->bnf);
    }
    return 0;
}

/* A pipe of its own: B is blocked reading p1, and would take a byte written there. */
__attribute__((noinline)) static int base_pipe(handoff_shared *s, uint64_t rounds) {
    int w = s->pb[1], r = s->pb[0];
    char c;
    for (uint64_t i = 0; i < rounds; i++) {
        s->ba++;
        if (put1(w, 'x') != 0 || get1(r, &c) != 0) return -1;
        s->bb++;
        if (put1(w, 'x') != 0 || get1(r, &c) != 0) return -1;
    }
    return 0;
}

typedef int (*handoff_loop_fn)(handoff_shared *, uint64_t);

static int timed(handoff_loop_fn f, handoff_shared *s, uint64_t rounds, uint64_t *ns, uint64_t *ticks) {
    uint64_t n0 = lk_now_ns();
    uint64_t t0 = lk_ticks_begin();
    int rc = f(s, rounds);
    uint64_t t1 = lk_ticks_end();
    uint64_t n1 = lk_now_ns();
    *ns = n1 - n0;
    *ticks = t1 - t0;
    return rc;
}

/* Waits for the child; it exits as soon as its pipe reaches end-of-file, so the
 * grace period only matters if something is badly wrong -- then SIGKILL, so that
 * no child outlives the call. Returns the wait status, or -1 if someone else
 * already reaped it. */
static int reap_child(pid_t pid) {
    int status = 0;
    for (int i = 0; i < 2000; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return status;
        if (r < 0 && errno != EINTR) return -1;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    kill(pid, SIGKILL);
    for (;;) {
        pid_t r = waitpid(pid, &status, 0);
        if (r == pid) return status;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static void describe_status(int status, char *buf, size_t len) {
    if (status < 0) snprintf(buf, len, "reaped elsewhere");
    else if (WIFEXITED(status)) snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status)) snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
    else snprintf(buf, len, "status 0x%x", status);
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* ---- lk_handoff_pingpong: set up, start B, time the repeats, stop B ---- */

/* One ping-pong's resources, so that every step can fail and the same stop_run
 * still releases exactly what was acquired. */
typedef struct {
    handoff_shared *s;
    int mode, is_pipe, is_proc;
    int have_thread;
    pthread_t th;
    pid_t child;
    cpu_set_t a_saved;
    int a_pinned;
    char b_path[64];
    sigset_t pipe_set, old_mask;
    int pipe_was_pending;
} handoff_run;

static int check_args(int mode, int cpu_a, int cpu_b, uint64_t rounds, int warmup, int repeats,
                      const lk_handoff_sample *out, char *err, size_t errlen) {
    if (mode < 0 || mode >= LK_HANDOFF_NMODES) {
        ERR("unknown kernel switch mode %d", mode);
        return -1;
    }
    if (cpu_a < -1 || cpu_a >= CPU_SETSIZE || cpu_b < -1 || cpu_b >= CPU_SETSIZE) {
        ERR("CPU numbers must be -1 or 0..%d (got %d, %d)", CPU_SETSIZE - 1, cpu_a, cpu_b);
        return -1;
    }
    if (rounds == 0 || warmup < 0 || repeats < 0 || (repeats > 0 && !out)) {
        ERR("need rounds >= 1, warmup >= 0, repeats >= 0 and an output array");
        return -1;
    }
    return 0;
}

static handoff_shared *shared_new(int mode, int cpu_b, char *err, size_t errlen) {
    handoff_shared *s = mmap(NULL, sizeof(handoff_shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) {
        ERR("mmap of the shared state failed: %s", strerror(errno));
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->mode = mode;
    s->cpu_b = cpu_b;
    s->p1[0] = s->p1[1] = s->p2[0] = s->p2[1] = s->pb[0] = s->pb[1] = -1;
    pthread_mutex_init(&s->m, NULL);
    pthread_cond_init(&s->not_empty, NULL);
    pthread_cond_init(&s->not_full, NULL);
    pthread_mutex_init(&s->bm, NULL);
    pthread_cond_init(&s->bne, NULL);
    pthread_cond_init(&s->bnf, NULL);
    return s;
}

static void shared_free(handoff_shared *s) {
    for (int i = 0; i < 2; i++) {
        close_fd(&s->p1[i]);
        close_fd(&s->p2[i]);
        close_fd(&s->pb[i]);
    }
    pthread_mutex_destroy(&s->m);
    pthread_cond_destroy(&s->not_empty);
    pthread_cond_destroy(&s->not_full);
    pthread_mutex_destroy(&s->bm);
    pthread_cond_destroy(&s->bne);
    pthread_cond_destroy(&s->bnf);
    munmap(s, sizeof *s);
}

/* If B goes away, A's write to its pipe would raise SIGPIPE and kill the host
 * process; blocked here (threads and the child inherit the mask), it is just EPIPE. */
static void block_sigpipe(handoff_run *k) {
    sigset_t pending;
    sigemptyset(&k->pipe_set);
    sigaddset(&k->pipe_set, SIGPIPE);
    sigpending(&pending);
    k->pipe_was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &k->pipe_set, &k->old_mask);
}

/* Drops a SIGPIPE raised during the run (unless one was pending before), then
 * gives the caller its mask back. */
static void restore_sigpipe(handoff_run *k) {
    if (!k->pipe_was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&k->pipe_set, NULL, &zero) == SIGPIPE) {}
    }
    pthread_sigmask(SIG_SETMASK, &k->old_mask, NULL);
}

static int start_child(handoff_run *k, int cpu_b, char *err, size_t errlen) {
    handoff_shared *s = k->s;
    pid_t parent = getpid();
    int crfd = s->p1[0], cwfd = s->p2[1];
    const int drop[4] = {s->p1[1], s->p2[0], s->pb[0], s->pb[1]};
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    k->child = _Fork();   /* no atfork handlers: the child runs none of the host's code */
#else
    k->child = fork();
#endif
    if (k->child < 0) {
        ERR("fork: %s", strerror(errno));
        return -1;
    }
    if (k->child == 0) b_child(s, parent, crfd, cwfd, drop);
    close_fd(&s->p1[0]);
    close_fd(&s->p2[1]);
    char c;
    if (get1(s->p2[0], &c) != 0) {
        ERR("the child ended before it was ready");
        return -1;
    }
    if (c == 'E') {
        char e = 0;
        get1(s->p2[0], &e);
        ERR("the child could not pin itself to CPU %d: %s", cpu_b, strerror((unsigned char)e));
        return -1;
    }
    snprintf(k->b_path, sizeof k->b_path, "/proc/%d/status", (int)k->child);
    return 0;
}

static int start_thread(handoff_run *k, int cpu_b, char *err, size_t errlen) {
    int e = pthread_create(&k->th, NULL, b_thread, k->s);
    if (e != 0) {
        ERR("pthread_create: %s", strerror(e));
        return -1;
    }
    k->have_thread = 1;
    if (wait_change(&k->s->ready, 0) == 2) {
        ERR("thread B could not pin itself to CPU %d: %s", cpu_b, strerror(k->s->b_errno));
        return -1;
    }
    snprintf(k->b_path, sizeof k->b_path, "/proc/self/task/%d/status", k->s->b_tid);
    return 0;
}

/* B is started before A pins itself, so that an unpinned B (cpu_b = -1)
 * inherits the caller's own affinity, not cpu_a. */
static int start_run(handoff_run *k, int cpu_a, int cpu_b, char *err, size_t errlen) {
    handoff_shared *s = k->s;
    if (sched_getaffinity(0, sizeof k->a_saved, &k->a_saved) != 0) {
        ERR("sched_getaffinity: %s", strerror(errno));
        return -1;
    }
    if (k->is_pipe && (pipe2(s->p1, O_CLOEXEC) != 0 || pipe2(s->p2, O_CLOEXEC) != 0 ||
                       pipe2(s->pb, O_CLOEXEC) != 0)) {
        ERR("pipe2: %s", strerror(errno));
        return -1;
    }
    if ((k->is_proc ? start_child : start_thread)(k, cpu_b, err, errlen) != 0) return -1;
    if (cpu_a >= 0) {
        if (pin_self(cpu_a) != 0) {
            ERR("could not pin the calling thread to CPU %d: %s", cpu_a, strerror(errno));
            return -1;
        }
        k->a_pinned = 1;
    }
    return 0;
}

/* One repeat: the empty loop, then the ping-pong between two readings of both
 * tasks' context-switch counts. */
static int time_one(handoff_run *k, handoff_loop_fn loop, handoff_loop_fn base, uint64_t rounds, lk_handoff_sample *o,
                    char *err, size_t errlen) {
    handoff_shared *s = k->s;
    memset(o, 0, sizeof *o);
    if (timed(base, s, rounds, &o->base_ns, &o->base_ticks) != 0) {
        ERR("baseline pipe failed: %s", strerror(errno));
        return -1;
    }
    uint64_t av0, ai0, bv0, bi0, av1, ai1, bv1, bi1;
    if (task_ctxsw(k->b_path, &bv0, &bi0) != 0) {
        ERR("cannot read %s: %s", k->b_path, strerror(errno));
        return -1;
    }
    self_ctxsw(&av0, &ai0);
    uint64_t c0 = s->a_count + s->b_count;
    int lrc = timed(loop, s, rounds, &o->loop_ns, &o->loop_ticks);
    self_ctxsw(&av1, &ai1);
    if (lrc != 0) {
        ERR("the %s ping-pong broke off: %s", lk_handoff_mode_name(k->mode), strerror(errno));
        return -1;
    }
    if (task_ctxsw(k->b_path, &bv1, &bi1) != 0) {
        ERR("cannot read %s: %s", k->b_path, strerror(errno));
        return -1;
    }
    o->counted = s->a_count + s->b_count - c0;
    o->switches = 2 * rounds;
    o->vol_ctxsw = (av1 - av0) + (bv1 - bv0);
    o->invol_ctxsw = (ai1 - ai0) + (bi1 - bi0);
    return 0;
}

static int time_repeats(handoff_run *k, uint64_t rounds, int warmup, int repeats, lk_handoff_sample *out,
                        char *err, size_t errlen) {
    handoff_loop_fn loop, base;
    switch (k->mode) {
    case LK_HANDOFF_FUTEX: loop = a_futex; base = base_futex; break;
    case LK_HANDOFF_CONDVAR: loop = a_condvar; base = base_condvar; break;
    default: loop = a_pipe; base = base_pipe; break;
    }
    for (int r = -warmup; r < repeats; r++) {
        lk_handoff_sample tmp;
        if (time_one(k, loop, base, rounds, r >= 0 ? &out[r] : &tmp, err, errlen) != 0) return -1;
    }
    return 0;
}

/* Stops B whatever state it is in; every stop below is a state change B cannot
 * miss, so the join / wait that follows cannot hang. Returns rc, or -1 if the
 * child did not end cleanly after a run that had succeeded. */
static int stop_run(handoff_run *k, int rc, char *err, size_t errlen) {
    handoff_shared *s = k->s;
    if (k->have_thread) {
        switch (k->mode) {
        case LK_HANDOFF_FUTEX:
            __atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
            st(&s->turn, 1);
            futex_wake(&s->turn, 1);
            break;
        case LK_HANDOFF_CONDVAR:
            pthread_mutex_lock(&s->m);
            s->stop = 1;
            pthread_mutex_unlock(&s->m);
            pthread_cond_broadcast(&s->not_empty);
            break;
        default:
            close_fd(&s->p1[1]);   /* B reads end-of-file */
            break;
        }
        pthread_join(k->th, NULL);
    }
    if (k->child > 0) {
        close_fd(&s->p1[1]);       /* the child reads end-of-file and exits */
        int status = reap_child(k->child);
        char how[64];
        describe_status(status, how, sizeof how);
        if (rc == 0 && status != 0 && status != -1) {
            ERR("the child did not end cleanly: %s", how);
            rc = -1;
        } else if (rc != 0) {
            /* Append why the child ended: often the real cause of a broken ping-pong. */
            size_t used = err ? strlen(err) : 0;
            if (err && used < errlen) snprintf(err + used, errlen - used, " (child: %s)", how);
        }
    }
    if (k->a_pinned) sched_setaffinity(0, sizeof k->a_saved, &k->a_saved);
    return rc;
}

int lk_handoff_pingpong(int mode, int cpu_a, int cpu_b, uint64_t rounds, int warmup, int repeats,
                 lk_handoff_sample *out, char *err, size_t errlen) {
    if (check_args(mode, cpu_a, cpu_b, rounds, warmup, repeats, out, err, errlen) != 0) return -1;
    handoff_run k = {.mode = mode, .child = -1};
    k.is_pipe = mode == LK_HANDOFF_PIPE_THREADS || mode == LK_HANDOFF_PIPE_PROCESSES;
    k.is_proc = mode == LK_HANDOFF_PIPE_PROCESSES;
    k.s = shared_new(mode, cpu_b, err, errlen);
    if (!k.s) return -1;
    block_sigpipe(&k);
    int rc = start_run(&k, cpu_a, cpu_b, err, errlen);
    if (rc == 0) rc = time_repeats(&k, rounds, warmup, repeats, out, err, errlen);
    rc = stop_run(&k, rc, err, errlen);
    restore_sigpipe(&k);
    shared_free(k.s);
    return rc;
}

/* ---- C002.2: two CPU-bound threads sharing one core ---- */

/* A unit is a fixed amount of work, not a fixed time, so it is the same work on
 * every machine; the k = 0 run tells how long it takes here. The multiply-add
 * chain is serial (each step needs the last), and the empty asm keeps the
 * compiler from folding or vectorising it: about 4 cycles per step on x86-64. */
#define LK_UNIT_ITERS 1000u

uint64_t lk_yield_unit_iters(void) { return LK_UNIT_ITERS; }

static uint64_t busy_unit(uint64_t x) {
    for (unsigned i = 0; i < LK_UNIT_ITERS; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

typedef struct {
    int cpu;
    uint64_t units, k;
    int ready;        /* threads that have pinned themselves (or failed) */
    int failed, fail_errno;
    int go;           /* 0 wait, 1 run, 2 give up */
    uint64_t end_ns[2], done[2], vol[2], invol[2];
    volatile uint64_t sink[2];      /* keeps the work alive; one per thread, no sharing */
} kyield;

typedef struct { kyield *y; int idx; } kyield_arg;

static void *yield_worker(void *arg) {
    kyield_arg *a = arg;
    kyield *y = a->y;
    int i = a->idx;
    if (pin_self(y->cpu) != 0) {
        __atomic_store_n(&y->fail_errno, errno, __ATOMIC_RELAXED);
        __atomic_store_n(&y->failed, 1, __ATOMIC_RELAXED);
    }
    __atomic_add_fetch(&y->ready, 1, __ATOMIC_ACQ_REL);
    futex_wake(&y->ready, 1);
    if (wait_change(&y->go, 0) != 1) return NULL;

    uint64_t v0, i0, v1, i1, x = (uint64_t)i + 1, done = 0;
    self_ctxsw(&v0, &i0);
    uint64_t left = y->k;
    for (uint64_t u = 0; u < y->units; u++) {
        x = busy_unit(x);
        done++;
        if (y->k && --left == 0) {
            left = y->k;
            sched_yield();
        }
    }
    y->end_ns[i] = lk_now_ns();
    self_ctxsw(&v1, &i1);
    y->sink[i] = x;
    y->done[i] = done;
    y->vol[i] = v1 - v0;
    y->invol[i] = i1 - i0;
    return NULL;
}

int lk_yield_run(int cpu, uint64_t units, uint64_t k, lk_yield_sample *out, char *err,
                 size_t errlen) {
    if (cpu < 0 || cpu >= CPU_SETSIZE || !out) {
        ERR("need a CPU number 0..%d and an output sample (got cpu %d)", CPU_SETSIZE - 1, cpu);
        return -1;
    }
    kyield y;
    memset(&y, 0, sizeof y);
    y.cpu = cpu;
    y.units = units;
    y.k = k;
    kyield_arg args[2] = {{&y, 0}, {&y, 1}};
    pthread_t th[2];
    int started = 0, rc = -1;
    for (; started < 2; started++) {
        int e = pthread_create(&th[started], NULL, yield_worker, &args[started]);
        if (e != 0) {
            ERR("pthread_create: %s", strerror(e));
            break;
        }
    }
    if (started == 2) {
        int n;
        while ((n = ld(&y.ready)) < 2) futex_wait(&y.ready, n);
        if (__atomic_load_n(&y.failed, __ATOMIC_RELAXED)) {
            ERR("could not pin a worker to CPU %d: %s", cpu, strerror(y.fail_errno));
        } else {
            rc = 0;
        }
    }
    /* Both threads are released at once, and the clock starts just before, so the
     * run covers both from their first unit to the later one's last. */
    uint64_t t0 = lk_now_ns();
    st(&y.go, rc == 0 ? 1 : 2);
    futex_wake(&y.go, 2);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    if (rc != 0) return -1;
    uint64_t end = y.end_ns[0] > y.end_ns[1] ? y.end_ns[0] : y.end_ns[1];
    out->ns = end - t0;
    out->units_done = y.done[0] + y.done[1];
    out->vol_ctxsw = y.vol[0] + y.vol[1];
    out->invol_ctxsw = y.invol[0] + y.invol[1];
    return 0;
}

/* What labkit/core/structs.py reads these samples by (lk_layout.h). */
LK_LAYOUT(lk_handoff_sample, LK_HANDOFF_SAMPLE_FIELDS)
LK_LAYOUT(lk_yield_sample, LK_YIELD_SAMPLE_FIELDS)
