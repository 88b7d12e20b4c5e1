/* The library's lock order, checked in debug builds. Every lock has a rank (docs/LOCKS.md says what each protects
 * and what may be called while holding it); a thread may take a lock only if its rank is above every rank it holds.
 * Each lock site goes through vg_lock / vg_unlock (pthread mutexes) or vg_lock_note_take / vg_lock_note_drop (the
 * table shards' futex locks, the region's robust mutex). Without VG_LOCK_CHECK they are the bare pthread calls and
 * empty functions: the allocation path pays nothing. With it (the sanitizer builds, `make test-asan` and
 * `make test-tsan`), a per-thread count of held locks per rank is kept, and a lock taken out of order writes one line
 * to stderr with write(2) and aborts, before the thread can deadlock. Header-only: nothing new to link. */
#ifndef VG_LOCKORDER_H
#define VG_LOCKORDER_H

#include <pthread.h>
#include <stdbool.h>

/* Lowest first. Keep in step with the table in docs/LOCKS.md and with vg_lock_names below. */
#define VG_LOCK_RANKS(X)                                                                                               \
	X(INIT, "vg_init_lock")                 /* interposer/lifecycle.c: process-level init */                   \
	X(REPORT, "vg_report_lock")             /* interposer/reporter.c: one report at a time */                  \
	X(SAMPLER, "vg_smp_lock")               /* interposer/devmem.c: the sampler thread's state */              \
	X(NVML_LOAD, "vg_nvml_load_lock")       /* interposer/nvml/nvml.c: loading NVML ourselves */               \
	X(DEV, "vg_dev_lock")                   /* interposer/device.c: device limits */                           \
	X(POOLS, "vg_pools_lock")               /* interposer/devmem.c: registering a pool */                      \
	X(POOL, "vg_pool.lock")                 /* interposer/devmem.h: settling one pool's charge */              \
	X(DEVMEM, "vg_devmem.lock")             /* interposer/devmem.h: a device's graph and driver parts */       \
	X(REGION, "region lock")                /* accounting/region_lock.c: the robust process-shared mutex */    \
	X(TABLE, "table shard")                 /* accounting/table.c: one shard of an allocation table */         \
	X(SITES, "site shard")                  /* accounting/sites.c: one shard of the call sites */              \
	X(RECORDS, "vg_store_lock")             /* accounting/table.c: the record store */                         \
	X(REAL, "vg_real_lock")                 /* interposer/base.c: publishing the real driver table */          \
	X(NVML_PUB, "vg_nvml_pub_lock")         /* interposer/nvml/nvml.c: publishing the real NVML table */       \
	X(TIMELINE, "vg_timeline_locks")        /* interposer/timeline.c: one device's usage timeline */          \
	X(GROWTH, "vg_gr_lock")                 /* interposer/growth.c: the per-site growth */                    \
	X(COMPUTE, "vg_cs_lock")                /* interposer/compute.c: the compute share's streams and buckets */

enum vg_lock_rank {
	VG_RANK_NONE,
#define VG_X_RANK(name, text) VG_RANK_##name,
	VG_LOCK_RANKS(VG_X_RANK)
#undef VG_X_RANK
	VG_RANK_COUNT
};

#ifdef VG_LOCK_CHECK
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Locks of each rank this thread holds: one copy for the whole library without a .c file of its own. Every file
 * that includes this header emits the definition in a COMDAT group, and the linker keeps one (a weak definition
 * would keep every file's storage, and the library's static TLS must stay small enough for dlopen; a common symbol
 * would do, but only gcc makes a thread-local one). */
#define VG_LOCK_SLOTS 24                /* a literal for the assembler: at least VG_RANK_COUNT */
_Static_assert(VG_RANK_COUNT <= VG_LOCK_SLOTS, "raise VG_LOCK_SLOTS");
#define VG_LOCK_STR_(x) #x
#define VG_LOCK_STR(x) VG_LOCK_STR_(x)
__asm__(".pushsection .tbss.vg_lock_held,\"awTG\",@nobits,vg_lock_held,comdat\n"
	"\t.weak vg_lock_held\n\t.hidden vg_lock_held\n\t.type vg_lock_held, @object\n"
	"\t.size vg_lock_held, 2 * " VG_LOCK_STR(VG_LOCK_SLOTS) "\n\t.balign 2\nvg_lock_held:\n"
	"\t.zero 2 * " VG_LOCK_STR(VG_LOCK_SLOTS) "\n\t.popsection\n");
extern __thread unsigned short vg_lock_held[VG_LOCK_SLOTS]
	__attribute__((tls_model("initial-exec"), visibility("hidden")));

static const char *const vg_lock_names[VG_RANK_COUNT] __attribute__((unused)) = {
	"none",
#define VG_X_NAME(name, text) text,
	VG_LOCK_RANKS(VG_X_NAME)
#undef VG_X_NAME
};

static __attribute__((noinline, noreturn, cold, unused)) void vg_lock_order_abort(int rank, int held)
{
	char line[200] = "vramguard: lock order: taking ";
	strcat(line, vg_lock_names[rank]);
	strcat(line, " while holding ");
	strcat(line, vg_lock_names[held]);
	strcat(line, " (docs/LOCKS.md)\n");
	(void)!write(STDERR_FILENO, line, strlen(line));
	abort();
}

/* Before taking a lock of rank (nest: another lock of the same rank may be held, as when every shard is taken). */
static inline void vg_lock_note_take(enum vg_lock_rank rank, bool nest)
{
	for (int r = VG_RANK_COUNT - 1; r > (int)rank - !nest; r--)
		if (vg_lock_held[r])
			vg_lock_order_abort(rank, r);
	vg_lock_held[rank]++;
}

/* After giving a lock of rank back (or failing to take it). */
static inline void vg_lock_note_drop(enum vg_lock_rank rank)
{
	vg_lock_held[rank]--;
}

/* In a forked child: what the forking thread held (the atfork handlers' locks) was initialised again, not given
 * back. */
static inline void vg_lock_note_forget(void)
{
	memset(vg_lock_held, 0, sizeof(vg_lock_held));
}
/* How many locks of rank the thread holds, and setting it back: work cut short by a jump (accounting/fault.h) gave
 * back nothing it noted. */
static inline unsigned vg_lock_note_count(enum vg_lock_rank rank)
{
	return vg_lock_held[rank];
}
static inline void vg_lock_note_reset(enum vg_lock_rank rank, unsigned n)
{
	vg_lock_held[rank] = (unsigned short)n;
}
#else
static inline void vg_lock_note_take(enum vg_lock_rank rank, bool nest)
{
	(void)rank;
	(void)nest;
}
static inline void vg_lock_note_drop(enum vg_lock_rank rank)
{
	(void)rank;
}
static inline void vg_lock_note_forget(void)
{
}
static inline unsigned vg_lock_note_count(enum vg_lock_rank rank)
{
	(void)rank;
	return 0;
}
static inline void vg_lock_note_reset(enum vg_lock_rank rank, unsigned n)
{
	(void)rank;
	(void)n;
}
#endif

static inline void vg_lock(pthread_mutex_t *m, enum vg_lock_rank rank)
{
	vg_lock_note_take(rank, false);
	pthread_mutex_lock(m);
}

/* One more lock of a rank already held: every shard of a table or of the call sites (fork). */
static inline void vg_lock_nest(pthread_mutex_t *m, enum vg_lock_rank rank)
{
	vg_lock_note_take(rank, true);
	pthread_mutex_lock(m);
}

static inline void vg_unlock(pthread_mutex_t *m, enum vg_lock_rank rank)
{
	pthread_mutex_unlock(m);
	vg_lock_note_drop(rank);
}

#endif
