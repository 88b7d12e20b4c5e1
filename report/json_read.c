/* The JSON reader: a small recursive-descent parser over the text (no tree is built) and tables that map each
 * object of schema 1 onto the report model. Two passes: the first checks the syntax of the whole document and finds
 * "schema" wherever it is among the top-level keys, the second reads the fields, so a syntax error is reported as
 * such and a document of another schema is refused before any of its fields is judged. */
#include "report/json_read.h"
#include "config/config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the parser ---- */

struct jp {
	const unsigned char *s;
	size_t len, pos;
	int depth;
	int rc;                 /* 0, or the first failure: -EINVAL or -ENOMEM */
	char *err;
	size_t errlen;
	char path[256];         /* where the second pass is: "sites[2].frames[0].address" */
	size_t pathlen;
};

/* Decoded string output into a fixed buffer, cut before the first character that does not fit. */
struct jout {
	char *buf;              /* NULL: decode to check only */
	size_t cap, len;
	int full;               /* something was left out */
	int nul;                /* a \u0000 was decoded */
};

static void jp_seterr(struct jp *p, int rc, const char *msg)
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

static int jp_nomem(struct jp *p)
{
	jp_seterr(p, -ENOMEM, "out of memory");
	return -1;
}

/* A syntax error at byte offset `at`: "line 3, column 17: expected ',' or '}'". Columns count characters. */
static int __attribute__((format(printf, 3, 4))) jp_syntax(struct jp *p, size_t at, const char *fmt, ...)
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
	jp_seterr(p, -EINVAL, full);
	return -1;
}

static int jp_eof(struct jp *p)
{
	return jp_syntax(p, p->len, "unexpected end of input");
}

/* A value of the wrong kind in the second pass: "devices[0].used_bytes: expected an unsigned integer". */
static int __attribute__((format(printf, 2, 3))) jp_field(struct jp *p, const char *fmt, ...)
{
	char msg[256], full[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "%s: %s", p->pathlen ? p->path : "top level", msg);
	jp_seterr(p, -EINVAL, full);
	return -1;
}

static void jp_path_push(struct jp *p, const char *key, size_t index, int is_index)
{
	size_t room = sizeof(p->path) - p->pathlen;
	int n;

	if (is_index)
		n = snprintf(p->path + p->pathlen, room, "[%zu]", index);
	else
		n = snprintf(p->path + p->pathlen, room, "%s%s", p->pathlen ? "." : "", key);
	if (n > 0)
		p->pathlen = (size_t)n < room ? p->pathlen + (size_t)n : sizeof(p->path) - 1;
}

static void jp_path_pop(struct jp *p, size_t to)
{
	p->pathlen = to;
	p->path[to] = '\0';
}

static void jp_ws(struct jp *p)
{
	while (p->pos < p->len) {
		unsigned char c = p->s[p->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

/* The byte at the current position after whitespace, or -1 at the end. */
static int jp_peek(struct jp *p)
{
	jp_ws(p);
	return p->pos < p->len ? p->s[p->pos] : -1;
}

static void jout_put(struct jout *o, const void *bytes, size_t n)
{
	if (!o || o->full)
		return;
	if (!o->buf || o->len + n >= o->cap) {  /* keep room for the NUL; never half a character */
		o->full = o->buf != NULL;
		return;
	}
	memcpy(o->buf + o->len, bytes, n);
	if (memchr(bytes, 0, n))
		o->nul = 1;
	o->len += n;
	o->buf[o->len] = '\0';
}

static void jout_codepoint(struct jout *o, uint32_t cp)
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
static int jp_u_escape(struct jp *p, size_t at, uint32_t *cp)
{
	size_t i;

	*cp = 0;
	for (i = 0; i < 4; i++) {
		int v;
		if (at + 2 + i >= p->len)
			return jp_eof(p);
		v = jp_hexval(p->s[at + 2 + i]);
		if (v < 0)
			return jp_syntax(p, at, "invalid \\u escape (expected 4 hex digits)");
		*cp = *cp << 4 | (uint32_t)v;
	}
	return 0;
}

/* The string at the current position (its opening quote), decoded into o (NULL: checked only). */
static int jp_string(struct jp *p, struct jout *o)
{
	p->pos++;
	for (;;) {
		unsigned char c;
		size_t at = p->pos, k;

		if (at >= p->len)
			return jp_eof(p);
		c = p->s[at];
		if (c == '"') {
			p->pos++;
			return 0;
		}
		if (c < 0x20)
			return jp_syntax(p, at, "control character in a string (write it as \\u%04x)", c);
		if (c >= 0x80) {
			k = jp_utf8_char(p->s + at, p->len - at);
			if (!k)
				return jp_syntax(p, at, "invalid UTF-8 in a string");
			jout_put(o, p->s + at, k);
			p->pos += k;
			continue;
		}
		if (c != '\\') {
			jout_put(o, &c, 1);
			p->pos++;
			continue;
		}
		if (at + 1 >= p->len)
			return jp_eof(p);
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
			 * that are not UTF-8. */
			jout_codepoint(o, cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp);
			break;
		}
		default:
			if (c >= 0x20 && c < 0x7f)
				return jp_syntax(p, at, "invalid escape '\\%c' in a string", c);
			return jp_syntax(p, at, "invalid escape in a string");
		}
	}
}

struct jnum {
	size_t start, end;
	int negative;
	int integer;            /* no fraction, no exponent */
};

static int jp_isdigit(size_t i, const struct jp *p)
{
	return i < p->len && p->s[i] >= '0' && p->s[i] <= '9';
}

/* The number at the current position, by RFC 8259's grammar; only its extent and shape are kept. */
static int jp_number(struct jp *p, struct jnum *n)
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
		return jp_eof(p);
	if (p->s[i] == '0') {
		i++;
		if (jp_isdigit(i, p))
			return jp_syntax(p, i - 1, "invalid number (leading zero)");
	} else if (jp_isdigit(i, p)) {
		while (jp_isdigit(i, p))
			i++;
	} else {
		return jp_syntax(p, i, "invalid number");
	}
	if (i < p->len && p->s[i] == '.') {
		n->integer = 0;
		i++;
		if (i >= p->len)
			return jp_eof(p);
		if (!jp_isdigit(i, p))
			return jp_syntax(p, i, "invalid number (expected a digit after '.')");
		while (jp_isdigit(i, p))
			i++;
	}
	if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
		n->integer = 0;
		i++;
		if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
			i++;
		if (i >= p->len)
			return jp_eof(p);
		if (!jp_isdigit(i, p))
			return jp_syntax(p, i, "invalid number (expected a digit in the exponent)");
		while (jp_isdigit(i, p))
			i++;
	}
	n->end = p->pos = i;
	return 0;
}

/* true, false or null at the current position. */
static int jp_literal(struct jp *p, int *which)
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
			return jp_eof(p);
	}
	return jp_syntax(p, p->pos, "expected a value");
}

/* '{' or '[' at the current position: one level deeper. */
static int jp_open(struct jp *p)
{
	if (++p->depth > VG_JSON_MAX_DEPTH)
		return jp_syntax(p, p->pos, "nesting deeper than %d levels", VG_JSON_MAX_DEPTH);
	p->pos++;
	return 0;
}

/* The next member of the object opened by jp_open: 1 with its key decoded into key (and the position at its
 * value), 0 after the closing '}', -1 on error. *i counts members so far. */
static int jp_member(struct jp *p, size_t *i, struct jout *key)
{
	int c = jp_peek(p);

	if (c < 0)
		return jp_eof(p);
	if (c == '}') {
		p->pos++;
		p->depth--;
		return 0;
	}
	if (*i > 0) {
		if (c != ',')
			return jp_syntax(p, p->pos, "expected ',' or '}'");
		p->pos++;
		c = jp_peek(p);
		if (c < 0)
			return jp_eof(p);
	}
	if (c != '"')
		return jp_syntax(p, p->pos, *i > 0 ? "expected a string key" : "expected a string key or '}'");
	if (key) {
		key->len = 0;
		key->full = key->nul = 0;
		if (key->buf && key->cap)
			key->buf[0] = '\0';
	}
	if (jp_string(p, key) != 0)
		return -1;
	c = jp_peek(p);
	if (c < 0)
		return jp_eof(p);
	if (c != ':')
		return jp_syntax(p, p->pos, "expected ':'");
	p->pos++;
	if (jp_peek(p) < 0)
		return jp_eof(p);
	(*i)++;
	return 1;
}

/* The next element of the array opened by jp_open: 1 at its value, 0 after the closing ']', -1 on error. */
static int jp_element(struct jp *p, size_t *i)
{
	int c = jp_peek(p);

	if (c < 0)
		return jp_eof(p);
	if (c == ']') {
		p->pos++;
		p->depth--;
		return 0;
	}
	if (*i > 0) {
		if (c != ',')
			return jp_syntax(p, p->pos, "expected ',' or ']'");
		p->pos++;
		if (jp_peek(p) < 0)
			return jp_eof(p);
	}
	(*i)++;
	return 1;
}

/* Check and pass over any value (depth-limited, so the recursion is bounded). */
static int jp_skip(struct jp *p)
{
	struct jnum n;
	size_t i = 0;
	int c = jp_peek(p), rc, which;

	switch (c) {
	case -1:
		return jp_eof(p);
	case '{':
		if (jp_open(p) != 0)
			return -1;
		while ((rc = jp_member(p, &i, NULL)) == 1)
			if (jp_skip(p) != 0)
				return -1;
		return rc;
	case '[':
		if (jp_open(p) != 0)
			return -1;
		while ((rc = jp_element(p, &i)) == 1)
			if (jp_skip(p) != 0)
				return -1;
		return rc;
	case '"':
		return jp_string(p, NULL);
	case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
		return jp_number(p, &n);
	default:
		return jp_literal(p, &which);
	}
}

/* ---- typed values (second pass: the syntax is known good, the kinds are not) ---- */

static int jp_is_number_start(int c)
{
	return c == '-' || (c >= '0' && c <= '9');
}

static int jp_uint(struct jp *p, uint64_t max, uint64_t *v)
{
	struct jnum n;
	size_t i;

	*v = 0;
	if (!jp_is_number_start(jp_peek(p)))
		return jp_field(p, "expected an unsigned integer");
	if (jp_number(p, &n) != 0)
		return -1;
	if (n.negative || !n.integer)
		return jp_field(p, "expected an unsigned integer");
	for (i = n.start; i < n.end; i++) {
		unsigned d = p->s[i] - '0';
		if (*v > (max - d) / 10)
			return jp_field(p, "out of range (at most %" PRIu64 ")", max);
		*v = *v * 10 + d;
	}
	return 0;
}

static int jp_int(struct jp *p, int *out)
{
	struct jnum n;
	uint64_t v = 0, max;
	size_t i;

	if (!jp_is_number_start(jp_peek(p)))
		return jp_field(p, "expected an integer");
	if (jp_number(p, &n) != 0)
		return -1;
	if (!n.integer)
		return jp_field(p, "expected an integer");
	max = n.negative ? (uint64_t)INT_MAX + 1 : (uint64_t)INT_MAX;
	for (i = n.start + (size_t)n.negative; i < n.end; i++) {
		unsigned d = p->s[i] - '0';
		if (v > (max - d) / 10)
			return jp_field(p, "out of range (%d to %d)", INT_MIN, INT_MAX);
		v = v * 10 + d;
	}
	*out = n.negative ? (int)(-(int64_t)v) : (int)v;
	return 0;
}

static int jp_bool(struct jp *p, int *out)
{
	int c = jp_peek(p), which;

	if (c != 't' && c != 'f')
		return jp_field(p, "expected true or false");
	if (jp_literal(p, &which) != 0)
		return -1;
	*out = which == 1;
	return 0;
}

/* A string into a fixed field of `size` bytes (NUL included), cut at a character boundary if longer. */
static int jp_str(struct jp *p, char *dst, size_t size)
{
	struct jout o = { .buf = dst, .cap = size };

	if (jp_peek(p) != '"')
		return jp_field(p, "expected a string");
	dst[0] = '\0';
	return jp_string(p, &o);
}

/* An address: a string "0x" followed by 1 to 16 hex digits. */
static int jp_hex(struct jp *p, uint64_t *v)
{
	char buf[24];
	struct jout o = { .buf = buf, .cap = sizeof(buf) };
	size_t i;

	*v = 0;
	if (jp_peek(p) != '"')
		goto bad;
	buf[0] = '\0';
	if (jp_string(p, &o) != 0)
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
	return jp_field(p, "expected a hex string such as \"0x7f3a00000000\"");
}

/* ---- the schema: one table per object ---- */

enum jr_type { JR_U64, JR_U32, JR_INT, JR_BOOL, JR_STR, JR_HEX, JR_CUSTOM };

struct jr_field {
	const char *key;
	enum jr_type type;
	size_t off;                                     /* of the destination in the object's struct */
	size_t size;                                    /* JR_STR: the destination array's size */
	int (*read)(struct jp *p, void *obj);           /* JR_CUSTOM: reads the value into obj */
	int optional;                                   /* added after the schema's first version: may be absent */
};

#define JR_FIELD(st, key, type, member) { #key, type, offsetof(st, member), 0, NULL, 0 }
#define JR_STRING(st, key, member) { #key, JR_STR, offsetof(st, member), sizeof(((st *)0)->member), NULL, 0 }
#define JR_OTHER(key, fn) { #key, JR_CUSTOM, 0, 0, fn, 0 }
/* Keys a minor version added: a report of an older version lacks them (they read as 0 / "" then). */
#define JR_FIELD_OPT(st, key, type, member) { #key, type, offsetof(st, member), 0, NULL, 1 }
#define JR_STRING_OPT(st, key, member) { #key, JR_STR, offsetof(st, member), sizeof(((st *)0)->member), NULL, 1 }
#define JR_OTHER_OPT(key, fn) { #key, JR_CUSTOM, 0, 0, fn, 1 }

static int jr_read(struct jp *p, const struct jr_field *f, void *obj)
{
	char *dst = (char *)obj + f->off;
	uint64_t v;

	switch (f->type) {
	case JR_U64:
		return jp_uint(p, UINT64_MAX, (uint64_t *)(void *)dst);
	case JR_U32:
		if (jp_uint(p, UINT32_MAX, &v) != 0)
			return -1;
		*(uint32_t *)(void *)dst = (uint32_t)v;
		return 0;
	case JR_INT:
		return jp_int(p, (int *)(void *)dst);
	case JR_BOOL:
		return jp_bool(p, (int *)(void *)dst);
	case JR_STR:
		return jp_str(p, dst, f->size);
	case JR_HEX:
		return jp_hex(p, (uint64_t *)(void *)dst);
	case JR_CUSTOM:
		return f->read(p, obj);
	}
	return -1;
}

/* One object: the table's keys are required but for the optional ones, the others are passed over; a repeated key's
 * last value wins. */
static int jr_object(struct jp *p, const struct jr_field *f, size_t nf, void *obj)
{
	char kbuf[64];
	struct jout key = { .buf = kbuf, .cap = sizeof(kbuf) };
	uint64_t seen = 0;
	size_t i = 0, k, at = p->pathlen;
	int rc;

	if (jp_peek(p) != '{')
		return jp_field(p, "expected an object");
	if (jp_open(p) != 0)
		return -1;
	while ((rc = jp_member(p, &i, &key)) == 1) {
		for (k = 0; k < nf && (key.full || key.nul || strcmp(kbuf, f[k].key) != 0); k++)
			;
		if (k == nf) {
			if (jp_skip(p) != 0)
				return -1;
			continue;
		}
		seen |= (uint64_t)1 << k;
		jp_path_push(p, f[k].key, 0, 0);
		rc = jr_read(p, &f[k], obj);
		jp_path_pop(p, at);
		if (rc != 0)
			return -1;
	}
	if (rc != 0)
		return -1;
	for (k = 0; k < nf; k++)
		if (!(seen & (uint64_t)1 << k) && !f[k].optional) {
			char msg[300];
			jp_path_push(p, f[k].key, 0, 0);
			snprintf(msg, sizeof(msg), "missing required key '%s'", p->path);
			jp_seterr(p, -EINVAL, msg);
			return -1;
		}
	return 0;
}

/* One array of structs of esize bytes, each read by elem; on failure whatever was built is freed (efree frees what
 * one element owns). */
static int jr_array(struct jp *p, size_t esize, int (*elem)(struct jp *, void *), void (*efree)(void *),
		    void **out, size_t *outn)
{
	char *v = NULL;
	size_t n = 0, cap = 0, i = 0, at = p->pathlen, j;
	int rc;

	*out = NULL;
	*outn = 0;
	if (jp_peek(p) != '[')
		return jp_field(p, "expected an array");
	if (jp_open(p) != 0)
		return -1;
	while ((rc = jp_element(p, &i)) == 1) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			char *nv = ncap <= SIZE_MAX / esize / 2 ? realloc(v, ncap * esize) : NULL;
			if (!nv) {
				rc = jp_nomem(p);
				break;
			}
			v = nv;
			cap = ncap;
		}
		memset(v + n * esize, 0, esize);
		n++;
		jp_path_push(p, NULL, n - 1, 1);
		rc = elem(p, v + (n - 1) * esize);
		jp_path_pop(p, at);
		if (rc != 0)
			break;
	}
	if (rc != 0) {
		for (j = 0; efree && j < n; j++)
			efree(v + j * esize);
		free(v);
		return -1;
	}
	*out = v;
	*outn = n;
	return 0;
}

/* devices[] */

static int jr_quota(struct jp *p, void *obj)
{
	struct vg_report_device *d = obj;
	int which;

	if (jp_peek(p) == 'n') {
		d->quota_set = 0;
		d->quota_bytes = 0;
		return jp_literal(p, &which);
	}
	if (!jp_is_number_start(jp_peek(p)))
		return jp_field(p, "expected an unsigned integer or null");
	d->quota_set = 1;
	return jp_uint(p, UINT64_MAX, &d->quota_bytes);
}

static int jr_driver_limit(struct jp *p, void *obj)
{
	struct vg_report_device *d = obj;
	int which;
	if (jp_peek(p) == 'n') {
		d->driver_limit_set = 0;
		return jp_literal(p, &which);
	}
	if (!jp_is_number_start(jp_peek(p)))
		return jp_field(p, "expected an unsigned integer or null");
	d->driver_limit_set = 1;
	return jp_uint(p, UINT64_MAX, &d->driver_limit_bytes);
}

/* soft_limit_bytes and soft_limit_source: integer and string, or null (no soft limit); older reports lack both. */
static int jr_soft(struct jp *p, void *obj)
{
	struct vg_report_device *d = obj;
	int which;

	if (jp_peek(p) == 'n') {
		d->soft_set = 0;
		d->soft_bytes = 0;
		return jp_literal(p, &which);
	}
	if (!jp_is_number_start(jp_peek(p)))
		return jp_field(p, "expected an unsigned integer or null");
	d->soft_set = 1;
	return jp_uint(p, UINT64_MAX, &d->soft_bytes);
}

static int jr_soft_source(struct jp *p, void *obj)
{
	struct vg_report_device *d = obj;
	int which;

	if (jp_peek(p) == 'n') {
		d->soft_source[0] = '\0';
		return jp_literal(p, &which);
	}
	if (jp_peek(p) != '"')
		return jp_field(p, "expected a string or null");
	return jp_str(p, d->soft_source, sizeof(d->soft_source));
}

#define DEV struct vg_report_device
static const struct jr_field jr_device_fields[] = {
	JR_FIELD(DEV, ordinal, JR_INT, ordinal),
	JR_STRING(DEV, uuid, uuid),
	JR_OTHER(quota_bytes, jr_quota),
	JR_OTHER_OPT(soft_limit_bytes, jr_soft),
	JR_OTHER_OPT(soft_limit_source, jr_soft_source),
	JR_FIELD(DEV, total_bytes, JR_U64, total_bytes),
	JR_FIELD(DEV, used_bytes, JR_U64, used_bytes),
	JR_FIELD(DEV, peak_bytes, JR_U64, peak_bytes),
	JR_FIELD(DEV, allocs, JR_U64, allocs),
	JR_FIELD(DEV, frees, JR_U64, frees),
	JR_FIELD(DEV, denied_count, JR_U64, denied_count),
	JR_FIELD(DEV, denied_bytes, JR_U64, denied_bytes),
	JR_FIELD(DEV, largest_bytes, JR_U64, largest_bytes),
	JR_FIELD_OPT(DEV, allocated_bytes, JR_U64, allocated_bytes),
	JR_FIELD_OPT(DEV, pool_reserved_bytes, JR_U64, pool_reserved_bytes),
	JR_FIELD_OPT(DEV, pool_live_bytes, JR_U64, pool_live_bytes),
	JR_FIELD_OPT(DEV, graph_bytes, JR_U64, graph_bytes),
	JR_FIELD_OPT(DEV, driver_bytes, JR_U64, driver_bytes),
	JR_FIELD_OPT(DEV, driver_headroom_bytes, JR_U64, driver_headroom_bytes),
	JR_FIELD_OPT(DEV, driver_measured, JR_BOOL, driver_measured),
	JR_OTHER_OPT(driver_limit_bytes, jr_driver_limit),
};
#undef DEV

static int jr_device(struct jp *p, void *elem)
{
	return jr_object(p, jr_device_fields, sizeof(jr_device_fields) / sizeof(jr_device_fields[0]), elem);
}

static int jr_devices(struct jp *p, void *obj)
{
	struct vg_report *r = obj;
	void *v;
	size_t n;

	if (jr_array(p, sizeof(struct vg_report_device), jr_device, NULL, &v, &n) != 0)
		return -1;
	free(r->devices);
	r->devices = v;
	r->ndevices = n;
	return 0;
}

/* sites[] and their frames[] */

#define FRAME struct vg_report_frame
static const struct jr_field jr_frame_fields[] = {
	JR_FIELD(FRAME, address, JR_HEX, address),
	JR_STRING(FRAME, module, module),
	JR_FIELD(FRAME, module_offset, JR_HEX, module_offset),
	JR_STRING(FRAME, symbol, symbol),
	JR_FIELD(FRAME, offset, JR_U64, symbol_offset),
};
#undef FRAME

static int jr_frame(struct jp *p, void *elem)
{
	return jr_object(p, jr_frame_fields, sizeof(jr_frame_fields) / sizeof(jr_frame_fields[0]), elem);
}

/* All the frames the document has, even past VG_REPORT_MAX_FRAMES: the renderers take any number. */
static int jr_frames(struct jp *p, void *obj)
{
	struct vg_report_site *s = obj;
	void *v;
	size_t n;

	if (jr_array(p, sizeof(struct vg_report_frame), jr_frame, NULL, &v, &n) != 0)
		return -1;
	if (n > UINT32_MAX) {
		free(v);
		return jp_field(p, "too many frames");
	}
	free(s->frames);
	s->frames = v;
	s->nframes = (uint32_t)n;
	return 0;
}

#define SITE struct vg_report_site
static const struct jr_field jr_site_fields[] = {
	JR_FIELD(SITE, id, JR_U32, id),
	JR_STRING(SITE, api, api),
	JR_FIELD(SITE, live_count, JR_U64, live_count),
	JR_FIELD(SITE, live_bytes, JR_U64, live_bytes),
	JR_FIELD(SITE, total_allocs, JR_U64, total_allocs),
	JR_FIELD(SITE, total_bytes, JR_U64, total_bytes),
	JR_OTHER(frames, jr_frames),
};
#undef SITE

static int jr_site(struct jp *p, void *elem)
{
	return jr_object(p, jr_site_fields, sizeof(jr_site_fields) / sizeof(jr_site_fields[0]), elem);
}

static void jr_site_free(void *elem)
{
	struct vg_report_site *s = elem;
	free(s->frames);
	s->frames = NULL;
}

static int jr_sites(struct jp *p, void *obj)
{
	struct vg_report *r = obj;
	void *v;
	size_t n, i;

	if (jr_array(p, sizeof(struct vg_report_site), jr_site, jr_site_free, &v, &n) != 0)
		return -1;
	for (i = 0; r->sites && i < r->nsites; i++)
		jr_site_free(&r->sites[i]);
	free(r->sites);
	r->sites = v;           /* in the document's order: the writer sorted them */
	r->nsites = n;
	return 0;
}

/* allocations{} */

struct jr_allocations {
	uint64_t live, listed;
	size_t n;
	struct vg_report_alloc *v;
};

#define ALLOC struct vg_report_alloc
static const struct jr_field jr_alloc_fields[] = {
	JR_FIELD(ALLOC, address, JR_HEX, address),
	JR_FIELD(ALLOC, bytes, JR_U64, bytes),
	JR_FIELD(ALLOC, device, JR_INT, device),
	JR_STRING(ALLOC, api, api),
	JR_FIELD(ALLOC, site, JR_U32, site),
	JR_FIELD(ALLOC, thread, JR_U32, thread),
	JR_FIELD(ALLOC, time_ns, JR_U64, time_ns),
};
#undef ALLOC

static int jr_alloc(struct jp *p, void *elem)
{
	return jr_object(p, jr_alloc_fields, sizeof(jr_alloc_fields) / sizeof(jr_alloc_fields[0]), elem);
}

static int jr_largest(struct jp *p, void *obj)
{
	struct jr_allocations *a = obj;
	void *v;
	size_t n;

	if (jr_array(p, sizeof(struct vg_report_alloc), jr_alloc, NULL, &v, &n) != 0)
		return -1;
	free(a->v);
	a->v = v;
	a->n = n;
	return 0;
}

#define ALLOCS struct jr_allocations
static const struct jr_field jr_allocations_fields[] = {
	JR_FIELD(ALLOCS, live, JR_U64, live),
	JR_FIELD(ALLOCS, listed, JR_U64, listed),
	JR_OTHER(largest, jr_largest),
};
#undef ALLOCS

static int jr_allocations(struct jp *p, void *obj)
{
	struct vg_report *r = obj;
	struct jr_allocations a = { 0 };
	size_t at = p->pathlen;

	if (jr_object(p, jr_allocations_fields, sizeof(jr_allocations_fields) / sizeof(jr_allocations_fields[0]),
		      &a) != 0) {
		free(a.v);
		return -1;
	}
	if (a.listed != a.n) {
		free(a.v);
		jp_path_push(p, "listed", 0, 0);
		jp_field(p, "%" PRIu64 " but largest has %zu %s", a.listed, a.n, a.n == 1 ? "entry" : "entries");
		jp_path_pop(p, at);
		return -1;
	}
	free(r->allocs);
	r->allocs = a.v;
	r->nallocs = a.n;
	r->allocs_live = a.live;
	return 0;
}

/* streams{} */

#define EVENT struct vg_report_stream_event
static const struct jr_field jr_event_fields[] = {
	JR_FIELD(EVENT, create_site, JR_U32, create_site),
	JR_FIELD(EVENT, destroy_site, JR_U32, destroy_site),
	JR_FIELD(EVENT, count, JR_U64, count),
	JR_FIELD(EVENT, synchronized, JR_BOOL, synchronized),
};
#undef EVENT

static int jr_event(struct jp *p, void *elem)
{
	return jr_object(p, jr_event_fields, sizeof(jr_event_fields) / sizeof(jr_event_fields[0]), elem);
}

static int jr_events(struct jp *p, void *obj)
{
	struct vg_report *r = obj;
	void *v;
	size_t n;

	if (jr_array(p, sizeof(struct vg_report_stream_event), jr_event, NULL, &v, &n) != 0)
		return -1;
	free(r->stream_events);
	r->stream_events = v;
	r->nstream_events = n;
	return 0;
}

#define LIVE struct vg_report_stream_live
static const struct jr_field jr_live_fields[] = {
	JR_FIELD(LIVE, create_site, JR_U32, create_site),
	JR_FIELD(LIVE, count, JR_U64, count),
	JR_FIELD(LIVE, pending, JR_U64, pending),
	JR_FIELD(LIVE, capturing, JR_U64, capturing),
};
#undef LIVE

static int jr_live_one(struct jp *p, void *elem)
{
	return jr_object(p, jr_live_fields, sizeof(jr_live_fields) / sizeof(jr_live_fields[0]), elem);
}

static int jr_live(struct jp *p, void *obj)
{
	struct vg_report *r = obj;
	void *v;
	size_t n;

	if (jr_array(p, sizeof(struct vg_report_stream_live), jr_live_one, NULL, &v, &n) != 0)
		return -1;
	free(r->stream_live);
	r->stream_live = v;
	r->nstream_live = n;
	return 0;
}

#define REPORT struct vg_report
static const struct jr_field jr_streams_fields[] = {
	JR_FIELD(REPORT, created, JR_U64, streams_created),
	JR_FIELD(REPORT, destroyed, JR_U64, streams_destroyed),
	JR_OTHER(destroyed_pending, jr_events),
	JR_OTHER(live, jr_live),
};

static int jr_streams(struct jp *p, void *obj)
{
	return jr_object(p, jr_streams_fields, sizeof(jr_streams_fields) / sizeof(jr_streams_fields[0]), obj);
}

/* The top level. "schema" is checked by the first pass; "time" is time_ns again, for people. */
static const struct jr_field jr_report_fields[] = {
	JR_STRING(REPORT, reason, reason),
	JR_FIELD(REPORT, sequence, JR_U64, sequence),
	JR_FIELD(REPORT, pid, JR_INT, pid),
	JR_FIELD(REPORT, time_ns, JR_U64, time_ns),
	JR_STRING(REPORT, command, command),
	JR_STRING(REPORT, hostname, hostname),
	JR_STRING(REPORT, version, version),
	JR_STRING(REPORT, driver, driver),
	JR_FIELD(REPORT, backtrace_depth, JR_INT, backtrace_depth),
	JR_STRING_OPT(REPORT, count, count),
	JR_OTHER(devices, jr_devices),
	JR_OTHER(sites, jr_sites),
	JR_OTHER(allocations, jr_allocations),
	JR_OTHER(streams, jr_streams),
};
#undef REPORT

/* ---- the two passes ---- */

/* First pass: the whole document's syntax, one object and nothing after it; the last "schema" at the top level. */
static int jp_check(struct jp *p)
{
	char sbuf[64], kbuf[16];
	struct jout key = { .buf = kbuf, .cap = sizeof(kbuf) };
	struct jout schema = { .buf = sbuf, .cap = sizeof(sbuf) };
	int found = 0, is_string = 0, rc;
	size_t i = 0;

	sbuf[0] = '\0';
	if (p->len >= 3 && memcmp(p->s, "\xef\xbb\xbf", 3) == 0)
		p->pos = 3;     /* a byte order mark, which RFC 8259 lets a parser ignore */
	rc = jp_peek(p);
	if (rc < 0)
		return jp_syntax(p, p->pos, "empty document (expected a vramguard report, a JSON object)");
	if (rc != '{')
		return jp_syntax(p, p->pos, "expected '{' (a vramguard report is a JSON object)");
	if (jp_open(p) != 0)
		return -1;
	while ((rc = jp_member(p, &i, &key)) == 1) {
		if (!key.full && !key.nul && strcmp(kbuf, "schema") == 0) {
			found = 1;
			is_string = jp_peek(p) == '"';
			if (is_string) {
				schema.len = 0;
				schema.full = schema.nul = 0;
				sbuf[0] = '\0';
				rc = jp_string(p, &schema);
			} else {
				rc = jp_skip(p);
			}
		} else {
			rc = jp_skip(p);
		}
		if (rc != 0)
			return -1;
	}
	if (rc != 0)
		return -1;
	if (jp_peek(p) >= 0)
		return jp_syntax(p, p->pos, "unexpected data after the end of the document");
	if (!found) {
		jp_seterr(p, -EINVAL, "missing required key 'schema' (not a vramguard report?)");
		return -1;
	}
	if (!is_string) {
		jp_seterr(p, -EINVAL, "schema: expected a string");
		return -1;
	}
	if (schema.full || schema.nul || strcmp(sbuf, VG_REPORT_SCHEMA) != 0) {
		char msg[256];
		snprintf(msg, sizeof(msg), "unsupported schema '%s%s' (this vramguard reads " VG_REPORT_SCHEMA ")", sbuf,
			 schema.full ? "..." : "");
		jp_seterr(p, -EINVAL, msg);
		return -1;
	}
	return 0;
}

int vg_report_from_json(const char *text, size_t len, struct vg_report *out, char *err, size_t errlen)
{
	struct jp p;

	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	p.s = (const unsigned char *)(text ? text : "");
	p.len = text ? len : 0;
	p.err = err;
	p.errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
	if (jp_check(&p) == 0) {
		p.pos = p.depth = 0;
		if (p.len >= 3 && memcmp(p.s, "\xef\xbb\xbf", 3) == 0)
			p.pos = 3;
		jr_object(&p, jr_report_fields, sizeof(jr_report_fields) / sizeof(jr_report_fields[0]), out);
	}
	if (p.rc) {
		vg_report_free(out);
		memset(out, 0, sizeof(*out));
	}
	return p.rc;
}

/* ---- files ---- */

int vg_report_read_file(const char *path, struct vg_report *out, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0, cap = 0, hint = 65536;
	int fd, e = 0, rc;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		goto fail;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		if ((uint64_t)st.st_size > VG_JSON_MAX_FILE) {
			e = EFBIG;
			goto fail;
		}
		hint = (size_t)st.st_size + 1;  /* +1: the read that sees the end */
	}
	for (;;) {
		ssize_t k;
		if (n == cap) {
			size_t ncap = buf ? cap * 2 : hint;
			char *nb;
			if (ncap > VG_JSON_MAX_FILE + 1)
				ncap = VG_JSON_MAX_FILE + 1;
			if (n >= ncap) {        /* a pipe or a file that grew past the limit */
				e = EFBIG;
				goto fail;
			}
			nb = realloc(buf, ncap);
			if (!nb) {
				e = ENOMEM;
				goto fail;
			}
			buf = nb;
			cap = ncap;
		}
		k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			e = errno;
			goto fail;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	if (n > VG_JSON_MAX_FILE) {
		e = EFBIG;
		goto fail;
	}
	close(fd);
	rc = vg_report_from_json(buf, n, out, err, errlen);
	free(buf);
	return rc;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	if (err && errlen) {
		char q[VG_QUOTE_BUF];
		snprintf(err, errlen, "cannot read %s: %s", vg_quote(path, q, sizeof(q)), strerror(e));
	}
	return -e;
}
