/* Report file names: a VRAMGUARD_REPORT template (validated by config/ when it is loaded) expanded for one report.
 * No heap, no stdio: the reporter thread and the signal path call it. */
#ifndef VG_REPORT_PATH_H
#define VG_REPORT_PATH_H

#include <stddef.h>
#include <stdint.h>

/* Expand a VRAMGUARD_REPORT template into out: %p pid, %n seq, %r reason ("exit", "signal", "soft-limit", "threshold", "denial"), %h
 * host, %% a '%'.
 * A NULL reason or host expands to nothing; a '/' in either becomes '_' so they cannot add path components.
 * Returns 0, -ENAMETOOLONG if the result (NUL included) does not fit in outlen (out then holds no usable result), or
 * -EINVAL for a template the loader would have rejected (vg_report_template_check). */
int vg_report_path_expand(const char *tmpl, int pid, uint64_t seq, const char *reason, const char *host, char *out,
			  size_t outlen);

#endif
