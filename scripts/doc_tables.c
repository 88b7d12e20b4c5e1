/* Regenerating the tables of a document between their markers (scripts/doc_tables.h). */
#include "scripts/doc_tables.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN_FMT "<!-- %s:"
#define END_FMT "<!-- /%s -->"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, k;

	if (!f)
		return NULL;
	do {
		if (cap - n < 4096) {
			char *nb = realloc(buf, cap += 65536);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		k = fread(buf + n, 1, cap - n - 1, f);
		n += k;
	} while (k > 0);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

int doc_tables_cell(const char *prog, const char *what, const char *text)
{
	if (!strpbrk(text, "|\n"))
		return 0;
	fprintf(stderr, "%s: %s: the text has a '|' or a newline\n", prog, what);
	return -1;
}

int doc_tables_text(FILE *out, const char *prog, const char *where, const char *text, const struct doc_number *numbers,
		    size_t n)
{
	const char *at;

	while ((at = strstr(text, "${")) != NULL) {
		const char *close = strchr(at, '}');
		size_t i, len = close ? (size_t)(close - at - 2) : 0;
		for (i = 0; close && i < n; i++)
			if (strlen(numbers[i].name) == len && strncmp(at + 2, numbers[i].name, len) == 0)
				break;
		if (!close || i == n) {
			fprintf(stderr, "%s: %s: '%.*s' is not a constant this generator knows (its numbers[])\n", prog,
				where, close ? (int)(close - at + 1) : 2, at);
			return -1;
		}
		fprintf(out, "%.*s%llu", (int)(at - text), text, numbers[i].value);
		text = close + 1;
	}
	fputs(text, out);
	return 0;
}

/* The table a begin line names, or -1 with a message. */
static long table_of(const struct doc_tables *t, const char *path, const char *line, size_t len, size_t blen)
{
	const char *name = line + blen, *close = strstr(name, " -->");
	size_t i, n = close ? (size_t)(close - name) : 0;

	for (i = 0; close && close < line + len && i < t->n; i++)
		if (strlen(t->v[i].name) == n && strncmp(name, t->v[i].name, n) == 0)
			return (long)i;
	fprintf(stderr, "%s: %s: '%.*s' names no table of %s\n", t->prog, path,
		(int)(len && line[len - 1] == '\n' ? len - 1 : len), line, t->sources);
	return -1;
}

/* The document with its tables regenerated, to out; 0, or -1 with a message on stderr. */
static int generate(const struct doc_tables *t, const char *path, const char *doc, FILE *out)
{
	char begin[64], end[64];
	unsigned char *seen = calloc(t->n ? t->n : 1, 1);
	const char *s = doc;
	int rc = -1;
	size_t i;

	snprintf(begin, sizeof(begin), BEGIN_FMT, t->prefix);
	snprintf(end, sizeof(end), END_FMT, t->prefix);
	if (!seen) {
		fprintf(stderr, "%s: out of memory\n", t->prog);
		return -1;
	}
	while (*s) {
		const char *eol = strchr(s, '\n');
		size_t len = eol ? (size_t)(eol - s) + 1 : strlen(s);
		long k;

		fwrite(s, 1, len, out);
		if (strncmp(s, begin, strlen(begin)) != 0) {
			s += len;
			continue;
		}
		if ((k = table_of(t, path, s, len, strlen(begin))) < 0)
			goto out;
		if (seen[k]++) {
			fprintf(stderr, "%s: %s: two tables for '%s'\n", t->prog, path, t->v[k].name);
			goto out;
		}
		if (t->v[k].write(out, (size_t)k) != 0)
			goto out;
		for (s += len; *s && strncmp(s, end, strlen(end)) != 0 && strncmp(s, begin, strlen(begin)) != 0;) {
			eol = strchr(s, '\n');
			s = eol ? eol + 1 : s + strlen(s);
		}
		if (strncmp(s, end, strlen(end)) != 0) {
			fprintf(stderr, "%s: %s: the table for '%s' has no '%s' line\n", t->prog, path, t->v[k].name, end);
			goto out;
		}
	}
	for (i = 0; i < t->n; i++)
		if (!seen[i]) {
			fprintf(stderr, "%s: %s: no table for '%s' (add '%s%s -->' and '%s')\n", t->prog, path,
				t->v[i].name, begin, t->v[i].name, end);
			goto out;
		}
	rc = 0;
out:
	free(seen);
	return rc;
}

int doc_tables_main(const struct doc_tables *t, int argc, char **argv)
{
	int inplace = argc == 3 && strcmp(argv[1], "-i") == 0;
	const char *path = argv[argc - 1];
	char *doc, *buf = NULL;
	size_t len = 0;
	FILE *out;

	if (argc != 2 + inplace || path[0] == '-') {
		fprintf(stderr, "usage: %s [-i] FILE\n", t->prog);
		return 2;
	}
	doc = slurp(path);
	if (!doc) {
		fprintf(stderr, "%s: cannot read %s: %s\n", t->prog, path, strerror(errno));
		return 1;
	}
	out = inplace ? open_memstream(&buf, &len) : stdout;
	if (!out || generate(t, path, doc, out) != 0) {
		free(doc);
		return 1;
	}
	free(doc);
	if (!inplace)
		return fflush(stdout) == 0 ? 0 : 1;
	fclose(out);
	out = fopen(path, "wb");
	if (!out || fwrite(buf, 1, len, out) != len || fclose(out) != 0) {
		fprintf(stderr, "%s: cannot write %s: %s\n", t->prog, path, strerror(errno));
		return 1;
	}
	free(buf);
	return 0;
}
