/* Routing: every way a program can obtain a driver entry point (exported name, dlsym on libcuda's handle,
 * cuGetProcAddress, cudaGetDriverEntryPoint through cudart's cached cuGetProcAddress) lands on one wrapper; so does
 * every way to an NVML function we wrap (exported name, dlsym on NVML's handle: interposer/nvml_hooks.c).
 * We never re-implement the driver's version rules: we ask the real lookup with the caller's exact arguments and,
 * only if the pointer it returns is the real address of an exact name we wrap, hand back that name's wrapper. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "accounting/unwind.h"
#include "interposer/init.h"
#include "interposer/nvml.h"
#include "interposer/route.h"
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

/* ---- dlsym ---- */

VG_HIDDEN void *(*vg_real_dlsym)(void *, const char *);

VG_HIDDEN VG_NO_SANITIZE void *(*vg_resolve_real_dlsym(void))(void *, const char *)
{
	void *(*f)(void *, const char *) = __atomic_load_n(&vg_real_dlsym, __ATOMIC_ACQUIRE);
	if (VG_LIKELY(f != NULL))
		return f;
	/* dlsym@@GLIBC_2.34 and dlsym@GLIBC_2.2.5 are the same function; older glibc has only the latter. */
	f = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!f)
		f = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	if (f)
		__atomic_store_n(&vg_real_dlsym, f, __ATOMIC_RELEASE);
	return f;
}

struct vg_dlsym_result {
	void *ptr;
	uintptr_t handled;
};

/* Called by the dlsym stub (dlsym.S) with the caller's arguments. No nonnull attribute here: name may be NULL. */
VG_HIDDEN struct vg_dlsym_result vg_dlsym_route(void *handle, const char *name);

VG_NO_SANITIZE struct vg_dlsym_result vg_dlsym_route(void *handle, const char *name)
{
	struct vg_dlsym_result r = { NULL, 0 };
	void *(*real)(void *, const char *) = vg_resolve_real_dlsym();
	if (VG_UNLIKELY(!real)) {
		r.handled = 1;          /* cannot happen with glibc; never jump to NULL */
		return r;
	}
	/* Fast path for every lookup that is neither CUDA's nor NVML's, and for the pseudo-handles: RTLD_NEXT must stay
	 * the caller's, and RTLD_DEFAULT already finds our exports first. */
	if (!name || (name[0] != 'c' && name[0] != 'n') || handle == RTLD_NEXT || handle == RTLD_DEFAULT)
		return r;
	if (name[0] == 'c') {
		if (name[1] != 'u')
			return r;
		r.handled = 1;
		r.ptr = real(handle, name);
		if (r.ptr && vg_real_resolve(true)) {
			void *w = vg_route_wrapper_for(r.ptr);
			if (w)
				r.ptr = w;
		}
		return r;
	}
	/* nvidia-smi dlopens NVML and looks up every function on its handle; so do ctypes-based bindings. */
	if (name[1] != 'v' || name[2] != 'm' || name[3] != 'l')
		return r;
	r.handled = 1;
	r.ptr = real(handle, name);
	if (r.ptr) {
		void *w = vg_nvml_route_wrapper_for(r.ptr);
		if (w)
			r.ptr = w;
	}
	return r;
}

/* ---- dlclose ----
 * Exported so that the call-site unwinder hears of code being unmapped: it caches frame recipes by return address,
 * and a library loaded later at the same addresses has other frames (accounting/unwind.c). Not caller-sensitive, so
 * an ordinary call forwards it. */

static int (*_Atomic vg_real_dlclose)(void *);

VG_EXPORT int dlclose(void *handle)
{
	int (*real)(void *) = atomic_load_explicit(&vg_real_dlclose, memory_order_acquire);
	if (VG_UNLIKELY(!real)) {
		void *(*real_dlsym)(void *, const char *) = vg_resolve_real_dlsym();
		/* Asked from here, RTLD_NEXT means the definition after vramguard's: libc's (or the next preload's). */
		real = real_dlsym ? (int (*)(void *))real_dlsym(RTLD_NEXT, "dlclose") : NULL;
		if (!real)
			return -1;      /* cannot happen with glibc */
		atomic_store_explicit(&vg_real_dlclose, real, memory_order_release);
	}
	vg_unwind_dlclose_begin();
	int rc = real(handle);
	vg_unwind_dlclose_end();
	return rc;
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
