/* Aligned text tables for the commands' output: columns separated by two spaces, 'l' or 'r' alignment per
 * column, cells escaped (vg_text_str) and measured in display width. */
#ifndef VG_CLI_TABLE_H
#define VG_CLI_TABLE_H

#include <stddef.h>

#include "report/report.h"

struct vg_tab {
	size_t ncols;
	const char *align;
	char **cell;
	size_t nrows, cap;
	int failed;
};
void vg_tab_init(struct vg_tab *t, size_t ncols, const char *align);
void vg_tab_row(struct vg_tab *t, const char *const *cells);
void vg_tab_render(const struct vg_tab *t, struct vg_strbuf *out, const char *indent);
void vg_tab_free(struct vg_tab *t);

#endif
