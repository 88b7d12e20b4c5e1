/* VRAMGUARD_REPORT's file name template, its syntax in one place: %p the process id, %n the report's number, %r its
 * reason, %h the host name, %% a '%'; nothing else may follow a '%'. The loader checks a template with it
 * (load_files.c), the library expands one (report/path.c), the reporter says which specifiers a template lacks
 * (interposer/reporter.c) and `vramguard dump` turns one into a glob (cli/dump.c): each walks the template with
 * vg_template_next and gives the specifiers its own values. No heap, no stdio: the reporter thread uses it. */
#ifndef VG_CONFIG_TEMPLATE_H
#define VG_CONFIG_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

/* The specifiers, as messages list them. */
#define VG_TEMPLATE_SPECIFIERS "%p %n %r %h %%"

/* One part of a template: a specifier (spec 'p', 'n', 'r' or 'h'), or literal text (spec 0: text[0..n), where
 * "%%" is the one '%'). */
struct vg_template_part {
	char spec;
	const char *text;
	size_t n;
};

/* The part of t[0..n) that starts at *at, and *at moved past it. false at the end, or at a '%' the syntax does not
 * allow (*at then stays on it; vg_report_template_check says why). */
bool vg_template_next(const char *t, size_t n, size_t *at, struct vg_template_part *part);

/* NULL if t[0..n) is a valid template, else the reason, with *bad and *badn set to the offending specifier ("%q";
 * a multi-byte character after the '%' whole). */
const char *vg_report_template_check(const char *t, size_t n, const char **bad, size_t *badn);

/* Does the valid template t use specifier c ('p', 'n', 'r' or 'h')? "%%p" is literal text. */
bool vg_template_has(const char *t, char c);

#endif
