/* peers.h -- the real systems the articles compare switch costs against (plain calls, a
 * syscall, C++20 coroutines, Boost.Context, Boost.Fiber), timed by the method of harness.c.
 * Included by peers.cpp (the bodies), peers_selftest.cpp and, in C, csrc/count_main.c.
 * Plain C declarations with C linkage because the callers outside C++ look the names up
 * unmangled in liblabkit_peers-<tag>.so: ctypes in labkit/core/native.py, typed from the
 * prototypes the library exports (LKX_FUNCTIONS below, lk_layout.h), and lk_count through
 * dlsym, typed by these declarations. */
#ifndef LABKIT_PEERS_H
#define LABKIT_PEERS_H

#include <stddef.h>
#include <stdint.h>

/* labkit_core.h has no extern "C" of its own; lk_sample is a plain struct either way. */
#ifdef __cplusplus
extern "C" {
#endif

#include "../csrc/labkit_core.h"

enum lkx_peer {
    LKX_DIRECT_CALL = 0,     /* a call to a function the compiler cannot look into */
    LKX_INDIRECT_CALL,       /* the same through a pointer read from a volatile */
    LKX_VIRTUAL_CALL,        /* a C++ virtual call, dynamic type unknown to the compiler */
    LKX_SYSCALL_GETPPID,     /* syscall(SYS_getppid) */
    LKX_CXX20_GENERATOR,     /* handle.resume() of a suspended C++20 coroutine */
    LKX_CXX20_SYMMETRIC,     /* two C++20 coroutines passing control by symmetric transfer */
    LKX_BOOST_FCONTEXT,      /* boost::context::detail::jump_fcontext */
    LKX_BOOST_FIBER,         /* boost::context::fiber::resume() */
    LKX_BOOST_FIBERS_YIELD,  /* boost::this_fiber::yield() between two boost::fibers::fiber */
    LKX_BOOST_COROUTINE2,    /* boost::coroutines2::coroutine<void>::pull_type, resumed by () */
    LKX_NPEERS
};

/* The libraries the peers link: the -l name, a header that shows it is installed, and
 * the Debian package that installs it. labkit/core/native_build.py reads these lines
 * (it runs before labkit can be imported), so a peer from a new library adds one here. */
#define LKX_LIBRARIES(L)                                                       \
    L(boost_context, "boost/context/fiber.hpp", "libboost-context-dev")       \
    L(boost_fiber, "boost/fiber/all.hpp", "libboost-fiber-dev")

/* 1 if the peer runs the other side on a stack of its own (stack_size applies). */
int lkx_peer_stackful(int peer);

/* Bytes the compiler asked operator new for, for one frame of the generator coroutine
 * that LKX_CXX20_GENERATOR resumes; 0 if the frame could not be made. */
size_t lkx_cxx20_frame_bytes(void);

/* 1: lkx_pingpong runs only its switch loops; 2: only its empty loops; 0: both (default).
 * For counting instructions with callgrind, not for timing. */
void lkx_set_only(int which);

#define LKX_FUNCTIONS(F)                                                                         \
    F(const char *, lkx_peer_name, (int peer))                                                   \
    /* One line: what one switch saves or does. */                                               \
    F(const char *, lkx_peer_saves, (int peer))                                                  \
    /* "" if the peer was built into this library, else why not and what to install. */          \
    F(const char *, lkx_peer_why_not, (int peer))                                                \
    /* The ping-pong of harness.c's lk_pingpong: rounds round trips = 2*rounds switches,         \
     * the loop without the switch timed right before each sample as the baseline,               \
     * warmup pairs dropped, repeats samples written to out. stack_size (bytes) is used by       \
     * the stackful peers only and is not validated. Returns 0, or -1 with err filled. */        \
    F(int, lkx_pingpong, (int peer, size_t stack_size, uint64_t rounds, int warmup,              \
                          int repeats, lk_sample *out, char *err, size_t errlen))                \
    /* FP control words for the next boost_fcontext runs: 0 as they are, 1 both contexts at      \
     * the ABI defaults, 2 they differ (main did an inexact division after making the other). */ \
    F(void, lkx_set_fpctl, (int mode))                                                           \
    /* The flags this library was built with (setup.py passes them as LKX_CFLAGS). */            \
    F(const char *, lkx_cflags, (void))
LK_DECLARE(LKX_FUNCTIONS)

#ifdef __cplusplus
}
#endif

#endif
