/* The growable output buffer every renderer appends to (report, diff, top), and the text helpers they share.
 * It allocates: never use it from a signal handler. */
#ifndef VG_STRBUF_H
#define VG_STRBUF_H

#include <stddef.h>
#include <stdint.h>

/* On allocation failure it sets .failed and drops further output. */
struct vg_strbuf {
	char *data;
	size_t len, cap;
	int failed;
};
void vg_strbuf_free(struct vg_strbuf *b);
void vg_strbuf_add(struct vg_strbuf *b, const char *s, size_t n);
void vg_strbuf_printf(struct vg_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vg_strbuf_str(struct vg_strbuf *b, const char *s);
void vg_strbuf_spaces(struct vg_strbuf *b, size_t n);
/* 0, or -ENOMEM if some output was dropped. */
int vg_strbuf_result(const struct vg_strbuf *b);

/* vg_text_str appends at most max bytes of s with control characters escaped (\n, \t, \xNN), so no path or
 * command line can start a line of its own; vg_text_width counts terminal columns (UTF-8 continuation bytes take
 * none); vg_text_pad appends s padded to width columns. */
void vg_text_str(struct vg_strbuf *b, const char *s, size_t max);
size_t vg_text_width(const char *s, size_t n);
void vg_text_pad(struct vg_strbuf *b, const char *s, size_t width);

static inline const char *vg_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

#endif
