/* Text for people: user text quoted as every message quotes it (vg_quote), byte counts (vg_format_bytes) and GPU
 * UUIDs (vg_format_uuid), with the appender's number and quote steps they share. No heap, no stdio: safe on the
 * interposer's hot paths. */
#include "config/internal.h"

#include <string.h>

#define VG_TOKEN_MAX 80 /* longest user text quoted in a message (vg_buf_quote) */
#define VG_TOKEN_TAIL 24 /* of which its end */

void vg_buf_u64(struct vg_buf *b, uint64_t v)
{
	char tmp[21];
	int i = 0;

	do {
		tmp[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (i)
		vg_buf_char(b, tmp[--i]);
}

/* User text, quoted on one line: 'text'. Control bytes become '?'; text longer than VG_TOKEN_MAX keeps its start and
 * its end (where a path has its file name, a value its unit), cut at character boundaries, and says how long it
 * was: 'start...end' (5000 bytes). So a message stays short whatever it is given. */
void vg_buf_quote(struct vg_buf *b, const char *s, size_t n)
{
	size_t head = n, tail = n, i;

	if (n > VG_TOKEN_MAX) {
		head = VG_TOKEN_MAX - VG_TOKEN_TAIL;
		tail = n - VG_TOKEN_TAIL;
		while (head > 0 && ((unsigned char)s[head] & 0xc0) == 0x80)
			head--;
		while (tail < n && ((unsigned char)s[tail] & 0xc0) == 0x80)
			tail++;
	}
	vg_buf_char(b, '\'');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (i == head) {
			vg_buf_str(b, "...");
			i = tail;
			if (i == n)
				break;
			c = (unsigned char)s[i];
		}
		vg_buf_char(b, (c < 0x20 || c == 0x7f) ? '?' : (char)c);
	}
	vg_buf_char(b, '\'');
	if (head < n) {
		vg_buf_str(b, " (");
		vg_buf_u64(b, (uint64_t)n);
		vg_buf_str(b, " bytes)");
	}
}

const char *vg_quote(const char *s, char *buf, size_t len)
{
	struct vg_buf b;

	vg_buf_init(&b, buf, len);
	if (s)
		vg_buf_quote(&b, s, strlen(s));
	return buf;
}

/* ---- UTF-8 ---- */

size_t vg_utf8_len(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (n == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	/* The second byte's range rules out overlong forms (E0, F0), surrogates (ED) and past U+10FFFF (F4). */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

size_t vg_utf8_cut(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t k = n, want;

	/* The start of the last character: back over at most three continuation bytes. */
	while (k > 0 && n - k < 4 && (s[k - 1] & 0xc0) == 0x80)
		k--;
	if (k == 0 || n - k >= 4)
		return n;
	k--;
	want = s[k] >= 0xf0 ? 4 : s[k] >= 0xe0 ? 3 : s[k] >= 0xc0 ? 2 : 1;
	return s[k] >= 0xc2 && s[k] <= 0xf4 && k + want > n ? k : n;
}

/* ---- people-readable sizes ---- */

const char *vg_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const names[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	struct vg_buf b;
	uint64_t unit = VG_KIB, rem;
	int u = 0, d;

	vg_buf_init(&b, buf, len);
	if (bytes < VG_KIB) {
		vg_buf_u64(&b, bytes);
		vg_buf_str(&b, " B");
		return buf;
	}
	while (u < 5 && bytes / unit >= 1024) {
		unit <<= 10;
		u++;
	}
	/* two decimals, rounded down (never overstate a quota); unit <= 2^60 so rem * 10 cannot overflow */
	rem = bytes % unit;
	vg_buf_u64(&b, bytes / unit);
	vg_buf_char(&b, '.');
	for (d = 0; d < 2; d++) {
		vg_buf_char(&b, (char)('0' + rem * 10 / unit));
		rem = rem * 10 % unit;
	}
	vg_buf_char(&b, ' ');
	vg_buf_str(&b, names[u]);
	return buf;
}

/* ---- GPU UUIDs ---- */

const char *vg_format_uuid(const char bytes[16], char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	struct vg_buf b;
	int i;

	vg_buf_init(&b, buf, len);
	vg_buf_str(&b, "GPU-");
	for (i = 0; i < 16; i++) {
		unsigned char c = (unsigned char)bytes[i];

		if (i == 4 || i == 6 || i == 8 || i == 10)
			vg_buf_char(&b, '-');
		vg_buf_char(&b, hex[c >> 4]);
		vg_buf_char(&b, hex[c & 15]);
	}
	return buf;
}
