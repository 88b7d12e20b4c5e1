/* A report's strings, each kept once: frames name a few dozen modules and a few thousand functions over millions of
 * frames, so a frame points into the pool instead of holding its own copies (docs/PERFORMANCE.md, "Issue 29: big
 * reports"). A pool only grows; its strings stay where they are until it is freed. It allocates: never use it from
 * a signal handler. */
#ifndef VG_STRPOOL_H
#define VG_STRPOOL_H

#include <stddef.h>

struct vg_strpool;

/* A pool that holds at most limit bytes of strings, their NULs included; NULL when memory is short. */
struct vg_strpool *vg_strpool_new(size_t limit);
void vg_strpool_free(struct vg_strpool *p);

/* The pool's copy of the len bytes at s, NUL-terminated, the same pointer for the same bytes; NULL when memory is
 * short or a new string would pass the pool's limit. */
const char *vg_strpool_add(struct vg_strpool *p, const char *s, size_t len);

#endif
