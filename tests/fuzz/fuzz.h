/* Shared by the fuzz targets: property checks that abort with a message (libFuzzer then saves the input) and the
 * "one block of text" check. replay.h has the main() that gcc builds use instead of libFuzzer. */
#ifndef VG_FUZZ_H
#define VG_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *vg_fuzz_current = "(libFuzzer input)";   /* the file being replayed, for messages */

/* A property failed: say which and where, then abort so libFuzzer saves the input (and replay stops). */
#define VG_FUZZ_CHECK(cond)                                                                                         \
	do {                                                                                                         \
		if (!(cond)) {                                                                                       \
			fprintf(stderr, "FAIL %s: %s (%s:%d)\n", vg_fuzz_current, #cond, __FILE__, __LINE__);        \
			abort();                                                                                     \
		}                                                                                                    \
	} while (0)

/* A heap copy with a NUL after it: exact size, so ASan sees a read past the end. */
static inline char *vg_fuzz_strndup(const uint8_t *data, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		abort();
	if (n)
		memcpy(s, data, n);
	s[n] = '\0';
	return s;
}

/* Text for a terminal: one block whose first line starts with `head`, every other line indented, no control
 * character but '\n', ending with '\n'. A hostile string in a report must never start a line of its own. */
static inline void vg_fuzz_check_block(const char *s, size_t n, const char *head)
{
	size_t i;

	VG_FUZZ_CHECK(s != NULL && n > 0);
	VG_FUZZ_CHECK(strlen(s) == n);
	VG_FUZZ_CHECK(strncmp(s, head, strlen(head)) == 0);
	VG_FUZZ_CHECK(s[n - 1] == '\n');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		VG_FUZZ_CHECK(c == '\n' || (c >= 0x20 && c != 0x7f));
		if (c == '\n' && i + 1 < n)
			VG_FUZZ_CHECK(s[i + 1] == ' ');
	}
}


#endif
