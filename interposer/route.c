/* Routing by name: our dlsym (dlsym.S calls vg_dlsym_route) and dlclose. A lookup on a handle of libcuda or of NVML
 * that lands on an entry point we wrap gets our wrapper (cuda/procaddress.c's table for CUDA, nvml/nvml_hooks.c's for
 * NVML); every other lookup is glibc's, as if we were not there. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "accounting/unwind.h"
#include "interposer/base.h"
#include "interposer/cuda/procaddress.h"
#include "interposer/nvml/nvml.h"

/* ---- dlsym ---- */

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

