/* perf.c -- see perf.h. */
#define _GNU_SOURCE
#include "perf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int lk_perf_open(uint32_t type, uint64_t config, int user_only) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = type;
    attr.config = config;
    /* Read gives value, time enabled, time running: a multiplexed counter is scaled. */
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    attr.disabled = 1;
    attr.inherit = 1;  /* the hand-offs' second thread or forked process counts too */
    attr.exclude_kernel = user_only ? 1 : 0;
    attr.exclude_hv = user_only ? 1 : 0;
    long fd = syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1 /* any CPU */,
                      -1 /* no group */, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}
