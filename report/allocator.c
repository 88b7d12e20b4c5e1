/* Which framework's allocator a call site comes from, by one table of patterns on its entry point and frames, and
 * what happened to its allocations (report/allocator.h). Reports are input: every string is read within its
 * field, and bytes that are not UTF-8 or a missing NUL only fail to match. */
#define _GNU_SOURCE
#include "report/allocator.h"

#include <string.h>

/* How a row's pattern is matched against a string: not at all (ANY), the whole string (EXACT), anywhere in it
 * (SUB), as the file name of a path, with or without a version after it (LIB: "libc10_cuda.so" matches
 * ".../libc10_cuda.so" and "libc10_cuda.so.2", not "libc10_cuda_x.so"), or at the start of one of its path
 * components (PATH: "cupy/cuda/memory." matches ".../site-packages/cupy/cuda/memory.pyx", not "mycupy/...").
 * Where a row is on: the site's entry point (API: the name), a native frame (NATIVE: the file is the module's
 * path, the name the symbol, as the JSON keeps it: mangled) or a Python frame (PYTHON: co_filename, function). */
enum vg_am { VG_AM_ANY, VG_AM_EXACT, VG_AM_SUB, VG_AM_LIB, VG_AM_PATH };
enum vg_on { VG_ON_API, VG_ON_NATIVE, VG_ON_PYTHON };

/* The patterns, one row each: the allocator, where, then the file's and the name's match (both must hold). Within
 * a frame the first matching row wins; a site is its entry point's row, else its innermost matching frame's. */
#define VG_ALLOCATOR_PATTERNS(X)                                                                                      \
	/* Stream-ordered pools, by the entry point (cudaMallocAsync, cudaMallocFromPoolAsync and the frameworks'   \
	 * async backends reach these): the users' own frees are seen, so this comes before the frameworks. */     \
	X(STREAM, API, ANY, NULL, EXACT, "cuMemAllocAsync")                                                           \
	X(STREAM, API, ANY, NULL, EXACT, "cuMemAllocAsync_ptsz")                                                      \
	X(STREAM, API, ANY, NULL, EXACT, "cuMemAllocFromPoolAsync")                                                   \
	X(STREAM, API, ANY, NULL, EXACT, "cuMemAllocFromPoolAsync_ptsz")                                              \
	/* PyTorch: c10's CUDACachingAllocator namespace (mangled, or demangled by a tool), or c10's CUDA library. */ \
	X(TORCH, NATIVE, ANY, NULL, SUB, "N3c104cuda20CUDACachingAllocator")                                          \
	X(TORCH, NATIVE, ANY, NULL, SUB, "c10::cuda::CUDACachingAllocator::")                                         \
	X(TORCH, NATIVE, LIB, "libc10_cuda.so", ANY, NULL)                                                            \
	/* CuPy: its pools' methods as Cython compiles cupy/cuda/memory.pyx, or Python frames of that file. */        \
	X(CUPY, NATIVE, ANY, NULL, SUB, "_4cupy_4cuda_6memory_22SingleDeviceMemoryPool")                              \
	X(CUPY, NATIVE, ANY, NULL, SUB, "_4cupy_4cuda_6memory_10MemoryPool")                                          \
	X(CUPY, PYTHON, PATH, "cupy/cuda/memory.", SUB, "MemoryPool")                                                 \
	/* TensorFlow: its BFC allocators, or XLA's (tsl::) inside TensorFlow's own libraries. Before XLA's rows. */  \
	X(TF, NATIVE, ANY, NULL, SUB, "N10tensorflow15GPUBFCAllocator")                                               \
	X(TF, NATIVE, ANY, NULL, SUB, "tensorflow::GPUBFCAllocator::")                                                \
	X(TF, NATIVE, ANY, NULL, SUB, "N10tensorflow12BFCAllocator")                                                  \
	X(TF, NATIVE, ANY, NULL, SUB, "tensorflow::BFCAllocator::")                                                   \
	X(TF, NATIVE, LIB, "libtensorflow_framework.so", SUB, "BFCAllocator")                                         \
	X(TF, NATIVE, LIB, "_pywrap_tensorflow_internal.so", SUB, "BFCAllocator")                                     \
	/* XLA (JAX): tsl::BFCAllocator, or jaxlib's libraries (which hide most of their symbols). */                  \
	X(XLA, NATIVE, ANY, NULL, SUB, "N3tsl12BFCAllocator")                                                         \
	X(XLA, NATIVE, ANY, NULL, SUB, "tsl::BFCAllocator::")                                                         \
	X(XLA, NATIVE, LIB, "xla_extension.so", ANY, NULL)                                                            \
	X(XLA, NATIVE, LIB, "xla_cuda_plugin.so", ANY, NULL)                                                          \
	X(XLA, NATIVE, PATH, "jaxlib/", ANY, NULL)

struct vg_allocator_pattern {
	enum vg_allocator allocator;
	enum vg_on on;
	enum vg_am file_how;
	const char *file;
	enum vg_am name_how;
	const char *name;
};

static const struct vg_allocator_pattern vg_allocator_patterns[] = {
#define VG_ALLOCATOR_ROW(a, on, fh, f, nh, n) { VG_ALLOCATOR_##a, VG_ON_##on, VG_AM_##fh, f, VG_AM_##nh, n },
	VG_ALLOCATOR_PATTERNS(VG_ALLOCATOR_ROW)
#undef VG_ALLOCATOR_ROW
};

static const struct vg_allocator_info vg_allocator_infos[VG_ALLOCATOR_COUNT] = {
#define VG_ALLOCATOR_INFO(id, name, label, caches) [VG_ALLOCATOR_##id] = { name, label, caches },
	VG_ALLOCATORS(VG_ALLOCATOR_INFO)
#undef VG_ALLOCATOR_INFO
};

const struct vg_allocator_info *vg_allocator_info(enum vg_allocator a)
{
	return &vg_allocator_infos[(unsigned)a < VG_ALLOCATOR_COUNT ? a : VG_ALLOCATOR_NONE];
}

/* s[0..n) against pat by how. */
static bool vg_am_match(enum vg_am how, const char *pat, const char *s, size_t n)
{
	size_t pl = pat ? strlen(pat) : 0;
	const char *p;

	switch (how) {
	case VG_AM_ANY:
		return true;
	case VG_AM_EXACT:
		return n == pl && memcmp(s, pat, n) == 0;
	case VG_AM_SUB:
		return pl <= n && memmem(s, n, pat, pl) != NULL;
	case VG_AM_LIB:
		p = memrchr(s, '/', n);
		if (p) {
			n -= (size_t)(p + 1 - s);
			s = p + 1;
		}
		return n >= pl && memcmp(s, pat, pl) == 0 && (n == pl || s[pl] == '.');
	case VG_AM_PATH:
		for (p = s; pl <= n - (size_t)(p - s) && (p = memmem(p, n - (size_t)(p - s), pat, pl)) != NULL; p++)
			if (p == s || p[-1] == '/')
				return true;
		return false;
	}
	return false;
}

/* The first row on `on` whose file and name match; the strings are bounded by their lengths. */
static enum vg_allocator vg_allocator_match(enum vg_on on, const char *file, size_t nfile, const char *name,
					    size_t nname)
{
	size_t i;
	for (i = 0; i < sizeof(vg_allocator_patterns) / sizeof(vg_allocator_patterns[0]); i++) {
		const struct vg_allocator_pattern *p = &vg_allocator_patterns[i];
		if (p->on == on && vg_am_match(p->file_how, p->file, file, nfile) &&
		    vg_am_match(p->name_how, p->name, name, nname))
			return p->allocator;
	}
	return VG_ALLOCATOR_NONE;
}

/* The only places that read a frame's strings, each within the length a report keeps (report/report.h). */
enum vg_allocator vg_allocator_of_frame(const struct vg_report_frame *f)
{
	return vg_allocator_match(VG_ON_NATIVE, f->module, strnlen(f->module, VG_REPORT_FRAME_STR), f->symbol,
				  strnlen(f->symbol, VG_REPORT_FRAME_STR));
}

enum vg_allocator vg_allocator_of_pyframe(const struct vg_report_pyframe *f)
{
	return vg_allocator_match(VG_ON_PYTHON, f->file, strnlen(f->file, VG_REPORT_FRAME_STR), f->function,
				  strnlen(f->function, VG_REPORT_PY_FUNCTION_STR));
}

enum vg_allocator vg_allocator_of_api(const char *api, size_t max)
{
	return vg_allocator_match(VG_ON_API, "", 0, api, strnlen(api, max));
}

enum vg_allocator vg_allocator_of_site(const struct vg_report_site *s)
{
	enum vg_allocator a = vg_allocator_of_api(s->api, sizeof(s->api));
	size_t i, n = s->frames ? s->nframes : 0, np = s->python ? s->npython : 0;

	for (i = 0; a == VG_ALLOCATOR_NONE && i < n; i++)
		a = vg_allocator_of_frame(&s->frames[i]);
	for (i = 0; a == VG_ALLOCATOR_NONE && i < np; i++)
		a = vg_allocator_of_pyframe(&s->python[i]);
	return a;
}

enum vg_site_history vg_site_history(const struct vg_report_site *s)
{
	if (s->total_allocs == 0 || s->total_allocs < s->live_count)
		return VG_SITE_UNKNOWN;
	if (s->live_count == 0)
		return VG_SITE_ALL_FREED;
	return s->total_allocs == s->live_count ? VG_SITE_ONLY_GREW : VG_SITE_CHURN;
}

void vg_allocator_summary(const struct vg_report *r, struct vg_allocator_summary *out)
{
	size_t i;
	int first = 1;

	*out = (struct vg_allocator_summary){ false, VG_ALLOCATOR_NONE, 0 };
	for (i = 0; r->sites && i < r->nsites; i++) {
		const struct vg_report_site *s = &r->sites[i];
		enum vg_allocator a;
		if (s->live_count == 0 && s->live_bytes == 0)
			continue;
		a = vg_allocator_of_site(s);
		if (!vg_allocator_info(a)->caches) {
			out->bytes = 0;
			out->only = VG_ALLOCATOR_NONE;
			return;
		}
		out->only = first || out->only == a ? a : VG_ALLOCATOR_NONE;
		out->bytes += s->live_bytes;
		first = 0;
	}
	out->all = !first;
}
