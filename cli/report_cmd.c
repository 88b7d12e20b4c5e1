/* `vramguard report` and `vramguard diff`: read JSON reports (report/json_read.c) and print them as text, or what
 * changed between two (cli/diff.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/diff.h"
#include "cli/diff_html.h"
#include "cli/lines.h"
#include "cli/report_view.h"
#include "report/json_read.h"
#include "report/report.h"

/* --lines, --debug-dir and --lines-timeout, the same for report and diff. */
struct vg_lines_opts {
	int on;
	const char *dirs[VG_LINES_MAX_DIRS];
	size_t ndirs;
	double timeout;
};

/* One of them (flag: its long name): 0, or the exit status of a usage error. */
static int lines_opt(struct vg_lines_opts *l, const char *flag, const char *arg, const char *cmd)
{
	l->on = 1;
	if (!strcmp(flag, "lines-timeout")) {
		if (!vg_cli_seconds(arg, &l->timeout) || !(l->timeout > 0) || l->timeout > VG_LINES_TIMEOUT_MAX)
			return vg_cli_usage(vg_cli_usage_of(cmd), "%s: invalid --lines-timeout %s (expected seconds, more "
					    "than 0 and at most %d, e.g. 30)", cmd, vg_cli_q(arg), VG_LINES_TIMEOUT_MAX);
		return 0;
	}
	if (strcmp(flag, "debug-dir"))
		return 0;
	if (l->ndirs == VG_LINES_MAX_DIRS)
		return vg_cli_usage(vg_cli_usage_of(cmd), "%s: too many --debug-dir (at most %d)", cmd,
				    VG_LINES_MAX_DIRS);
	if (!arg[0])
		return vg_cli_usage(vg_cli_usage_of(cmd), "%s: empty --debug-dir (expected a directory)", cmd);
	l->dirs[l->ndirs++] = arg;
	return 0;
}

/* The reader's I/O errors already name the file; its parse errors do not. */
static int read_failed(const char *file, const char *err)
{
	if (!strncmp(err, "cannot read ", 12))
		return vg_cli_fail(1, "%s", err);
	return vg_cli_fail(1, "%s: %s", vg_cli_q(file), err);
}

/* A report of a newer revision reads all the same (its unknown keys passed over), but the user should know that a
 * newer vramguard shows more (docs/report-format.md, *Versioning*). */
static void note_revision(const char *file, const struct vg_report *r)
{
	if (r->schema_revision > VG_REPORT_REVISION)
		fprintf(stderr, "vramguard: note: %s is report revision %u; this vramguard knows revision %d: keys it does "
			"not know are passed over (a newer vramguard shows them)\n", vg_cli_q(file),
			(unsigned)r->schema_revision, VG_REPORT_REVISION);
}

int vg_cli_report(int argc, char **argv)
{
	struct vg_cli_getopt g;
	struct vg_lines_opts lo = { 0 };
	enum vg_view_format fmt = VG_VIEW_TEXT;
	const char *out = NULL, *usage = vg_cli_usage_of("report");
	int k, rc = 0, html = 0, have_fmt = 0;
	vg_cli_getopt_init(&g, "report", NULL, "");
	while ((k = vg_cli_getopt(&g, argc, argv)) != VG_CLI_OPT_END) {
		switch (k) {
		case VG_OPT_REPORT_HTML: html = 1; break;
		case VG_OPT_REPORT_LINES:
		case VG_OPT_REPORT_DEBUG_DIR:
		case VG_OPT_REPORT_LINES_TIMEOUT:
			if (lines_opt(&lo, g.flags[k].name, optarg, "report"))
				return 2;
			break;
		case VG_OPT_REPORT_FORMAT:
			if (vg_view_format_parse(optarg, &fmt))
				return vg_cli_usage(usage, "report: unknown --format %s (expected text, html, folded or "
						    "speedscope)", vg_cli_q(optarg));
			have_fmt = 1;
			break;
		case VG_OPT_REPORT_OUTPUT: out = optarg; break;
		case VG_CLI_OPT_HELP: return vg_cli_help("report");
		default: return vg_cli_bad_option(&g, argv);
		}
	}
	if (html && have_fmt && fmt != VG_VIEW_HTML)
		return vg_cli_usage(usage, "report: --html and --format are two ways to pick the form: give one");
	if (html)
		fmt = VG_VIEW_HTML;
	if (argc - optind != 1)
		return vg_cli_usage(usage, "report: expected one FILE.json");
	const char *file = argv[optind];
	struct vg_report r;
	char err[512];
	if (vg_report_read_file(file, &r, err, sizeof(err)) != 0)
		return read_failed(file, err);
	note_revision(file, &r);
	if (lo.on && vg_lines_begin(lo.dirs, lo.ndirs, lo.timeout) == 0)
		vg_lines_check_report(file, &r);
	r.json_hint[0] = '\0';
	rc = vg_view_report(&r, file, fmt, out);
	if (rc >= 0 && lo.on)   /* rc < 0: said why; the lines' summary is not worth a line after it */
		vg_lines_end();
	vg_report_free(&r);
	return rc < 0 ? 1 : rc;
}

struct diff_args {
	struct vg_lines_opts lo;
	struct vg_diff_opts o;
	int exit_code, html;
	const char *out;
};

/* diff's options and operands: -1 to go on (argv[optind] and the next: OLD.json and NEW.json), else the exit
 * status (help, or a usage error). */
static int diff_parse(int argc, char **argv, struct diff_args *a)
{
	struct vg_cli_getopt g;
	const char *usage = vg_cli_usage_of("diff");
	int k;
	vg_cli_getopt_init(&g, "diff", NULL, "");
	while ((k = vg_cli_getopt(&g, argc, argv)) != VG_CLI_OPT_END) {
		switch (k) {
		case VG_OPT_DIFF_ROWS: {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || v == 0 || v > 100000)
				return vg_cli_usage(usage, "diff: invalid --rows %s (expected a number from 1 to 100000)",
						    vg_cli_q(optarg));
			a->o.max_rows = v;
			break;
		}
		case VG_OPT_DIFF_ALL: a->o.all = 1; break;
		case VG_OPT_DIFF_EXIT_CODE: a->exit_code = 1; break;
		case VG_OPT_DIFF_HTML: a->html = 1; break;
		case VG_OPT_DIFF_OUTPUT: a->out = optarg; break;
		case VG_OPT_DIFF_LINES:
		case VG_OPT_DIFF_DEBUG_DIR:
		case VG_OPT_DIFF_LINES_TIMEOUT:
			if (lines_opt(&a->lo, g.flags[k].name, optarg, "diff"))
				return 2;
			break;
		case VG_CLI_OPT_HELP: return vg_cli_help("diff");
		default: return vg_cli_bad_option(&g, argv);
		}
	}
	if (argc - optind != 2)
		return vg_cli_usage(usage, "diff: expected OLD.json and NEW.json");
	return -1;
}

/* diff's work once both reports are read: the usage check that needs them read first (as before: an unreadable
 * file is said before a misplaced -o), the rendering and the exit status. The caller frees the reports. */
static int diff_run(const struct diff_args *d, struct vg_report *a, struct vg_report *b, const char *oname,
		    const char *nname)
{
	note_revision(oname, a);
	note_revision(nname, b);
	if (d->out && !d->html)
		return vg_cli_usage(vg_cli_usage_of("diff"), "diff: -o goes with --html (the text goes to stdout)");
	if (d->lo.on && vg_lines_begin(d->lo.dirs, d->lo.ndirs, d->lo.timeout) == 0) {
		vg_lines_check_report(oname, a);
		vg_lines_check_report(nname, b);
	}
	struct vg_strbuf out = { 0 };
	if ((d->html ? vg_report_diff_html(a, b, oname, nname, &out) : vg_report_diff_text(a, b, &d->o, &out)) != 0 ||
	    out.failed) {
		vg_strbuf_free(&out);
		return vg_cli_fail(1, "out of memory");
	}
	int wrc = vg_view_write(&out, d->html ? d->out : NULL);
	vg_strbuf_free(&out);
	if (wrc < 0)
		return 1;       /* said why; the lines' summary is not worth a line after it */
	fflush(stdout);
	if (d->lo.on)
		vg_lines_end();
	return d->exit_code && vg_report_diff_grew(a, b) == 1 ? 1 : wrc;
}

int vg_cli_diff(int argc, char **argv)
{
	struct diff_args d;
	memset(&d, 0, sizeof(d));
	int rc = diff_parse(argc, argv, &d);
	if (rc >= 0)
		return rc;
	const char *oname = argv[optind], *nname = argv[optind + 1];
	struct vg_report a, b;
	char err[512];
	if (vg_report_read_file(oname, &a, err, sizeof(err)) != 0)
		return read_failed(oname, err);
	if (vg_report_read_file(nname, &b, err, sizeof(err)) != 0) {
		vg_report_free(&a);
		return read_failed(nname, err);
	}
	rc = diff_run(&d, &a, &b, oname, nname);
	vg_report_free(&a);
	vg_report_free(&b);
	return rc;
}
