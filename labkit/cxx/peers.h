/* peers.h -- the real systems the articles compare switch costs against (plain calls, a
 * syscall, C++20 coroutines, Boost.Context, Boost.Fiber), timed by the method of harness.c.
 * Included by peers.cpp (the bodies), peers_selftest.cpp, and in C by count_main.c (the
 * callgrind driver) and by the extension labkit.core._core (for the peer table).
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

/* What jump_fcontext saves, in the words of this architecture's ABI. */
#if defined(__x86_64__)
#define LKX_FCONTEXT_SAVES                                                                  \
    "jump_fcontext (x86-64 SysV, called through the PLT): stores MXCSR, the x87 control " \
    "word, R12-R15, RBX, RBP and the return address on its own stack, swaps RSP, loads "  \
    "the other side's set, jumps"
#elif defined(__aarch64__)
#define LKX_FCONTEXT_SAVES                                                                  \
    "jump_fcontext (AArch64 AAPCS, called through the PLT): stores D8-D15, X19-X29 and "  \
    "LR on its own stack, swaps SP, loads the other side's set, branches"
#else
#define LKX_FCONTEXT_SAVES "jump_fcontext: the callee-saved registers of this ABI, then SP"
#endif

/* The peer table: every C++ peer, once, in enum order. Everything that lists the peers is
 * made from it: the enum and the names, what each saves, the dispatch of lkx_pingpong to
 * each peer's run_<name> in peers.cpp, and lkx_peer_table(), the table as text, which
 * Python reads (labkit.core.systems, through the extension: the catalogue lists the peers
 * where their library is not built too).
 *
 *   X(name, KIND, FP_CONTROL, SAVES)
 *
 * KIND        baseline (no context of its own), stackless, or stackful (the other side runs
 *             on a stack of its own: stack_size applies).
 * FP_CONTROL  1 where measure's fp_control can set the two contexts' FP control words apart
 *             (lkx_set_fpctl), 0 elsewhere.
 * SAVES       one line: what one switch saves or does. */
#define LKX_PEERS(X)                                                                         \
    /* a call to a function the compiler cannot look into */                                 \
    X(direct_call, baseline, 0,                                                              \
      "nothing: a direct call and its return; the return address is pushed and popped")      \
    /* the same through a pointer read from a volatile */                                    \
    X(indirect_call, baseline, 0,                                                            \
      "nothing: a call through a pointer loaded from memory, and its return")                \
    /* a C++ virtual call, dynamic type unknown to the compiler */                           \
    X(virtual_call, baseline, 0,                                                             \
      "nothing: loads of the vtable pointer and the slot, an indirect call, a return")       \
    /* syscall(SYS_getppid) */                                                               \
    X(syscall_getppid, baseline, 0,                                                          \
      "a user-kernel-user round trip: the kernel saves and restores the user registers on "  \
      "its own stack (plus any speculation mitigations), behind libc's syscall() wrapper")   \
    /* handle.resume() of a suspended C++20 coroutine */                                     \
    X(cxx20_generator, stackless, 0,                                                         \
      "no stack switch: resume() calls the frame's resume function through a pointer; "      \
      "suspending stores the resume index in the heap frame and returns")                    \
    /* two C++20 coroutines passing control by symmetric transfer */                         \
    X(cxx20_symmetric, stackless, 0,                                                         \
      "no stack switch: this frame's resume index is stored, then a tail jump to the other " \
      "coroutine's resume function")                                                         \
    /* boost::context::detail::jump_fcontext */                                              \
    X(boost_fcontext, stackful, LK_HERE_x86_64, LKX_FCONTEXT_SAVES)                          \
    /* boost::context::fiber::resume() */                                                    \
    X(boost_fiber, stackful, 0,                                                              \
      "jump_fcontext as boost_fcontext, wrapped by fiber::resume(): the handle is swapped "  \
      "for null and the context that comes back becomes a new fiber")                        \
    /* boost::this_fiber::yield() between two boost::fibers::fiber */                        \
    X(boost_fibers_yield, stackful, 0,                                                       \
      "a scheduler pass: the yielding fiber is queued on the round-robin ready queue, the "  \
      "next is popped and entered by ontop_fcontext; the dispatcher fiber runs once per "    \
      "round")                                                                               \
    /* boost::coroutines2::coroutine<void>::pull_type, resumed by () */                      \
    X(boost_coroutine2, stackful, 0,                                                         \
      "jump_fcontext under boost::context::fiber, under coroutine2's control block: "        \
      "pull_type::operator() resumes the body, push_type::operator() suspends it, each with " \
      "its state and pending-exception checks")

#define LKX_PEER_ENUM(name, KIND, FP_CONTROL, SAVES) LKX_PEER_##name,
enum lkx_peer { LKX_PEERS(LKX_PEER_ENUM) LKX_NPEERS };

/* The table as text, a line a peer in enum order: "name kind=stackful fp_control=1
 * saves=..." (saves last: it runs to the end of the line). */
#define LKX_STR_(x) #x
#define LKX_STR(x) LKX_STR_(x)
#define LKX_PEER_TEXT(name, KIND, FP_CONTROL, SAVES) \
    #name " kind=" #KIND " fp_control=" LKX_STR(FP_CONTROL) " saves=" SAVES "\n"
static inline const char *lkx_peer_table(void) { return LKX_PEERS(LKX_PEER_TEXT); }

/* The libraries the peers link: the -l name, a header that shows it is installed, and
 * the Debian package that installs it. labkit/core/native_build.py reads these lines
 * (it runs before labkit can be imported), so a peer from a new library adds one here. */
#define LKX_LIBRARIES(L)                                                       \
    L(boost_context, "boost/context/fiber.hpp", "libboost-context-dev")       \
    L(boost_fiber, "boost/fiber/all.hpp", "libboost-fiber-dev")

/* Bytes the compiler asked operator new for, for one frame of the generator coroutine
 * that cxx20_generator resumes; 0 if the frame could not be made. */
size_t lkx_cxx20_frame_bytes(void);

/* 1: lkx_pingpong runs only its switch loops; 2: only its empty loops; 0: both (default).
 * For counting instructions with callgrind, not for timing. */
void lkx_set_only(int which);

#define LKX_FUNCTIONS(F)                                                                         \
    F(const char *, lkx_peer_name, (int peer))                                                   \
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
