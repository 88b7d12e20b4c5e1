/* A program that looks like CPython to vramguard (tests/sections/python.sh): it exports the symbols
 * accounting/pyframes.c looks up and builds one thread state and frame by hand in 3.11's layout, then allocates.
 * The modes check what the library does with each kind of interpreter it may meet, without crashing:
 *   good      a well-formed frame: the site names fake.py:12 in fake_fn
 *   notinit   Py_IsInitialized() is 0 (start-up, after finalization): no Python frames
 *   finalizing  Py_IsFinalizing() is 1: no Python frames
 *   badstr    the code's file name is not a str: frames off with one info line, native frames kept
 *   debug     the object header is not the standard one (type objects' ob_type not at offset 8): one info line
 *   v313ft    3.13 whose _PyRuntime says free-threaded: one info line
 *   v313bad   3.13 whose _PyRuntime publishes other offsets: one info line
 *   v38       3.8 (Py_GetVersion only): one info line */
#define _GNU_SOURCE
#include <string.h>

#include "tests/integration/itest.h"

#define VG_EXPORT __attribute__((visibility("default"), used))

/* Objects as arrays of words, aligned like Python's. */
VG_EXPORT uint64_t PyType_Type[64], PyCode_Type[64], PyUnicode_Type[64], PyBytes_Type[64];
VG_EXPORT unsigned long Py_Version = 0x030b07f0;
VG_EXPORT unsigned char _PyRuntime[4096] __attribute__((aligned(64)));
static uint64_t tstate[32], cframe[4], frame[16], code[64], fname[16], qname[16], badobj[8], linetable[8];
static int initialized = 1, finalizing;
static const char *version = "3.11.7 (fake)";

VG_EXPORT int Py_IsInitialized(void);
VG_EXPORT int Py_IsInitialized(void)
{
	return initialized;
}

VG_EXPORT int _Py_IsFinalizing(void);
VG_EXPORT int _Py_IsFinalizing(void)
{
	return finalizing;
}

VG_EXPORT const char *Py_GetVersion(void);
VG_EXPORT const char *Py_GetVersion(void)
{
	return version;
}

VG_EXPORT void *PyGILState_GetThisThreadState(void);
VG_EXPORT void *PyGILState_GetThisThreadState(void)
{
	return tstate;
}

/* A compact ASCII str (3.11: PyASCIIObject is 48 bytes, the text follows). */
static void mkstr(uint64_t *o, const char *text)
{
	o[1] = (uint64_t)(uintptr_t)PyUnicode_Type;
	o[2] = strlen(text);
	o[4] = (1u << 2) | (1u << 5) | (1u << 6);       /* kind 1, compact, ascii */
	memcpy((char *)o + 48, text, strlen(text) + 1);
}

static void build(void)
{
	PyType_Type[1] = PyCode_Type[1] = PyUnicode_Type[1] = PyBytes_Type[1] = (uint64_t)(uintptr_t)PyType_Type;
	tstate[56 / 8] = (uint64_t)(uintptr_t)cframe;   /* 3.11: tstate->cframe->current_frame */
	cframe[8 / 8] = (uint64_t)(uintptr_t)frame;
	frame[32 / 8] = (uint64_t)(uintptr_t)code;      /* f_code; previous (48) stays NULL */
	frame[56 / 8] = (uint64_t)(uintptr_t)((char *)code + 184 + 4);  /* prev_instr: byte offset 4 */
	code[1] = (uint64_t)(uintptr_t)PyCode_Type;
	code[72 / 8] = 10;                              /* co_firstlineno (an int at 72) */
	mkstr(fname, "fake.py");
	mkstr(qname, "fake_fn");
	code[112 / 8] = (uint64_t)(uintptr_t)fname;
	code[120 / 8] = code[128 / 8] = (uint64_t)(uintptr_t)qname;
	/* co_linetable: one entry, "no columns" form (13), 8 code units, line delta +2 (svarint 4) */
	linetable[1] = (uint64_t)(uintptr_t)PyBytes_Type;
	linetable[2] = 2;
	((uint8_t *)linetable)[32] = 0x80 | (13 << 3) | 7;
	((uint8_t *)linetable)[33] = 4;
	code[136 / 8] = (uint64_t)(uintptr_t)linetable;
	badobj[1] = (uint64_t)(uintptr_t)PyBytes_Type;
}

/* 3.13's _Py_DebugOffsets at the start of _PyRuntime: the cookie, the version, free_threaded. */
static void runtime313(int free_threaded, int offsets_ok)
{
	uint64_t v[64] = { 0 };
	static const int chk[][2] = { { 184, 72 }, { 232, 8 }, { 240, 0 }, { 248, 56 }, { 264, 70 }, { 280, 112 },
				      { 288, 120 }, { 296, 128 }, { 304, 136 }, { 312, 68 }, { 344, 200 }, { 360, 8 } };
	memcpy(v, "xdebugpy", 8);
	v[1] = 0x030d00f0;
	v[2] = (uint64_t)free_threaded;
	for (size_t i = 0; i < sizeof(chk) / sizeof(chk[0]); i++)
		v[chk[i][0] / 8] = (uint64_t)chk[i][1] + (offsets_ok ? 0 : 8);
	memcpy(_PyRuntime, v, sizeof(v));
	Py_Version = 0x030d00f0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "good";
	build();
	if (!strcmp(mode, "notinit"))
		initialized = 0;
	else if (!strcmp(mode, "finalizing"))
		finalizing = 1;
	else if (!strcmp(mode, "badstr"))
		code[112 / 8] = (uint64_t)(uintptr_t)badobj;
	else if (!strcmp(mode, "debug"))
		PyCode_Type[1] = 0;
	else if (!strcmp(mode, "v313ft"))
		runtime313(1, 1);
	else if (!strcmp(mode, "v313bad"))
		runtime313(0, 0);
	else if (!strcmp(mode, "v38")) {
		Py_Version = 0;
		version = "3.8.18 (fake)";
	}
	CUcontext c;
	CUdeviceptr p, q;
	IT_RC(cuInit(0), CUDA_SUCCESS);
	IT_RC(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS);
	IT_RC(cuCtxSetCurrent(c), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&p, 8 * MiB), CUDA_SUCCESS);
	IT_RC(cuMemAlloc_v2(&q, 8 * MiB), CUDA_SUCCESS);  /* the same site again (after badstr: capture is off) */
	return it_failed;
}
