/* A minimal unit-test harness for vramguard's CUDA-free parts: one header, counters, file:line on failure.
 * Each test binary is one translation unit; it ends main() with `return UNIT_DONE();`.
 * Output (the protocol of every suite here, docs/TESTING.md): one line per check on stdout, "ok N - what" or
 * "not ok N - what" followed by "# at FILE:LINE" and any detail on "# " lines; the last line "N passed, N failed".
 * Checks may run on several threads: the counters are atomic and each check's lines are written together. */
#ifndef VG_UNIT_H
#define VG_UNIT_H

#include <inttypes.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int unit_passed, unit_failed, unit_seq;

/* One passed check, named. Flushed at once: a test that forks must not hand its children unwritten lines. */
static inline void unit_ok_(const char *what)
{
	unit_passed++;
	flockfile(stdout);
	printf("ok %d - %s\n", ++unit_seq, what);
	fflush(stdout);
	funlockfile(stdout);
}

/* One failed check: what failed (a printf format), then where. */
static inline void unit_not_ok_(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void unit_not_ok_(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	unit_failed++;
	flockfile(stdout);
	printf("not ok %d - ", ++unit_seq);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n# at %s:%d\n", file, line);
	fflush(stdout);
	funlockfile(stdout);
}

#define UNIT_FAIL_(...) unit_not_ok_(__FILE__, __LINE__, __VA_ARGS__)
/* A check a test decides itself (UNIT_FAIL_ in the other branch): its name, e.g. UNIT_PASS_("child exited 0"). */
#define UNIT_PASS_(what) unit_ok_(what)

#define CHECK(cond)                                                                                                   \
	do {                                                                                                          \
		if (cond)                                                                                             \
			UNIT_PASS_(#cond);                                                                            \
		else                                                                                                  \
			UNIT_FAIL_("%s", #cond);                                                                      \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                                                            \
	do {                                                                                                          \
		uint64_t unit_a_ = (uint64_t)(a), unit_b_ = (uint64_t)(b);                                            \
		if (unit_a_ == unit_b_)                                                                               \
			UNIT_PASS_(#a " == " #b);                                                                     \
		else                                                                                                  \
			UNIT_FAIL_("%s == %s (%" PRIu64 " != %" PRIu64 ")", #a, #b, unit_a_, unit_b_);                \
	} while (0)

#define CHECK_STR(a, b)                                                                                               \
	do {                                                                                                          \
		const char *unit_a_ = (a), *unit_b_ = (b);                                                            \
		if (unit_a_ && unit_b_ && strcmp(unit_a_, unit_b_) == 0)                                              \
			UNIT_PASS_(#a " == " #b);                                                                     \
		else                                                                                                  \
			UNIT_FAIL_("%s == %s (\"%s\" != \"%s\")", #a, #b, unit_a_ ? unit_a_ : "(null)",               \
				   unit_b_ ? unit_b_ : "(null)");                                                     \
	} while (0)

#define CHECK_CONTAINS(haystack, needle)                                                                              \
	do {                                                                                                          \
		const char *unit_h_ = (haystack), *unit_n_ = (needle);                                                \
		if (unit_h_ && unit_n_ && strstr(unit_h_, unit_n_))                                                   \
			UNIT_PASS_(#haystack " contains " #needle);                                                   \
		else                                                                                                  \
			UNIT_FAIL_("%s contains %s (\"%s\" lacks \"%s\")", #haystack, #needle,                        \
				   unit_h_ ? unit_h_ : "(null)", unit_n_ ? unit_n_ : "(null)");                       \
	} while (0)

/* ---- a reproducible pseudo-random sequence (xorshift64), the same in every run ---- */

static inline uint64_t unit_rand(void)
{
	static uint64_t x = 88172645463325252ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* ---- files and golden comparisons, for the tests that render reports ---- */

static inline void *unit_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		abort();
	}
	return p;
}

/* The whole file, NUL-terminated (*len excludes the NUL), or NULL if it cannot be opened. */
static inline char *unit_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	size_t cap = 0, n = 0, k;

	if (!f)
		return NULL;
	for (;;) {
		if (cap - n < 4096) {
			cap = cap ? cap * 2 : 65536;
			p = realloc(p, cap + 1);
			if (!p)
				abort();
		}
		k = fread(p + n, 1, cap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	fclose(f);
	p[n] = '\0';
	*len = n;
	return p;
}

static inline int unit_write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;
	if (!f)
		return -errno;
	ok = fwrite(data, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

/* One check: data equals the golden file at path (a path relative to the repository root); with update set, the
 * file is rewritten instead (UPDATE_GOLDEN=1). On a difference, say where and show what was produced. */
static inline void unit_check_golden(const char *path, const char *data, size_t len, int update)
{
	char *want;
	size_t wlen, i, line = 1;

	if (update) {
		if (unit_write_file(path, data, len))
			UNIT_FAIL_("cannot write %s (run from the repository root)", path);
		else
			UNIT_PASS_("golden file updated");
		fprintf(stderr, "updated %s\n", path);
		return;
	}
	want = unit_read_file(path, &wlen);
	if (!want) {
		UNIT_FAIL_("cannot read %s (run from the repository root; UPDATE_GOLDEN=1 creates it)", path);
		return;
	}
	if (wlen == len && memcmp(want, data, wlen) == 0) {
		UNIT_PASS_(path);
	} else {
		for (i = 0; i < wlen && i < len && want[i] == data[i]; i++)
			if (want[i] == '\n')
				line++;
		UNIT_FAIL_("%s differs from the output at line %zu (byte %zu); UPDATE_GOLDEN=1 rewrites it if the change "
			   "is intended", path, line, i);
		fprintf(stderr, "--- got:\n%.*s--- end\n", (int)len, data);     /* the whole output: on stderr, kept in the log */
	}
	free(want);
}

/* Prints the summary as the last line and gives main's exit status. */
#define UNIT_DONE() (printf("%d passed, %d failed\n", unit_passed, unit_failed), unit_failed ? 1 : 0)

#endif
