/* The compute share (compute.h): the streams' activity, measured with one event of ours per stream, charged to each
 * GPU's bucket (accounting/throttle.h), and launches held while a bucket is in debt. Everything here runs only once
 * vg_compute_on is set; its state is under vg_cs_lock (rank COMPUTE: nothing of ours is taken inside it), except
 * what the launch's lock-free path touches (vg_cs_gen, a stream's gen and arm: see "The launch's fast path"). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accounting/clock.h"
#include "accounting/gpu_share.h"
#include "accounting/lockorder.h"
#include "accounting/region.h"
#include "accounting/throttle.h"
#include "config/config.h"
#include "interposer/compute.h"
#include "interposer/device.h"
#include "interposer/globals.h"
#include "interposer/shared.h"
#include "interposer/thread.h"
#include "report/log.h"

_Atomic bool vg_compute_on;

/* One GPU: its bucket and how many of its streams have work. */
struct vg_cdev {
	struct vg_throttle t;
	_Atomic uint32_t holds;         /* t.share_pm when a launch may have to wait (1..999), else 0: read without
					 * the lock by vg_compute_gate */
	unsigned active;                /* streams with work outstanding */
	unsigned nccl;                  /* ... of which NCCL's (never charged: vg_cs_weight) */
	unsigned behind;                /* ... of which others behind a collective (VG_CS_BEHIND: never charged) */
	uint64_t idle_since;            /* when the last stream went idle (0: never busy yet) */
	bool held;                      /* a launch waited since then (or was waiting then) */
	unsigned waiters;               /* launches waiting now */
	uint64_t waits, waited_ns;      /* launches that waited, and how long in all */
	unsigned n;                     /* vramguard processes with work on the GPU, us included (gpu_share.h) */
	struct vg_gpu_share gs;         /* our slot in the GPU's activity file (fd -1: none) */
	_Atomic bool known;             /* its limit was read from the configuration (read without the lock) */
	const char *source;
	/* Live changes (the block at the end): t.share_pm is the lower of own_pm and the region's share divided among
	 * its members that want the GPU (region_pm / members). */
	uint32_t own_pm;                /* the process's own share: configured, or `limit set --compute --pid` */
	const char *own_source;
	uint32_t region_pm;             /* its shared region's share of the GPU (0: none) */
	unsigned members;               /* members of the region that want the GPU, us included */
};

/* One stream we measure: (context, handle) names it; a _ptsz launch on the thread's own stream gets a key of its
 * own per thread (that stream is the thread's). Under vg_cs_lock but for gen and arm. */
struct vg_cstream {
	CUcontext ctx;
	CUstream s;
	uint64_t thread;                /* pthread_self() for a thread's own stream, else 0 */
	CUevent ev;
	int dev;
	bool used;
	bool busy;                      /* launched work not yet seen finished */
	bool pending;                   /* ev recorded and not yet seen complete */
	bool after;                     /* ev's last recording failed: the launches before it count as after it */
	bool own;                       /* the thread's own stream: only its thread can record ev */
	bool nccl;                      /* busy with a kernel of NCCL's (counted in vg_cdev.nccl) */
	uint8_t wait;                   /* VG_CS_RUN, or where it waits for a collective (vg_compute_stream_wait) */
	uint64_t rec_ns;                /* when ev was last recorded */
	uint64_t rec_gen;               /* gen just before that recording: a larger gen is a launch after it */
	uint64_t launch_ns;             /* a time no earlier than the last launch on the stream */
	uint64_t seen_gen;              /* gen when launch_ns was last brought up */
	_Atomic uint64_t gen;           /* the largest vg_cs_gen of a launch on the stream (lock-free: raised by
					 * vg_cs_gen_raise) */
	_Atomic uint64_t arm;           /* while a launch may take the fast path, this arming's token (odd, never
					 * the same twice in the process), else 0; written under the lock only */
};

/* A stream made to wait for an event (cuStreamWaitEvent) while a collective of NCCL's is outstanding on its GPU may be
 * waiting for that collective, whose spin includes the other ranks' waits for their shares: its work after the wait
 * is not charged until the GPU's collectives are done (the compute stream of DDP, which waits for NCCL's stream at the
 * end of the backward pass, its optimizer's kernels queued behind). */
enum {
	VG_CS_RUN,              /* runs as launched (charged while busy) */
	VG_CS_WAITING,          /* its work before the wait still runs (charged): ev was recorded just before it */
	VG_CS_BEHIND,           /* that work is done: what is left waits for the collective (not charged; busy:
				 * counted in vg_cdev.behind) */
};

static pthread_mutex_t vg_cs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t vg_cs_wake = PTHREAD_COND_INITIALIZER;
static struct vg_cdev vg_cdevs[VG_MAX_DEVICES];
static struct vg_cstream vg_cstreams[VG_COMPUTE_STREAMS];
static _Atomic uint64_t vg_cs_gen;      /* launches measured, ever: a synchronization's ticket (lock-free) */
static unsigned vg_cs_busy;             /* streams busy, all GPUs */
static bool vg_cs_thread_started;
static bool vg_cs_polling;              /* ... and runs: the fast path relies on it to see an event complete */
static uint64_t vg_cs_tokens;           /* armings, ever (not reset in a fork child: a thread's cache outlives it) */

/* The launch's fast path. A launch on a stream that is busy and has its event in flight has only one thing to
 * say: "a launch came after the event". It says it by raising the stream's gen, with neither the lock nor a clock
 * read; everything else (the stream going busy, a recording due, the stream's lookup) takes the slow path under the
 * lock. The slow path arms a stream for it (arm = token) where that holds; whoever changes what it relies on
 * disarms first, under the lock: the polling thread when the event completes (a recording is then due), a
 * synchronization before it may idle the stream, and vg_cs_idle.
 *
 * Why a raise is never lost: the launch raises gen, then reads arm; the one who disarms stores arm = 0, then reads
 * gen. All four are seq_cst, so in their single total order either the launch's read of arm comes first (it read
 * the token, so its raise, before it, precedes the disarming and the disarmer's read of gen sees it), or the
 * disarming does (the launch reads 0 or a newer token and takes the slow path, which waits for the lock the
 * disarmer holds). A raise that finds gen already larger (another thread's launch) writes nothing: its seq_cst
 * read of that value comes after the write of it, which the disarmer's read then sees too. On x86 the reads are
 * plain loads and the raise is the locked instruction it would be anyway; only the disarming, at most once per
 * poll per stream, pays a fence. A synchronization's ticket is a load of vg_cs_gen: a launch whose draw (a
 * fetch_add after its driver call) it saw synchronizes with it (release, acquire), so its driver call happened
 * before the synchronization's, which waits for its work. A later draw keeps the stream busy (gen > ticket). */
/* Streams a thread remembers for the gate, by handle: 2 (a framework thread launches on a compute stream and NCCL's).
 * Static TLS is scarce: with 4 (128 bytes) a second copy of the library dlopened after the test double could not be
 * loaded under TSan ("cannot allocate memory in static TLS block": the double's 1 056 bytes and our 620 are more
 * than glibc's 1 664 of surplus). */
#define VG_CS_CACHE 2

/* A thread's last streams by handle (its own stream never: that is recorded at each launch). Its fields are
 * plain: only the thread reads and writes them; c's arm tells whether the entry still holds. */
static __thread struct vg_cs_seen {
	CUcontext ctx;
	CUstream s;
	struct vg_cstream *c;
	uint64_t token;
} vg_cs_seen[VG_CS_CACHE] __attribute__((tls_model("initial-exec")));

static struct vg_cs_seen *vg_cs_seen_slot(CUstream s)
{
	return &vg_cs_seen[((uintptr_t)s >> 4) % VG_CS_CACHE];
}

/* A launch with draw g on c: c's gen becomes at least g (two threads may launch on one stream at once). */
static void vg_cs_gen_raise(struct vg_cstream *c, uint64_t g)
{
	uint64_t cur = atomic_load(&c->gen);
	while (cur < g && !atomic_compare_exchange_weak(&c->gen, &cur, g))
		;
}

/* No launch takes the fast path on c from here on (under vg_cs_lock): read c's gen after this. */
static void vg_cs_disarm(struct vg_cstream *c)
{
	if (atomic_load_explicit(&c->arm, memory_order_relaxed))       /* only the lock's holder writes it */
		atomic_store(&c->arm, 0);
}

/* After a launch on c (stream s of context ctx) under vg_cs_lock: armed for the fast path where it holds (busy, its
 * event outstanding, the polling thread there to disarm it when a recording falls due; never the thread's own
 * stream, recorded at each launch), and remembered by the thread for its next launch there. */
static void vg_cs_arm(struct vg_cstream *c, CUcontext ctx, CUstream s)
{
	if (c->own || !c->busy || !c->pending || !vg_cs_polling)
		return;
	/* A new token for each arming: a launch that finds at its end the token it found at the gate knows that the
	 * stream was never disarmed in between, so stayed busy. Release is enough: a launch relies on nothing
	 * written before the arming, and its seq_cst read of the token still precedes any later disarming in the
	 * total order (it reads from an earlier write of arm). */
	uint64_t t = atomic_load_explicit(&c->arm, memory_order_relaxed);
	if (!t) {
		t = ++vg_cs_tokens << 1 | 1;
		atomic_store_explicit(&c->arm, t, memory_order_release);
	}
	*vg_cs_seen_slot(s) = (struct vg_cs_seen){ ctx, s, c, t };
}

/* Launches on c after its event's last recording (under vg_cs_lock; to conclude that there are none, with c
 * disarmed first). */
static bool vg_cs_after(struct vg_cstream *c)
{
	return c->after || atomic_load(&c->gen) > c->rec_gen;
}

static bool vg_cs_relaxed;              /* the thread is in relaxed capture mode */

static void vg_cs_live_know(struct vg_cdev *d, int dev);
static void vg_cs_divide(struct vg_cdev *d, uint64_t now);
static void vg_cs_live_check(void);
static void vg_cs_live_forget(void);

static uint64_t vg_cs_now(void)
{
	return vg_clock_ns(CLOCK_MONOTONIC);
}

/* The charge's rate for a GPU now: while any stream of ours runs work there, 1000 per mille shared evenly among the
 * vramguard processes with work there at the same time; else 0. Neither NCCL's streams nor the streams behind their
 * collectives (VG_CS_BEHIND) count: a collective's kernel spins until every rank has launched its part, so its time
 * (and that of the work queued behind it) includes the time the other ranks were held by their own shares. Charged,
 * each rank paid for the others' waits and waited the longer for it: DDP on two H200 capped at 50 % ran at 6 steps/s
 * against 366 uncapped. The other streams' work is charged while a collective runs beside it: not charged then, two
 * DDP ranks of the test double capped at 50 % and 30 % ran at 90 % of the GPU, all their compute queued while their
 * first collective was outstanding. */
static uint32_t vg_cs_weight(const struct vg_cdev *d)
{
	return d->active > d->nccl + d->behind ? 1000 / (d->n ? d->n : 1) : 0;
}

/* The GPU's collectives are done (its last NCCL stream went idle at now): the streams that waited for them run as
 * launched from now. Under vg_cs_lock, d brought up to now. */
static void vg_cs_collectives_done(struct vg_cdev *d, int dev)
{
	for (unsigned i = 0; i < VG_COMPUTE_STREAMS; i++) {
		struct vg_cstream *c = &vg_cstreams[i];
		if (c->used && c->dev == dev && c->wait != VG_CS_RUN) {
			if (c->busy && c->wait == VG_CS_BEHIND)
				d->behind--;
			c->wait = VG_CS_RUN;
		}
	}
}

/* Our slot says whether we have work on the GPU, and the count of those that do is read again; the new weight
 * applies from `from` on (the bucket brought up to it under the old one), and the bucket is brought up to now.
 * Under vg_cs_lock. */
static void vg_cs_recount(struct vg_cdev *d, uint64_t from, uint64_t now)
{
	vg_throttle_advance(&d->t, from, vg_cs_weight(d));
	vg_gpu_share_set(&d->gs, d->active > 0);
	d->n = d->active ? vg_gpu_share_count(&d->gs) : 1;
	vg_throttle_advance(&d->t, from, vg_cs_weight(d));
	vg_throttle_advance(&d->t, now, vg_cs_weight(d));
}

/* Record c's event on stream s behind its launches so far (ptsz: through the _ptsz entry point), at now. A launch
 * whose draw is in gen before the recording returned from the driver before it: behind the event. */
static void vg_cs_record(struct vg_cstream *c, CUstream s, bool ptsz, uint64_t now)
{
	c->rec_gen = atomic_load(&c->gen);
	CUresult r = ptsz ? vg_real.cuEventRecord_ptsz(c->ev, s) : vg_real.cuEventRecord(c->ev, s);
	c->pending = r == CUDA_SUCCESS;
	c->after = r != CUDA_SUCCESS;
	c->rec_ns = now;
}

/* The GPU dev's limit, from the configuration, the first time it is used (outside vg_cs_lock: it may resolve the
 * device, which takes device.c's lock). */
static void vg_cs_know(int dev)
{
	if ((unsigned)dev >= VG_MAX_DEVICES || vg_cdevs[dev].known)
		return;
	const struct vg_device_info *di = vg_device_info(dev);
	uint32_t pm = di ? di->compute_pm : 0;
	const char *src = di ? di->compute_source : NULL;
	struct vg_gpu_share gs = { .fd = -1, .slot = -1 };
	char why[600];
	if (di && di->uuid[0] && vg_gpu_share_join(&gs, vg_cfg.shm_dir, di->uuid, why, sizeof(why)) != 0)
		vg_log(VG_LOG_INFO, "GPU %d: the compute share cannot see other vramguard processes on it (%s): each "
		       "is charged as if alone", dev, why);
	vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
	struct vg_cdev *d = &vg_cdevs[dev];
	if (!d->known) {
		vg_throttle_init(&d->t, pm, vg_cs_now());
		atomic_store(&d->holds, pm < 1000 ? pm : 0);
		d->source = src;
		d->gs = gs;
		d->n = 1;
		d->own_pm = pm;
		d->own_source = src;
		vg_cs_live_know(d, dev);
		d->known = true;
		gs.fd = -1;
	}
	vg_unlock(&vg_cs_lock, VG_RANK_COMPUTE);
	vg_gpu_share_leave(&gs);        /* another thread was first */
}

/* The stream's state, made on first use (under vg_cs_lock; the calling thread's current context is ctx). NULL when
 * the table is full or the event cannot be made. */
static struct vg_cstream *vg_cs_stream(CUcontext ctx, CUstream s, bool own, int dev)
{
	uint64_t thread = own ? (uint64_t)pthread_self() : 0;
	uint64_t h = ((uint64_t)(uintptr_t)ctx * 31 + (uint64_t)(uintptr_t)s + thread * 17) * 0x9e3779b97f4a7c15ull;
	struct vg_cstream *free_slot = NULL;
	unsigned start = (unsigned)((h >> 40) % VG_COMPUTE_STREAMS);
	for (unsigned i = 0; i < VG_COMPUTE_STREAMS; i++) {
		struct vg_cstream *c = &vg_cstreams[(start + i) % VG_COMPUTE_STREAMS];
		if (c->used && c->ctx == ctx && c->s == s && c->thread == thread)
			return c;
		if (!c->used && !free_slot)
			free_slot = c;
	}
	if (!free_slot || !vg_real.cuEventCreate ||
	    vg_real.cuEventCreate(&free_slot->ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
		return NULL;
	free_slot->ctx = ctx;
	free_slot->s = s;
	free_slot->thread = thread;
	free_slot->own = own;
	free_slot->dev = dev;
	free_slot->used = true;
	free_slot->busy = free_slot->pending = free_slot->after = free_slot->nccl = false;
	free_slot->wait = VG_CS_RUN;
	free_slot->rec_gen = free_slot->seen_gen = atomic_load(&free_slot->gen);
	return free_slot;
}

/* Stream c has finished its work (seen at now): it no longer counts as active. Under vg_cs_lock. */
static void vg_cs_idle(struct vg_cstream *c, uint64_t now)
{
	vg_cs_disarm(c);
	if (!c->busy)
		return;
	struct vg_cdev *d = &vg_cdevs[c->dev];
	vg_throttle_advance(&d->t, now, vg_cs_weight(d));
	if (c->wait == VG_CS_BEHIND)
		d->behind--;
	c->wait = VG_CS_RUN;
	if (c->nccl && --d->nccl == 0)
		vg_cs_collectives_done(d, c->dev);
	c->busy = c->pending = c->after = c->nccl = false;
	c->rec_gen = atomic_load(&c->gen);
	vg_cs_busy--;
	if (--d->active == 0) {
		d->idle_since = now;
		d->held = d->waiters > 0;
		vg_cs_recount(d, now, now);
		vg_cs_divide(d, now);   /* a region share: we no longer want the GPU, unless a launch waits */
	}
}

/* A stream whose context is gone: forget it (its event went with the context). Under vg_cs_lock. */
static void vg_cs_drop(struct vg_cstream *c, uint64_t now)
{
	vg_cs_idle(c, now);
	c->used = false;
}

/* c's launches since the last look (the fast path leaves no time): launch_ns brought up to now, which is no
 * earlier than any of them, and at most a poll later than the last. Under vg_cs_lock. */
static void vg_cs_look(struct vg_cstream *c)
{
	uint64_t g = atomic_load(&c->gen);
	if (g != c->seen_gen) {
		c->seen_gen = g;
		c->launch_ns = vg_cs_now();
	}
}

/* Look at every busy stream's event (dev: only that GPU's; -1 all). Under vg_cs_lock; the thread is in relaxed
 * capture mode, so that a query is no unsafe call for a capture elsewhere. Returns the streams still busy. */
static unsigned vg_cs_poll(int dev, bool may_record)
{
	unsigned busy = 0;
	for (unsigned i = 0; i < VG_COMPUTE_STREAMS; i++) {
		struct vg_cstream *c = &vg_cstreams[i];
		if (!c->used || !c->busy || (dev >= 0 && c->dev != dev))
			continue;
		vg_cs_look(c);
		CUresult q = c->pending ? vg_real.cuEventQuery(c->ev) : CUDA_SUCCESS;
		if (q == CUDA_ERROR_NOT_READY) {
			busy++;         /* still in flight: no recording is due before it completes */
			continue;
		}
		uint64_t now = vg_cs_now();     /* after the answer: the work may have ended just before it */
		vg_cs_disarm(c);
		if (q != CUDA_SUCCESS) {
			vg_cs_drop(c, now);
			continue;
		}
		if (!vg_cs_after(c)) {
			vg_cs_idle(c, now);
			continue;
		}
		if (c->wait == VG_CS_WAITING) {        /* its work before a wait for a collective is done */
			struct vg_cdev *d = &vg_cdevs[c->dev];
			vg_throttle_advance(&d->t, now, vg_cs_weight(d));
			c->wait = VG_CS_BEHIND;
			d->behind++;
		}
		/* Launches came after the event. The launching thread records it again at its next launch (no
		 * recording of ours on a stream another thread launches on, which would contend with it in the
		 * driver); only a stream with no launch for VG_COMPUTE_GAP_NS gets its event recorded here, behind
		 * its last launches (a thread's own stream is recorded at each of its launches instead). */
		c->pending = false;
		if (may_record && !c->own && now - c->launch_ns >= VG_COMPUTE_GAP_NS &&
		    vg_real.cuCtxSetCurrent(c->ctx) == CUDA_SUCCESS)
			vg_cs_record(c, c->s, false, now);
		busy++;
	}
	return busy;
}

/* Each second: every known GPU's figures into our region slot (`top`, the exporter), written with the lock released
 * (the region's memory only; no lock of ours is needed for it). */
static void vg_cs_publish(uint64_t now)
{
	struct { uint32_t pm, recent; uint64_t used; bool known; } f[VG_MAX_DEVICES];
	for (int i = 0; i < VG_MAX_DEVICES; i++) {
		struct vg_cdev *d = &vg_cdevs[i];
		f[i].known = d->known;
		if (!f[i].known)
			continue;
		f[i].pm = d->t.share_pm;
		f[i].recent = vg_throttle_recent_pm(&d->t, now, VG_THROTTLE_MINUTE - 1, NULL);
		f[i].used = d->t.used_ns;
	}
	vg_unlock(&vg_cs_lock, VG_RANK_COMPUTE);
	for (int i = 0; i < VG_MAX_DEVICES; i++)
		if (f[i].known)
			vg_shared_publish_compute(i, f[i].pm, f[i].recent, f[i].used);
	vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
}

/* The polling thread: looks at busy streams every VG_COMPUTE_POLL_NS, sleeps while none is busy (waking each
 * second to bring the buckets' per-second figures up to date and publish them). */
static void *vg_cs_main(void *arg)
{
	(void)arg;
	CUstreamCaptureMode mode;
	vg_cs_relaxed = vg_capture_relax(&mode);        /* for the thread's life (again once the driver is up) */
	uint64_t checked = 0, lingering = 0;
	vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
	for (;;) {
		/* The GPUs first, the streams last: a stream's disarming sends its next launch to the lock, which is
		 * then released at once (not held over the activity file's read behind it). */
		uint64_t now = vg_cs_now();
		bool check = now - checked >= VG_NS_PER_SEC;
		for (int i = 0; i < VG_MAX_DEVICES; i++) {
			struct vg_cdev *d = &vg_cdevs[i];
			if (!d->known)
				continue;
			if (check)
				vg_gpu_share_check(&d->gs);
			if (d->active) {
				vg_cs_recount(d, now, now);     /* others start and stop: our rate follows */
				vg_cs_divide(d, now);           /* ... and our part of a region share */
			} else {
				vg_throttle_advance(&d->t, now, 0);
			}
		}
		if (check) {
			checked = now;
			vg_cs_live_check();     /* a new share first, so that the figures below show it */
			vg_cs_publish(now);
		}
		unsigned busy = vg_cs_busy ? vg_cs_poll(-1, true) : 0;
		/* Idle for less than VG_COMPUTE_GAP_NS: still polling, not asleep, so that the next launch (a loop's,
		 * after its synchronization) has no thread to wake (a system call, and on a loaded machine a switch
		 * to this thread that the launching one waits for). */
		if (busy)
			lingering = now;
		struct timespec ts;
		if (busy || now - lingering < VG_COMPUTE_GAP_NS) {
			vg_unlock(&vg_cs_lock, VG_RANK_COMPUTE);
			ts.tv_sec = 0;
			ts.tv_nsec = VG_COMPUTE_POLL_NS;
			nanosleep(&ts, NULL);
			vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&vg_cs_wake, &vg_cs_lock, &ts);
	}
	return NULL;
}

/* The polling thread started, once (under vg_cs_lock); if it cannot be, one warning saying what is lost. */
static void vg_cs_thread_ensure(const char *lost)
{
	if (vg_cs_thread_started)
		return;
	vg_cs_thread_started = true;
	vg_cs_polling = vg_thread_start("vramguard-gpu", vg_cs_main, NULL) == 0;
	if (!vg_cs_polling)
		vg_log(VG_LOG_WARN, "cannot start the compute share's thread: %s", lost);
}

static pthread_condattr_t vg_cs_condattr;
static void vg_cs_live_start(void);

void vg_compute_start(bool any_limit)
{
	pthread_condattr_init(&vg_cs_condattr);
	pthread_condattr_setclock(&vg_cs_condattr, CLOCK_MONOTONIC);
	pthread_cond_init(&vg_cs_wake, &vg_cs_condattr);
	if (any_limit)
		atomic_store(&vg_compute_on, true);
	else
		vg_cs_live_start();
}

static bool vg_cs_own_stream(CUstream s, bool ptsz)
{
	return s == CU_STREAM_PER_THREAD || (ptsz && s == NULL);
}

/* Is name a kernel of NCCL's: nccl*, or a C++ function of that name as the driver gives it (cuFuncGetName returns
 * the symbol, and NCCL's kernels are C++ functions: ncclDevKernel_AllReduce_Sum_f32_RING_LL is
 * _Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE; "_ZL": one of internal linkage)?
 * Matched on "nccl" alone, no collective in DDP over two H200s was ever seen as NCCL's: each rank's launches of
 * them waited, and their spins were charged (50 % on both ranks: no end in 100 s; 30 % and 70 %: 84 steps/s against
 * 358). */
static bool vg_cs_nccl_name(const char *name)
{
	if (strncmp(name, "nccl", 4) == 0)
		return true;
	if (strncmp(name, "_Z", 2) != 0)
		return false;
	name += name[2] == 'L' ? 3 : 2;
	if (*name < '1' || *name > '9')
		return false;
	while (*name >= '0' && *name <= '9')
		name++;
	return strncmp(name, "nccl", 4) == 0;
}

/* Is f a kernel of NCCL's (vg_cs_nccl_name)? Those never wait. Asked of the driver once per function. */
static bool vg_cs_is_nccl(CUfunction f)
{
	enum { N = 128 };
	static CUfunction seen[N];
	static bool nccl[N];
	if (!f)
		return false;
	unsigned i = (unsigned)(((uintptr_t)f >> 4) % N);
	if (seen[i] == f)
		return nccl[i];
	const char *name = NULL;
	bool is = vg_real.cuFuncGetName && vg_real.cuFuncGetName(&name, f) == CUDA_SUCCESS && name &&
		  vg_cs_nccl_name(name);
	seen[i] = f;
	nccl[i] = is;
	return is;
}

/* A launch is about to wait on GPU dev: the other streams of its context there (not a thread's own: only that
 * thread can name it) with launches after their events get them recorded now, from this thread, whose context is
 * ctx. Another thread's stream left busy (a framework's second thread, e.g. PyTorch's autograd thread, launches on a
 * stream this one does not) would otherwise count as busy, and be charged through the wait, until the polling
 * thread records it a VG_COMPUTE_GAP_NS after its last launch. A recording contends with nobody here: the process
 * is waiting. Under vg_cs_lock. */
static void vg_cs_record_others(const struct vg_cstream *mine, CUcontext ctx, int dev)
{
	for (unsigned i = 0; i < VG_COMPUTE_STREAMS; i++) {
		struct vg_cstream *c = &vg_cstreams[i];
		if (c == mine || !c->used || !c->busy || c->own || c->ctx != ctx || c->dev != dev ||
		    c->wait == VG_CS_WAITING)   /* a recording now would be behind the collective it waits for */
			continue;
		vg_cs_disarm(c);        /* no launch after the recording may pass unseen (vg_cs_after) */
		if (vg_cs_after(c))
			vg_cs_record(c, c->s, false, vg_cs_now());
	}
}

/* Wait, outside the lock, while dev's bucket is in debt, and then until it holds VG_COMPUTE_RESUME_NS again: the
 * process then runs in bursts of 10 ms of GPU time, each paid for by a wait. At 1 ms a loop went back to waiting
 * within a step: a batch-1 MLP step (about 1.2 ms, launch-bound) at a 10 % share waited 2.6 times a step (634 waits
 * in 246 steps) and ran at 0.05 of its uncapped rate while charged its 10 % (0.08 at 10 ms; at 50 %, 0.36 and 0.43:
 * one H200, docs/compute.md). The waiting thread looks at the GPU's streams itself too, so that the wait ends even
 * where the polling thread could not start. */
static void vg_cs_hold(const struct vg_launch *l)
{
	int dev = l->dev;
	struct vg_cdev *d = &vg_cdevs[dev];
	vg_throttle_advance(&d->t, vg_cs_now(), vg_cs_weight(d));
	if (vg_throttle_wait_ns(&d->t) <= 0)
		return;
	/* The stream this thread launches on may have launches after its event: record the event behind them now,
	 * so that the wait sees the stream go idle when it does (else it would count as busy, and be charged, until
	 * the polling thread records it a VG_COMPUTE_GAP_NS later). */
	struct vg_cstream *c = vg_cs_stream(l->ctx, l->s, vg_cs_own_stream(l->s, l->ptsz), dev);
	if (c && c->busy && c->wait != VG_CS_WAITING) {
		vg_cs_disarm(c);        /* another thread may launch there meanwhile: its launch must not pass unseen */
		if (vg_cs_after(c))
			vg_cs_record(c, l->s, l->ptsz, vg_cs_now());
	}
	vg_cs_record_others(c, l->ctx, dev);
	d->waiters++;
	d->held = true;
	d->waits++;
	uint64_t began = vg_cs_now();
	vg_cs_divide(d, began);         /* a region share: we want the GPU while we wait for it */
	for (;;) {
		/* The GPU's streams first: the time they still run is charged, the rest of the wait is not. */
		CUstreamCaptureMode mode;
		bool swapped = vg_capture_relax(&mode);
		vg_cs_poll(dev, false);
		vg_capture_restore(swapped, &mode);
		vg_throttle_advance(&d->t, vg_cs_now(), vg_cs_weight(d));
		if (!d->t.share_pm || d->t.balance_ns >= VG_COMPUTE_RESUME_NS)
			break;  /* paid back (or the limit was lifted meanwhile) */
		int64_t w = (VG_COMPUTE_RESUME_NS - d->t.balance_ns) * 1000 / d->t.share_pm + 1;
		int64_t most = d->active ? VG_COMPUTE_POLL_NS : 2 * VG_NS_PER_MS;   /* look again soon while busy */
		vg_unlock(&vg_cs_lock, VG_RANK_COMPUTE);
		struct timespec ts = { 0, w > most ? most : w };
		nanosleep(&ts, NULL);
		vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
	}
	d->waiters--;
	d->waited_ns += vg_cs_now() - began;
}

/* Is stream s capturing a graph (asked only once some capture began in the process)? Its launches then run only
 * when the graph is launched. In relaxed capture mode, so that the question is no unsafe call for a capture
 * elsewhere. */
static bool vg_cs_capturing(CUstream s, bool ptsz)
{
	if (!atomic_load_explicit(&vg_capture_begun, memory_order_relaxed))
		return false;
	CUstreamCaptureMode mode;
	bool swapped = vg_capture_relax(&mode);
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	CUresult r = ptsz && vg_real.cuStreamIsCapturing_ptsz ? vg_real.cuStreamIsCapturing_ptsz(s, &st)
	           : vg_real.cuStreamIsCapturing ? vg_real.cuStreamIsCapturing(s, &st) : CUDA_ERROR_NOT_FOUND;
	vg_capture_restore(swapped, &mode);
	return r != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool vg_compute_gate(struct vg_launch *l, CUstream s, CUfunction f, bool ptsz)
{
	if (vg_cs_capturing(s, ptsz))
		return false;
	CUcontext ctx;
	int dev = vg_current_device(&ctx);     /* the thread's cached (context, device) */
	if (!ctx || (unsigned)dev >= VG_MAX_DEVICES)
		return false;
	l->s = s;
	l->ctx = ctx;
	l->dev = dev;
	l->ptsz = ptsz;
	l->f = f;
	vg_cs_know(dev);
	/* No lock where no wait can be due: no share, or 100 % (measured only). */
	if (atomic_load_explicit(&vg_cdevs[dev].holds, memory_order_relaxed)) {
		vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
		if (vg_cdevs[dev].t.share_pm && !vg_cs_is_nccl(f))
			vg_cs_hold(l);
		vg_unlock(&vg_cs_lock, VG_RANK_COMPUTE);
	}
	/* The kernel may start before the driver's call returns, and the polling thread may find the GPU idle before
	 * vg_compute_launched registers it: a busy period that begins with this launch is counted from here (after
	 * any wait), not from vg_compute_launched's time. A stream armed for the fast path is busy now: no busy
	 * period can begin here (if it goes idle before vg_compute_launched, that is after now: see there). */
	struct vg_cs_seen *e = vg_cs_seen_slot(s);
	bool armed = e->c && e->s == s && e->ctx == ctx && !vg_cs_own_stream(s, ptsz) &&
		     atomic_load(&e->c->arm) == e->token;
	l->fast = armed ? e->c : NULL;
	l->token = e->token;
	l->t0 = armed ? 0 : vg_cs_now();
	return true;
}

void vg_compute_launched(const struct vg_launch *l, CUresult rc)
{
	if (rc != CUDA_SUCCESS)
		return;
	uint64_t g = atomic_fetch_add(&vg_cs_gen, 1) + 1;
	/* The token read again before the raise too: a token is never reused, so the slot still holds this stream
	 * (no raise on a stream that took the slot over since the gate). */
	if (l->fast && atomic_load(&l->fast->arm) == l->token) {
		vg_cs_gen_raise(l->fast, g);
		if (atomic_load(&l->fast->arm) == l->token)
			return;         /* still armed after the raise: whoever disarms it next sees the launch */
	}
	bool own = vg_cs_own_stream(l->s, l->ptsz);
	vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
	vg_cs_thread_ensure("a stream's idle time is seen only when it synchronizes or a launch waits");
	uint64_t now = vg_cs_now();
	struct vg_cstream *c = vg_cs_stream(l->ctx, l->s, own, l->dev);
	if (c) {
		struct vg_cdev *d = &vg_cdevs[l->dev];
		vg_cs_gen_raise(c, g);
		c->seen_gen = atomic_load(&c->gen);
		c->launch_ns = now;
		/* NCCL's kernel: flagged before a busy period that it begins is counted, so that none of it is charged
		 * (flagged after, the time from before the driver's call to here was: under ASan, 10.6 ms for 10
		 * collectives' bursts where only the pauses between them, under 1 ms each, may count). */
		if (l->f && !c->nccl && vg_cs_is_nccl(l->f)) {
			vg_throttle_advance(&d->t, now, vg_cs_weight(d));
			if (c->busy && c->wait == VG_CS_BEHIND)
				d->behind--;    /* NCCL's stream now, counted as such (a stream is counted once) */
			c->wait = VG_CS_RUN;
			c->nccl = true;
			d->nccl++;
		}
		if (!c->busy) {
			/* No t0: the stream was busy at the gate and has gone idle since, at d->idle_since or later
			 * (the last GPU's stream to go idle) if the GPU is idle now: busy from there. */
			uint64_t t0 = l->t0 ? l->t0 : d->idle_since;
			uint64_t start = d->active == 0 && t0 && t0 < now ? t0 : now;
			vg_throttle_advance(&d->t, start, vg_cs_weight(d));
			/* Brought past start meanwhile (the polling thread, a report) while idle: that part was busy. */
			if (d->active == 0 && start < d->t.last_ns && !c->nccl)
				vg_throttle_charge(&d->t, d->t.last_ns - start);
			/* The GPU idle for less than VG_COMPUTE_GAP_NS, and not because a launch waited: the process's
			 * own pause between two launches (a step's Python, a synchronization's return), counted as
			 * its time on the GPU; not before a collective, whose time is never charged (vg_cs_weight). */
			if (d->active == 0 && d->idle_since && !d->held && !c->nccl && start > d->idle_since &&
			    start - d->idle_since < VG_COMPUTE_GAP_NS)
				vg_throttle_charge(&d->t, start - d->idle_since);
			c->busy = true;
			if (c->wait == VG_CS_BEHIND)
				d->behind++;
			if (d->active++ == 0)
				vg_cs_recount(d, start, now);   /* busy from start on: [start, now] charged */
			if (vg_cs_busy++ == 0)
				pthread_cond_signal(&vg_cs_wake);
		}
		/* One event in flight per stream: a new one is recorded once the last is seen complete (the polling
		 * thread disarms the stream then), not while it is in flight. Re-recorded every 100 us behind a GPU
		 * running milliseconds behind its launches, the events made GPT-2 small's training step 1.39 times as
		 * long on an H200 (42.5 ms against 30.6). */
		if ((own && c->wait != VG_CS_WAITING) || !c->pending)
			vg_cs_record(c, l->s, l->ptsz, now);
		vg_cs_arm(c, l->ctx, l->s);
	}
	vg_unlock(&vg_cs_lock, VG_RANK_COMPUTE);
}

void vg_compute_stream_wait(CUstream s, bool ptsz)
{
	if (vg_cs_capturing(s, ptsz))
		return;         /* a recording of ours would join the graph */
	CUcontext ctx;
	int dev = vg_current_device(&ctx);
	if (!ctx || (unsigned)dev >= VG_MAX_DEVICES)
		return;
	vg_cs_know(dev);
	bool own = vg_cs_own_stream(s, ptsz);
	vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
	struct vg_cdev *d = &vg_cdevs[dev];
	struct vg_cstream *c = d->nccl ? vg_cs_stream(ctx, s, own, dev) : NULL;
	if (c && !c->nccl && c->wait == VG_CS_RUN) {
		if (!c->busy) {
			c->wait = VG_CS_BEHIND;         /* all its work is to come: counted once it is busy */
		} else {
			/* Its event behind the work before the wait: charged until that is done (vg_cs_poll). */
			vg_cs_disarm(c);
			vg_cs_record(c, s, ptsz, vg_cs_now());
			if (c->pending)
				c->wait = VG_CS_WAITING;
		}
	}
	vg_unlock(&vg_cs_lock, VG_RANK_COMPUTE);
}

uint64_t vg_compute_sync_ticket(void)
{
	return atomic_load(&vg_cs_gen);
}

void vg_compute_synced(CUcontext ctx, CUstream s, bool ptsz, bool whole, uint64_t ticket, CUresult rc)
{
	if (rc != CUDA_SUCCESS)
		return;
	if (!ctx)
		vg_current_device(&ctx);
	if (!ctx)
		return;
	uint64_t thread = vg_cs_own_stream(s, ptsz) ? (uint64_t)pthread_self() : 0;
	vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
	uint64_t now = vg_cs_now();
	for (unsigned i = 0; i < VG_COMPUTE_STREAMS; i++) {
		struct vg_cstream *c = &vg_cstreams[i];
		if (!c->used || !c->busy || c->ctx != ctx)
			continue;
		/* A whole-context synchronization waits for the legacy stream's and every blocking stream's work; a
		 * stream's, for that stream's (the legacy stream also for the blocking streams before it: not used).
		 * A launch since the ticket keeps the stream busy: disarmed first, so that gen shows every one. */
		if (!whole && (c->s != s || c->thread != thread))
			continue;
		vg_cs_disarm(c);
		if (atomic_load(&c->gen) <= ticket)
			vg_cs_idle(c, now);
	}
	vg_unlock(&vg_cs_lock, VG_RANK_COMPUTE);
}

bool vg_compute_figures(int dev, struct vg_compute_figures *out)
{
	memset(out, 0, sizeof(*out));
	if ((unsigned)dev >= VG_MAX_DEVICES)
		return false;
	vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
	struct vg_cdev *d = &vg_cdevs[dev];
	bool known = d->known;
	if (known) {
		uint64_t now = vg_cs_now();
		vg_throttle_advance(&d->t, now, vg_cs_weight(d));
		out->share_pm = d->t.share_pm;
		out->used_ns = d->t.used_ns;
		out->recent_pm = vg_throttle_recent_pm(&d->t, now, VG_THROTTLE_MINUTE - 1, &out->recent_s);
		out->source = d->source;
		out->waits = d->waits;
		out->waited_ns = d->waited_ns;
	}
	vg_unlock(&vg_cs_lock, VG_RANK_COMPUTE);
	return known;
}

void vg_compute_atfork_child(void)
{
	/* The parent's streams, events and polling thread are not the child's, and its slots in the GPUs' activity
	 * files are the parent's to keep (their locks belong to descriptions the child shares): close our copies
	 * without writing, and start over. A thread of the parent may have held the lock at fork(). */
	for (int i = 0; i < VG_MAX_DEVICES; i++)
		if (vg_cdevs[i].known && vg_cdevs[i].gs.fd >= 0)
			close(vg_cdevs[i].gs.fd);
	memset(vg_cdevs, 0, sizeof(vg_cdevs));
	memset(vg_cstreams, 0, sizeof(vg_cstreams));
	atomic_store(&vg_cs_gen, 0);
	vg_cs_busy = 0;
	vg_cs_thread_started = vg_cs_polling = false;
	vg_cs_relaxed = false;
	vg_cs_live_forget();
	pthread_mutex_init(&vg_cs_lock, NULL);
	pthread_cond_init(&vg_cs_wake, &vg_cs_condattr);
}

/* ---- live changes (`vramguard limit set --compute`; docs/compute.md, *Live changes*) ----
 * The compute thread looks once a second for a share asked for this process (its region slot) and for its shared
 * region's share, and applies them to every GPU it knows; a GPU first used later gets them at vg_cs_know. Nothing
 * here runs on the launch path. A process started with no compute limit runs the thread from the start (for a
 * second's wake-ups only) and turns vg_compute_on on with the first share it is given: its launches are measured
 * from then on (a stream busy at that moment from its next launch). State under vg_cs_lock. */

#define VG_CS_OWN_SOURCE "vramguard limit set"
#define VG_CS_REGION_SOURCE "vramguard limit set --shared"

static struct vg_limits vg_cs_own;      /* the last `limit set --compute --pid` applied (vg_cs_own_set) */
static bool vg_cs_own_set;
static struct vg_limits vg_cs_region;   /* the region's share (vg_cs_region_set; "" in the region: none) */
static bool vg_cs_region_set;
static uint32_t vg_cs_tag;              /* our shared region in the GPUs' activity files (0: none) */

/* What list l gives GPU dev, per mille (0: unlimited); *said: whether it names the GPU at all. */
static uint32_t vg_cs_pm_of(const struct vg_limits *l, int dev, int *said)
{
	const struct vg_device_info *di = vg_device_info_cached(dev);
	uint64_t v = vg_limits_for(l, dev, di && di->uuid[0] ? di->uuid : NULL, 1000, NULL, said);
	return *said && v < 1000 ? (uint32_t)v : 0;
}

/* The share in force on d from its parts: the lower of its own share and its part of the region's, with the source
 * of the one that holds. Under vg_cs_lock. */
static void vg_cs_apply(struct vg_cdev *d, uint64_t now)
{
	uint32_t pm = d->own_pm;
	const char *src = d->own_source;
	if (d->region_pm) {
		uint32_t part = d->region_pm / (d->members ? d->members : 1);
		if (part == 0)
			part = 1;
		if (!pm || part < pm) {
			pm = part;
			src = VG_CS_REGION_SOURCE;
		}
	}
	if (pm != d->t.share_pm)
		vg_throttle_set_share(&d->t, pm, now);
	atomic_store(&d->holds, pm < 1000 ? pm : 0);
	d->source = pm ? src : NULL;
}

/* Say in the GPU's activity file whether we want the GPU (work there, or a launch waiting for its share) and count
 * the region's members that do; the share follows the count. Only with a region share. Under vg_cs_lock. */
static void vg_cs_divide(struct vg_cdev *d, uint64_t now)
{
	if (!d->region_pm)
		return;
	vg_gpu_share_set_tag(&d->gs, vg_cs_tag, d->active > 0 || d->waiters > 0);
	unsigned m = vg_gpu_share_count_tag(&d->gs, vg_cs_tag);
	if (m != d->members) {
		d->members = m;
		vg_cs_apply(d, now);
	}
}

/* GPU dev is used for the first time: the live shares given so far apply to it. Under vg_cs_lock. */
static void vg_cs_live_know(struct vg_cdev *d, int dev)
{
	int said = 0;
	if (vg_cs_own_set) {
		uint32_t pm = vg_cs_pm_of(&vg_cs_own, dev, &said);
		if (said) {
			d->own_pm = pm;
			d->own_source = pm ? VG_CS_OWN_SOURCE : NULL;
		}
	}
	d->region_pm = vg_cs_region_set ? vg_cs_pm_of(&vg_cs_region, dev, &said) : 0;
	d->members = 1;
	if (d->own_pm != d->t.share_pm || d->region_pm)
		vg_cs_apply(d, vg_cs_now());
	vg_cs_divide(d, vg_cs_now());
}

/* A spec read from the region, parsed: false (one warning) if it does not parse, which `limit set` prevents. */
static bool vg_cs_live_parse(const char *what, const char *spec, struct vg_limits *l)
{
	char e[VG_ERR_MAX];
	if (vg_parse_compute(what, spec, l, e, sizeof(e)) == 0)
		return true;
	vg_log(VG_LOG_WARN, "%s ignored: %s", what, strncmp(e, "vramguard: ", 11) ? e : e + 11);
	return false;
}

/* Each second, from the compute thread (vg_cs_lock held; released while the region is read): new shares applied to
 * every known GPU, the region's members counted again. */
static void vg_cs_live_check(void)
{
	struct vg_region *r = vg_shared_region();
	if (!r)
		return;
	char own[VG_REGION_SPEC_MAX], reg[VG_REGION_SPEC_MAX];
	struct vg_limits lo, lr;
	vg_unlock(&vg_cs_lock, VG_RANK_COMPUTE);
	bool got_own = vg_region_pending_compute(r, own, sizeof(own)) &&
		       vg_cs_live_parse("compute share from `vramguard limit set`", own, &lo);
	bool got_reg = vg_region_compute_changed(r, reg, sizeof(reg)) &&
		       (!reg[0] || vg_cs_live_parse("shared region's compute share", reg, &lr));
	uint32_t tag = vg_region_tag(r);
	if (got_own)
		vg_log(VG_LOG_WARN, "compute share set to '%s' by `vramguard limit set`", own);
	if (got_reg && (reg[0] || vg_cs_region_set))
		vg_log(VG_LOG_WARN, "shared region %s: compute share %s%s%s by `vramguard limit set` (divided among its "
		       "members that use a GPU at the same time)", vg_shared_label(), reg[0] ? "set to '" : "removed",
		       reg, reg[0] ? "'" : "");
	if ((got_own || (got_reg && reg[0])) && !vg_cs_relaxed) {
		CUstreamCaptureMode mode;
		vg_cs_relaxed = vg_capture_relax(&mode);        /* this thread started before the driver was up */
	}
	vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
	vg_cs_tag = tag;
	if (got_own) {
		vg_cs_own = lo;
		vg_cs_own_set = true;
	}
	if (got_reg) {
		vg_cs_region_set = reg[0] != '\0';
		if (vg_cs_region_set)
			vg_cs_region = lr;
	}
	uint64_t now = vg_cs_now();
	for (int i = 0; i < VG_MAX_DEVICES; i++) {
		struct vg_cdev *d = &vg_cdevs[i];
		if (!d->known)
			continue;
		int said = 0;
		uint32_t pm = got_own ? vg_cs_pm_of(&vg_cs_own, i, &said) : 0;
		if (said) {
			d->own_pm = pm;
			d->own_source = pm ? VG_CS_OWN_SOURCE : NULL;
		}
		if (got_reg)
			d->region_pm = vg_cs_region_set ? vg_cs_pm_of(&vg_cs_region, i, &said) : 0;
		if (said || got_reg)
			vg_cs_apply(d, now);
		vg_cs_divide(d, now);
	}
	if (got_own || (got_reg && vg_cs_region_set))
		atomic_store(&vg_compute_on, true);     /* the launch hooks measure from their next launch */
}

/* A process with no compute limit: the thread runs from the start, so that a share given later is seen (only a
 * process in a region can be given one). */
static void vg_cs_live_start(void)
{
	if (!vg_shared_region())
		return;
	vg_lock(&vg_cs_lock, VG_RANK_COMPUTE);
	vg_cs_thread_ensure("`vramguard limit set --compute` cannot reach this process");
	vg_unlock(&vg_cs_lock, VG_RANK_COMPUTE);
}

/* In a forked child: the parent's live shares are not the child's (its region slot is the parent's too). */
static void vg_cs_live_forget(void)
{
	vg_cs_own_set = false;
	vg_cs_region_set = false;
	vg_cs_tag = 0;
}
