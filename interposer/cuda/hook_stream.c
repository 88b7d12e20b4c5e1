/* Streams: creation sites, destruction with work still queued (never charged). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "interposer/cuda/hook.h"
#include "interposer/tables.h"
#include "accounting/sites.h"
#include "report/log.h"
#include "report/report.h"
#include "report/symbolize.h"

/* ---- streams: creation sites, destruction with work still queued (never charged) ---- */

static bool vg_special_stream(CUstream s)
{
	return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

_Atomic unsigned vg_stream_gen = 1;

static void vg_stream_created(CUresult rc, CUstream *ph, int hook)
{
	if (rc != CUDA_SUCCESS || !ph || vg_special_stream(*ph))
		return;
	atomic_fetch_add(&vg_streams_created, 1);
	atomic_fetch_add(&vg_stream_gen, 1);    /* the handle may be a dead stream's: forget what threads cached */
	struct vg_alloc *r = vg_rec_new((uint64_t)(uintptr_t)*ph, 0, -1, NULL, hook, VG_KIND_STREAM);
	if (!r)
		return;
	vg_rec_stamp(r, hook);
	if (vg_table_insert(&vg_streams, r) == -EEXIST) {   /* a handle we missed the destruction of */
		vg_alloc_free(vg_table_remove(&vg_streams, r->key));
		if (vg_table_insert(&vg_streams, r) == 0)
			return;
	} else {
		return;
	}
	vg_alloc_free(r);
}

VG_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	VG_OPEN(cuStreamCreate, phStream, Flags);
	rc = VG_REAL_CALL(cuStreamCreate, phStream, Flags);
	vg_stream_created(rc, phStream, VG_HOOK_cuStreamCreate);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	VG_OPEN(cuStreamCreateWithPriority, phStream, flags, priority);
	rc = VG_REAL_CALL(cuStreamCreateWithPriority, phStream, flags, priority);
	vg_stream_created(rc, phStream, VG_HOOK_cuStreamCreateWithPriority);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx, unsigned int flags,
						  int priority)
{
	VG_OPEN(cuGreenCtxStreamCreate, phStream, greenCtx, flags, priority);
	rc = VG_REAL_CALL(cuGreenCtxStreamCreate, phStream, greenCtx, flags, priority);
	vg_stream_created(rc, phStream, VG_HOOK_cuGreenCtxStreamCreate);
out:
	vg_hook_leave();
	return rc;
}

/* "func+0x1c (libfoo.so)" for the first application frame of a site, for warnings. Symbolizing reads the
 * modules' symbol tables; it runs only for a warning that passed the rate limit. */
static void vg_site_brief(const struct vg_site *site, char *buf, size_t len)
{
	if (!site || site->nframes == 0) {
		snprintf(buf, len, "an unknown site (VRAMGUARD_BACKTRACE=0?)");
		return;
	}
	struct vg_report_frame f, first;
	struct vg_report names = { .nsites = 0 };      /* holds the frames' strings */
	struct vg_symbolizer *sym = vg_symbolizer_new();
	for (uint16_t i = 0; i < site->nframes; i++) {
		memset(&f, 0, sizeof(f));
		vg_symbolize(sym, &names, (uint64_t)(uintptr_t)site->frames[i], &f);
		if (i == 0)
			first = f;
		if (!vg_report_frame_is_runtime(&f))
			break;
		if (i + 1 == site->nframes)
			f = first;
	}
	if (sym)
		vg_symbolizer_free(sym);
	const char *mod = strrchr(f.module, '/');
	mod = mod ? mod + 1 : f.module;
	if (f.symbol[0])
		snprintf(buf, len, "%s+0x%llx (%s)", f.symbol, (unsigned long long)f.symbol_offset, mod);
	else if (mod[0])
		snprintf(buf, len, "%s+0x%llx", mod, (unsigned long long)f.module_offset);
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)f.address);
	vg_report_free(&names);
}

static bool vg_event_bump(struct vg_alloc *r, void *arg)
{
	(void)arg;
	r->bytes++;
	return false;
}

static struct vg_rate vg_stream_rate;

/* A stream that was destroyed with work still queued: legal (the work runs on), but usually a missing
 * synchronisation. Recorded with both sites and warned about only once the driver has accepted the destroy. */
static void vg_stream_pending_destroyed(CUstream s, struct vg_site *csite, struct vg_site *dsite, int hook, bool sync)
{
	uint64_t key = (uint64_t)(csite ? csite->id : 0) << 32 | (dsite ? dsite->id : 0);
	struct vg_alloc *gone;
	if (vg_table_update(&vg_stream_events, key, vg_event_bump, NULL, &gone) != 0) {
		struct vg_alloc *ev = vg_rec_new(key, 1, -1, NULL, hook, VG_KIND_STREAM_EVENT);
		if (ev) {
			ev->site = csite;
			ev->aux = (uint64_t)(uintptr_t)dsite;
			ev->flags = sync ? VG_ALLOC_SYNCED : 0;
			if (vg_table_insert(&vg_stream_events, ev) != 0) {
				vg_alloc_free(ev);
				vg_table_update(&vg_stream_events, key, vg_event_bump, NULL, &gone);
			}
		}
	}
	char tail[64], cs[640], ds[640];
	if (!vg_rate_ok(&vg_stream_rate, tail, sizeof(tail)))
		return;
	vg_site_brief(csite, cs, sizeof(cs));
	vg_site_brief(dsite, ds, sizeof(ds));
	if (sync)
		vg_log(VG_LOG_WARN, "waited for stream %p before destroying it: work was still queued (created at %s, "
		       "destroyed at %s; VRAMGUARD_STREAM_CHECK=sync)%s", (void *)s, cs, ds, tail);
	else
		vg_log(VG_LOG_WARN, "stream %p destroyed with work still queued (created at %s, destroyed at %s); the "
		       "work runs on, unsynchronized. Synchronize before destroying, or set VRAMGUARD_STREAM_CHECK=sync%s",
		       (void *)s, cs, ds, tail);
}

static CUresult vg_stream_destroy(bool v2, CUstream s)
{
	int hook = v2 ? VG_HOOK_cuStreamDestroy_v2 : VG_HOOK_cuStreamDestroy;
	VG_OPEN_EITHER(v2, cuStreamDestroy, _v2, s);
	struct vg_alloc *r = NULL;
	struct vg_site *dsite = NULL;
	bool pending = false, sync = vg_cfg.stream_check == VG_STREAM_SYNC;
	if (!vg_special_stream(s)) {
		/* Out of the table before the real destroy: the driver hands the handle out again at once. */
		r = vg_table_remove(&vg_streams, (uint64_t)(uintptr_t)s);
		if (vg_cfg.stream_check != VG_STREAM_OFF && vg_stream_state(s) == 1) {
			pending = true;
			dsite = vg_site_capture(hook);
			if (sync && vg_real.cuStreamSynchronize)
				(void)vg_real.cuStreamSynchronize(s);
		}
	}
	rc = VG_REAL_EITHER(v2, cuStreamDestroy, _v2, s);
	if (rc == CUDA_SUCCESS && !vg_special_stream(s)) {
		atomic_fetch_add(&vg_streams_destroyed, 1);
		if (pending) {
			atomic_fetch_add(&vg_streams_destroyed_pending, 1);
			vg_stream_pending_destroyed(s, r ? r->site : NULL, dsite, hook, sync);
		}
	}
	if (r && (rc == CUDA_SUCCESS || vg_table_insert(&vg_streams, r) != 0))
		vg_alloc_free(r);
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
	return vg_stream_destroy(false, hStream);
}

VG_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
	return vg_stream_destroy(true, hStream);
}

/* ---- stream capture ---- */

/* Set before the driver starts the first capture, never cleared: until then no stream can be capturing, and an
 * allocation skips the driver's cuStreamIsCapturing (hook_pool.c). Set whatever this call's mode, since a capture
 * begun under a nested call is a capture all the same. */
#define VG_CAPTURE_HOOK(name, params, ...)                                                                        \
	VG_EXPORT CUresult CUDAAPI name params                                                                 \
	{                                                                                                      \
		atomic_store(&vg_capture_begun, true);                                                         \
		VG_OPEN(name, __VA_ARGS__);                                                                    \
		rc = VG_REAL_CALL(name, __VA_ARGS__);                                                          \
	out:                                                                                                   \
		vg_hook_leave();                                                                               \
		return rc;                                                                                     \
	}
VG_CAPTURE_HOOK(cuStreamBeginCapture, (CUstream s), s)
VG_CAPTURE_HOOK(cuStreamBeginCapture_ptsz, (CUstream s), s)
VG_CAPTURE_HOOK(cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode mode), s, mode)
VG_CAPTURE_HOOK(cuStreamBeginCapture_v2_ptsz, (CUstream s, CUstreamCaptureMode mode), s, mode)
VG_CAPTURE_HOOK(cuStreamBeginCaptureToGraph,
		(CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *data, size_t n,
		 CUstreamCaptureMode mode), s, g, deps, data, n, mode)
VG_CAPTURE_HOOK(cuStreamBeginCaptureToGraph_ptsz,
		(CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *data, size_t n,
		 CUstreamCaptureMode mode), s, g, deps, data, n, mode)
