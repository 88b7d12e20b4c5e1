/* Reading a report back: a "vramguard.report/1" document (docs/report-format.md) into a struct vg_report, so the
 * `vramguard` command renders it with the library's own emitter and diffs two of them. libc only; not for the
 * preloaded library (it allocates freely and may take a while on a large file). */
#ifndef VG_JSON_READ_H
#define VG_JSON_READ_H

#include <stddef.h>

#include "report/report.h"

#define VG_JSON_MAX_FILE ((size_t)256 << 20)    /* vg_report_read_file refuses larger files */

/* Parse one report document. Returns 0 and fills *out (arrays malloc'd; free with vg_report_free), or -EINVAL with a
 * one-line reason in err ("line 3, column 17: expected ',' or '}'", "unsupported schema 'vramguard.report/2'
 * (this vramguard reads vramguard.report/1)", "devices[0].used_bytes: expected an unsigned integer") and *out zeroed
 * (-ENOMEM: "out of memory").
 * Strict RFC 8259 syntax; unknown keys are ignored at any level (version 1 may gain keys), a repeated key's last
 * value wins, "time" is ignored (time_ns is the time), json_hint is left empty. Strings longer than their field are
 * cut at a character boundary; a \u escape of a lone surrogate becomes U+FFFD. */
int vg_report_from_json(const char *text, size_t len, struct vg_report *out, char *err, size_t errlen);

/* Read a whole file (at most 256 MiB) and parse it; err gets "cannot read FILE: strerror" on I/O errors (returning
 * -errno), otherwise what vg_report_from_json says (without the file name: the caller adds it). */
int vg_report_read_file(const char *path, struct vg_report *out, char *err, size_t errlen);

#endif
