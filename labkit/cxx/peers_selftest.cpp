/* peers_selftest.cpp -- runs every peer once and checks that every switch happened
 * (the two sides counted 2 * rounds transfers). Usage: peers_selftest [rounds]
 * (default 1000); prints one line per peer and PEERS SELFTEST PASSED or FAILED. */
#include "peers.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
    uint64_t rounds = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000;
    const int warmup = 1, repeats = 2;
    const size_t stack = 64 * 1024;
    int failed = 0;

    for (int peer = 0; peer < LKX_NPEERS; peer++) {
        const char *name = lkx_peer_name(peer);
        lk_sample out[repeats] = {};
        char err[256] = "";
        if (lkx_pingpong(peer, stack, rounds, warmup, repeats, out, err, sizeof err) != 0) {
            std::printf("FAIL %s: %s\n", name, err);
            failed++;
            continue;
        }
        std::vector<double> net;
        bool bad = false;
        for (const lk_sample &s : out) {
            if (s.switches != 2 * rounds || s.counted != s.switches) {
                std::printf("FAIL %s: switches %llu, counted %llu, expected %llu\n", name,
                            (unsigned long long)s.switches, (unsigned long long)s.counted,
                            (unsigned long long)(2 * rounds));
                bad = true;
                break;
            }
            net.push_back(((double)s.loop_ns - (double)s.base_ns) / (double)s.switches);
        }
        if (bad) {
            failed++;
            continue;
        }
        std::sort(net.begin(), net.end());
        size_t n = net.size();
        double median = n % 2 ? net[n / 2] : (net[n / 2 - 1] + net[n / 2]) / 2;
        std::printf("ok %s %.2f\n", name, median);
    }

    size_t frame = lkx_cxx20_frame_bytes();
    if (frame == 0) {
        std::printf("FAIL cxx20 frame bytes: 0\n");
        failed++;
    } else {
        std::printf("ok cxx20_frame_bytes %zu\n", frame);
    }

    std::printf(failed ? "PEERS SELFTEST FAILED\n" : "PEERS SELFTEST PASSED\n");
    return failed ? 1 : 0;
}
