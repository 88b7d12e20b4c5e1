/* Aligned text tables (cli/table.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli/table.h"

void vg_tab_init(struct vg_tab *t, size_t ncols, const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->align = align;
}

void vg_tab_row(struct vg_tab *t, const char *const *cells)
{
	if (t->failed)
		return;
	if ((t->nrows + 1) * t->ncols > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : t->ncols * 16;
		char **nc = realloc(t->cell, cap * sizeof(*nc));
		if (!nc) {
			t->failed = 1;
			return;
		}
		t->cell = nc;
		t->cap = cap;
	}
	for (size_t c = 0; c < t->ncols; c++) {
		struct vg_strbuf b = { 0 };
		vg_text_str(&b, cells[c] ? cells[c] : "", 4096);
		vg_strbuf_add(&b, "", 1);
		if (b.failed || !b.data) {
			vg_strbuf_free(&b);
			t->failed = 1;
			return;
		}
		t->cell[t->nrows * t->ncols + c] = b.data;     /* owned by the table now */
	}
	t->nrows++;
}

void vg_tab_render(const struct vg_tab *t, struct vg_strbuf *out, const char *indent)
{
	size_t w[16] = { 0 };
	if (t->failed) {
		out->failed = 1;
		return;
	}
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols && c < 16; c++) {
			const char *s = t->cell[r * t->ncols + c];
			size_t n = vg_text_width(s, strlen(s));
			if (n > w[c])
				w[c] = n;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		vg_strbuf_str(out, indent);
		for (size_t c = 0; c < t->ncols && c < 16; c++) {
			const char *s = t->cell[r * t->ncols + c];
			size_t n = vg_text_width(s, strlen(s));
			bool last = c + 1 == t->ncols;
			if (t->align[c] == 'r') {
				vg_strbuf_spaces(out, w[c] - n);
				vg_strbuf_str(out, s);
			} else if (last) {
				vg_strbuf_str(out, s);
			} else {
				vg_text_pad(out, s, w[c]);
			}
			if (!last)
				vg_strbuf_str(out, "  ");
		}
		vg_strbuf_str(out, "\n");
	}
}

void vg_tab_free(struct vg_tab *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cell[i]);
	free(t->cell);
	memset(t, 0, sizeof(*t));
}
