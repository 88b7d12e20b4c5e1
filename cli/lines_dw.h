/* The resolver behind `--lines` (cli/lines.c): libdw, loaded with dlopen, turns a module offset into file:line in a
 * child process of the command, which cli/lines.c asks one frame at a time over a socket and kills at its deadline.
 * Whatever libdw does with a file a report names (a FIFO it opens by itself, a file truncated under its mapping),
 * the command survives it. Module files are opened here by the rules of vg_lines_dw_open, never by libdw. */
#ifndef VG_CLI_LINES_DW_H
#define VG_CLI_LINES_DW_H

#include <stddef.h>
#include <stdint.h>

#include "report/srcline.h"

#define VG_LINES_MAX_DIRS 8           /* --debug-dir directories */
/* Larger files are not read: no module or debug file is this big, and a sparse one would only cost time. */
#define VG_LINES_MAX_FILE (32ULL << 30)

/* What became of a module's lookup, decided once per module (path and build ID). */
enum vg_lines_verdict {
	VG_LINES_UNKNOWN,       /* not looked up yet (the parent's state only) */
	VG_LINES_OK,            /* a file with its build ID and DWARF: frames get lines */
	VG_LINES_OTHER_ID,      /* files found, all of another build (file, why: the first and its build ID) */
	VG_LINES_REFUSED,       /* no usable file, and one was refused by vg_lines_dw_open (file, why: the first) */
	VG_LINES_NODEBUG,       /* no file with DWARF */
};

struct vg_lines_req {
	char path[256], build_id[80];   /* the module as the report names it */
	uint64_t offset;                /* the frame's module_offset */
};

struct vg_lines_ans {
	int32_t verdict;                /* enum vg_lines_verdict of the request's module */
	int32_t found;                  /* 1: line holds the frame's source line */
	char file[768];                 /* VG_LINES_OTHER_ID, VG_LINES_REFUSED: the file concerned */
	char why[96];                   /* VG_LINES_OTHER_ID: its build ID ("" none); VG_LINES_REFUSED: the reason */
	struct vg_srcline line;
};

/* dlopen libdw (name) and resolve the functions used; dirs: the --debug-dir directories, kept. 0, or -1 with the
 * reason in err ("cannot be loaded", "has no X"). */
int vg_lines_dw_begin(const char *name, const char *const *dirs, size_t ndirs, char *err, size_t errlen);
/* The answer to q: its module looked up (once per path and build ID), then the frame. */
void vg_lines_dw_answer(const struct vg_lines_req *q, struct vg_lines_ans *a);
/* Open file for libdw: only a regular file, not on a kernel pseudo file system (/proc, /sys...), at most
 * VG_LINES_MAX_FILE bytes; opened without blocking (O_NONBLOCK, cleared once it is known to be a regular file) and
 * without opening a device at all (O_PATH first). The descriptor; -1 when it cannot be opened (absent, no
 * permission: as if not there); -2 when it is refused, with why ("is a FIFO", "is a directory"...). */
int vg_lines_dw_open(const char *file, char *why, size_t whylen);
/* The child's loop: answer each request read from fd until it is closed. */
void vg_lines_dw_serve(int fd);

#endif
