/* Unit tests for report/allocator.c: every row of the patterns on hand-made frames (no framework needed), the
 * near misses that must not match, frames with odd bytes and the longest strings, a site's precedence (entry point, then the
 * innermost frame), the history rule (only grew, churn, all freed, not known) and the caching summary. */
#include "report/allocator.h"
#include "tests/unit/unit.h"

static struct vg_report_frame native(const char *module, const char *symbol)
{
	return (struct vg_report_frame){ .module = module, .symbol = symbol };
}

static struct vg_report_pyframe py(const char *file, const char *function)
{
	return (struct vg_report_pyframe){ .file = file, .function = function };
}

static enum vg_allocator native_of(const char *module, const char *symbol)
{
	struct vg_report_frame f = native(module, symbol);
	return vg_allocator_of_frame(&f);
}

static enum vg_allocator py_of(const char *file, const char *function)
{
	struct vg_report_pyframe f = py(file, function);
	return vg_allocator_of_pyframe(&f);
}

static void test_rows(void)
{
	const char *tl = "/opt/venv/lib/python3.11/site-packages/torch/lib/";

	/* stream-ordered pools, by the entry point */
	CHECK_EQ_U64(vg_allocator_of_api("cuMemAllocAsync", 48), VG_ALLOCATOR_STREAM);
	CHECK_EQ_U64(vg_allocator_of_api("cuMemAllocAsync_ptsz", 48), VG_ALLOCATOR_STREAM);
	CHECK_EQ_U64(vg_allocator_of_api("cuMemAllocFromPoolAsync", 48), VG_ALLOCATOR_STREAM);
	CHECK_EQ_U64(vg_allocator_of_api("cuMemAllocFromPoolAsync_ptsz", 48), VG_ALLOCATOR_STREAM);
	CHECK_EQ_U64(vg_allocator_of_api("cuMemAlloc_v2", 48), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(vg_allocator_of_api("cuMemAllocAsync_v2x", 48), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(vg_allocator_of_api("cuMemAllocAsync", 10), VG_ALLOCATOR_NONE);    /* cut by its field */
	CHECK_EQ_U64(vg_allocator_of_api("cuMemFreeAsync", 48), VG_ALLOCATOR_NONE);

	/* PyTorch: the mangled namespace (as a real report has it), the demangled one, the library */
	CHECK_EQ_U64(native_of("/x/libfoo.so", "_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator11"
			       "alloc_blockERNS2_12_GLOBAL__N_111AllocParamsEb"), VG_ALLOCATOR_TORCH);
	CHECK_EQ_U64(native_of("", "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc"),
		     VG_ALLOCATOR_TORCH);
	char m[256];
	snprintf(m, sizeof(m), "%slibc10_cuda.so", tl);
	CHECK_EQ_U64(native_of(m, ""), VG_ALLOCATOR_TORCH);
	CHECK_EQ_U64(native_of("libc10_cuda.so.2.5", "x"), VG_ALLOCATOR_TORCH);
	/* near misses */
	CHECK_EQ_U64(native_of("/x/libc10.so", "c10::cuda::CUDACachingAllocatorConfig::instance"), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(native_of("/x/libc10_cuda_linalg.so", "_ZN3c104cuda21CUDACachingAllocatorX3getEv"),
		     VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(native_of("/x/libc10_cuda.so.d/libbar.so", "f"), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(native_of("/x/libc10_cuda.sox", "f"), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(native_of("/x/mylibc10_cuda.so", "f"), VG_ALLOCATOR_NONE);
	snprintf(m, sizeof(m), "%slibtorch_cuda.so", tl);
	CHECK_EQ_U64(native_of(m, "_ZN2at6native10empty_cudaEv"), VG_ALLOCATOR_NONE);

	/* CuPy: the pools' Cython functions, Python frames of cupy/cuda/memory in a pool */
	CHECK_EQ_U64(native_of("/v/cupy/cuda/memory.cpython-311-x86_64-linux-gnu.so",
			       "__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__malloc"), VG_ALLOCATOR_CUPY);
	CHECK_EQ_U64(native_of("", "__pyx_pw_4cupy_4cuda_6memory_10MemoryPool_5malloc"), VG_ALLOCATOR_CUPY);
	CHECK_EQ_U64(py_of("/v/site-packages/cupy/cuda/memory.pyx", "SingleDeviceMemoryPool.malloc"),
		     VG_ALLOCATOR_CUPY);
	CHECK_EQ_U64(py_of("cupy/cuda/memory.pyx", "MemoryPool.malloc"), VG_ALLOCATOR_CUPY);
	/* near misses: the module without a pool (set_allocator(None)), another package, another file */
	CHECK_EQ_U64(native_of("/v/cupy/cuda/memory.cpython-311-x86_64-linux-gnu.so",
			       "__pyx_f_4cupy_4cuda_6memory__malloc"), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(py_of("/v/mycupy/cuda/memory.py", "MemoryPool.malloc"), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(py_of("/v/cupy/cuda/memory_hook.py", "MemoryPool.malloc"), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(py_of("/v/cupy/cuda/memory.pyx", "_malloc"), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(py_of("/v/cupy/_core/core.pyx", "MemoryPool"), VG_ALLOCATOR_NONE);

	/* TensorFlow: its BFC allocators; XLA's tsl:: one inside TensorFlow's library */
	CHECK_EQ_U64(native_of("/x/libfoo.so", "_ZN10tensorflow15GPUBFCAllocator5AllocEmm"), VG_ALLOCATOR_TF);
	CHECK_EQ_U64(native_of("", "tensorflow::GPUBFCAllocator::Alloc"), VG_ALLOCATOR_TF);
	CHECK_EQ_U64(native_of("", "_ZN10tensorflow12BFCAllocator11AllocateRawEmm"), VG_ALLOCATOR_TF);
	CHECK_EQ_U64(native_of("", "tensorflow::BFCAllocator::Extend"), VG_ALLOCATOR_TF);
	CHECK_EQ_U64(native_of("/v/tensorflow/libtensorflow_framework.so.2", "_ZN3tsl12BFCAllocator6ExtendEmm"),
		     VG_ALLOCATOR_TF);
	CHECK_EQ_U64(native_of("/v/tensorflow/python/_pywrap_tensorflow_internal.so", "tsl::BFCAllocator::Extend"),
		     VG_ALLOCATOR_TF);
	/* near misses: TensorFlow's library without a BFC frame, another class */
	CHECK_EQ_U64(native_of("/v/tensorflow/libtensorflow_framework.so.2", "_ZN10tensorflow6Tensor4dataEv"),
		     VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(native_of("", "tensorflow::GPUBFCAllocatorOptions::x"), VG_ALLOCATOR_NONE);

	/* XLA (JAX): tsl::BFCAllocator elsewhere, jaxlib's libraries */
	CHECK_EQ_U64(native_of("/x/libfoo.so", "_ZN3tsl12BFCAllocator11AllocateRawEmmb"), VG_ALLOCATOR_XLA);
	CHECK_EQ_U64(native_of("", "tsl::BFCAllocator::AllocateRawInternal"), VG_ALLOCATOR_XLA);
	CHECK_EQ_U64(native_of("/v/site-packages/jaxlib/xla_extension.so", "??"), VG_ALLOCATOR_XLA);
	CHECK_EQ_U64(native_of("/v/jax_plugins/xla_cuda12/xla_cuda_plugin.so", ""), VG_ALLOCATOR_XLA);
	CHECK_EQ_U64(native_of("/v/site-packages/jaxlib/cuda/_solver.so", ""), VG_ALLOCATOR_XLA);
	/* near misses */
	CHECK_EQ_U64(native_of("/v/site-packages/notjaxlib/x.so", ""), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(native_of("/v/xla_extension.so.bak/libx.so", ""), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(native_of("", "tsl::BFCAllocatorStats::x"), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(native_of("", "_ZN3tsl13BFCAllocatorX1fEv"), VG_ALLOCATOR_NONE);

	/* plain frames: nothing */
	CHECK_EQ_U64(native_of("/usr/lib/x86_64-linux-gnu/libcudart.so.12", "cudaMalloc"), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(native_of("", ""), VG_ALLOCATOR_NONE);
	CHECK_EQ_U64(py_of("", ""), VG_ALLOCATOR_NONE);
}

/* Strings as long as a report keeps them (VG_REPORT_FRAME_STR less one bytes), bytes that are not UTF-8, a NUL
 * inside: read up to their NUL, and never past the length a report keeps. */
static void test_odd_bytes(void)
{
	char mod[VG_REPORT_FRAME_STR + 16], sym[VG_REPORT_FRAME_STR], file[VG_REPORT_FRAME_STR],
		fn[VG_REPORT_PY_FUNCTION_STR];
	struct vg_report_frame f = native(mod, sym);
	struct vg_report_pyframe p = py(file, fn);
	const char *lib = "/libc10_cuda.so";
	size_t n = strlen(lib), max = VG_REPORT_FRAME_STR - 1;

	memset(mod, 0xff, sizeof(mod));
	mod[max] = '\0';
	memset(sym, 0x80, max);
	sym[max] = '\0';
	CHECK_EQ_U64(vg_allocator_of_frame(&f), VG_ALLOCATOR_NONE);
	/* the library's name at the very end of a string of the longest length */
	memcpy(mod + max - n, lib, n);
	CHECK_EQ_U64(vg_allocator_of_frame(&f), VG_ALLOCATOR_TORCH);
	/* past that length nothing is read: the name just beyond it, with no NUL before, does not match */
	memset(mod, 'a', sizeof(mod));
	memcpy(mod + max - 4, lib, n);
	mod[max - 4 + n] = '\0';
	CHECK_EQ_U64(vg_allocator_of_frame(&f), VG_ALLOCATOR_NONE);
	/* a pattern cut by the string's end does not match */
	memset(mod, 'a', max);
	memcpy(mod + max - 10, "/libc10_cu", 10);
	mod[max] = '\0';
	CHECK_EQ_U64(vg_allocator_of_frame(&f), VG_ALLOCATOR_NONE);
	/* a pattern after a NUL is not read */
	f = native("/x/libfoo.so", "ab\0_ZN3c104cuda20CUDACachingAllocator3getEv");
	CHECK_EQ_U64(vg_allocator_of_frame(&f), VG_ALLOCATOR_NONE);
	/* invalid UTF-8 around a pattern: bytes are bytes */
	f = native("/x/\xc3\x28\xff/libc10_cuda.so", "\xed\xa0\x80");
	CHECK_EQ_U64(vg_allocator_of_frame(&f), VG_ALLOCATOR_TORCH);
	memset(file, 0xfe, max);
	file[max] = '\0';
	memset(fn, 'M', VG_REPORT_PY_FUNCTION_STR - 1);
	fn[VG_REPORT_PY_FUNCTION_STR - 1] = '\0';
	CHECK_EQ_U64(vg_allocator_of_pyframe(&p), VG_ALLOCATOR_NONE);
	memcpy(file, "cupy/cuda/memory.", 17);
	memcpy(fn + VG_REPORT_PY_FUNCTION_STR - 11, "MemoryPool", 10);
	CHECK_EQ_U64(vg_allocator_of_pyframe(&p), VG_ALLOCATOR_CUPY);
	/* the PATH rule: many near misses before the one at a component's start */
	p = py("xcupy/cuda/memory.xcupy/cuda/memory./cupy/cuda/memory.pyx", "MemoryPool.malloc");
	CHECK_EQ_U64(vg_allocator_of_pyframe(&p), VG_ALLOCATOR_CUPY);
	p = py("xcupy/cuda/memory.xcupy/cuda/memory.", "MemoryPool.malloc");
	CHECK_EQ_U64(vg_allocator_of_pyframe(&p), VG_ALLOCATOR_NONE);
}

static void test_site(void)
{
	struct vg_report_frame fr[4] = { native("/x/libcudart.so.12", "cudaMalloc"),
					 native("/x/libc10_cuda.so", "_ZN3c104cuda20CUDACachingAllocator3getEv"),
					 native("/x/libtensorflow_framework.so.2", "tsl::BFCAllocator::Extend"),
					 native("/x/python3.11", "main") };
	struct vg_report_pyframe pf[1] = { py("cupy/cuda/memory.pyx", "MemoryPool.malloc") };
	struct vg_report_site s = { .id = 1, .api = "cuMemAlloc_v2", .nframes = 4, .frames = fr, .npython = 1,
				    .python = pf };

	CHECK_EQ_U64(vg_allocator_of_site(&s), VG_ALLOCATOR_TORCH);     /* the innermost matching frame */
	fr[1] = native("/x/libother.so", "f");
	CHECK_EQ_U64(vg_allocator_of_site(&s), VG_ALLOCATOR_TF);
	fr[2] = native("/x/libother.so", "g");
	CHECK_EQ_U64(vg_allocator_of_site(&s), VG_ALLOCATOR_CUPY);      /* native frames first, then Python */
	s.npython = 0;
	CHECK_EQ_U64(vg_allocator_of_site(&s), VG_ALLOCATOR_NONE);
	s.python = NULL, s.npython = 1;                                 /* a count without frames: none read */
	s.frames = NULL;
	CHECK_EQ_U64(vg_allocator_of_site(&s), VG_ALLOCATOR_NONE);
	s.frames = fr;
	fr[1] = native("/x/libc10_cuda.so", "f");
	snprintf(s.api, sizeof(s.api), "cuMemAllocAsync");              /* the entry point before the frames */
	CHECK_EQ_U64(vg_allocator_of_site(&s), VG_ALLOCATOR_STREAM);
	CHECK(vg_allocator_info(VG_ALLOCATOR_TORCH)->caches);
	CHECK(!vg_allocator_info(VG_ALLOCATOR_STREAM)->caches);
	CHECK(!vg_allocator_info(VG_ALLOCATOR_NONE)->caches);
	CHECK_STR(vg_allocator_info(VG_ALLOCATOR_COUNT)->name, "");     /* out of range: NONE's */
	CHECK_STR(vg_allocator_info(VG_ALLOCATOR_CUPY)->name, "CuPy's memory pool");
}

static void test_history(void)
{
	struct vg_report_site s = { 0 };
	s.live_count = 48, s.total_allocs = 48;
	CHECK_EQ_U64(vg_site_history(&s), VG_SITE_ONLY_GREW);
	s.live_count = 12, s.total_allocs = 4812;
	CHECK_EQ_U64(vg_site_history(&s), VG_SITE_CHURN);
	s.live_count = 0;
	CHECK_EQ_U64(vg_site_history(&s), VG_SITE_ALL_FREED);
	s.live_count = 1, s.total_allocs = 0;                   /* no totals: a hand-written or damaged report */
	CHECK_EQ_U64(vg_site_history(&s), VG_SITE_UNKNOWN);
	s.live_count = 5, s.total_allocs = 4;                   /* fewer made than held: cannot say */
	CHECK_EQ_U64(vg_site_history(&s), VG_SITE_UNKNOWN);
	s.live_count = 0, s.total_allocs = 0;
	CHECK_EQ_U64(vg_site_history(&s), VG_SITE_UNKNOWN);
	s.live_count = UINT64_MAX, s.total_allocs = UINT64_MAX;
	CHECK_EQ_U64(vg_site_history(&s), VG_SITE_ONLY_GREW);
}

static void test_summary(void)
{
	struct vg_report_frame torch[1] = { native("/x/libc10_cuda.so", "") };
	struct vg_report_frame cupy[1] = { native("", "__pyx_pw_4cupy_4cuda_6memory_10MemoryPool_5malloc") };
	struct vg_report_frame plain[1] = { native("/x/leaky", "leak_buffers") };
	struct vg_report_site sites[3] = {
		{ .id = 1, .api = "cuMemAlloc_v2", .nframes = 1, .frames = torch, .live_count = 2, .live_bytes = 100 },
		{ .id = 2, .api = "cuMemAlloc_v2", .nframes = 1, .frames = plain, .live_count = 0, .live_bytes = 0 },
		{ .id = 3, .api = "cuMemAlloc_v2", .nframes = 1, .frames = torch, .live_count = 1, .live_bytes = 50 },
	};
	struct vg_report r = { .nsites = 3, .sites = sites };
	struct vg_allocator_summary sum;

	vg_allocator_summary(&r, &sum);         /* a freed plain site does not count */
	CHECK(sum.all);
	CHECK_EQ_U64(sum.only, VG_ALLOCATOR_TORCH);
	CHECK_EQ_U64(sum.bytes, 150);
	sites[2].frames = cupy;
	vg_allocator_summary(&r, &sum);
	CHECK(sum.all);
	CHECK_EQ_U64(sum.only, VG_ALLOCATOR_NONE);      /* two allocators */
	sites[1].live_count = 1, sites[1].live_bytes = 1;
	vg_allocator_summary(&r, &sum);
	CHECK(!sum.all);
	sites[1].frames = torch;
	snprintf(sites[1].api, sizeof(sites[1].api), "cuMemAllocAsync");       /* a stream-ordered pool: not a cache */
	vg_allocator_summary(&r, &sum);
	CHECK(!sum.all);
	r.nsites = 0;
	vg_allocator_summary(&r, &sum);
	CHECK(!sum.all);
}

int main(void)
{
	test_rows();
	test_odd_bytes();
	test_site();
	test_history();
	test_summary();
	return UNIT_DONE();
}
