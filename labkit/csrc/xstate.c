/* xstate.c -- the save+restore pairs of xstate.h, timed. */
#define _GNU_SOURCE
#include "xstate.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_timer.h"

static void xs_fail(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#if defined(__x86_64__)

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

/* XCR0 bits: x87, SSE, AVX (upper ymm halves), the three AVX-512 components (opmask,
 * upper zmm0-15 halves, zmm16-31), and the AMX tile configuration and data. */
#define XS_X87 0x1ull
#define XS_SSE 0x2ull
#define XS_AVX 0x4ull
#define XS_AVX512 0xE0ull
#define XS_AMX 0x60000ull
#define XS_TILEDATA 18
#define XS_HEADER 512  /* XSTATE_BV, then XCOMP_BV, in the area's header */
#define XS_LEGACY 576  /* the legacy region and the header: every area starts so */

/* The timed pieces are functions of their own, written in assembly, so that the
 * compiler neither sees nor moves the vector registers they write (all of them are
 * call-clobbered in the SysV ABI), and the loop and its baseline make the same calls.
 * Saves and the restore take (area, EAX, EDX) in (rdi, esi, edx); the dirtying
 * functions take a 64-byte pattern in rdi. Each dirtying function writes x87 (one push
 * and pop), then every register of its widest component. */
#define XS_FN(name) ".p2align 5\n.type " name ",@function\n" name ":\n"
__asm__(".text\n"
        XS_FN("xs_no_pair") XS_FN("xs_no_dirty") "ret\n"
        XS_FN("xs_xsave") "mov %esi, %eax\nxsave64 (%rdi)\nret\n"
        XS_FN("xs_xsaveopt") "mov %esi, %eax\nxsaveopt64 (%rdi)\nret\n"
        XS_FN("xs_xsavec") "mov %esi, %eax\nxsavec64 (%rdi)\nret\n"
        XS_FN("xs_xrstor") "mov %esi, %eax\nxrstor64 (%rdi)\nret\n"
        XS_FN("xs_dirty_sse") "fld1\nfstp %st(0)\n"
        ".irp r,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\nmovdqa (%rdi), %xmm\\r\n.endr\nret\n"
        XS_FN("xs_dirty_avx") "fld1\nfstp %st(0)\n"
        ".irp r,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\nvmovdqa (%rdi), %ymm\\r\n.endr\nret\n"
        XS_FN("xs_dirty_avx512") "fld1\nfstp %st(0)\n"
        ".irp r,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,"
        "28,29,30,31\nvmovdqa64 (%rdi), %zmm\\r\n.endr\n"
        ".irp r,1,2,3,4,5,6,7\nkmovw (%rdi), %k\\r\n.endr\nret\n"
        /* AMX: the tiles need a configuration (loaded once, xs_tile_config) to be written */
        XS_FN("xs_dirty_amx") "call xs_dirty_avx512\n"
        ".irp r,0,1,2,3,4,5,6,7\ntilezero %tmm\\r\n.endr\nret\n"
        XS_FN("xs_tile_config") "ldtilecfg (%rdi)\nret\n");

typedef void (*xs_pair_fn)(void *area, uint32_t lo, uint32_t hi);
typedef void (*xs_dirty_fn)(const void *pattern);
#define XS_ASM __attribute__((visibility("hidden")))
XS_ASM void xs_no_pair(void *area, uint32_t lo, uint32_t hi);
XS_ASM void xs_no_dirty(const void *pattern);
XS_ASM void xs_xsave(void *area, uint32_t lo, uint32_t hi);
XS_ASM void xs_xsaveopt(void *area, uint32_t lo, uint32_t hi);
XS_ASM void xs_xsavec(void *area, uint32_t lo, uint32_t hi);
XS_ASM void xs_xrstor(void *area, uint32_t lo, uint32_t hi);
XS_ASM void xs_dirty_sse(const void *pattern);
XS_ASM void xs_dirty_avx(const void *pattern);
XS_ASM void xs_dirty_avx512(const void *pattern);
XS_ASM void xs_dirty_amx(const void *pattern);
XS_ASM void xs_tile_config(const void *cfg);

static void xs_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}

static uint64_t xs_xgetbv(uint32_t which) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(which));
    return ((uint64_t)hi << 32) | lo;
}

/* XCR0 and the instructions, or 0 with err filled when the CPU or the OS lacks XSAVE
 * (xgetbv itself needs CPUID.1:ECX.OSXSAVE). */
static int xs_probe(uint64_t *xcr0, uint32_t *insns, char *err, size_t errlen) {
    uint32_t r[4];
    xs_cpuid(0, 0, r);
    if (r[0] < 0xD) {
        xs_fail(err, errlen, "this CPU has no CPUID leaf 0xD (no XSAVE)");
        return 0;
    }
    xs_cpuid(1, 0, r);
    if (!(r[2] & (1u << 26)) || !(r[2] & (1u << 27))) {
        xs_fail(err, errlen, "XSAVE is not %s here", (r[2] & (1u << 26)) ? "enabled by the OS"
                                                                         : "on this CPU");
        return 0;
    }
    *xcr0 = xs_xgetbv(0);
    xs_cpuid(0xD, 1, r);
    *insns = LK_XSTATE_HAS_XSAVE | ((r[0] & 1u) ? LK_XSTATE_HAS_XSAVEOPT : 0)
             | ((r[0] & 2u) ? LK_XSTATE_HAS_XSAVEC : 0) | ((r[0] & 4u) ? LK_XSTATE_HAS_XINUSE : 0);
    return 1;
}

int lk_xstate_cpu(uint64_t *xcr0, uint32_t *insns, int64_t *xinuse, char *err, size_t errlen) {
    if (!xs_probe(xcr0, insns, err, errlen)) return -1;
    *xinuse = (*insns & LK_XSTATE_HAS_XINUSE) ? (int64_t)xs_xgetbv(1) : -1;
    return 0;
}

int lk_xstate_leaf(uint32_t sub, uint32_t *regs, char *err, size_t errlen) {
    uint64_t xcr0;
    uint32_t insns;
    if (!xs_probe(&xcr0, &insns, err, errlen)) return -1;
    xs_cpuid(0xD, sub, regs);
    return 0;
}

uint32_t lk_xstate_bytes(uint64_t mask, int compacted) {
    uint32_t size = XS_LEGACY, r[4];
    for (uint32_t i = 2; i < 63; i++) {
        if (!(mask >> i & 1)) continue;
        xs_cpuid(0xD, i, r);  /* EAX: size, EBX: standard-form offset, ECX bit 1: align 64 */
        if (!compacted) {
            if (r[1] + r[0] > size) size = r[1] + r[0];
        } else {
            if (r[2] & 2u) size = (size + 63) & ~63u;
            size += r[0];
        }
    }
    return size;
}

/* The dirtying function for mask: the widest component it holds. */
static xs_dirty_fn xs_dirtier(uint64_t mask) {
    if (mask & XS_AMX) return xs_dirty_amx;
    if (mask & XS_AVX512) return xs_dirty_avx512;
    if (mask & XS_AVX) return xs_dirty_avx;
    return xs_dirty_sse;
}

typedef struct {
    void *area;
    const void *pattern;
    uint32_t lo, hi;
    xs_pair_fn save, restore;
    xs_dirty_fn dirty;  /* NULL: clean */
    uint64_t init_mask; /* clean: the components put in their initial state first */
    void *scratch;      /* clean: the area of that first xrstor */
} xs_loop;

/* Clean: put the components of init_mask (the vector ones: never PKRU, whose initial
 * state would open every protection key) into their initial state with one xrstor whose
 * XSTATE_BV leaves them out, keeping the rest as it is. Right before each timed
 * loop, so that no library code run in between (a memcpy using ymm16-31) undoes it. */
static void xs_make_clean(const xs_loop *L) {
    if (!L->init_mask) return;
    xs_xsave(L->scratch, L->lo, L->hi);
    uint64_t bv;
    memcpy(&bv, (char *)L->scratch + XS_HEADER, sizeof bv);
    bv &= ~L->init_mask;
    memcpy((char *)L->scratch + XS_HEADER, &bv, sizeof bv);
    xs_xrstor(L->scratch, L->lo, L->hi);
}

/* Both loops are one function, so that they are aligned and compiled alike; with_pair
 * chooses the calls. */
__attribute__((noinline)) static lk_span xs_timed(const xs_loop *L, uint64_t n, int with_pair,
                                                  uint64_t *made) {
    xs_pair_fn save = with_pair ? L->save : xs_no_pair;
    xs_pair_fn restore = with_pair ? L->restore : xs_no_pair;
    xs_dirty_fn dirty = L->dirty ? L->dirty : xs_no_dirty;
    void *area = L->area;
    const void *pattern = L->pattern;
    uint32_t lo = L->lo, hi = L->hi;
    uint64_t count = 0;
    if (!L->dirty) xs_make_clean(L);
    lk_span s = lk_span_begin();
    for (uint64_t i = 0; i < n; i++) {
        dirty(pattern);
        save(area, lo, hi);
        restore(area, lo, hi);
        count++;
        __asm__ volatile("" : "+r"(count));
    }
    s = lk_span_end(s);
    *made += count;
    return s;
}

int lk_xstate_run(int insn, uint64_t mask, int dirty, uint64_t pairs, int warmup, int repeats,
                  lk_xstate_sample *out, char *err, size_t errlen) {
    uint64_t xcr0;
    uint32_t insns;
    if (!xs_probe(&xcr0, &insns, err, errlen)) return -1;
    static const uint32_t need[] = {LK_XSTATE_HAS_XSAVE, LK_XSTATE_HAS_XSAVEOPT,
                                    LK_XSTATE_HAS_XSAVEC};
    static const char *const names[] = {"xsave", "xsaveopt", "xsavec"};
    if (insn < 0 || insn > LK_XSAVEC) {
        xs_fail(err, errlen, "insn must be 0 (xsave), 1 (xsaveopt) or 2 (xsavec); got %d", insn);
        return -1;
    }
    if (!(insns & need[insn])) {
        xs_fail(err, errlen, "this CPU has no %s", names[insn]);
        return -1;
    }
    if ((mask & ~xcr0) || (mask & (XS_X87 | XS_SSE)) != (XS_X87 | XS_SSE)) {
        xs_fail(err, errlen, "mask 0x%llx must hold x87 and SSE (0x3) and lie within XCR0 0x%llx",
                (unsigned long long)mask, (unsigned long long)xcr0);
        return -1;
    }
    if ((mask & XS_AVX512) && (mask & XS_AVX512) != XS_AVX512) {
        xs_fail(err, errlen, "mask 0x%llx: the AVX-512 components (0xE0) go together",
                (unsigned long long)mask);
        return -1;
    }
    if ((mask & XS_AMX) && ((mask & XS_AMX) != XS_AMX || (mask & XS_AVX512) != XS_AVX512)) {
        xs_fail(err, errlen, "mask 0x%llx: the AMX components (0x60000) go together, with "
                "AVX-512's", (unsigned long long)mask);
        return -1;
    }
    if (pairs == 0 || repeats < 1 || warmup < 0) {
        xs_fail(err, errlen, "pairs and repeats must be >= 1 and warmup >= 0");
        return -1;
    }
    /* Linux arms XFD for the tile data until the process asks to use it. */
    if ((mask & XS_AMX) && syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
                                   XS_TILEDATA) != 0) {
        xs_fail(err, errlen, "the kernel refused this process the AMX tile data "
                "(arch_prctl ARCH_REQ_XCOMP_PERM)");
        return -1;
    }
    uint32_t r[4];
    xs_cpuid(0xD, 0, r);
    size_t bytes = ((size_t)r[2] + 63) & ~(size_t)63;  /* ECX: every supported component */
    void *area = aligned_alloc(64, bytes), *scratch = aligned_alloc(64, bytes);
    /* A non-zero pattern, so that no write could look like the initial state; and a
     * tile configuration (palette 1, 8 tiles of 16 rows of 64 bytes). */
    static _Alignas(64) uint8_t pattern[64], tilecfg[64];
    if (!area || !scratch) {
        free(area);
        free(scratch);
        xs_fail(err, errlen, "out of memory for two %zu-byte areas", bytes);
        return -1;
    }
    memset(area, 0, bytes);
    memset(scratch, 0, bytes);
    memset(pattern, 0x5a, sizeof pattern);
    memset(tilecfg, 0, sizeof tilecfg);
    tilecfg[0] = 1;
    for (int t = 0; t < 8; t++) {
        tilecfg[16 + 2 * t] = 64;  /* colsb, little-endian 16-bit */
        tilecfg[48 + t] = 16;      /* rows */
    }
    static const xs_pair_fn saves[] = {xs_xsave, xs_xsaveopt, xs_xsavec};
    xs_loop L = {.area = area, .pattern = pattern, .lo = (uint32_t)mask,
                 .hi = (uint32_t)(mask >> 32), .save = saves[insn], .restore = xs_xrstor,
                 .dirty = dirty ? xs_dirtier(mask) : NULL,
                 .init_mask = dirty ? 0 : mask & (XS_AVX | XS_AVX512 | XS_AMX), .scratch = scratch};
    if (dirty && (mask & XS_AMX)) xs_tile_config(tilecfg);
    uint64_t half = pairs / 2, rest = pairs - half;
    for (int k = -warmup; k < repeats; k++) {
        uint64_t made = 0, dummy = 0;
        lk_span b1 = xs_timed(&L, half, 0, &dummy);
        lk_span l1 = xs_timed(&L, rest, 1, &made);
        lk_span l2 = xs_timed(&L, half, 1, &made);
        int64_t xinuse = (insns & LK_XSTATE_HAS_XINUSE) ? (int64_t)xs_xgetbv(1) : -1;
        lk_span b2 = xs_timed(&L, rest, 0, &dummy);
        if (k < 0) continue;
        lk_xstate_sample *o = &out[k];
        o->loop_ns = l1.ns + l2.ns;
        o->loop_ticks = l1.ticks + l2.ticks;
        o->base_ns = b1.ns + b2.ns;
        o->base_ticks = b1.ticks + b2.ticks;
        o->pairs = made;
        o->preemptions = b1.preempted + l1.preempted + l2.preempted + b2.preempted;
        o->xinuse = xinuse;
    }
    /* Leave the vector components (tiles included) in their initial state, as light as
     * they were before: later code pays no AVX-SSE transitions, the kernel no tile data. */
    L.init_mask = mask & (XS_AVX | XS_AVX512 | XS_AMX);
    xs_make_clean(&L);
    free(area);
    free(scratch);
    return 0;
}

#else /* not x86-64 */

#define XS_NONE "not available on this architecture (XSAVE is x86-64's)"

int lk_xstate_cpu(uint64_t *xcr0, uint32_t *insns, int64_t *xinuse, char *err, size_t errlen) {
    *xcr0 = 0;
    *insns = 0;
    *xinuse = -1;
    xs_fail(err, errlen, XS_NONE);
    return -1;
}

int lk_xstate_leaf(uint32_t sub, uint32_t *regs, char *err, size_t errlen) {
    (void)sub;
    regs[0] = regs[1] = regs[2] = regs[3] = 0;
    xs_fail(err, errlen, XS_NONE);
    return -1;
}

uint32_t lk_xstate_bytes(uint64_t mask, int compacted) {
    (void)mask;
    (void)compacted;
    return 0;
}

int lk_xstate_run(int insn, uint64_t mask, int dirty, uint64_t pairs, int warmup, int repeats,
                  lk_xstate_sample *out, char *err, size_t errlen) {
    (void)insn, (void)mask, (void)dirty, (void)pairs, (void)warmup, (void)repeats, (void)out;
    xs_fail(err, errlen, XS_NONE);
    return -1;
}

#endif

/* What labkit/core/structs.py reads an lk_xstate_sample by (lk_layout.h). */
LK_LAYOUT(lk_xstate_sample, LK_XSTATE_SAMPLE_FIELDS)
