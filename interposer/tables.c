/* The process's tables (globals.h): allocations, arrays, VMM handles and their mappings, live streams and the
 * streams destroyed with work queued. The hooks insert and remove through charge.c and the tables' own locked calls
 * (accounting/table.h); reports read them (snapshot.c). */
#define _GNU_SOURCE
#include <stdbool.h>

#include "interposer/base.h"
#include "interposer/tables.h"
#include "accounting/sites.h"
#include "accounting/table.h"

struct vg_table vg_ptrs;                /* device pointers: cuMemAlloc, pitch, managed, async */
struct vg_table vg_arrays;              /* CUarray and CUmipmappedArray handles */
struct vg_table vg_vmm;                 /* cuMemCreate handles (refs + maps) */
struct vg_table vg_maps;                /* cuMemMap mappings by start address */
struct vg_table vg_streams;             /* live streams, with their creation sites */
struct vg_table vg_stream_events;       /* streams destroyed with work queued, by (create, destroy) site */
_Atomic uint64_t vg_streams_created, vg_streams_destroyed, vg_streams_destroyed_pending;

static struct vg_table *const vg_all_tables[] = { &vg_ptrs, &vg_arrays, &vg_vmm, &vg_maps, &vg_streams,
						  &vg_stream_events };
#define VG_NTABLES (sizeof(vg_all_tables) / sizeof(vg_all_tables[0]))

void vg_tables_init(void)
{
	for (size_t i = 0; i < VG_NTABLES; i++)
		vg_table_init(vg_all_tables[i]);
}

void vg_tables_atfork_prepare(void)
{
	for (size_t i = 0; i < VG_NTABLES; i++)
		vg_table_lock_all(vg_all_tables[i]);
	vg_sites_lock_all();
	vg_alloc_lock();
}

void vg_tables_atfork_parent(void)
{
	vg_alloc_unlock();
	vg_sites_unlock_all();
	for (size_t i = VG_NTABLES; i-- > 0;)
		vg_table_unlock_all(vg_all_tables[i]);
}

void vg_tables_atfork_child(void)
{
	for (size_t i = 0; i < VG_NTABLES; i++)
		vg_table_reset_child(vg_all_tables[i]);
	vg_alloc_reset_child();                 /* every record free again: the tables held them all */
	vg_sites_reset_child();
	atomic_store(&vg_streams_created, 0);
	atomic_store(&vg_streams_destroyed, 0);
	atomic_store(&vg_streams_destroyed_pending, 0);
}

/* The thread is switched to relaxed capture mode for the calls, so a query made while another thread captures in
 * global mode is not an "unsafe call" that breaks that capture. */
int vg_stream_state(CUstream s)
{
	CUstreamCaptureMode mode;
	bool swapped = vg_capture_relax(&mode);
	int state = -2;
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	if (vg_real.cuStreamIsCapturing && vg_real.cuStreamIsCapturing(s, &st) == CUDA_SUCCESS) {
		if (st != CU_STREAM_CAPTURE_STATUS_NONE) {
			state = -1;
		} else if (vg_real.cuStreamQuery) {
			CUresult q = vg_real.cuStreamQuery(s);
			state = q == CUDA_ERROR_NOT_READY ? 1 : q == CUDA_SUCCESS ? 0 : -2;
		}
	}
	vg_capture_restore(swapped, &mode);
	return state;
}
