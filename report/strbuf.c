/* The growable output buffer and the terminal-text helpers (report/strbuf.h). No stdio streams. */
#include "report/strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vg_strbuf_free(struct vg_strbuf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
}

/* Make room for n more bytes plus the NUL. On failure marks the buffer failed (its content stays as it was). */
static int vg_strbuf_reserve(struct vg_strbuf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (b->failed)
		return -ENOMEM;
	if (n > SIZE_MAX - b->len - 1)
		goto fail;
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap < 256 ? 256 : b->cap;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			goto fail;
		cap *= 2;
	}
	p = realloc(b->data, cap);
	if (!p)
		goto fail;
	b->data = p;
	b->cap = cap;
	return 0;
fail:
	b->failed = 1;
	return -ENOMEM;
}

void vg_strbuf_add(struct vg_strbuf *b, const char *s, size_t n)
{
	if (vg_strbuf_reserve(b, n) != 0)
		return;
	if (n)
		memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void vg_strbuf_printf(struct vg_strbuf *b, const char *fmt, ...)
{
	va_list ap, aq;
	size_t room;
	int n;

	if (b->failed)
		return;
	va_start(ap, fmt);
	va_copy(aq, ap);
	room = b->cap > b->len ? b->cap - b->len : 0;
	n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = 1;
	} else if ((size_t)n >= room) {
		if (vg_strbuf_reserve(b, (size_t)n) == 0) {
			vsnprintf(b->data + b->len, b->cap - b->len, fmt, aq);
			b->len += (size_t)n;
		}
	} else {
		b->len += (size_t)n;
	}
	va_end(aq);
	if (b->data)
		b->data[b->len] = '\0';     /* a failed or truncated attempt may have written past len */
}

void vg_strbuf_str(struct vg_strbuf *b, const char *s)
{
	vg_strbuf_add(b, s, strlen(s));
}

void vg_strbuf_spaces(struct vg_strbuf *b, size_t n)
{
	static const char sp[] = "                                                                ";
	while (n > 0) {
		size_t k = n < sizeof(sp) - 1 ? n : sizeof(sp) - 1;
		vg_strbuf_add(b, sp, k);
		n -= k;
	}
}

int vg_strbuf_result(const struct vg_strbuf *b)
{
	return b->failed ? -ENOMEM : 0;
}

/* ---- text for terminals ---- */

/* A string from the model for a terminal: control characters are escaped so that a hostile module path or
 * command line can never start a line of its own (the block must stay one block on stderr). */
void vg_text_str(struct vg_strbuf *b, const char *s, size_t max)
{
	size_t n = strnlen(s, max), i, run = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != 0x7f)
			continue;
		vg_strbuf_add(b, s + run, i - run);
		if (c == '\n')
			vg_strbuf_add(b, "\\n", 2);
		else if (c == '\t')
			vg_strbuf_add(b, "\\t", 2);
		else
			vg_strbuf_printf(b, "\\x%02x", c);
		run = i + 1;
	}
	vg_strbuf_add(b, s + run, n - run);
}

/* Columns a string takes on a terminal, roughly: UTF-8 continuation bytes take none. */
size_t vg_text_width(const char *s, size_t n)
{
	size_t i, w = 0;
	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			w++;
	return w;
}

void vg_text_pad(struct vg_strbuf *b, const char *s, size_t width)
{
	size_t w = vg_text_width(s, strlen(s));
	vg_strbuf_str(b, s);
	if (w < width)
		vg_strbuf_spaces(b, width - w);
}
