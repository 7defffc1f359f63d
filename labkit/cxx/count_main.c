/* count_main.c -- runs one ping-pong of one kernel or peer from a labkit build, untimed,
 * for valgrind --tool=callgrind to count its instructions (labkit/experiments/callgrind.py).
 *
 *   lk_count LIB labkit|peer|user INDEX ROUNDS ONLY STACK
 *
 * LIB is a liblabkit_c-<tag>.so (labkit: the lab's kernels), liblabkit_peers-<tag>.so
 * (peer: the C++ peers) or a user's switch with the lab's harness (user: csrc/user_switch.c,
 * which answers the core's entry points), the system names of labkit.core.systems; ONLY is 1 for the switch
 * loop alone, 2 for the empty loop alone. Counting two ROUNDS and taking the difference
 * cancels everything that is not the loop. It sits with the C++ peers because it knows both
 * libraries' entry points: the core's (csrc/, below) and the peers'. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../csrc/labkit_core.h"
#include "peers.h"

/* The functions looked up, typed by their declarations in the headers. */
typedef __typeof__(&lk_pingpong_fp) core_fn;
typedef __typeof__(&lkx_pingpong) peer_fn;
typedef __typeof__(&lk_set_only) only_fn;

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s LIB labkit|peer|user INDEX ROUNDS ONLY STACK\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[2], "labkit") != 0 && strcmp(argv[2], "peer") != 0 &&
        strcmp(argv[2], "user") != 0) {
        fprintf(stderr, "%s: the system must be labkit, peer or user, not %s\n", argv[0], argv[2]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    int peer = strcmp(argv[2], "peer") == 0;
    int index = atoi(argv[3]);
    uint64_t rounds = strtoull(argv[4], 0, 10);
    int only = atoi(argv[5]);
    size_t stack = strtoull(argv[6], 0, 10);
    only_fn set_only = (only_fn)dlsym(lib, peer ? "lkx_set_only" : "lk_set_only");
    if (!set_only) {
        fprintf(stderr, "no set_only in %s\n", argv[1]);
        return 2;
    }
    set_only(only);
    lk_sample s;
    char err[512] = "";
    int rc;
    if (peer) {
        peer_fn f = (peer_fn)dlsym(lib, "lkx_pingpong");
        rc = f ? f(index, stack, rounds, 0, 1, &s, err, sizeof err) : -1;
    } else {
        core_fn f = (core_fn)dlsym(lib, "lk_pingpong_fp");
        rc = f ? f(index, stack, 1, rounds, 0, 1, 0, &s, err, sizeof err) : -1;
    }
    if (rc != 0) {
        fprintf(stderr, "run failed: %s\n", err);
        return 1;
    }
    /* The counters prove the loop that was counted really switched. Written raw: printf
     * would spend more instructions on a number with more digits, and the longer run's
     * count would carry them. */
    uint64_t counted = s.counted;
    fwrite(&counted, sizeof counted, 1, stdout);
    return 0;
}
