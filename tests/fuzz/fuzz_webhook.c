/* Fuzz target for the receiver's webhook payload reader (cli/autoscale_payload.c: vg_as_payload_parse), which reads
 * a POSTed body whole before `vramguard autoscale` acts on any alert in it. Input: the body.
 * Properties: one rule for the whole payload: a body that is not UTF-8 is refused, wherever the bad byte is; a
 * refusal is one line, also into a 1 to 24 byte buffer; an accepted payload has at most VG_AS_PAYLOAD_ALERTS_MAX
 * alerts, each with an alertname, and every label read is a C string of its field (no NUL cut short), valid UTF-8;
 * reading is deterministic (the same body twice, the same alerts). */
#include "cli/autoscale_payload.h"
#include "cli/cli.h"
#include "tests/fuzz/fuzz.h"

#define VG_FUZZ_NAME "webhook"

/* RFC 3629, independently of the reader: no overlong form, no surrogate, at most U+10FFFF. */
static bool utf8_ok(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		size_t len;
		uint32_t cp, min;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2, cp = c & 0x1f, min = 0x80;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3, cp = c & 0x0f, min = 0x800;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4, cp = c & 0x07, min = 0x10000;
		else
			return false;
		if (n - i < len)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

static void check_field(const char *f, size_t size)
{
	size_t n = strnlen(f, size);

	VG_FUZZ_CHECK(n < size);
	VG_FUZZ_CHECK(utf8_ok((const uint8_t *)f, n));
}

static void check_err(const char *err, size_t cap)
{
	size_t n = strnlen(err, cap), i;

	VG_FUZZ_CHECK(n < cap);
	for (i = 0; i < n; i++)
		VG_FUZZ_CHECK((unsigned char)err[i] >= 0x20 && err[i] != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vg_as_payload a, b;
	char err[VG_CLI_WHY_MAX], tiny[24];
	char *body = vg_fuzz_strndup(data, size);       /* the server's body has a NUL after it too */

	int rc = vg_as_payload_parse(body, size, &a, err, sizeof(err));
	if (rc != 0) {
		VG_FUZZ_CHECK(rc == -1 && err[0]);
		check_err(err, sizeof(err));
		size_t cap = 1 + (size ? data[0] % sizeof(tiny) : 0);
		VG_FUZZ_CHECK(vg_as_payload_parse(body, size, &b, tiny, cap) == -1);
		check_err(tiny, cap);
		VG_FUZZ_CHECK(strncmp(tiny, err, strlen(tiny)) == 0);
		free(b.v);
	} else {
		VG_FUZZ_CHECK(utf8_ok(data, size));     /* the one rule: not UTF-8, refused */
		VG_FUZZ_CHECK(a.n <= VG_AS_PAYLOAD_ALERTS_MAX);
		for (size_t i = 0; i < a.n; i++) {
			const struct vg_as_alert *v = &a.v[i];
			VG_FUZZ_CHECK(v->name[0] != '\0');
			check_field(v->name, sizeof(v->name));
			check_field(v->region, sizeof(v->region));
			check_field(v->pid, sizeof(v->pid));
			check_field(v->command, sizeof(v->command));
			check_field(v->gpu, sizeof(v->gpu));
			check_field(v->gpu_uuid, sizeof(v->gpu_uuid));
		}
		VG_FUZZ_CHECK(vg_as_payload_parse(body, size, &b, err, sizeof(err)) == 0);
		VG_FUZZ_CHECK(b.n == a.n && (!a.n || memcmp(a.v, b.v, a.n * sizeof(*a.v)) == 0));
		free(b.v);
	}
	free(a.v);
	free(body);
	return 0;
}

#ifdef VG_FUZZ_REPLAY
#include "tests/fuzz/replay.h"
#endif
