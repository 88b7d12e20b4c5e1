/* The one opening every CUDA hook has, generated from its row in hooks.h (the policy), and the files a hook calls.
 * A hook file (cuda/hook_*.c) includes this header, and device.h, shared.h, devmem.h, reporter.h or tables.h for
 * what else it calls. */
#ifndef VG_CUDA_HOOK_H
#define VG_CUDA_HOOK_H

#include <stdbool.h>

#include "interposer/base.h"
#include "interposer/charge.h"
#include "interposer/lifecycle.h"

/* True when a call made under mode m must fail closed: the configuration is invalid and the hook's row says
 * VG_CLOSED. Folded to a constant comparison for a constant id. */
static inline bool vg_fails_closed(enum vg_mode m, int id)
{
	return m == VG_MODE_BADCONFIG && vg_hook_policies[id] == VG_CLOSED;
}

/* The opening of a hook, from its row in hooks.h: declares rc and vg_m (the mode); when vramguard is not active in this call (a
 * nested call, another owner, no driver, invalid configuration) it answers from the policy (real_call, or
 * CUDA_ERROR_NOT_PERMITTED for a VG_CLOSED row under invalid configuration) and jumps to the hook's `out:`, which
 * must call vg_hook_leave(). VG_OPEN_AS serves helpers that implement several rows (pass that row's id and its
 * real call). */
#define VG_OPEN_AS(id, real_call)                                                                           \
	CUresult rc;                                                                                         \
	enum vg_mode vg_m = vg_hook_enter();                                                                 \
	if (VG_UNLIKELY(vg_m != VG_MODE_ACTIVE)) {                                                           \
		rc = vg_fails_closed(vg_m, (id)) ? CUDA_ERROR_NOT_PERMITTED : (real_call);                     \
		goto out;                                                                                    \
	}
#define VG_OPEN(name, ...) VG_OPEN_AS(VG_HOOK_##name, VG_REAL_CALL(name, __VA_ARGS__))
/* Two rows served by one helper, name and name##suffix (cuCtxDestroy / _v2, cuMemFreeAsync / _ptsz): the real call
 * of the one alt picks, and the opening for it. */
#define VG_REAL_EITHER(alt, name, suffix, ...)                                                               \
	((alt) ? VG_REAL_CALL(name##suffix, __VA_ARGS__) : VG_REAL_CALL(name, __VA_ARGS__))
#define VG_OPEN_EITHER(alt, name, suffix, ...)                                                               \
	VG_OPEN_AS((alt) ? VG_HOOK_##name##suffix : VG_HOOK_##name, VG_REAL_EITHER(alt, name, suffix, __VA_ARGS__))

#endif
