/* The compute share (docs/compute.md): how much of a GPU's time this process takes, measured at its launches and
 * held to VRAMGUARD_COMPUTE_LIMIT by delaying launches, never dropping or reordering them.
 *
 * Measuring: a process is "active" on a GPU from a launch on an idle stream until the GPU has finished everything
 * launched there. Each stream the process launches on has one event of ours, recorded behind its launches when the
 * stream has none in flight: at a launch, once a thread of ours ("vramguard-gpu"), polling the events every
 * VG_COMPUTE_POLL_NS, has seen the last one complete (in between, a launch takes no lock and reads no clock). That
 * thread ends the activity when the last event is done and no launch came after it (recording it again first where
 * launches came after it and none has come for VG_COMPUTE_GAP_NS), and a synchronization that returns
 * ends it at once. The time active is charged to the bucket of accounting/throttle.h; so is a pause of the GPU shorter
 * than VG_COMPUTE_GAP_NS between two bursts of the process's work that no wait of ours caused (the time a launch-bound
 * loop spends in Python between kernels: without it, a loop of small kernels would run far above its share). Launches
 * made while a stream captures a graph are not run, so not measured; the graph's launch is.
 *
 * Live changes: the thread reads `vramguard limit set --compute`'s shares (the process's own, its shared region's)
 * from the region once a second; a region's share is divided among its members that want the GPU at the same time
 * (gpu_share.h's region word).
 *
 * Holding: a launch on a GPU whose bucket is in debt waits until the share has paid the debt back. Kernels of NCCL
 * (named nccl*, or _Z<n>nccl* as the driver names a C++ function) never wait, so that no rank of a collective holds
 * back the others; their time is not charged, nor that of the work a stream queued behind a wait
 * (cuStreamWaitEvent) made while a collective was outstanding (vg_compute_stream_wait): a collective's spin includes
 * the other ranks' waits for their shares. */
#ifndef VG_COMPUTE_H
#define VG_COMPUTE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "interposer/base.h"        /* hooks.h's <cuda.h>, with every exact ABI name declared */

#define VG_COMPUTE_POLL_NS 100000       /* the polling thread's period while a stream has work (100 us) */
#define VG_COMPUTE_GAP_NS 1000000       /* a pause shorter than this between bursts of work counts as busy (1 ms) */
#define VG_COMPUTE_RESUME_NS 10000000   /* a launch that waited goes once 10 ms of GPU time is earned */
#define VG_COMPUTE_STREAMS 256          /* streams measured per process; launches on more are held but unmeasured */

/* True once some GPU of the process has a compute limit (VRAMGUARD_COMPUTE_LIMIT, CUDA_DEVICE_SM_LIMIT[_<i>], or
 * `vramguard limit set --compute`): the launch hooks' one branch when it is false. */
extern _Atomic bool vg_compute_on VG_HIDDEN;

/* At start-up, the configuration valid: turn the launch hooks on if the configuration sets any compute limit; else,
 * in a region, start the compute thread, which turns them on when `vramguard limit set --compute` gives the process a
 * share (compute.c's live changes). */
void vg_compute_start(bool any_limit);

/* One launch, from vg_compute_gate to vg_compute_launched. */
struct vg_cstream;
struct vg_launch {
	CUstream s;
	CUcontext ctx;
	int dev;
	bool ptsz;              /* the _ptsz entry point: stream 0 is the thread's own */
	uint64_t t0;            /* just before the driver's call; 0 where the stream was busy then (fast is set) */
	CUfunction f;                   /* the kernel (NULL: a graph) */
	struct vg_cstream *fast;        /* the stream's state, busy and armed for the lock-free path at the gate */
	uint64_t token;                 /* ... under this arming (compute.c: vg_cstream.arm) */
};

/* Before a launch on stream s of kernel f (NULL for a graph): waits while the GPU's bucket is in debt, and fills
 * *l. False when the launch is not ours to measure (the stream captures, no context): then vg_compute_launched is
 * not called. */
bool vg_compute_gate(struct vg_launch *l, CUstream s, CUfunction f, bool ptsz);

/* After that launch returned rc: the stream is active, and gets its event where due. */
void vg_compute_launched(const struct vg_launch *l, CUresult rc);

/* Stream s is about to wait for an event (cuStreamWaitEvent): where a collective of NCCL's is outstanding on its GPU,
 * the stream's work after the wait is taken to wait for it, and is not charged until the GPU's collectives are done
 * (compute.c: VG_CS_BEHIND). */
void vg_compute_stream_wait(CUstream s, bool ptsz);

/* A synchronization is about to start: its ticket, for vg_compute_synced. */
uint64_t vg_compute_sync_ticket(void);

/* A synchronization of stream s (whole: every stream of context ctx, NULL the current one) that began with ticket
 * returned rc: streams with no launch since then are idle from now. */
void vg_compute_synced(CUcontext ctx, CUstream s, bool ptsz, bool whole, uint64_t ticket, CUresult rc);

/* What reports, `top` and the exporter show of one GPU (its CUDA ordinal). */
struct vg_compute_figures {
	uint32_t share_pm;      /* the limit in force, per mille; 0: none */
	uint32_t recent_pm;     /* the share used over the last minute (or since the first launch, if sooner) */
	unsigned recent_s;      /* ... measured over this many seconds (0: nothing yet) */
	uint64_t used_ns;       /* GPU time used, ever */
	uint64_t waits;         /* launches that waited */
	uint64_t waited_ns;     /* how long, summed */
	const char *source;     /* the variable or command that set the limit; NULL: none */
};
bool vg_compute_figures(int dev, struct vg_compute_figures *out);

/* In a forked child: the parent's state forgotten, our copies of its descriptors closed. */
void vg_compute_atfork_child(void);

#endif
