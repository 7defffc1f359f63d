/* perf.h -- perf_event_open(2) for labkit.core.counters: one counter of the kernel's, of
 * the calling thread and the threads and processes it starts afterwards (inherit), on any
 * CPU, opened disabled. The caller enables it, reads it (value, time enabled, time
 * running) and closes it; all of that is plain file-descriptor work in Python. */
#ifndef LABKIT_PERF_H
#define LABKIT_PERF_H

#include <stdint.h>

/* A counter of perf_event_attr type `type` and config `config` (user space only when
 * user_only: what perf_event_paranoid >= 2 still allows a process without CAP_PERFMON).
 * Returns its file descriptor, or -errno. */
int lk_perf_open(uint32_t type, uint64_t config, int user_only);

#endif
