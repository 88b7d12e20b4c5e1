/* Virtual memory management: cuMemCreate handles and their mappings. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "interposer/cuda/hook.h"

/* ---- virtual memory management (cuMemCreate and friends) ----
 * Physical memory lives while the handle has references or is mapped anywhere; it is uncharged when both reach 0.
 * NCCL frees as Retain, Unmap, Release, Release: uncharging at each Release would count it twice. */

VG_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
				       const CUmemAllocationProp *prop, unsigned long long flags)
{
	VG_OPEN(cuMemCreate, handle, size, prop, flags);
	if (!prop || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {  /* host / host NUMA: not VRAM */
		rc = VG_REAL_CALL(cuMemCreate, handle, size, prop, flags);
		goto out;
	}
	int dev = prop->location.id;
	rc = vg_reserve(dev, size, VG_HOOK_cuMemCreate);
	if (rc != CUDA_SUCCESS)
		goto out;
	rc = VG_REAL_CALL(cuMemCreate, handle, size, prop, flags);
	vg_commit(rc, &vg_vmm, rc == CUDA_SUCCESS ? *handle : 0, size, dev, NULL, VG_HOOK_cuMemCreate, VG_KIND_VMM);
out:
	vg_hook_leave();
	return rc;
}

static bool vg_vmm_unref(struct vg_alloc *r, void *arg)
{
	(void)arg;
	if (r->refs > 0)
		r->refs--;
	return r->refs == 0 && r->maps == 0;
}

static bool vg_vmm_ref(struct vg_alloc *r, void *arg)
{
	(void)arg;
	r->refs++;
	return false;
}

static bool vg_vmm_map(struct vg_alloc *r, void *arg)
{
	(void)arg;
	r->maps++;
	return false;
}

static bool vg_vmm_unmap(struct vg_alloc *r, void *arg)
{
	(void)arg;
	if (r->maps > 0)
		r->maps--;
	return r->refs == 0 && r->maps == 0;
}

VG_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
	VG_OPEN(cuMemRelease, handle);
	struct vg_alloc *gone = NULL;
	int found = vg_table_update(&vg_vmm, handle, vg_vmm_unref, NULL, &gone) == 0;
	rc = VG_REAL_CALL(cuMemRelease, handle);
	if (rc == CUDA_SUCCESS) {
		if (gone)
			vg_retire(gone);
	} else if (gone) {
		gone->refs = 1;
		vg_unremove(&vg_vmm, gone);
	} else if (found) {
		vg_table_update(&vg_vmm, handle, vg_vmm_ref, NULL, &gone);
	}
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	VG_OPEN(cuMemRetainAllocationHandle, handle, addr);
	rc = VG_REAL_CALL(cuMemRetainAllocationHandle, handle, addr);
	if (rc == CUDA_SUCCESS && handle) {
		struct vg_alloc *gone;
		vg_table_update(&vg_vmm, *handle, vg_vmm_ref, NULL, &gone);
	}
out:
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
				    unsigned long long flags)
{
	VG_OPEN(cuMemMap, ptr, size, offset, handle, flags);
	rc = VG_REAL_CALL(cuMemMap, ptr, size, offset, handle, flags);
	if (rc == CUDA_SUCCESS) {
		struct vg_alloc *gone;
		if (vg_table_update(&vg_vmm, handle, vg_vmm_map, NULL, &gone) == 0) {
			struct vg_alloc *mr = vg_rec_new(ptr, size, -1, NULL, VG_HOOK_cuMemMap, VG_KIND_MAPPING);
			if (mr) {
				mr->aux = handle;
				if (vg_table_insert(&vg_maps, mr) != 0) {
					vg_alloc_free(mr);
					vg_table_update(&vg_vmm, handle, vg_vmm_unmap, NULL, &gone);
					if (gone)
						vg_retire(gone);
				}
			}
		}
	}
out:
	vg_hook_leave();
	return rc;
}

struct vg_range {
	uint64_t lo, hi;
};

static bool vg_in_range(const struct vg_alloc *r, void *arg)
{
	const struct vg_range *g = arg;
	return r->key >= g->lo && r->key < g->hi;
}

/* Take the mappings that start inside [ptr, ptr+size) out of the table. Unmap ranges are normally whole mappings
 * laid end to end, so follow them by address; fall back to a scan only if there is a gap. */
static struct vg_alloc *vg_take_mappings(uint64_t ptr, uint64_t size)
{
	struct vg_alloc *list = NULL;
	uint64_t end = ptr + size < ptr ? UINT64_MAX : ptr + size;
	uint64_t at = ptr;
	while (at < end) {
		struct vg_alloc *r = vg_table_remove(&vg_maps, at);
		if (!r) {
			struct vg_range g = { at, end };
			struct vg_alloc *rest = vg_table_remove_if(&vg_maps, vg_in_range, &g);
			while (rest) {
				struct vg_alloc *n = rest->next;
				rest->next = list;
				list = rest;
				rest = n;
			}
			break;
		}
		r->next = list;
		list = r;
		if (r->bytes == 0 || at + r->bytes < at)
			break;
		at += r->bytes;
	}
	return list;
}

VG_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	VG_OPEN(cuMemUnmap, ptr, size);
	struct vg_alloc *list = vg_take_mappings(ptr, size);
	rc = VG_REAL_CALL(cuMemUnmap, ptr, size);
	while (list) {
		struct vg_alloc *mr = list;
		list = mr->next;
		if (rc != CUDA_SUCCESS) {
			if (vg_table_insert(&vg_maps, mr) != 0)
				vg_alloc_free(mr);
			continue;
		}
		struct vg_alloc *gone = NULL;
		vg_table_update(&vg_vmm, mr->aux, vg_vmm_unmap, NULL, &gone);
		if (gone)
			vg_retire(gone);
		vg_alloc_free(mr);
	}
out:
	vg_hook_leave();
	return rc;
}
