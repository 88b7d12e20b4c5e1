/* A JSON reader for documents held in memory: strict RFC 8259, no tree. The caller walks the document with a cursor
 * (struct vg_jp): vg_jp_peek says what comes next, vg_jp_open / vg_jp_member / vg_jp_element step through objects
 * and arrays, the typed readers take one value, vg_jp_skip checks and passes over any. Nesting is limited to
 * VG_JSON_MAX_DEPTH, so the recursion is bounded whatever the input. The first failure sticks: it sets rc and a
 * one-line message in err (a syntax error with its line and column, a value error with the path the caller keeps,
 * "devices[0].used_bytes: expected an unsigned integer"); every call after it returns -1. libc only; it reads, it
 * never allocates. */
#ifndef VG_JSON_H
#define VG_JSON_H

#include <stddef.h>
#include <stdint.h>

#define VG_JSON_MAX_DEPTH 64                    /* nesting levels of objects and arrays */

struct vg_jp {
	const unsigned char *s;
	size_t len, pos;
	int depth;
	int rc;                 /* 0, or the first failure: -EINVAL or -ENOMEM */
	char *err;
	size_t errlen;
	char path[256];         /* where the caller is, for value errors: "sites[2].frames[0].address" */
	size_t pathlen;
	int text_only;          /* set after vg_jp_init: every string, read or passed over, must be text: a \u0000 or a
				 * \u escape of a lone surrogate is refused (a syntax error), not kept or made U+FFFD */
};

/* Decoded string output into a fixed buffer, cut before the first character that does not fit. */
struct vg_jp_out {
	char *buf;              /* NULL: decode to check only */
	size_t cap, len;
	int full;               /* something was left out */
	int nul;                /* a \u0000 was decoded */
};

/* A cursor at the start of text (after a UTF-8 byte order mark, which RFC 8259 lets a parser ignore); err gets the
 * first failure's message (err may be NULL). vg_jp_rewind goes back to the start for another pass. */
void vg_jp_init(struct vg_jp *p, const char *text, size_t len, char *err, size_t errlen);
void vg_jp_rewind(struct vg_jp *p);

/* Failures; each returns -1 (and keeps the first failure). vg_jp_syntax: at byte offset `at`, as "line 3, column
 * 17: MSG"; vg_jp_eof: "unexpected end of input"; vg_jp_field: the value at the current path is not what was
 * wanted, "PATH: MSG"; vg_jp_seterr: a message as it is (control characters become '?'). */
void vg_jp_seterr(struct vg_jp *p, int rc, const char *msg);
int vg_jp_nomem(struct vg_jp *p);
int vg_jp_syntax(struct vg_jp *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int vg_jp_eof(struct vg_jp *p);
int vg_jp_field(struct vg_jp *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The path for value errors: push a key (is_index 0) or an index; pop back to a length saved before. */
void vg_jp_path_push(struct vg_jp *p, const char *key, size_t index, int is_index);
void vg_jp_path_pop(struct vg_jp *p, size_t to);

/* The next byte after whitespace, or -1 at the end. */
int vg_jp_peek(struct vg_jp *p);
int vg_jp_is_number_start(int c);

/* Structure. vg_jp_open: at '{' or '[', one level deeper. vg_jp_member: the next member of an open object: 1 with
 * its key decoded into key (may be NULL) and the cursor at its value, 0 after the closing '}'; *i counts members.
 * vg_jp_element: the same for an array (1 at a value, 0 after ']'). Both return -1 on error. */
int vg_jp_open(struct vg_jp *p);
int vg_jp_member(struct vg_jp *p, size_t *i, struct vg_jp_out *key);
int vg_jp_element(struct vg_jp *p, size_t *i);
int vg_jp_skip(struct vg_jp *p);

/* Values, 0 or -1. vg_jp_string: the string at the cursor (its opening quote) decoded into o (NULL: checked only);
 * a \u escape of a lone surrogate becomes U+FFFD (refused with text_only). vg_jp_literal: false, true or null (*which 0, 1, 2). The typed
 * readers fail with vg_jp_field when the value is of another kind or out of range: vg_jp_uint (at most max),
 * vg_jp_int, vg_jp_bool, vg_jp_str (into a char array of size bytes, cut at a character boundary), vg_jp_hex (a
 * string "0x" and 1 to 16 hex digits, such as "0x7f3a00000000"). */
int vg_jp_string(struct vg_jp *p, struct vg_jp_out *o);
int vg_jp_literal(struct vg_jp *p, int *which);
int vg_jp_uint(struct vg_jp *p, uint64_t max, uint64_t *v);
int vg_jp_int(struct vg_jp *p, int *out);
int vg_jp_bool(struct vg_jp *p, int *out);
int vg_jp_str(struct vg_jp *p, char *dst, size_t size);
int vg_jp_hex(struct vg_jp *p, uint64_t *v);

#endif
