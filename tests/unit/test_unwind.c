/* Unit tests for accounting/unwind.c: the cached unwinder must answer exactly what libgcc's _Unwind_Backtrace
 * answers, frame by frame, on stacks of many shapes (no frame pointers, alloca and VLAs, callee-saved registers,
 * frames of 6 and 20 KiB, a forced frame pointer, stack realignment, hand-written CFI), through libc (qsort,
 * bsearch), through a dlopened library and its replacement at the same address, from threads and from a signal
 * handler; it must hit its cache, give way to libgcc where it cannot describe a frame, and forget what dlclose
 * unmapped.
 *
 * A stack is described by a pattern, one letter a frame, innermost last; at its end probe() compares. unwind.c is
 * in libvgunwind.so, whose frames are skipped by address range as vramguard's are in production. */
#define _GNU_SOURCE
#include <alloca.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "accounting/sites.h"
#include "accounting/unwind.h"
#include "tests/unit/unit.h"

#define MAXF 256
#if defined(__clang__)
#define NOINL __attribute__((noinline))
#define WITH_FRAME_POINTER              /* clang has no optimize attribute: shape_fp is then an ordinary frame */
#else
#define NOINL __attribute__((noinline, noclone))
#define WITH_FRAME_POINTER __attribute__((optimize("no-omit-frame-pointer")))
#endif

static uintptr_t skip_lo, skip_hi;     /* libvgunwind.so */

typedef int (*capture_fn)(void **, int, uintptr_t, uintptr_t);

struct pair {
	int n[2];
	void *f[2][MAXF];
};

/* Both captures from one call site, so that they see the same frames: a loop the compiler cannot unroll or peel
 * (its count and its table are opaque to it). */
struct call {
	capture_fn fn;
	void **buf;
	int *n;
};
static volatile int two = 2;
static NOINL void capture_pair(struct pair *p, capture_fn a, capture_fn b, int max)
{
	struct call calls[2] = { { a, p->f[0], &p->n[0] }, { b, p->f[1], &p->n[1] } };
	struct call *volatile table = calls;
	struct call *c = table;
	for (int i = 0, n = two; i < n; i++)
		*c[i].n = c[i].fn(c[i].buf, max, skip_lo, skip_hi);
}

static int pair_equal(const struct pair *p)
{
	return p->n[0] == p->n[1] && p->n[0] >= 0 && memcmp(p->f[0], p->f[1], (size_t)p->n[0] * sizeof(void *)) == 0;
}

static void pair_print(const struct pair *p, const char *what)
{
	fprintf(stderr, "%s: %d vs %d frames\n", what, p->n[0], p->n[1]);
	for (int i = 0; i < MAXF && (i < p->n[0] || i < p->n[1]); i++) {
		for (int k = 0; k < 2; k++) {
			Dl_info di;
			void *a = i < p->n[k] ? p->f[k][i] : NULL;
			const char *s = a && dladdr(a, &di) && di.dli_sname ? di.dli_sname : "?";
			fprintf(stderr, "  %c %2d %p %-28s", k ? ' ' : (i < p->n[0] && i < p->n[1] &&
							  p->f[0][i] == p->f[1][i] ? ' ' : '*'), i, a, s);
		}
		fputc('\n', stderr);
	}
}

/* What one probe found. */
struct probe {
	const char *pattern;
	int fast_n, libgcc_n;
	int fast_equal;         /* vg_unwind_fast answered and equals libgcc */
	int capture_equal;      /* vg_unwind_capture equals libgcc, at full and truncated depths */
	void *frames[MAXF];     /* libgcc's */
};

static int probe_quiet;

static NOINL int probe(void *arg)
{
	struct probe *pr = arg;
	static const int depths[] = { 1, 2, 3, 5, 8, 16, 64, MAXF };
	static volatile int ndepths = sizeof(depths) / sizeof(depths[0]);
	struct pair p;

	capture_pair(&p, vg_unwind_fast, vg_unwind_libgcc, MAXF);
	pr->fast_n = p.n[0];
	pr->libgcc_n = p.n[1];
	pr->fast_equal = pair_equal(&p);
	memcpy(pr->frames, p.f[1], sizeof(pr->frames));
	if (p.n[0] >= 0 && !pr->fast_equal && !probe_quiet)
		pair_print(&p, pr->pattern);
	pr->capture_equal = 1;
#pragma GCC unroll 1
	for (int i = 0; i < ndepths; i++) {
		capture_pair(&p, vg_unwind_capture, vg_unwind_libgcc, depths[i]);
		if (!pair_equal(&p)) {
			if (!probe_quiet)
				pair_print(&p, pr->pattern);
			pr->capture_equal = 0;
		}
	}
	return 1;
}

/* ---- frames of many shapes; each continues the pattern and uses its own state after the call ---- */

static int step(const char *pat, void *arg);

static NOINL int shape_plain(const char *pat, void *arg)
{
	return step(pat + 1, arg) + 1;
}

/* Six values live across the call: every callee-saved register is pushed, rbp among them. */
static NOINL int shape_regs(const char *pat, void *arg)
{
	static volatile int v[6] = { 1, 2, 3, 4, 5, 6 };
	int a = v[0], b = v[1], c = v[2], d = v[3], e = v[4], f = v[5];
	int r = step(pat + 1, arg);
	return r + a * b + c * d + e * f + (a ^ f) * (b ^ e) + (c | d);
}

static NOINL int shape_alloca(const char *pat, void *arg)
{
	size_t n = 16 + (size_t)(pat[1] & 7) * 24;
	char *p = alloca(n);
	memset(p, pat[0], n);
	int r = step(pat + 1, arg);
	return r + p[n - 1];
}

static NOINL int shape_vla(const char *pat, void *arg)
{
	int n = 3 + (pat[1] & 15);
	volatile long a[n];
	for (int i = 0; i < n; i++)
		a[i] = i;
	int r = step(pat + 1, arg);
	return r + (int)a[n - 1];
}

/* The whole array must exist: its address escapes (clang shrinks a volatile array it can see through). */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

static NOINL int shape_big(const char *pat, void *arg)
{
	volatile char b[6000];
	ESCAPE(b);
	b[0] = 1;
	b[5999] = 2;
	int r = step(pat + 1, arg);
	return r + b[0] + b[5999];
}

/* CFA offset beyond what a cache entry holds (16 KiB): opaque, libgcc answers. */
static NOINL int shape_huge(const char *pat, void *arg)
{
	volatile char b[20000];
	ESCAPE(b);
	b[0] = 1;
	b[19999] = 2;
	int r = step(pat + 1, arg);
	return r + b[0] + b[19999];
}

static NOINL WITH_FRAME_POINTER int shape_fp(const char *pat, void *arg)
{
	volatile int x = 3;
	int r = step(pat + 1, arg);
	return r + x;
}

static NOINL int shape_align(const char *pat, void *arg)
{
	volatile char b[64] __attribute__((aligned(64)));
	b[0] = 1;
	int r = step(pat + 1, arg);
	return r + b[0] + (int)((uintptr_t)b & 63);
}

/* Through libc: the comparator continues the pattern (once). */
struct cb_ctx {
	const char *pat;
	void *arg;
	int done, r;
};
static __thread struct cb_ctx *cb_now;

static int cb_cmp(const void *x, const void *y)
{
	struct cb_ctx *c = cb_now;
	if (c && !c->done) {
		c->done = 1;
		cb_now = NULL;
		c->r = step(c->pat, c->arg);
	}
	return *(const int *)x - *(const int *)y;
}

static NOINL int shape_qsort(const char *pat, void *arg)
{
	int v[16];
	struct cb_ctx c = { pat + 1, arg, 0, 0 }, *saved = cb_now;
	for (int i = 0; i < 16; i++)
		v[i] = 16 - i;
	cb_now = &c;
	qsort(v, 16, sizeof(int), cb_cmp);
	cb_now = saved;
	return c.r + v[0];
}

/* bsearch through a pointer: <stdlib.h> would inline it when optimizing. */
static void *(*volatile libc_bsearch)(const void *, const void *, size_t, size_t, __compar_fn_t) = bsearch;
static NOINL int shape_bsearch(const char *pat, void *arg)
{
	static const int v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	int key = 6;
	struct cb_ctx c = { pat + 1, arg, 0, 0 }, *saved = cb_now;
	cb_now = &c;
	const int *hit = libc_bsearch(&key, v, 8, sizeof(int), cb_cmp);
	cb_now = saved;
	return c.r + (hit ? *hit : 0);
}

/* Through the dlopened library (libvgunw_a.so or _b.so): three of its frames. */
static int (*volatile lib_deep)(int depth, int (*cb)(void *), void *arg);
struct lib_ctx {
	const char *pat;
	void *arg;
};

static int lib_cb(void *p)
{
	struct lib_ctx *c = p;
	return step(c->pat, c->arg);
}

static NOINL int shape_lib(const char *pat, void *arg)
{
	struct lib_ctx c = { pat + 1, arg };
	return lib_deep(2, lib_cb, &c) + 1;
}

#if defined(__x86_64__)
/* Frames with hand-written CFI, each calling fn(arg): rules compilers emit rarely or never, which the cached walk
 * must read as libgcc does or leave to it. */
int tramp_rs(int (*fn)(void *), void *arg);     /* rbp frame, remember/restore_state, advance_loc2: cached */
int tramp_end(int (*fn)(void *), void *arg);    /* return address undefined: the stack ends here; cached */
int tramp_ra(int (*fn)(void *), void *arg);     /* a row starting at the return address (as after a noreturn
						 * call): the call's row (ra - 1) is the one; cached */
int tramp_sig(int (*fn)(void *), void *arg);    /* signal frame ('S'): opaque */
int tramp_expr(int (*fn)(void *), void *arg);   /* CFA by DW_CFA_def_cfa_expression: opaque */
int tramp_reg(int (*fn)(void *), void *arg);    /* rbp saved in rbx (DW_CFA_register): opaque */
__asm__(".text\n"
	".p2align 4\n.type tramp_rs, @function\ntramp_rs:\n.cfi_startproc\n"
	"\tpushq %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset %rbp, -16\n"
	"\t.fill 300, 1, 0x90\n"
	"\tmovq %rsp, %rbp\n.cfi_def_cfa_register %rbp\n.cfi_remember_state\n"
	"\ttestq %rdi, %rdi\n\tjne 1f\n"
	"\tpopq %rbp\n.cfi_def_cfa %rsp, 8\n\tret\n"
	"1:\n.cfi_restore_state\n"
	"\tsubq $16, %rsp\n\tmovq %rdi, %rax\n\tmovq %rsi, %rdi\n\tcall *%rax\n"
	"\tleave\n.cfi_def_cfa %rsp, 8\n\tret\n.cfi_endproc\n.size tramp_rs, .-tramp_rs\n"

	".p2align 4\n.type tramp_ra, @function\ntramp_ra:\n.cfi_startproc\n"
	"\tpushq %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset %rbp, -16\n"
	"\tsubq $16, %rsp\n.cfi_def_cfa_offset 32\n"
	"\tmovq %rdi, %rax\n\tmovq %rsi, %rdi\n\tcall *%rax\n"
	".cfi_def_cfa_offset 64\n"                                     /* wrong during the call, on purpose */
	"\taddq $16, %rsp\n.cfi_def_cfa_offset 16\n"
	"\tpopq %rbp\n.cfi_def_cfa_offset 8\n.cfi_restore %rbp\n\tret\n.cfi_endproc\n.size tramp_ra, .-tramp_ra\n"

	".p2align 4\n.type tramp_end, @function\ntramp_end:\n.cfi_startproc\n"
	"\tsubq $8, %rsp\n.cfi_def_cfa_offset 16\n.cfi_undefined %rip\n"
	"\tmovq %rdi, %rax\n\tmovq %rsi, %rdi\n\tcall *%rax\n"
	"\taddq $8, %rsp\n.cfi_def_cfa_offset 8\n\tret\n.cfi_endproc\n.size tramp_end, .-tramp_end\n"

	".p2align 4\n.type tramp_sig, @function\ntramp_sig:\n.cfi_startproc\n.cfi_signal_frame\n"
	"\tsubq $8, %rsp\n.cfi_def_cfa_offset 16\n"
	"\tmovq %rdi, %rax\n\tmovq %rsi, %rdi\n\tcall *%rax\n"
	"\taddq $8, %rsp\n.cfi_def_cfa_offset 8\n\tret\n.cfi_endproc\n.size tramp_sig, .-tramp_sig\n"

	".p2align 4\n.type tramp_expr, @function\ntramp_expr:\n.cfi_startproc\n"
	"\tsubq $8, %rsp\n.cfi_escape 0x0f, 0x02, 0x77, 0x10\n"     /* CFA = DW_OP_breg7 (rsp) + 16 */
	"\tmovq %rdi, %rax\n\tmovq %rsi, %rdi\n\tcall *%rax\n"
	"\taddq $8, %rsp\n.cfi_def_cfa %rsp, 8\n\tret\n.cfi_endproc\n.size tramp_expr, .-tramp_expr\n"

	".p2align 4\n.type tramp_reg, @function\ntramp_reg:\n.cfi_startproc\n"
	"\tpushq %rbx\n.cfi_def_cfa_offset 16\n.cfi_offset %rbx, -16\n"
	"\tmovq %rbp, %rbx\n.cfi_register %rbp, %rbx\n"
	"\tmovq %rdi, %rax\n\tmovq %rsi, %rdi\n\tcall *%rax\n"
	"\tmovq %rbx, %rbp\n.cfi_same_value %rbp\n"
	"\tpopq %rbx\n.cfi_def_cfa_offset 8\n.cfi_restore %rbx\n\tret\n.cfi_endproc\n.size tramp_reg, .-tramp_reg\n");

static NOINL int shape_tramp(const char *pat, void *arg, int (*tramp)(int (*)(void *), void *))
{
	struct lib_ctx c = { pat + 1, arg };
	return tramp(lib_cb, &c) + 1;
}
#endif

static NOINL int step(const char *pat, void *arg)
{
	switch (*pat) {
	case 'p': return shape_plain(pat, arg);
	case 'r': return shape_regs(pat, arg);
	case 'a': return shape_alloca(pat, arg);
	case 'v': return shape_vla(pat, arg);
	case 'b': return shape_big(pat, arg);
	case 'H': return shape_huge(pat, arg);
	case 'f': return shape_fp(pat, arg);
	case 'A': return shape_align(pat, arg);
	case 'q': return shape_qsort(pat, arg);
	case 's': return shape_bsearch(pat, arg);
	case 'L': return shape_lib(pat, arg);
#if defined(__x86_64__)
	case 'R': return shape_tramp(pat, arg, tramp_rs);
	case 'U': return shape_tramp(pat, arg, tramp_end);
	case 'N': return shape_tramp(pat, arg, tramp_ra);
	case 'S': return shape_tramp(pat, arg, tramp_sig);
	case 'E': return shape_tramp(pat, arg, tramp_expr);
	case 'G': return shape_tramp(pat, arg, tramp_reg);
#endif
	default: return probe(arg);
	}
}

/* Run a pattern and check its probe: libgcc saw at least the pattern's frames, the cached walk answered (unless
 * the pattern has an opaque frame: want_fast 0) and equals libgcc, and so does vg_unwind_capture. */
static _Atomic int thread_failures;

static int run_pattern(const char *pattern, int want_fast, struct probe *out, int quiet)
{
	struct probe pr;
	memset(&pr, 0, sizeof(pr));
	pr.pattern = pattern;
	step(pattern, &pr);
	int ok = pr.libgcc_n >= (int)strlen(pattern) && pr.capture_equal &&
		 (want_fast ? pr.fast_n >= 0 && pr.fast_equal : pr.fast_n < 0 || pr.fast_equal);
	if (!ok && !quiet)
		fprintf(stderr, "pattern '%s': libgcc %d frames, fast %d (equal %d), capture equal %d\n", pattern,
			pr.libgcc_n, pr.fast_n, pr.fast_equal, pr.capture_equal);
	if (out)
		*out = pr;
	return ok;
}

static const char *const fast_patterns[] = {
	"p", "pppp", "r", "rrr", "a", "ava", "v", "b", "bb", "f", "fpf", "rfar", "prvbfa", "q", "pqp", "qq", "s",
	"psr", "sq", "apqvsb", "A", "pAr",
#if defined(__x86_64__)
	"R", "pRrR", "U", "pUr", "rRU", "N", "pNrN",
#endif
};

static void test_shapes(void)
{
	for (size_t i = 0; i < sizeof(fast_patterns) / sizeof(fast_patterns[0]); i++) {
		int ok = run_pattern(fast_patterns[i], 1, NULL, 0);
		if (!ok)
			UNIT_FAIL_("pattern '%s'", fast_patterns[i]);
		else
			UNIT_PASS_(fast_patterns[i]);
	}
	/* 20 KiB frame: libgcc must answer, and vg_unwind_capture must be its answer. */
	struct probe pr;
	CHECK(run_pattern("pHp", 0, &pr, 0));
	CHECK(pr.fast_n == -1);
	CHECK(run_pattern("rHa", 0, &pr, 0));
	CHECK(pr.fast_n == -1);
#if defined(__x86_64__)
	/* Hand-written CFI the cache cannot express. */
	static const char *const opaque[] = { "pS", "Sr", "pEp", "E", "pGr", "G" };
	for (size_t i = 0; i < sizeof(opaque) / sizeof(opaque[0]); i++) {
		int ok = run_pattern(opaque[i], 0, &pr, 0) && pr.fast_n == -1;
		if (!ok)
			UNIT_FAIL_("pattern '%s': fast %d", opaque[i], pr.fast_n);
		else
			UNIT_PASS_(opaque[i]);
	}
	/* The stack ends at tramp_end: both stop there. */
	CHECK(run_pattern("pUr", 1, &pr, 0));
	CHECK(pr.libgcc_n < 12);
#endif
}

/* Runs a pattern twice from one call site (the return addresses must be the same both times): this thread's
 * counters for the second run. */
static NOINL struct vg_unwind_stats second_run(const char *pattern, int want_fast, int *ok)
{
	struct vg_unwind_stats a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	*ok = 1;
	for (int i = 0, n = two; i < n; i++) {
		vg_unwind_stats(&a);
		*ok &= run_pattern(pattern, want_fast, NULL, 0);
		vg_unwind_stats(&b);
	}
	b.fast -= a.fast;
	b.fallback -= a.fallback;
	b.misses -= a.misses;
	return b;
}

/* The second capture of a stack reads nothing from the CFI; a frame found opaque is remembered as opaque. */
static void test_cache(void)
{
	int ok;
	struct vg_unwind_stats d = second_run("prvbfq", 1, &ok);
	CHECK(ok);
	CHECK_EQ_U64(d.misses, 0);
	CHECK_EQ_U64(d.fast, 9);        /* the full-depth pair and 8 depths */
	CHECK_EQ_U64(d.fallback, 0);
	d = second_run("pHp", 0, &ok);
	CHECK(ok);
	CHECK_EQ_U64(d.misses, 0);
	CHECK(d.fallback >= 4);         /* the depths that reach the 20 KiB frame */
	void *buf[4];
	CHECK(vg_unwind_capture(buf, 0, skip_lo, skip_hi) == 0);
	CHECK(vg_unwind_fast(buf, -1, skip_lo, skip_hi) == -1);
}

/* A signal frame (glibc's __restore_rt, CIE augmentation "S"): the cached walk must give way to libgcc. */
static struct probe sig_probe[2];
static volatile sig_atomic_t sig_i;
static struct vg_unwind_stats sig_stats[2];

static void on_signal(int sig)
{
	(void)sig;
	int i = sig_i;
	vg_unwind_stats(&sig_stats[i]);
	run_pattern("pr", 0, &sig_probe[i], 1);
}

static void test_signal(void)
{
	struct sigaction sa, old;
	struct vg_unwind_stats after;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, &old) == 0);
	for (int i = 0; i < 2; i++) {
		sig_i = i;
		raise(SIGUSR1);
		struct probe *pr = &sig_probe[i];
		CHECK(pr->capture_equal);
		CHECK(pr->fast_n == -1);
		CHECK(pr->libgcc_n > 4);
	}
	vg_unwind_stats(&after);
	/* The second time through, the signal frame was already known to be opaque: no CFI read for it. */
	CHECK_EQ_U64(after.misses - sig_stats[1].misses, 0);
	sigaction(SIGUSR1, &old, NULL);
}

/* ---- the dlopened library ---- */

static char lib_dir[4096];

static void *lib_open(const char *which, uintptr_t *base)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/libvgunw_%s.so", lib_dir, which);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		return NULL;
	}
	lib_deep = (int (*)(int, int (*)(void *), void *))dlsym(h, "vgu_lib_deep");
	Dl_info di;
	*base = lib_deep && dladdr((void *)lib_deep, &di) ? (uintptr_t)di.dli_fbase : 0;
	return h;
}

/* Do both stacks have the same return addresses in the library at base (same place, same code layout)? */
static int same_lib_frames(const struct probe *a, const struct probe *b, uintptr_t base)
{
	void *fa[MAXF], *fb[MAXF];
	int na = 0, nb = 0;
	Dl_info di;
	for (int i = 0; i < a->libgcc_n; i++)
		if (dladdr(a->frames[i], &di) && (uintptr_t)di.dli_fbase == base)
			fa[na++] = a->frames[i];
	for (int i = 0; i < b->libgcc_n; i++)
		if (dladdr(b->frames[i], &di) && (uintptr_t)di.dli_fbase == base)
			fb[nb++] = b->frames[i];
	return na > 0 && na == nb && memcmp(fa, fb, (size_t)na * sizeof(void *)) == 0;
}

/* dlclose as vramguard's wrapper does it (interposer/route.c). */
static void lib_close(void *h)
{
	vg_unwind_dlclose_begin();
	dlclose(h);
	vg_unwind_dlclose_end();
}

static void test_dlclose(void)
{
	struct vg_unwind_stats s0, s1, s2;
	struct probe pa, pb, stale;
	uintptr_t base_a, base_b, base_a2;

	void *h = lib_open("a", &base_a);
	CHECK(h && lib_deep);
	if (!h || !lib_deep)
		return;
	CHECK(run_pattern("pLr", 1, &pa, 0));
	CHECK(run_pattern("qLsLp", 1, NULL, 0));
	vg_unwind_stats(&s0);
	lib_close(h);
	vg_unwind_stats(&s1);
	CHECK_EQ_U64(s1.flushes - s0.flushes, 1);

	h = lib_open("b", &base_b);
	CHECK(h && lib_deep);
	if (!h || !lib_deep)
		return;
	CHECK(run_pattern("pLr", 1, &pb, 0));
	vg_unwind_stats(&s2);
	CHECK(s2.misses > s1.misses);   /* emptied: the stack was read again */
	CHECK(run_pattern("fLaLv", 1, NULL, 0));

	/* Negative control, in a child (a misread may crash): same return addresses, other frames. Without the flush
	 * the cached walk must misread: give up, or answer differently from libgcc. Proof that the flush matters. */
	int same = base_a == base_b && same_lib_frames(&pa, &pb, base_a);
	pid_t child = same ? fork() : -1;
	if (child == 0) {
		dlclose(h);             /* no flush: B's recipes stay */
		h = lib_open("a", &base_a2);
		if (!h || base_a2 != base_a)
			_exit(2);
		probe_quiet = 1;
		run_pattern("pLr", 1, &stale, 1);
		_exit(stale.fast_n >= 0 && stale.fast_equal ? 1 : 0);
	}
	int st = 0;
	if (child > 0 && waitpid(child, &st, 0) == child && !(WIFEXITED(st) && WEXITSTATUS(st) == 2)) {
		CHECK(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 0));
		printf("note: libvgunw_b.so was mapped where libvgunw_a.so had been; without the flush the cached walk "
		       "misread it (%s)\n", WIFSIGNALED(st) ? "crashed" : "gave up or answered wrong");
	} else {
		printf("note: no stale-cache control this run (libvgunw_a.so at %#lx, then libvgunw_b.so at %#lx%s)\n",
		       (unsigned long)base_a, (unsigned long)base_b,
		       base_a == base_b ? ", but with another code layout" : "");
	}
	lib_close(h);
	h = lib_open("a", &base_a2);
	CHECK(h && run_pattern("pLr", 1, NULL, 0));
	/* Keep A loaded for the threads. */
}

/* ---- threads: captures racing on the cache, while another thread cycles dlopen / dlclose ---- */

static _Atomic int cycling_stop;

static void *cycler(void *arg)
{
	(void)arg;
	char path[4200];
	snprintf(path, sizeof(path), "%s/libvgunw_b.so", lib_dir);
	while (!atomic_load(&cycling_stop)) {
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (h)
			lib_close(h);
		usleep(200);    /* leave the workers time between flushes to hit the cache */
	}
	return NULL;
}

static const char *const thread_patterns[] = { "pr", "vab", "qp", "fLr", "spq", "rLa", "pHr", "A" };
#define NPATTERNS (sizeof(thread_patterns) / sizeof(thread_patterns[0]))

static _Atomic uint64_t thread_fast_racing, thread_fast_quiet;
static _Atomic int racing_left = 4;     /* workers still in the racing phase */
static pthread_barrier_t quiet_start;

/* While the cycler is inside a dlclose, captures go to libgcc: each probe of the racing phase only requires that a
 * fast answer, when there is one, equals libgcc's. How many the cache answers then depends on how often the cycler
 * flushes it against how fast the captures run (under TSan on a loaded machine, none at all), so the cache's use by
 * threads is judged in a second phase, after the cycler stopped: every pattern twice, the second time from the
 * cache. */
static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct vg_unwind_stats st, st2;
	for (int i = 0; i < 150; i++) {
		const char *pat = thread_patterns[(i + id) % NPATTERNS];
		if (!run_pattern(pat, 0, NULL, 0))
			atomic_fetch_add(&thread_failures, 1);
	}
	vg_unwind_stats(&st);
	atomic_fetch_add(&thread_fast_racing, st.fast);
	atomic_fetch_sub(&racing_left, 1);
	pthread_barrier_wait(&quiet_start);     /* the cycler has stopped */
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < NPATTERNS; i++)
			if (!run_pattern(thread_patterns[(i + (size_t)id) % NPATTERNS], 0, NULL, 0))
				atomic_fetch_add(&thread_failures, 1);
	vg_unwind_stats(&st2);
	atomic_fetch_add(&thread_fast_quiet, st2.fast - st.fast);
	return NULL;
}

static void test_threads(void)
{
	pthread_t t[4], c;
	CHECK(pthread_barrier_init(&quiet_start, NULL, 5) == 0);
	CHECK(pthread_create(&c, NULL, cycler, NULL) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
	/* The cycler runs until all four workers are done racing it. */
	while (atomic_load(&racing_left) > 0)
		usleep(1000);
	atomic_store(&cycling_stop, 1);
	pthread_join(c, NULL);
	pthread_barrier_wait(&quiet_start);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&quiet_start);
	CHECK_EQ_U64(atomic_load(&thread_failures), 0);
	CHECK(atomic_load(&thread_fast_quiet) > 0);
	printf("note: threads: %llu of %d captures answered by the cached walk while racing dlclose, %llu of %d after\n",
	       (unsigned long long)atomic_load(&thread_fast_racing), 4 * 150 * 9,
	       (unsigned long long)atomic_load(&thread_fast_quiet), 4 * 2 * (int)NPATTERNS * 9);
}

/* Interning (accounting/sites.c): the same stack gives the same site, every time, also when more call sites take
 * turns than the thread's memo of recent sites holds; different stacks give different sites. */
#define SITE_FNS 7
#define SITE_FN(i) static NOINL struct vg_site *site_fn##i(void) { struct vg_site *s = vg_site_capture(0); \
	__asm__ volatile("" ::: "memory"); return s; }
SITE_FN(0) SITE_FN(1) SITE_FN(2) SITE_FN(3) SITE_FN(4) SITE_FN(5) SITE_FN(6)
static struct vg_site *(*const site_fns[SITE_FNS])(void) = { site_fn0, site_fn1, site_fn2, site_fn3, site_fn4,
	site_fn5, site_fn6 };

static NOINL struct vg_site *site_via(int i)
{
	struct vg_site *s = site_fns[i]();
	__asm__ volatile("" ::: "memory");
	return s;
}

static void test_sites(void)
{
	vg_sites_configure(16, 0, NULL, skip_lo, skip_hi);
	uint32_t before = vg_sites_count();
	struct vg_site *first[SITE_FNS] = { 0 };
	int wrong = 0;
	unsigned seed = 12345;
	for (int k = 0; k < 5000; k++) {        /* one call instruction: the stacks differ only in site_fn<i> */
		seed = seed * 1103515245u + 12345u;
		int i = k < 2000 ? k % SITE_FNS : (int)((seed >> 16) % SITE_FNS);
		struct vg_site *got = site_via(i);
		if (!first[i])
			first[i] = got;
		wrong += got == NULL || got != first[i];
	}
	CHECK_EQ_U64(wrong, 0);
	for (int i = 0; i < SITE_FNS; i++)
		for (int j = 0; j < i; j++)
			CHECK(first[i] != first[j]);
	CHECK_EQ_U64(vg_sites_count() - before, SITE_FNS);
	vg_sites_configure(0, 0, NULL, skip_lo, skip_hi);
	CHECK(site_via(0) == NULL);                     /* capture off */
}

static int range_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t pc = *(uintptr_t *)data, lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		lo = s < lo ? s : lo;
		hi = s + ph->p_memsz > hi ? s + ph->p_memsz : hi;
	}
	if (pc < lo || pc >= hi)
		return 0;
	skip_lo = lo;
	skip_hi = hi;
	return 1;
}

int main(int argc, char **argv)
{
	(void)argc;
	const char *slash = strrchr(argv[0], '/');
	snprintf(lib_dir, sizeof(lib_dir), "%.*s", slash ? (int)(slash - argv[0]) : 1, slash ? argv[0] : ".");
	uintptr_t pc = (uintptr_t)vg_unwind_capture;
	CHECK(dl_iterate_phdr(range_cb, &pc) == 1);
	vg_unwind_init();

	test_shapes();
	test_cache();
	test_signal();
	test_dlclose();
	test_threads();
	test_sites();
	return UNIT_DONE();
}
