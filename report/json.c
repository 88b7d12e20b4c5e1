/* The JSON reader (report/json.h): a recursive-descent parser over the text, depth-limited, that builds nothing. */
#include "report/json.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct vg_jp_num {
	size_t start, end;
	int negative;
	int integer;            /* no fraction, no exponent */
};

static size_t jp_bom(const struct vg_jp *p)
{
	return p->len >= 3 && memcmp(p->s, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

void vg_jp_init(struct vg_jp *p, const char *text, size_t len, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->s = (const unsigned char *)(text ? text : "");
	p->len = text ? len : 0;
	p->err = err;
	p->errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
	p->pos = jp_bom(p);
}

void vg_jp_rewind(struct vg_jp *p)
{
	p->depth = 0;
	p->pos = jp_bom(p);
}


void vg_jp_seterr(struct vg_jp *p, int rc, const char *msg)
{
	size_t i;

	if (p->rc)
		return;         /* the first failure is the one to report */
	p->rc = rc;
	if (!p->err || !p->errlen)
		return;
	snprintf(p->err, p->errlen, "%s", msg);
	for (i = 0; p->err[i]; i++)     /* one line, whatever the document held */
		if ((unsigned char)p->err[i] < 0x20 || p->err[i] == 0x7f)
			p->err[i] = '?';
}

int vg_jp_nomem(struct vg_jp *p)
{
	vg_jp_seterr(p, -ENOMEM, "out of memory");
	return -1;
}

/* A syntax error at byte offset `at`: "line 3, column 17: expected ',' or '}'". Columns count characters. */
int vg_jp_syntax(struct vg_jp *p, size_t at, const char *fmt, ...)
{
	char msg[256], full[600];
	size_t i, line = 1, col = 1;
	va_list ap;

	for (i = 0; i < at && i < p->len; i++) {
		if (p->s[i] == '\n') {
			line++;
			col = 1;
		} else if ((p->s[i] & 0xc0) != 0x80) {
			col++;
		}
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "line %zu, column %zu: %s", line, col, msg);
	vg_jp_seterr(p, -EINVAL, full);
	return -1;
}

int vg_jp_eof(struct vg_jp *p)
{
	return vg_jp_syntax(p, p->len, "unexpected end of input");
}

/* A value of the wrong kind: "devices[0].used_bytes: expected an unsigned integer". */
int vg_jp_field(struct vg_jp *p, const char *fmt, ...)
{
	char msg[256], full[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "%s: %s", p->pathlen ? p->path : "top level", msg);
	vg_jp_seterr(p, -EINVAL, full);
	return -1;
}

/* Append n bytes to the path, cut where it is full (as snprintf would). */
static void jp_path_add(struct vg_jp *p, const char *s, size_t n)
{
	size_t room = sizeof(p->path) - 1 - p->pathlen;

	if (n > room)
		n = room;
	memcpy(p->path + p->pathlen, s, n);
	p->pathlen += n;
	p->path[p->pathlen] = '\0';
}

/* Pushed for every member and element read, so without printf: it was a sixth of the time to read a report. */
void vg_jp_path_push(struct vg_jp *p, const char *key, size_t index, int is_index)
{
	char digits[24];
	size_t i = sizeof(digits);

	if (!is_index) {
		if (p->pathlen)
			jp_path_add(p, ".", 1);
		jp_path_add(p, key, strlen(key));
		return;
	}
	digits[--i] = ']';
	do
		digits[--i] = (char)('0' + index % 10);
	while ((index /= 10) != 0);
	digits[--i] = '[';
	jp_path_add(p, digits + i, sizeof(digits) - i);
}

void vg_jp_path_pop(struct vg_jp *p, size_t to)
{
	p->pathlen = to;
	p->path[to] = '\0';
}

static void jp_ws(struct vg_jp *p)
{
	while (p->pos < p->len) {
		unsigned char c = p->s[p->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

/* The byte at the current position after whitespace, or -1 at the end. */
int vg_jp_peek(struct vg_jp *p)
{
	jp_ws(p);
	return p->pos < p->len ? p->s[p->pos] : -1;
}

static void jout_put(struct vg_jp_out *o, const void *bytes, size_t n)
{
	if (!o || o->full)
		return;
	if (!o->buf || o->len + n >= o->cap) {  /* keep room for the NUL; never half a character */
		o->full = o->buf != NULL;
		return;
	}
	memcpy(o->buf + o->len, bytes, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

/* A run of n plain ASCII characters: as many as fit (each is a whole character), as jout_put one by one would. */
static void jout_ascii(struct vg_jp_out *o, const unsigned char *s, size_t n)
{
	size_t room;

	if (!o || o->full)
		return;
	room = o->buf && o->cap > o->len + 1 ? o->cap - o->len - 1 : 0;
	jout_put(o, s, n <= room ? n : room);
	if (n > room)
		o->full = o->buf != NULL;
}

static void jout_codepoint(struct vg_jp_out *o, uint32_t cp)
{
	unsigned char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | cp >> 6);
		b[1] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (unsigned char)(0xe0 | cp >> 12);
		b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (unsigned char)(0xf0 | cp >> 18);
		b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	if (cp == 0 && o && o->buf && !o->full && o->len + 1 < o->cap)
		o->nul = 1;             /* the only way a NUL gets in: raw control bytes are refused */
	jout_put(o, b, n);
}

/* Bytes of the UTF-8 character at s (n available): 1 to 4, or 0 if it is malformed, overlong, a surrogate or past
 * U+10FFFF. */
static size_t jp_utf8_char(const unsigned char *s, size_t n)
{
	uint32_t cp, min;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int jp_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The 4 hex digits of a \u escape whose backslash is at `at`. */
static int jp_u_escape(struct vg_jp *p, size_t at, uint32_t *cp)
{
	size_t i;

	*cp = 0;
	for (i = 0; i < 4; i++) {
		int v;
		if (at + 2 + i >= p->len)
			return vg_jp_eof(p);
		v = jp_hexval(p->s[at + 2 + i]);
		if (v < 0)
			return vg_jp_syntax(p, at, "invalid \\u escape (expected 4 hex digits)");
		*cp = *cp << 4 | (uint32_t)v;
	}
	return 0;
}

/* Bytes that stand for themselves in a string: printable ASCII but '"' (0x22) and '\\' (0x5c). */
#define JP_R16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
static const unsigned char jp_plain[256] = {
	JP_R16(0), JP_R16(0),                                           /* 0x00-0x1f: control characters */
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,                 /* 0x20-0x2f: '"' */
	JP_R16(1), JP_R16(1),                                           /* 0x30-0x4f */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,                 /* 0x50-0x5f: '\\' */
	JP_R16(1), JP_R16(1),                                           /* 0x60-0x7f */
	JP_R16(0), JP_R16(0), JP_R16(0), JP_R16(0), JP_R16(0), JP_R16(0), JP_R16(0), JP_R16(0), /* UTF-8 */
};
#undef JP_R16

/* The string at the current position (its opening quote), decoded into o (NULL: checked only). */
int vg_jp_string(struct vg_jp *p, struct vg_jp_out *o)
{
	p->pos++;
	for (;;) {
		unsigned char c;
		size_t at = p->pos, k;

		if (at >= p->len)
			return vg_jp_eof(p);
		c = p->s[at];
		if (c == '"') {
			p->pos++;
			return 0;
		}
		if (c < 0x20)
			return vg_jp_syntax(p, at, "control character in a string (write it as \\u%04x)", c);
		if (c >= 0x80) {
			k = jp_utf8_char(p->s + at, p->len - at);
			if (!k)
				return vg_jp_syntax(p, at, "invalid UTF-8 in a string");
			jout_put(o, p->s + at, k);
			p->pos += k;
			continue;
		}
		if (c != '\\') {              /* a run of plain characters at once: strings are most of a report */
			for (k = 1; at + k < p->len && jp_plain[p->s[at + k]]; k++)
				;
			jout_ascii(o, p->s + at, k);
			p->pos += k;
			continue;
		}
		if (at + 1 >= p->len)
			return vg_jp_eof(p);
		c = p->s[at + 1];
		p->pos += 2;
		switch (c) {
		case '"': case '\\': case '/':
			jout_put(o, &c, 1);
			break;
		case 'b': jout_put(o, "\b", 1); break;
		case 'f': jout_put(o, "\f", 1); break;
		case 'n': jout_put(o, "\n", 1); break;
		case 'r': jout_put(o, "\r", 1); break;
		case 't': jout_put(o, "\t", 1); break;
		case 'u': {
			uint32_t cp, lo;
			if (jp_u_escape(p, at, &cp) != 0)
				return -1;
			p->pos = at + 6;
			if (cp >= 0xd800 && cp <= 0xdbff && p->pos + 1 < p->len && p->s[p->pos] == '\\' &&
			    p->s[p->pos + 1] == 'u') {
				if (jp_u_escape(p, p->pos, &lo) != 0)
					return -1;
				if (lo >= 0xdc00 && lo <= 0xdfff) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					p->pos += 6;
				}
			}
			/* A surrogate left unpaired is not a character: it becomes U+FFFD, as the writer does with bytes
			 * that are not UTF-8; a reader that wants text only refuses it, and a NUL. */
			if (p->text_only && cp >= 0xd800 && cp <= 0xdfff)
				return vg_jp_syntax(p, at, "a \\u escape of a lone surrogate in a string (not a character)");
			if (p->text_only && cp == 0)
				return vg_jp_syntax(p, at, "a NUL character (\\u0000) in a string");
			jout_codepoint(o, cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp);
			break;
		}
		default:
			if (c >= 0x20 && c < 0x7f)
				return vg_jp_syntax(p, at, "invalid escape '\\%c' in a string", c);
			return vg_jp_syntax(p, at, "invalid escape in a string");
		}
	}
}

static int jp_isdigit(size_t i, const struct vg_jp *p)
{
	return i < p->len && p->s[i] >= '0' && p->s[i] <= '9';
}

/* The number at the current position, by RFC 8259's grammar; only its extent and shape are kept. */
static int jp_number(struct vg_jp *p, struct vg_jp_num *n)
{
	size_t i = p->pos;

	n->start = i;
	n->negative = 0;
	n->integer = 1;
	if (p->s[i] == '-') {
		n->negative = 1;
		i++;
	}
	if (i >= p->len)
		return vg_jp_eof(p);
	if (p->s[i] == '0') {
		i++;
		if (jp_isdigit(i, p))
			return vg_jp_syntax(p, i - 1, "invalid number (leading zero)");
	} else if (jp_isdigit(i, p)) {
		while (jp_isdigit(i, p))
			i++;
	} else {
		return vg_jp_syntax(p, i, "invalid number");
	}
	if (i < p->len && p->s[i] == '.') {
		n->integer = 0;
		i++;
		if (i >= p->len)
			return vg_jp_eof(p);
		if (!jp_isdigit(i, p))
			return vg_jp_syntax(p, i, "invalid number (expected a digit after '.')");
		while (jp_isdigit(i, p))
			i++;
	}
	if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
		n->integer = 0;
		i++;
		if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
			i++;
		if (i >= p->len)
			return vg_jp_eof(p);
		if (!jp_isdigit(i, p))
			return vg_jp_syntax(p, i, "invalid number (expected a digit in the exponent)");
		while (jp_isdigit(i, p))
			i++;
	}
	n->end = p->pos = i;
	return 0;
}

/* true, false or null at the current position. */
int vg_jp_literal(struct vg_jp *p, int *which)
{
	static const char *const words[] = { "false", "true", "null" };
	size_t w, left = p->len - p->pos;

	for (w = 0; w < 3; w++) {
		size_t n = strlen(words[w]);
		if (p->s[p->pos] != (unsigned char)words[w][0])
			continue;
		if (left >= n && memcmp(p->s + p->pos, words[w], n) == 0) {
			p->pos += n;
			*which = (int)w;
			return 0;
		}
		if (left < n && memcmp(p->s + p->pos, words[w], left) == 0)
			return vg_jp_eof(p);
	}
	return vg_jp_syntax(p, p->pos, "expected a value");
}

/* '{' or '[' at the current position: one level deeper. */
int vg_jp_open(struct vg_jp *p)
{
	if (++p->depth > VG_JSON_MAX_DEPTH)
		return vg_jp_syntax(p, p->pos, "nesting deeper than %d levels", VG_JSON_MAX_DEPTH);
	p->pos++;
	return 0;
}

/* The next member of the object opened by vg_jp_open: 1 with its key decoded into key (and the position at its
 * value), 0 after the closing '}', -1 on error. *i counts members so far. */
int vg_jp_member(struct vg_jp *p, size_t *i, struct vg_jp_out *key)
{
	int c = vg_jp_peek(p);

	if (c < 0)
		return vg_jp_eof(p);
	if (c == '}') {
		p->pos++;
		p->depth--;
		return 0;
	}
	if (*i > 0) {
		if (c != ',')
			return vg_jp_syntax(p, p->pos, "expected ',' or '}'");
		p->pos++;
		c = vg_jp_peek(p);
		if (c < 0)
			return vg_jp_eof(p);
	}
	if (c != '"')
		return vg_jp_syntax(p, p->pos, *i > 0 ? "expected a string key" : "expected a string key or '}'");
	if (key) {
		key->len = 0;
		key->full = key->nul = 0;
		if (key->buf && key->cap)
			key->buf[0] = '\0';
	}
	if (vg_jp_string(p, key) != 0)
		return -1;
	c = vg_jp_peek(p);
	if (c < 0)
		return vg_jp_eof(p);
	if (c != ':')
		return vg_jp_syntax(p, p->pos, "expected ':'");
	p->pos++;
	if (vg_jp_peek(p) < 0)
		return vg_jp_eof(p);
	(*i)++;
	return 1;
}

/* The next element of the array opened by vg_jp_open: 1 at its value, 0 after the closing ']', -1 on error. */
int vg_jp_element(struct vg_jp *p, size_t *i)
{
	int c = vg_jp_peek(p);

	if (c < 0)
		return vg_jp_eof(p);
	if (c == ']') {
		p->pos++;
		p->depth--;
		return 0;
	}
	if (*i > 0) {
		if (c != ',')
			return vg_jp_syntax(p, p->pos, "expected ',' or ']'");
		p->pos++;
		if (vg_jp_peek(p) < 0)
			return vg_jp_eof(p);
	}
	(*i)++;
	return 1;
}

/* Check and pass over any value (depth-limited, so the recursion is bounded). */
int vg_jp_skip(struct vg_jp *p)
{
	struct vg_jp_num n;
	size_t i = 0;
	int c = vg_jp_peek(p), rc, which;

	switch (c) {
	case -1:
		return vg_jp_eof(p);
	case '{':
		if (vg_jp_open(p) != 0)
			return -1;
		while ((rc = vg_jp_member(p, &i, NULL)) == 1)
			if (vg_jp_skip(p) != 0)
				return -1;
		return rc;
	case '[':
		if (vg_jp_open(p) != 0)
			return -1;
		while ((rc = vg_jp_element(p, &i)) == 1)
			if (vg_jp_skip(p) != 0)
				return -1;
		return rc;
	case '"':
		return vg_jp_string(p, NULL);
	case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
		return jp_number(p, &n);
	default:
		return vg_jp_literal(p, &which);
	}
}

/* ---- typed values ---- */

int vg_jp_is_number_start(int c)
{
	return c == '-' || (c >= '0' && c <= '9');
}

int vg_jp_uint(struct vg_jp *p, uint64_t max, uint64_t *v)
{
	struct vg_jp_num n;
	size_t i;

	*v = 0;
	if (!vg_jp_is_number_start(vg_jp_peek(p)))
		return vg_jp_field(p, "expected an unsigned integer");
	if (jp_number(p, &n) != 0)
		return -1;
	if (n.negative || !n.integer)
		return vg_jp_field(p, "expected an unsigned integer");
	for (i = n.start; i < n.end; i++) {
		unsigned d = p->s[i] - '0';
		if (*v > (max - d) / 10)
			return vg_jp_field(p, "out of range (at most %" PRIu64 ")", max);
		*v = *v * 10 + d;
	}
	return 0;
}

int vg_jp_int(struct vg_jp *p, int *out)
{
	struct vg_jp_num n;
	uint64_t v = 0, max;
	size_t i;

	if (!vg_jp_is_number_start(vg_jp_peek(p)))
		return vg_jp_field(p, "expected an integer");
	if (jp_number(p, &n) != 0)
		return -1;
	if (!n.integer)
		return vg_jp_field(p, "expected an integer");
	max = n.negative ? (uint64_t)INT_MAX + 1 : (uint64_t)INT_MAX;
	for (i = n.start + (size_t)n.negative; i < n.end; i++) {
		unsigned d = p->s[i] - '0';
		if (v > (max - d) / 10)
			return vg_jp_field(p, "out of range (%d to %d)", INT_MIN, INT_MAX);
		v = v * 10 + d;
	}
	*out = n.negative ? (int)(-(int64_t)v) : (int)v;
	return 0;
}

int vg_jp_bool(struct vg_jp *p, int *out)
{
	int c = vg_jp_peek(p), which;

	if (c != 't' && c != 'f')
		return vg_jp_field(p, "expected true or false");
	if (vg_jp_literal(p, &which) != 0)
		return -1;
	*out = which == 1;
	return 0;
}

/* A string into a fixed field of `size` bytes (NUL included), cut at a character boundary if longer. */
int vg_jp_str(struct vg_jp *p, char *dst, size_t size)
{
	struct vg_jp_out o = { .buf = dst, .cap = size };

	if (vg_jp_peek(p) != '"')
		return vg_jp_field(p, "expected a string");
	dst[0] = '\0';
	return vg_jp_string(p, &o);
}

/* An address: a string "0x" followed by 1 to 16 hex digits. */
int vg_jp_hex(struct vg_jp *p, uint64_t *v)
{
	char buf[24];
	struct vg_jp_out o = { .buf = buf, .cap = sizeof(buf) };
	size_t i;

	*v = 0;
	if (vg_jp_peek(p) != '"')
		goto bad;
	buf[0] = '\0';
	if (vg_jp_string(p, &o) != 0)
		return -1;
	if (o.full || o.nul || o.len < 3 || o.len > 18 || buf[0] != '0' || buf[1] != 'x')
		goto bad;
	for (i = 2; i < o.len; i++) {
		int d = jp_hexval((unsigned char)buf[i]);
		if (d < 0)
			goto bad;
		*v = *v << 4 | (uint64_t)d;
	}
	return 0;
bad:
	return vg_jp_field(p, "expected a hex string such as \"0x7f3a00000000\"");
}
