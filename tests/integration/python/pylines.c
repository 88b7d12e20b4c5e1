/* Checks accounting/pyframes.c's line-table decoder against what each CPython says about its own code objects:
 * reads tests/integration/python/lines.py's vectors on stdin, one "ok"/"not ok" line per code object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accounting/pyframes.h"

int main(void)
{
	static char buf[1 << 20];
	static uint8_t table[1 << 18];
	int bad = 0, n = 0;
	while (fgets(buf, sizeof(buf), stdin)) {
		char *save, *ver = strtok_r(buf, " \n", &save), *first = strtok_r(NULL, " \n", &save);
		char *hex = strtok_r(NULL, " \n", &save), *pair;
		if (!ver || !first || !hex)
			continue;
		long len = 0;
		for (const char *h = hex; strcmp(hex, "-") != 0 && h[0] && h[1] && len < (long)sizeof(table); h += 2) {
			unsigned v;
			sscanf(h, "%2x", &v);
			table[len++] = (uint8_t)v;
		}
		int version = (int)strtol(ver, NULL, 16), firstlineno = atoi(first), wrong = 0, checked = 0;
		char first_bad[96] = "";
		while ((pair = strtok_r(NULL, " \n", &save))) {
			long off = atol(pair), want = atol(strchr(pair, ':') + 1);
			int got = vg_py_addr2line(version, table, len, firstlineno, off);
			checked++;
			if (got != want && !wrong++)
				snprintf(first_bad, sizeof(first_bad), "offset %ld: line %d, want %ld", off, got, want);
		}
		n++;
		if (wrong) {
			bad++;
			printf("not ok - code object %d (version %s, first line %d): %d of %d offsets wrong, first %s\n", n,
			       ver, firstlineno, wrong, checked, first_bad);
		} else {
			printf("ok - code object %d (version %s, first line %d): %d offsets\n", n, ver, firstlineno, checked);
		}
	}
	return bad || n == 0;
}
