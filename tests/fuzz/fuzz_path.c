/* Fuzz target for vg_report_path_expand (report/path.c), the report file name at exit and on signal. Input: a
 * 15-byte header -- flags (bit 0: reason NULL, bit 1: host NULL), pid (int32, little-endian), sequence (uint64),
 * output size (uint16 % 2048) -- then "reason\0host\0template". Properties: the result equals a simple reference
 * expansion, never writes past the output size, fails with -ENAMETOOLONG exactly when it does not fit and -EINVAL
 * exactly for a template with a bad specifier; and VRAMGUARD_REPORT takes a template exactly when it is valid (and
 * does not name a directory). */
#include "config/config.h"
#include "report/path.h"
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <strings.h>

#define VG_FUZZ_NAME "path"

/* The reference: NULL for a bad template, else a malloc'd expansion. */
static char *ref_expand(const char *t, int pid, uint64_t seq, const char *reason, const char *host)
{
	size_t n = strlen(t), cap = n * 24 + (reason ? strlen(reason) : 0) * n + (host ? strlen(host) : 0) * n + 1;
	char *o = malloc(cap), *p = o;
	size_t i;

	VG_FUZZ_CHECK(o != NULL);
	for (i = 0; i < n; i++) {
		const char *s = NULL;
		if (t[i] != '%') {
			*p++ = t[i];
			continue;
		}
		switch (t[++i]) {
		case 'p': p += sprintf(p, "%lld", (long long)pid); break;
		case 'n': p += sprintf(p, "%llu", (unsigned long long)seq); break;
		case 'r': s = reason; break;
		case 'h': s = host; break;
		case '%': *p++ = '%'; break;
		default: free(o); return NULL; /* also the NUL after a lone '%' */
		}
		for (; s && *s; s++)
			*p++ = *s == '/' ? '_' : *s;
	}
	*p = '\0';
	return o;
}

static const char *fake_report;

static const char *fake_getenv(const char *name)
{
	return strcmp(name, "VRAMGUARD_REPORT") == 0 ? fake_report : NULL;
}

/* The reference for "names a directory": the last component is empty, "." or "..". */
static int ref_names_dir(const char *t, size_t n)
{
	const char *last = t + n;
	while (last > t && last[-1] != '/')
		last--;
	size_t k = (size_t)(t + n - last);
	return k == 0 || (k == 1 && last[0] == '.') || (k == 2 && last[0] == '.' && last[1] == '.');
}

static void check_loader(const char *tmpl, int ref_ok)
{
	static struct vg_config cfg;
	const char *t = tmpl;
	size_t n = strlen(t);
	int rc;

	fake_report = tmpl;
	rc = vg_config_load(&cfg, fake_getenv, 0);
	while (n && strchr(" \t\n\r\v\f", t[0])) {
		t++;
		n--;
	}
	while (n && strchr(" \t\n\r\v\f", t[n - 1]))
		n--;
	if (n == 0 || (n == 6 && strncasecmp(t, "stderr", 6) == 0) || (n == 3 && strncasecmp(t, "off", 3) == 0)) {
		VG_FUZZ_CHECK(rc == 0 && cfg.report_dest != VG_REPORT_PATH);
		return;
	}
	if (rc == 0) {
		VG_FUZZ_CHECK(cfg.report_dest == VG_REPORT_PATH && strlen(cfg.report_path) == n &&
			      memcmp(cfg.report_path, t, n) == 0);
		VG_FUZZ_CHECK(!ref_names_dir(t, n));
		if (n == strlen(tmpl))
			VG_FUZZ_CHECK(ref_ok);
	} else {
		VG_FUZZ_CHECK(strncmp(cfg.error, "vramguard: error: invalid VRAMGUARD_REPORT '", 44) == 0);
		if (n == strlen(tmpl))
			VG_FUZZ_CHECK(!ref_ok || n >= VG_REPORT_PATH_MAX || ref_names_dir(t, n));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data + 15, *end = data + size, *z1, *z2;
	char *reason, *host, *tmpl, *want, *out;
	int pid, rc, flags;
	uint64_t seq = 0;
	size_t outlen, i;

	if (size < 15)
		return 0;
	flags = data[0];
	pid = (int)((uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24);
	for (i = 0; i < 8; i++)
		seq |= (uint64_t)data[5 + i] << (8 * i);
	outlen = ((size_t)data[13] | (size_t)data[14] << 8) % 2048;
	z1 = memchr(p, 0, (size_t)(end - p));
	z2 = z1 ? memchr(z1 + 1, 0, (size_t)(end - z1 - 1)) : NULL;
	if (!z1 || !z2) {
		reason = vg_fuzz_strndup((const uint8_t *)"exit", 4);
		host = vg_fuzz_strndup((const uint8_t *)"node/1", 6);
		tmpl = vg_fuzz_strndup(p, (size_t)(end - p));
	} else {
		const uint8_t *z3 = memchr(z2 + 1, 0, (size_t)(end - z2 - 1));
		reason = vg_fuzz_strndup(p, (size_t)(z1 - p));
		host = vg_fuzz_strndup(z1 + 1, (size_t)(z2 - z1 - 1));
		tmpl = vg_fuzz_strndup(z2 + 1, (size_t)((z3 ? z3 : end) - z2 - 1));
	}
	if (flags & 1) {
		free(reason);
		reason = NULL;
	}
	if (flags & 2) {
		free(host);
		host = NULL;
	}

	want = ref_expand(tmpl, pid, seq, reason, host);
	out = malloc(outlen ? outlen : 1); /* exactly outlen bytes: ASan sees one byte too many */
	VG_FUZZ_CHECK(out != NULL);
	out[0] = 'Z';
	rc = vg_report_path_expand(tmpl, pid, seq, reason, host, out, outlen);
	if (!want) {
		VG_FUZZ_CHECK(rc == -EINVAL);
	} else if (strlen(want) < outlen) {
		VG_FUZZ_CHECK(rc == 0);
		VG_FUZZ_CHECK(strcmp(out, want) == 0);
	} else {
		VG_FUZZ_CHECK(rc == -ENAMETOOLONG);
	}
	if (outlen == 0)
		VG_FUZZ_CHECK(out[0] == 'Z');
	check_loader(tmpl, want != NULL);

	free(want);
	free(out);
	free(reason);
	free(host);
	free(tmpl);
	return 0;
}

#ifdef VG_FUZZ_REPLAY
#include "tests/fuzz/replay.h"
#endif
