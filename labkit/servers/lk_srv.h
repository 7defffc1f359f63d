/* lk_srv.h -- what every echo server of notebook 09 shares: the wire protocol, the
 * command line, the counters behind the stats line, and the message buffer that turns
 * reads into whole frames.
 *
 * The protocol (all integers big-endian):
 *
 *     offset 0  u32 magic   "LKE1" echo this frame back, byte for byte
 *                           "LKS?" (length 0) reply with the server's counters
 *     offset 4  u32 length  bytes of payload that follow (at most --max-message)
 *     offset 8  payload
 *
 * The stats reply is a frame with magic "LKS!" and a JSON object as its payload.
 * Any other magic, or a length above the limit, closes that connection: a client
 * that sends garbage or a huge length header gets a clear close, and nothing is
 * allocated for it first.
 *
 * Every server is single-threaded, so the counters are plain globals. */
#ifndef LK_SRV_H
#define LK_SRV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LK_MAGIC_ECHO 0x4C4B4531u  /* "LKE1" */
#define LK_MAGIC_STATS 0x4C4B533Fu /* "LKS?" */
#define LK_MAGIC_REPLY 0x4C4B5321u /* "LKS!" */
#define LK_HDR 8
/* A connection's first buffer: a stats reply must fit without growing it. */
#define LK_MIN_BUF 4096

struct lk_opts {
    const char *name;  /* the server's name, echoed in its stats */
    int port;          /* 0: an ephemeral port, printed as "LISTENING <port>" */
    int cpu;           /* -1: not pinned */
    int some;          /* 1: a read_some loop of at most `chunk` bytes per read */
    size_t chunk;
    size_t max_msg;    /* a longer length header closes the connection */
    int max_conns;     /* connections past this are accepted and closed at once */
    size_t stack;      /* stackful server: bytes of stack per connection */
};

struct lk_stats {
    uint64_t msgs;         /* echo frames answered */
    uint64_t stats_reqs;   /* stats frames answered */
    uint64_t reads;        /* read/recv calls, or io_uring recv completions */
    uint64_t writes;       /* write/send calls, or io_uring send completions */
    uint64_t read_waits;   /* a handler gave control back to the loop to wait for input */
    uint64_t write_waits;  /* ... to wait until the socket takes more output */
    uint64_t dispatches;   /* the loop handed control to a handler or coroutine */
    uint64_t conns_open, conns_total, conns_refused;
    uint64_t closed_bad;   /* bad magic or a length over the limit */
    uint64_t closed_mid;   /* the peer went away in the middle of a frame */
    uint64_t closed_err;   /* a socket error (reset) between frames */
    uint64_t pool_blocks;  /* coroutine frames the pool holds (pooled servers) */
    uint64_t pool_refills; /* pool misses that went to the heap */
    uint64_t stacks;       /* stacks mapped (stackful server) */
};
extern struct lk_stats lk_st;

/* The counting allocator (lk_alloc.c): every malloc/free in the process, libraries included. */
void lk_alloc_counts(uint64_t *allocs, uint64_t *frees, uint64_t *bytes);

/* Parses the command line (exits 2 with a usage line on a bad one). */
void lk_parse(int argc, char **argv, struct lk_opts *o, const char *name);
/* Pins to o->cpu, raises the open-file limit, ignores SIGPIPE (a peer that leaves while
 * we write must give EPIPE, not kill the server). */
void lk_setup(const struct lk_opts *o);
/* A non-blocking listening socket on 127.0.0.1; prints "LISTENING <port>". */
int lk_listen(const struct lk_opts *o);
/* Blocks SIGTERM/SIGINT/SIGHUP and returns a non-blocking signalfd for them, so that
 * the event loop sees a shutdown request as an ordinary readable descriptor. */
int lk_signalfd(void);
/* An epoll set watching the listening socket and the signalfd for input, each keyed by
 * its own descriptor number in data.u64; exits with a message when it cannot be made. */
int lk_epoll_with(int lfd, int sfd);
/* Slots for a table indexed by file descriptor: the open-file limit, at most 2^20. */
size_t lk_fd_table_len(void);
/* The counters as one JSON object; returns its length. */
size_t lk_stats_json(char *out, size_t cap);
/* Prints "STATS <json>" on stdout: the line a server leaves behind when it stops. */
void lk_print_final(void);

/* ---- frames ---- */
enum { LK_MORE = 0, LK_DONE = 1, LK_BAD = -1 };

struct lk_msg {
    unsigned char *buf;
    size_t cap;
    size_t have;    /* bytes in buf */
    size_t frame;   /* header + payload of the frame being read; 0 while the header is incomplete */
    uint32_t magic;
};

int lk_msg_init(struct lk_msg *m);  /* 0, or -1 when out of memory */
void lk_msg_free(struct lk_msg *m);
/* Where the next read goes and at most how much it may take: the rest of the frame once
 * its length is known, otherwise the free buffer (whole mode) or `chunk` (some mode). */
size_t lk_msg_want(const struct lk_msg *m, const struct lk_opts *o, unsigned char **at);
/* n bytes arrived where lk_msg_want said: LK_DONE (a whole frame is in), LK_MORE or LK_BAD. */
int lk_msg_got(struct lk_msg *m, size_t n, const struct lk_opts *o);
/* What to send back for the finished frame: the frame itself, or a stats reply. */
size_t lk_msg_reply(struct lk_msg *m, const unsigned char **out);
/* Drops the answered frame, keeps whatever followed it; LK_DONE if that already holds
 * another whole frame (a client that pipelines), else LK_MORE or LK_BAD. */
int lk_msg_consume(struct lk_msg *m, const struct lk_opts *o);
/* For a whole-frame read that stops by itself (asio's completion condition): how many
 * more bytes the frame needs when `total` bytes are in buf, 0 when the frame is whole,
 * bad, or larger than the buffer (lk_msg_got then sorts out which). */
size_t lk_frame_needs(const unsigned char *buf, size_t total, size_t cap, size_t max_msg);

#ifdef __cplusplus
}
#endif
#endif
