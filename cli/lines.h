/* `--lines` of `vramguard report` and `vramguard diff`: native frames' module offsets resolved to file:line and
 * inlined callers with elfutils' libdwfl, loaded with dlopen only when asked (the command itself needs no libdw and
 * runs where it is absent). Debug information is found by the build IDs the report's `modules` record
 * (docs/report-format.md, *Source lines*); a file whose build ID differs is never used: wrong lines are worse than
 * none. A report is written by anyone: only regular files are read, and the whole resolution has a deadline
 * (cli/lines_dw.h). */
#ifndef VG_CLI_LINES_H
#define VG_CLI_LINES_H

#include "cli/lines_dw.h"
#include "report/report.h"

#define VG_LINES_TIMEOUT 10             /* seconds for all of a command's lines, by default (--lines-timeout) */
#define VG_LINES_TIMEOUT_MAX 3600

/* Load libdw and set the renderers' hook (report/srcline.h). dirs: the --debug-dir directories (build-id layout
 * DIR/.build-id/xx/rest.debug, or files by name); timeout: seconds for the whole resolution (0: VG_LINES_TIMEOUT),
 * after which the remaining frames get no lines. If libdw cannot be loaded, say so in one line on stderr and
 * return -1: the caller prints without lines. */
int vg_lines_begin(const char *const *dirs, size_t ndirs, double timeout);
/* A report read from file that cannot have lines (no `modules`: written before revision 3): say so, once. */
void vg_lines_check_report(const char *file, const struct vg_report *r);
/* Stop the resolver; the summary lines (resolution stopped, files refused, modules without debug information or
 * without a build ID), then free the state; libdw stays loaded. Safe without a successful begin. */
void vg_lines_end(void);

#endif
