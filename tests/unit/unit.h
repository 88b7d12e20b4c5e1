/* A minimal unit-test harness for vramguard's CUDA-free parts: one header, counters, file:line on failure.
 * Each test binary is one translation unit; it ends main() with `return UNIT_DONE();`. */
#ifndef VG_UNIT_H
#define VG_UNIT_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int unit_passed, unit_failed;

#define UNIT_FAIL_(...)                                                                                               \
	do {                                                                                                          \
		unit_failed++;                                                                                        \
		fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                                                 \
		fprintf(stderr, __VA_ARGS__);                                                                         \
		fputc('\n', stderr);                                                                                  \
	} while (0)

#define CHECK(cond)                                                                                                   \
	do {                                                                                                          \
		if (cond)                                                                                             \
			unit_passed++;                                                                                \
		else                                                                                                  \
			UNIT_FAIL_("%s", #cond);                                                                      \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                                                            \
	do {                                                                                                          \
		uint64_t unit_a_ = (uint64_t)(a), unit_b_ = (uint64_t)(b);                                            \
		if (unit_a_ == unit_b_)                                                                               \
			unit_passed++;                                                                                \
		else                                                                                                  \
			UNIT_FAIL_("%s == %s (%" PRIu64 " != %" PRIu64 ")", #a, #b, unit_a_, unit_b_);                \
	} while (0)

#define CHECK_STR(a, b)                                                                                               \
	do {                                                                                                          \
		const char *unit_a_ = (a), *unit_b_ = (b);                                                            \
		if (unit_a_ && unit_b_ && strcmp(unit_a_, unit_b_) == 0)                                              \
			unit_passed++;                                                                                \
		else                                                                                                  \
			UNIT_FAIL_("%s == %s (\"%s\" != \"%s\")", #a, #b, unit_a_ ? unit_a_ : "(null)",               \
				   unit_b_ ? unit_b_ : "(null)");                                                     \
	} while (0)

#define CHECK_CONTAINS(haystack, needle)                                                                              \
	do {                                                                                                          \
		const char *unit_h_ = (haystack), *unit_n_ = (needle);                                                \
		if (unit_h_ && unit_n_ && strstr(unit_h_, unit_n_))                                                   \
			unit_passed++;                                                                                \
		else                                                                                                  \
			UNIT_FAIL_("%s contains %s (\"%s\" lacks \"%s\")", #haystack, #needle,                        \
				   unit_h_ ? unit_h_ : "(null)", unit_n_ ? unit_n_ : "(null)");                       \
	} while (0)

/* Prints the summary as the last line and gives main's exit status. */
#define UNIT_DONE() (printf("%d passed, %d failed\n", unit_passed, unit_failed), unit_failed ? 1 : 0)

#endif
