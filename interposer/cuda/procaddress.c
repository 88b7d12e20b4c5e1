/* cuGetProcAddress and the routing table of the CUDA hooks: every way a program obtains a driver entry point other than
 * its exported name (dlsym on libcuda's handle through route.c, cuGetProcAddress, cudaGetDriverEntryPoint through
 * cudart's cached cuGetProcAddress) lands on the one wrapper of hooks.h's row. We never re-implement the driver's
 * version rules: we ask the real lookup with the caller's exact arguments and, only if the pointer it returns is the
 * real address of an exact name we wrap, hand back that name's wrapper. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>

#include "interposer/base.h"
#include "interposer/lifecycle.h"
#include "interposer/cuda/procaddress.h"
#include "report/log.h"

/* Each hook's definition must have the exact type of its cudaTypedefs.h row. */
#define VG_X_CHECK(name, pfn, ...) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name), pfn), #name " does not match " #pfn);
VG_HOOKS(VG_X_CHECK)
#undef VG_X_CHECK

struct vg_route {
	const char *name;
	void *wrapper;
	void **real;
};

/* -Bsymbolic-functions makes &name our own definition, whatever else the process exports. (Not -Bsymbolic:
 * DT_SYMBOLIC would put this library first in its own RTLD_DEFAULT scope.) */
static const struct vg_route vg_routes[] = {
#define VG_X_ROUTE(name, ...) { #name, (void *)&name, (void **)&vg_real.name },
	VG_HOOKS(VG_X_ROUTE)
#undef VG_X_ROUTE
};

void *vg_route_wrapper_for(void *real_fn)
{
	if (!real_fn)
		return NULL;
	for (size_t i = 0; i < sizeof(vg_routes) / sizeof(vg_routes[0]); i++)
		if (*vg_routes[i].real == real_fn)
			return vg_routes[i].wrapper;
	return NULL;
}

/* ---- cuGetProcAddress ---- */

static _Atomic int vg_gpa_warned;

static bool vg_is_wrapper(const void *fn)
{
	for (size_t i = 0; i < sizeof(vg_routes) / sizeof(vg_routes[0]); i++)
		if (vg_routes[i].wrapper == fn)
			return true;
	return false;
}

/* The lookup of a base name we wrap in some version ("cuMemAlloc" for cuMemAlloc_v2) was answered with a pointer we
 * do not wrap (e.g. the legacy 32-bit cuMemAlloc for a very old cudaVersion): memory obtained through it escapes
 * the quota, so say so once. */
static void vg_gpa_check_unknown(const char *symbol, void *fn, int version, cuuint64_t flags)
{
	if (!symbol || vg_is_wrapper(fn))
		return;
	size_t n = strlen(symbol);
	for (size_t i = 0; i < sizeof(vg_routes) / sizeof(vg_routes[0]); i++) {
		const char *w = vg_routes[i].name;
		if (strncmp(w, symbol, n) != 0 || (w[n] != '\0' && w[n] != '_'))
			continue;
		if (!atomic_exchange(&vg_gpa_warned, 1))
			vg_log(VG_LOG_WARN,
			       "cuGetProcAddress(\"%s\", %d, flags %llu) returned an entry point vramguard does not wrap; "
			       "memory allocated through it is not counted against the quota",
			       symbol, version, (unsigned long long)flags);
		return;
	}
}

/* After the real lookup: hand back our wrapper when the driver's answer is an entry point we wrap. */
static void vg_gpa_substitute(CUresult rc, enum vg_mode mode, const char *symbol, void **pfn, int version,
			      cuuint64_t flags)
{
	if (rc != CUDA_SUCCESS || !pfn || !*pfn || mode == VG_MODE_PASSIVE)
		return;
	void *w = vg_route_wrapper_for(*pfn);
	if (w)
		*pfn = w;
	else
		vg_gpa_check_unknown(symbol, *pfn, version, flags);
}

VG_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
					       CUdriverProcAddressQueryResult *symbolStatus)
{
	enum vg_mode mode = vg_hook_enter();
	CUresult rc = CUDA_ERROR_NOT_FOUND;
	if (vg_real.cuGetProcAddress_v2) {
		rc = vg_real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
		vg_gpa_substitute(rc, mode, symbol, pfn, cudaVersion, flags);
	}
	vg_hook_leave();
	return rc;
}

VG_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	enum vg_mode mode = vg_hook_enter();
	CUresult rc = CUDA_ERROR_NOT_FOUND;
	if (vg_real.cuGetProcAddress) {
		rc = vg_real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
		vg_gpa_substitute(rc, mode, symbol, pfn, cudaVersion, flags);
	}
	vg_hook_leave();
	return rc;
}
