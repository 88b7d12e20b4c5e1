/* The tables of what the process holds (tables.c; the tables themselves are declared in globals.h): made at start-up,
 * kept consistent across fork, and the one driver question their readers ask of a stream. */
#ifndef VG_TABLES_H
#define VG_TABLES_H

#include <cuda.h>

/* Start-up (lifecycle.c): every table made. */
void vg_tables_init(void);
/* Fork: prepare takes every table's shards, the call sites' and the record store's locks in rank order (docs/LOCKS.md),
 * parent gives them back; the child starts from empty tables, every record free, no call site, no stream counted. */
void vg_tables_atfork_prepare(void);
void vg_tables_atfork_parent(void);
void vg_tables_atfork_child(void);

/* Query a stream without blocking: 1 work queued, 0 idle, -1 capturing (never queried: that would invalidate the
 * capture), -2 unknown. For the stream table's readers: a stream's destruction (cuda/hook_stream.c), reports
 * (snapshot.c). */
int vg_stream_state(CUstream s);

#endif
