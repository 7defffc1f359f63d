/* switch_platform.h -- picks the one switch-kernel file for this architecture and ABI. */
#ifndef LK_SWITCH_PLATFORM_H
#define LK_SWITCH_PLATFORM_H

#if defined(__x86_64__) && !defined(_WIN32)
/* x86-64, System V ABI (Linux, BSDs): the kernels measured here */
#include "switch_x86_64_sysv.h"
#elif defined(__aarch64__) && !defined(__APPLE__)
/* AArch64, AAPCS64 (Linux): kept compilable, tested under qemu-user */
#include "switch_aarch64_aapcs.h"
#else
#error "labkit has no switch kernels for this architecture/ABI yet"
#endif

#endif
