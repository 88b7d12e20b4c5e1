/* Regions: memory shared between processes, in a file under /dev/shm (or any path on a memory-backed file system;
 * a network file system is refused, a disk-backed one reported).
 *
 * A *shared* region (VRAMGUARD_SHARED=NAME|PATH) holds one VRAM budget per physical GPU (keyed by UUID, so
 * processes with different CUDA_VISIBLE_DEVICES agree on what "the same GPU" is) and one slot per process that
 * joined it, as many slots as its creator chose. Charging takes the region's lock, a robust process-shared mutex: no
 * two processes pass the same check, and a process killed while holding it cannot wedge the others (the next locker
 * repairs the totals).
 *
 * Liveness: a member holds an open-file-description lock on the first byte of its slot for as long as it lives;
 * the kernel drops it at exit, kill or exec, whatever PID namespace the member runs in, so the slots of dead
 * processes are reclaimed by whoever notices first (a charge that would be denied, the periodic check on
 * cuMemGetInfo, `vramguard top` / `limit show`). A slot also names its process by PID *and* start time
 * (/proc/PID/stat field 22): without a lock (a file system without OFD locks) that is what is checked, and a slot of
 * another PID namespace then cannot be judged ("unverifiable", freed by `vramguard region evict`).
 *
 * Lifecycle: the last member to leave removes the file, unless the region is persistent (`vramguard region
 * create`); a region whose members all died starts over, with the budget of the next process that joins. Removal
 * marks the header under the lock before unlinking, so a process that opened the file just before joins a new one.
 *
 * Trust: every file is checked on the opened descriptor (type, owner, mode, size, then every header field) before
 * anything in it is used; whose files a process may join, administer or only read is enum vg_region_access's.
 *
 * A *control* segment is a region of one slot and no budget, created by each process that has no shared region
 * (VRAMGUARD_CONTROL=on): it is how `vramguard top` sees the process and how `vramguard limit set --pid` reaches it.
 *
 * The file is created complete under a temporary name and published with link(2), so nobody ever maps a half-made
 * region. No CUDA here: the interposer binds its device ordinals to region devices by UUID. */
#ifndef VG_REGION_H
#define VG_REGION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VG_REGION_MAGIC 0x3147524d41525647ull   /* "GVRAMRG1" little-endian: bytes "GVRAMRG1" */
#define VG_REGION_VERSION 7             /* 2: slot count, liveness locks, lifecycle flags; 3: device figures;
					 * 4: soft limits and process counters; 5: the compute share; 6: live compute
					 * shares (`limit set --compute`); 7: the quota forecast */
#define VG_REGION_DEVS 16               /* physical GPUs per region */
#define VG_REGION_SLOTS_DEFAULT 1024    /* processes per shared region unless its creator asks otherwise */
#define VG_REGION_SLOTS_MAX 16384       /* processes per shared region at most (a 28 MiB file) */
#define VG_REGION_SPEC_MAX 256          /* a limit spec as text, NUL included */
#define VG_REGION_NAME_MAX 64           /* NAME in VRAMGUARD_SHARED=NAME: [A-Za-z0-9._-], not starting with '.' */
#define VG_REGION_CMD_MAX 80            /* command line shown by `top`, truncated */
#define VG_REGION_UUID_MAX 48           /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", "MIG-...", "ordinal:N" */
#define VG_REGION_DIR "/dev/shm"      /* default of VRAMGUARD_SHM_DIR */
#define VG_REGION_PREFIX "vramguard."   /* /dev/shm/vramguard.NAME, /dev/shm/vramguard.proc.PID.START */
#define VG_REGION_LOCK_TIMEOUT_MS 2000  /* a lock held longer (a stopped process) fails the call, never hangs it */
#define VG_REGION_NONE UINT64_MAX       /* no limit */
#define VG_REGION_FS_NOTE_MAX 200       /* what vg_region_open says about a file system that is not in memory */

enum vg_region_kind { VG_REGION_SHARED = 1, VG_REGION_CONTROL = 2 };
enum vg_slot_state { VG_SLOT_FREE = 0, VG_SLOT_ACTIVE = 1 };
enum vg_region_flags { VG_REGION_PERSISTENT = 1 };      /* made by `vramguard region create`: outlives its members */
/* Whether the process in a slot still runs (vg_region_slot_life). */
enum vg_slot_life { VG_LIFE_ALIVE = 0, VG_LIFE_DEAD, VG_LIFE_UNVERIFIABLE };
/* How vg_region_open opens a file and whom it trusts (region.c, vg_region_trust):
 *   READ   read-only (top, limit show, the exporter): a private copy of the file taken at open, which no change
 *          to the file can fault; only the layout is trusted, whoever owns the file;
 *   ADMIN  read-write, never created (limit set, region rm/reset/evict, top's cleaning): the file is ours, root's or
 *          our group's (group-writable); root administers every user's regions;
 *   JOIN   read-write, created if missing, for a process that will join it: a shared region must be ours or root's,
 *          or another user's only if it is group-writable, this process asked for that (make->mode 0660) and is in
 *          the file's group -- root included; a control segment must be ours, writable by nobody else. */
enum vg_region_access { VG_OPEN_READ = 0, VG_OPEN_ADMIN, VG_OPEN_JOIN };

struct vg_region_dev {
	char uuid[VG_REGION_UUID_MAX];  /* "" = entry unused */
	int32_t ordinal;                /* the ordinal of the process that registered it (spec keys resolve by it) */
	uint32_t pad;
	uint64_t total;                 /* device memory in bytes, as the driver reported it */
	_Atomic uint64_t limit;         /* the region's budget on this GPU (VG_REGION_NONE: none) */
	_Atomic uint64_t used;          /* changed under the lock: the sum of the active slots' used[] */
	_Atomic uint64_t peak;          /* changed under the lock */
	_Atomic uint64_t denied;        /* charges refused by this budget */
};

struct vg_region_slot {
	_Atomic uint32_t state;         /* enum vg_slot_state; changed under the lock */
	int32_t pid;
	uint64_t start;                 /* start time of pid, clock ticks since boot; pid + start = the process */
	uint64_t pidns;                 /* inode of /proc/self/ns/pid: PIDs of another namespace are not checked */
	uint64_t joined_ns;             /* CLOCK_REALTIME at join */
	uint32_t uid;
	_Atomic uint32_t bound;         /* bit i: the process registered region device i */
	/* 1: the member holds a write lock (fcntl F_SETLK) on the first byte of its slot for as long as it lives. The
	 * kernel drops it when the process exits, is killed or execs (the descriptor is close-on-exec), in whatever PID
	 * namespace it runs: anyone who shares the file can tell a dead member from a live one (F_GETLK). 0: the lock
	 * could not be taken (a file system without POSIX locks); liveness then falls back to PID and start time. */
	uint32_t live_lock;
	uint32_t pad;
	char cmd[VG_REGION_CMD_MAX];
	/* Per region device, under the lock for a shared region (atomics so that `top` can read without it). */
	_Atomic uint64_t used[VG_REGION_DEVS];
	_Atomic uint64_t peak[VG_REGION_DEVS];
	_Atomic uint64_t quota[VG_REGION_DEVS];    /* the process's own limit there (VG_REGION_NONE: none) */
	_Atomic uint64_t denied;        /* allocations refused to this process (either limit) */
	_Atomic uint64_t last_report_ns;/* CLOCK_REALTIME of its last report, 0 = none yet */
	/* A request from `vramguard limit set --pid`: spec written under the lock, then limit_seq bumped. The process
	 * applies it on its next allocation or cuMemGetInfo. */
	_Atomic uint32_t limit_seq;
	_Atomic uint32_t applied_seq;   /* the limit_seq the process last applied (== limit_seq: nothing pending) */
	char limit_spec[VG_REGION_SPEC_MAX];
	/* What the quota's figure (used[]) is made of, for `top`: written by the member's sampler thread each round
	 * (VRAMGUARD_DEVICE_POLL), so up to one period old; nobody else writes them. */
	_Atomic uint32_t count_mode;    /* 0 nothing published yet; else 1 + enum vg_count (1 device, 2 allocations) */
	uint32_t pad2;
	_Atomic uint64_t alloc[VG_REGION_DEVS];    /* bytes of the allocations themselves */
	_Atomic uint64_t driver[VG_REGION_DEVS];   /* the driver's own memory (context, modules) counted in used[] */
	/* Published with them, by the same thread (meaningful once count_mode != 0): the process's soft limit per
	 * device (VG_REGION_NONE: none), and its counters over all its GPUs. */
	_Atomic uint64_t soft[VG_REGION_DEVS];
	_Atomic uint64_t allocs;        /* allocations made, ever */
	_Atomic uint64_t denied_bytes;  /* bytes asked for by the refused ones */
	_Atomic uint64_t live_allocs;   /* allocations not freed yet (the allocation tables' records) */
	_Atomic uint64_t streams_pending;       /* streams destroyed with work still queued, ever */
	/* The compute share (docs/compute.md), per region device: published each second by the member's compute
	 * thread, once it has launched on the device with a compute limit set somewhere in the process. */
	_Atomic uint32_t compute_pm[VG_REGION_DEVS];            /* the share in force, per mille; 0: none */
	_Atomic uint32_t compute_recent_pm[VG_REGION_DEVS];     /* the share used over the last minute, per mille */
	_Atomic uint64_t gpu_time_ns[VG_REGION_DEVS];           /* GPU time used, ever */
	_Atomic uint32_t compute_published;                     /* 1 once the figures above were written */
	uint32_t pad3;
	/* A compute share from `vramguard limit set --compute --pid` (VRAMGUARD_COMPUTE_LIMIT's syntax; "unlimited"
	 * lifts it): the spec written under the lock, then compute_seq bumped. The member's compute thread applies it
	 * within a second and sets compute_applied_seq to the compute_seq it applied. */
	_Atomic uint32_t compute_seq;
	_Atomic uint32_t compute_applied_seq;
	char compute_spec[VG_REGION_SPEC_MAX];
	/* The quota forecast per region device (accounting/growth.h): at the rate the process's call sites grow there,
	 * the seconds until its quota is reached, plus 1 (0: no forecast: no quota, or nothing grows), capped at
	 * UINT32_MAX. Written by the member's sampler thread each round, nobody else. */
	_Atomic uint32_t forecast[VG_REGION_DEVS];
};

struct vg_region_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t kind;                  /* enum vg_region_kind */
	uint32_t hdr_size, slot_size, dev_size, mutex_size;   /* layout checks */
	uint32_t nslots, ndevs;         /* nslots: chosen by the creator, 1..VG_REGION_SLOTS_MAX (1 for a control) */
	uint64_t file_size;
	uint32_t flags;                 /* enum vg_region_flags, fixed at creation */
	/* Set under the lock just before the file is unlinked (last member gone, `region rm`, `top` cleaning up): a
	 * process that opened the file but had not joined yet sees it under the lock and starts over with a new one. */
	_Atomic uint32_t removed;
	/* The rest changes under the lock. A region whose members have all exited starts over (its budget becomes that
	 * of the next process that joins, its totals zero), unless it is persistent. */
	uint64_t created_ns;
	int32_t creator_pid;
	uint32_t creator_uid;
	char name[VG_REGION_NAME_MAX];
	char created_spec[VG_REGION_SPEC_MAX];  /* the limit spec it was created (or last started over) with */
	char spec[VG_REGION_SPEC_MAX];          /* the spec in force (limit set changes it) */
	_Atomic uint32_t limit_seq;             /* bumped by every `limit set --shared` */
	_Atomic uint32_t generation;            /* bumped when a slot is claimed or reclaimed (for `top`) */
	_Atomic uint64_t reclaimed;             /* slots of dead processes reclaimed, ever */
	_Atomic uint64_t joins;                 /* slots claimed, ever (0: a region nobody has joined yet) */
	_Atomic uint64_t evicted;               /* slots freed by `vramguard region evict` */
	/* The region-wide compute share (`limit set --compute --shared`, VRAMGUARD_COMPUTE_LIMIT's syntax; "": none),
	 * which the members with work on a GPU at the same time divide (docs/compute.md): written under the lock, then
	 * compute_seq bumped; each member reads it again within a second. */
	_Atomic uint32_t compute_seq;
	uint32_t pad4;
	char compute_spec[VG_REGION_SPEC_MAX];
	pthread_mutex_t lock __attribute__((aligned(64)));  /* robust, process-shared */
	struct vg_region_dev dev[VG_REGION_DEVS] __attribute__((aligned(64)));
	struct vg_region_slot slot[] __attribute__((aligned(64)));
};

/* How to make a region that does not exist yet (vg_region_open with VG_OPEN_JOIN, vg_region_create_new). */
struct vg_region_make {
	int kind;                       /* enum vg_region_kind */
	unsigned mode;                  /* 0600 or 0660 (0660: the file's group may join; see VG_OPEN_JOIN) */
	const char *name;               /* shown by `top`; "" for a control segment */
	const char *spec;               /* the budget (NVIDIA_GPU_MEMORY_LIMITS syntax), "" for none */
	uint32_t nslots;                /* 0: VG_REGION_SLOTS_DEFAULT (a control segment always has 1) */
	uint32_t flags;                 /* enum vg_region_flags */
};

/* A process's handle on one region. */
struct vg_region {
	struct vg_region_hdr *h;        /* NULL: not open */
	size_t size;
	int fd;                         /* kept open (close-on-exec): our liveness lock lives on it; -1 if none */
	int slot;                       /* our slot, -1 if not joined */
	int kind;                       /* enum vg_region_kind, validated at open */
	int access;                     /* enum vg_region_access it was opened with */
	uint32_t nslots;                /* validated at open; never re-read from the file */
	pid_t owner;                    /* the process that joined (a forked child must not leave for it) */
	pid_t member;                   /* the PID the slot was claimed for (the owner's, but in tests) */
	uint64_t self_start;            /* its start time: a slot is ours only with that PID and this start time */
	uint64_t fdev, fino;            /* the file opened, so that only this file is ever unlinked by name */
	bool writable;
	bool changed;                   /* a guarded call found the file truncated under it (vg_region_guarded) */
	bool pinned;                    /* ... while the region's lock was held: the range is never unmapped */
	bool started_over;              /* the last join found every earlier member gone and reset the region */
	char path[512];
	char fs_note[VG_REGION_FS_NOTE_MAX];    /* "" or why the file system is a poor place for a region */
	int8_t devmap[64];              /* CUDA ordinal -> region device, -1 unbound (VG_MAX_DEVICES ordinals) */
	_Atomic uint64_t own_quota[VG_REGION_DEVS];     /* what our slot's quota[] says (for joining again) */
	_Atomic uint32_t seen_limit_seq;        /* region limit_seq we last logged */
	_Atomic uint32_t seen_slot_seq;         /* our slot's limit_seq we last applied */
	_Atomic uint32_t seen_compute_seq;      /* our slot's compute_seq we last applied */
	_Atomic uint32_t seen_region_compute_seq;       /* the region's compute_seq we last read */
	_Atomic uint32_t rejoined;              /* times we found our slot taken from us (evicted) and joined again */
	_Atomic uint64_t debt[VG_REGION_DEVS];     /* releases not yet applied (the lock timed out) */
	_Atomic uint64_t last_reclaim_ns;          /* CLOCK_MONOTONIC of the last periodic reclaim */
	_Atomic uint64_t stuck_until_ns;           /* releases only try the lock until then (it timed out) */
};

/* DIR/vramguard.proc.PID.START, the control segment of a process (dir NULL or "": VG_REGION_DIR). 0 or
 * -ENAMETOOLONG. */
int vg_region_control_path(const char *dir, pid_t pid, uint64_t start, char *out, size_t len);

/* Identity of a process: start time from /proc/PID/stat (0 if it does not exist / cannot be read). */
uint64_t vg_proc_start(pid_t pid);
/* The command line of pid (0: this process) from /proc/PID/cmdline, arguments joined by spaces, trailing spaces
 * dropped, truncated to len - 1 bytes; "" if unreadable. one_line also turns newlines inside arguments into spaces
 * (a table cell, a slot's cmd); without it they are kept (the report quotes the arguments as they are). */
void vg_proc_cmdline(pid_t pid, bool one_line, char *out, size_t len);
/* Inode of /proc/self/ns/pid (0 if unknown). */
uint64_t vg_proc_pidns(void);
/* The PID pid has in the innermost PID namespace it is in (the last field of /proc/PID/status's "NSpid:" line),
 * and in *depth (unless NULL) how many namespaces, ours first, give it one (1: ours alone; 0: not readable, and pid
 * returned). A
 * process in a container with a PID namespace of its own registers that inner PID. */
pid_t vg_proc_inner_pid(pid_t pid, int *depth);

/* Resolve VRAMGUARD_SHARED's value to a path: a NAME gives DIR/vramguard.NAME (dir NULL or "": VG_REGION_DIR), an
 * absolute PATH is taken as is. Names starting with "proc." are reserved for control segments
 * (DIR/vramguard.proc.PID.START). Returns 0 or -EINVAL with a one-line reason in err. */
int vg_region_path(const char *dir, const char *name_or_path, char *out, size_t outlen, char *err, size_t errlen);

/* Open the region at path for access (enum vg_region_access; kind 0: whatever kind it is). With VG_OPEN_JOIN a file
 * that does not exist is made as make says (exclusive and atomic: complete under a temporary name, then linked into
 * place), and *created says whether this call made it. An existing file is checked on the descriptor (owner, mode,
 * type, size, then every header field) and refused if anything is off. Returns 0, or -errno with a one-line reason
 * in err naming the file (and its owner where that is the reason). r->fs_note says when the file system is not
 * memory-backed. */
int vg_region_open(struct vg_region *r, const char *path, int access, int kind, const struct vg_region_make *make,
		   bool *created, char *err, size_t errlen);
/* Make a new region at path (never opens an existing one: -EEXIST), for `vramguard region create`. */
int vg_region_create_new(const char *path, const struct vg_region_make *make, char *err, size_t errlen);
void vg_region_close(struct vg_region *r);
/* fn(r, arg) for a command working on a region it opened writable (another user's file, whose owner may truncate it
 * under the shared mapping): fn's result, or -ESTALE if the file shrank under it (accounting/fault.h; only where the
 * command installed the guard's handler). r is then dead: r->changed is set, its memory reads as zeros, and all that
 * is left to do is vg_region_close. A region opened VG_OPEN_READ is a private copy and needs no guard. */
int vg_region_guarded(struct vg_region *r, int (*fn)(struct vg_region *r, void *arg), void *arg);
/* Check a mapped region of size bytes: magic, version, layout sizes, counts, file size, strings terminated, slot
 * states, device used <= plausible. 0 or -EINVAL / -EPROTO (other version) with the reason in err. */
int vg_region_check(const void *map, size_t size, char *err, size_t errlen);

/* Join: reclaim dead slots (and any slot of this same process from before an exec), then claim a free slot for
 * pid/start with cmd and take its liveness lock. A region with no live member left has its totals rebuilt from
 * nothing; if it is not persistent and had members before, it starts over with spec as its budget (spec NULL: keep
 * it) and r->started_over is set. 0, -ENOSPC (full, after reclaiming), -ETIMEDOUT (lock), -ESTALE (the file was
 * removed after we opened it: close and open again), or -errno; err says why. */
int vg_region_join(struct vg_region *r, pid_t pid, uint64_t start, const char *cmd, const char *spec, char *err,
		   size_t errlen);
/* Give our slot back (normal exit). Any usage it still holds is removed from the totals. A control segment, and a
 * shared region that is not persistent and has no member left, is removed (the file unlinked). */
void vg_region_leave(struct vg_region *r);

/* Bind CUDA ordinal dev (UUID uuid, or NULL: keyed "ordinal:N") to a region device, registering the GPU with the
 * region's limit resolved from its spec if it is new. own_limit is the process's own quota there (for top).
 * Returns the region device index, or -ENOSPC (all VG_REGION_DEVS in use) / -ETIMEDOUT. */
int vg_region_bind(struct vg_region *r, int dev, const char *uuid, uint64_t total, uint64_t own_limit);
/* Record the process's own limit on dev (after a live change), for top. */
void vg_region_set_quota(struct vg_region *r, int dev, uint64_t own_limit);
/* A control segment's usage and peak counters of dev in this process's slot (for vg_quota_place: the process is
 * their only writer). false if r is not a joined control segment or dev is not bound. */
bool vg_region_control_counters(struct vg_region *r, int dev, _Atomic uint64_t **used, _Atomic uint64_t **peak);

/* Our slot's device figures for dev (vg_region_slot.count_mode, alloc[], driver[], soft[]); a no-op before joining
 * or for an unbound dev. */
void vg_region_publish(struct vg_region *r, int dev, int count_mode, uint64_t alloc, uint64_t driver, uint64_t soft);
/* The process's own counters, over all its GPUs (vg_region_slot.allocs ... streams_pending); written before the
 * device figures of the same round, so that a reader that sees count_mode != 0 sees them too. A no-op before
 * joining. */
struct vg_region_counts {
	uint64_t allocs, denied_bytes, live_allocs, streams_pending;
};
void vg_region_publish_counts(struct vg_region *r, const struct vg_region_counts *c);
/* Our slot's compute share figures for dev (vg_region_slot.compute_pm ... gpu_time_ns); a no-op before joining or
 * for an unbound dev. */
void vg_region_publish_compute(struct vg_region *r, int dev, uint32_t pm, uint32_t recent_pm, uint64_t gpu_ns);
/* Our slot's quota forecast for dev (vg_region_slot.forecast): has false for none. A no-op before joining or for an
 * unbound dev. */
void vg_region_publish_forecast(struct vg_region *r, int dev, bool has, uint64_t seconds);

/* Shared regions: charge bytes on dev against the region budget, with our slot's share. 0, or -ENOSPC (nothing
 * charged; *used and *limit say what the region had) after reclaiming dead slots once, or -ETIMEDOUT (lock).
 * Unbound devices and control segments only record the usage. */
int vg_region_reserve(struct vg_region *r, int dev, uint64_t bytes, uint64_t *used, uint64_t *limit);
/* Charge without a check (undoing a failed release). */
void vg_region_force(struct vg_region *r, int dev, uint64_t bytes);
void vg_region_release(struct vg_region *r, int dev, uint64_t bytes);
/* Budget left on dev (limit - used, 0 if over) and the limit; false if no budget applies. */
bool vg_region_avail(struct vg_region *r, int dev, uint64_t *avail, uint64_t *limit);
void vg_region_note_denied(struct vg_region *r);
void vg_region_note_report(struct vg_region *r, uint64_t realtime_ns);

/* Its members now: slots whose process is alive or cannot be judged (VG_LIFE_UNVERIFIABLE), as `top`, `region`
 * and the messages count them. No lock: a snapshot. */
int vg_region_members(const struct vg_region *r);
/* Reclaim the slots of dead processes (any PID namespace, through their liveness locks). Returns how many; takes
 * the lock. */
int vg_region_reclaim(struct vg_region *r);
/* Remove the region (unlink its file, marked removed under the lock so that a process about to join starts over).
 * Without force, only if no member is alive or unverifiable (-EBUSY otherwise, *members says how many); a persistent
 * region only with force. Opened with VG_OPEN_ADMIN. 0 or -errno with err. */
int vg_region_remove(struct vg_region *r, bool force, int *members, char *err, size_t errlen);
/* `top`'s cleaning: reclaim exited members, then remove the region if it is not persistent and has no member left
 * (one nobody has joined yet only once it is older than min_age_ns: its creator is on its way in). Returns how many
 * members were reclaimed; *removed says whether the file was removed. Opened with VG_OPEN_ADMIN. */
int vg_region_clean(struct vg_region *r, uint64_t min_age_ns, bool *removed);
/* `vramguard region reset`: reclaim dead slots and rebuild the totals from the live slots (used = their sum, peak =
 * used, denials 0). 0 or -errno with err. */
int vg_region_reset(struct vg_region *r, char *err, size_t errlen);
/* `vramguard region evict`: free slot (the caller found it, e.g. with vg_region_find_pid) if it still holds
 * pid/start; a live member only with force (-EBUSY otherwise). freed[d] gets what was released per region device.
 * The evicted process, if it runs, joins again at its next allocation. 0 or -errno with err. */
int vg_region_evict(struct vg_region *r, int slot, pid_t pid, uint64_t start, bool force,
		    uint64_t freed[VG_REGION_DEVS], char *err, size_t errlen);

/* A limit spec as `vramguard limit set` takes it (NVIDIA_GPU_MEMORY_LIMITS syntax, not blank, under
 * VG_REGION_SPEC_MAX bytes), parsed into *l. 0, or -EINVAL with the reason in err. */
struct vg_limits;
int vg_region_spec_check(const char *spec, struct vg_limits *l, char *err, size_t errlen);
/* Live limits. Region-wide (`limit set --shared`): spec applies to every registered device (a bare size to all, a
 * key "i:" to the GPUs whose recorded ordinal -- that of the process that registered them -- is i, a UUID key to
 * that GPU) and becomes the spec for GPUs registered later. Per process (`limit set --pid`): spec is stored in the
 * slot for the process to apply, if the slot still holds pid/start (checked under the lock; -ESRCH if not). Both
 * validate spec first. 0 or -errno with err. */
int vg_region_set_limit(struct vg_region *r, const char *spec, char *err, size_t errlen);
int vg_region_set_slot_limit(struct vg_region *r, int slot, pid_t pid, uint64_t start, const char *spec, char *err,
			     size_t errlen);
/* Live compute shares (`limit set --compute`): spec in VRAMGUARD_COMPUTE_LIMIT's syntax, checked with the
 * library's parser (vg_region_compute_check: not blank, under VG_REGION_SPEC_MAX bytes) before anything is written.
 * Region-wide: into the header (a shared region only), for the members to divide. Per process: into the slot, if it
 * still holds pid/start (checked under the lock; -ESRCH if not). 0 or -errno with err. */
int vg_region_compute_check(const char *spec, struct vg_limits *l, char *err, size_t errlen);
int vg_region_set_compute(struct vg_region *r, const char *spec, char *err, size_t errlen);
int vg_region_set_slot_compute(struct vg_region *r, int slot, pid_t pid, uint64_t start, const char *spec, char *err,
			       size_t errlen);
/* For the process: a compute share asked for us since we last looked? Then the spec (copied under the lock; marked
 * applied) and true. */
bool vg_region_pending_compute(struct vg_region *r, char *spec, size_t len);
/* For the process: has the region-wide compute share changed since we last looked (or never been read)? Then the
 * spec in force ("" none, copied under the lock) and true. A control segment has none: false. */
bool vg_region_compute_changed(struct vg_region *r, char *spec, size_t len);
/* What names the region among the members of a GPU's activity file (gpu_share.h's tag): a hash of the region file's
 * device and inode, 31 bits, never 0; 0 for a control segment or no region. */
uint32_t vg_region_tag(const struct vg_region *r);

/* For the process: has either limit been changed since we last looked? Two loads: cheap enough for every
 * allocation; then vg_region_pending_limit / vg_region_limit_changed say what. */
bool vg_region_poll(const struct vg_region *r);
/* For the process: has someone asked for a new limit for us? If so copy the spec (under the lock) and return true. */
bool vg_region_pending_limit(struct vg_region *r, char *spec, size_t len);
/* Has the region-wide limit changed since we last looked? (Each process logs the change once.) */
bool vg_region_limit_changed(struct vg_region *r);
/* The region-wide limit spec in force, copied under the lock (`limit set --shared` rewrites it under the lock; a
 * copy taken without it could be half old, half new). If the lock cannot be had, a bounded copy without it. */
void vg_region_spec_copy(struct vg_region *r, char *spec, size_t len);

/* Is the process in slot alive? Its liveness lock says so in any PID namespace; without one, PID and start time
 * (not a zombie) in ours, and another namespace's cannot be told (VG_LIFE_UNVERIFIABLE). A free slot is DEAD. */
int vg_region_slot_life(const struct vg_region *r, int slot);
/* vg_region_slot_life != VG_LIFE_DEAD (the process may still hold its memory). */
bool vg_region_slot_alive(const struct vg_region *r, int slot);

/* ---- reading without joining: what NVML is told under the preload (interposer/nvml/nvml_hooks.c) ---- */

/* A GPU's figures in region r, read without the lock (a snapshot: a region opened VG_OPEN_READ will do): *used, the
 * usage charged against its budget, and *limit, the budget (VG_REGION_NONE: none). A GPU no member has registered
 * yet has no usage, and the budget the region's spec gives it (ordinal: its CUDA ordinal, for "i:" keys, -1 if
 * unknown; total: its memory in bytes, for percentages). UUIDs compare case-insensitively. true if r is a shared
 * region that has registered the GPU or has a budget for it; false (nothing written) otherwise. */
bool vg_region_gpu_usage(const struct vg_region *r, const char *uuid, int ordinal, uint64_t total, uint64_t *used,
			 uint64_t *limit);

/* The usage of GPU uuid by the processes of dir's region files (DIR/vramguard.*: control segments and shared
 * regions; dir NULL or "": VG_REGION_DIR), as a process in a container that shares that directory sees them. Each
 * file is opened VG_OPEN_READ (only its layout is trusted, whoever owns it) and never locked, so a stuck member
 * cannot stall the caller; temporary files and files that are not valid regions are skipped. A slot counts when it
 * has registered the GPU and its process is not dead (vg_region_slot_life: alive or unverifiable, as `top` counts
 * them); the slot of process skip (0: none), as this PID namespace numbers it and with its start time, is left out.
 * *used: the slots' usage summed; *procs (may be NULL): how many slots. 0, or -errno when dir cannot be read (the
 * sums are then 0). Cost: one open, fstat, mmap per file, one F_OFD_GETLK per member; never on an allocation path. */
int vg_region_dir_usage(const char *dir, const char *uuid, pid_t skip, uint64_t *used, uint32_t *procs);

/* Find the active slot of process pid (as this PID namespace numbers it; or a slot of another namespace with that
 * number if no slot of ours has it) that is not dead, -1 if none. */
int vg_region_find_pid(struct vg_region *r, pid_t pid);

#endif
