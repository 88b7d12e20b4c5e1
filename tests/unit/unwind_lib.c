/* A library test_unwind dlopens: recursion through frames of one size, calling back into the test at the bottom.
 * Built twice (libvgunw_a.so, libvgunw_b.so) with frames of 4 and 8 KiB: the code has the same layout (the
 * stack adjustment is a 32-bit immediate in both), so the return addresses of one are those of the other with
 * other frame recipes; a stale cache entry would misread the stack. */
#if defined(VGU_LIB_a)
#define VGU_FRAME 4096
#else
#define VGU_FRAME 8192
#endif

typedef int (*vgu_cb)(void *arg);

/* What test_unwind finds with dlsym. */
int vgu_lib_deep(int depth, vgu_cb cb, void *arg);
int vgu_lib_frame(void);

__attribute__((visibility("default"), noinline)) int vgu_lib_deep(int depth, vgu_cb cb, void *arg)
{
	volatile char frame[VGU_FRAME];
	__asm__ volatile("" : : "r"(frame) : "memory");        /* the whole array exists: its address escapes */
	frame[0] = (char)depth;
	frame[VGU_FRAME - 1] = 1;
	int r = depth > 0 ? vgu_lib_deep(depth - 1, cb, arg) : cb(arg);
	return r + frame[0] + frame[VGU_FRAME - 1];
}

__attribute__((visibility("default"))) int vgu_lib_frame(void)
{
	return VGU_FRAME;
}
