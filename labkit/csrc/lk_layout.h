/* lk_layout.h -- a struct that Python reads is declared once, here in C, as a list of
 * fields. The same list makes the typedef and a description the library exports:
 *
 *     #define LK_SAMPLE_FIELDS(F) F(uint64_t, loop_ns) F(int64_t, xinuse)
 *     LK_STRUCT(lk_sample, LK_SAMPLE_FIELDS)          (in the header)
 *     LK_LAYOUT(lk_sample, LK_SAMPLE_FIELDS)          (in one source file of each library
 *                                                     that fills the struct)
 *
 * LK_LAYOUT defines lk_layout_<name>(), the fields as "uint64_t loop_ns;int64_t xinuse;",
 * and lk_sizeof_<name>(). labkit/core/structs.py builds its ctypes structure from that text and
 * checks the size, so neither Cython nor ctypes lists the fields again, and a library built
 * from an older header is caught rather than misread. */
#ifndef LK_LAYOUT_H
#define LK_LAYOUT_H

#include <stddef.h>

#define LK_FIELD_MEMBER(type, name) type name;
#define LK_FIELD_TEXT(type, name) #type " " #name ";"

#define LK_STRUCT(name, FIELDS) typedef struct { FIELDS(LK_FIELD_MEMBER) } name;

#define LK_LAYOUT_DECL(name)                 \
    const char *lk_layout_##name(void);      \
    size_t lk_sizeof_##name(void);

#define LK_LAYOUT(name, FIELDS)                                          \
    const char *lk_layout_##name(void) { return FIELDS(LK_FIELD_TEXT); } \
    size_t lk_sizeof_##name(void) { return sizeof(name); }

/* A C function Python calls through ctypes is declared once, likewise: as a row
 * F(return type, name, (parameters)) of a list in its header.
 *
 *     #define LK_CORE_FUNCTIONS(F) F(int, lk_ring, (int kernel, int n, char *err))
 *     LK_DECLARE(LK_CORE_FUNCTIONS)                   (in the header: the prototypes)
 *     LK_FUNCTIONS(LK_CORE_FUNCTIONS)                 (in one source file of the library)
 *
 * LK_FUNCTIONS defines lk_functions(), the rows as "int lk_ring(int kernel, int n, char
 * *err);", from which labkit/core/native.py sets each function's ctypes types. */
#define LK_PROTOTYPE(ret, name, params) ret name params;
#define LK_PROTOTYPE_TEXT(ret, name, params) #ret " " #name #params ";"
#define LK_DECLARE(LIST) LIST(LK_PROTOTYPE) const char *lk_functions(void);
#define LK_FUNCTIONS(LIST) \
    const char *lk_functions(void) { return LIST(LK_PROTOTYPE_TEXT); }

#endif
