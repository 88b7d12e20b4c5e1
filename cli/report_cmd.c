/* `vramguard report` and `vramguard diff`: read JSON reports (report/json_read.c) and print them as text, or what
 * changed between two (cli/diff.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/diff.h"
#include "cli/cli.h"
#include "cli/lines.h"
#include "cli/report_view.h"
#include "report/json_read.h"
#include "report/report.h"

const char vg_usage_report[] =
	"usage: vramguard report [--html | --format FORMAT] [-o FILE] [--lines [--debug-dir DIR]...\n"
	"                        [--lines-timeout SECONDS]] FILE.json\n"
	"\n"
	"Print a JSON report (VRAMGUARD_REPORT_FORMAT=json) as the text report the library would have written, or\n"
	"as a page or an export (docs/report-format.md, *The HTML report and the exports*).\n"
	"  -H, --html         a self-contained HTML page: timelines, icicle graph, sortable tables (--format html)\n"
	"  -f, --format F     text (default), html, folded (collapsed stacks of live bytes: flamegraph.pl,\n"
	"                     inferno, speedscope) or speedscope (speedscope's JSON file format)\n"
	"  -o, --output FILE  write there instead of stdout ('-': stdout)\n"
	"  -l, --lines        add source lines (file:line, inlined callers) to the text form's native frames, from\n"
	"                     the debug information of the builds that ran, found by the report's build IDs: the\n"
	"                     module's file, /usr/lib/debug/.build-id/, then --debug-dir (needs elfutils' libdw1)\n"
	"  --debug-dir DIR    also look in DIR: DIR/.build-id/xx/rest.debug, DIR/NAME.debug or DIR/NAME\n"
	"                     (repeatable, up to 8; implies --lines). Only regular files are read\n"
	"  --lines-timeout SECONDS\n"
	"                     time for all the lines (default 10; implies --lines): the frames left then get\n"
	"                     none, and one line says so\n";

const char vg_usage_diff[] =
	"usage: vramguard diff [--rows N] [--all] [--exit-code] [--html [-o FILE]] [--lines [--debug-dir DIR]...\n"
	"                      [--lines-timeout SECONDS]] OLD.json NEW.json\n"
	"\n"
	"Compare two reports, per device and per call site: what grew, what is new, what shrank or is gone, largest\n"
	"change first. Reports of one process are matched by call-site id; of different processes by call stack\n"
	"(native frames and, where the thread ran Python code, its Python frames).\n"
	"  -n, --rows N      rows per section (default 20)\n"
	"  -a, --all         also list call sites that did not change\n"
	"  -e, --exit-code   exit 1 if live memory grew on any device or call site (for scripts)\n"
	"  -H, --html        a self-contained HTML page instead: timelines between the reports, an icicle graph of\n"
	"                    what grew, sortable tables\n"
	"  -o, --output FILE write there instead of stdout ('-': stdout)\n"
	"  -l, --lines       source lines for the text's native frames, as `vramguard report --lines` (see its help)\n"
	"  --debug-dir DIR   where else to find debug files (repeatable; implies --lines)\n"
	"  --lines-timeout SECONDS  time for all the lines (default 10; implies --lines)\n";

/* --lines, --debug-dir and --lines-timeout, the same for report and diff. */
struct vg_lines_opts {
	int on;
	const char *dirs[VG_LINES_MAX_DIRS];
	size_t ndirs;
	double timeout;
};
#define VG_OPT_DEBUG_DIR 0x100
#define VG_OPT_LINES_TIMEOUT 0x101

static void lines_opt(struct vg_lines_opts *l, int c, const char *arg, const char *cmd, const char *usage)
{
	l->on = 1;
	if (c == VG_OPT_LINES_TIMEOUT) {
		if (!vg_cli_seconds(arg, &l->timeout) || !(l->timeout > 0) || l->timeout > VG_LINES_TIMEOUT_MAX)
			vg_cli_usage_exit(usage, "%s: invalid --lines-timeout %s (expected seconds, more than 0 and at "
					  "most %d, e.g. 30)", cmd, vg_cli_q(arg), VG_LINES_TIMEOUT_MAX);
		return;
	}
	if (c != VG_OPT_DEBUG_DIR)
		return;
	if (l->ndirs == VG_LINES_MAX_DIRS)
		vg_cli_usage_exit(usage, "%s: too many --debug-dir (at most %d)", cmd, VG_LINES_MAX_DIRS);
	if (!arg[0])
		vg_cli_usage_exit(usage, "%s: empty --debug-dir (expected a directory)", cmd);
	l->dirs[l->ndirs++] = arg;
}

/* The reader's I/O errors already name the file; its parse errors do not. */
static void die_report(const char *file, const char *err)
{
	if (!strncmp(err, "cannot read ", 12))
		vg_cli_die(1, "%s", err);
	vg_cli_die(1, "%s: %s", vg_cli_q(file), err);
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
	static const struct option opts[] = {
		{ "html", no_argument, NULL, 'H' }, { "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' },
		{ "lines", no_argument, NULL, 'l' }, { "debug-dir", required_argument, NULL, VG_OPT_DEBUG_DIR },
		{ "lines-timeout", required_argument, NULL, VG_OPT_LINES_TIMEOUT }, { NULL, 0, NULL, 0 },
	};
	struct vg_lines_opts lo = { 0 };
	enum vg_view_format fmt = VG_VIEW_TEXT;
	const char *out = NULL;
	int c, html = 0, have_fmt = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":Hf:o:lh", opts, NULL)) != -1) {
		switch (c) {
		case 'H': html = 1; break;
		case 'l':
		case VG_OPT_DEBUG_DIR:
		case VG_OPT_LINES_TIMEOUT: lines_opt(&lo, c, optarg, "report", vg_usage_report); break;
		case 'f':
			if (vg_view_format_parse(optarg, &fmt))
				vg_cli_usage_exit(vg_usage_report, "report: unknown --format %s (expected text, html, "
						  "folded or speedscope)", vg_cli_q(optarg));
			have_fmt = 1;
			break;
		case 'o': out = optarg; break;
		case 'h': return vg_cli_help("report");
		default: return vg_cli_bad_option("report", argv, c, vg_usage_report);
		}
	}
	if (html && have_fmt && fmt != VG_VIEW_HTML)
		vg_cli_usage_exit(vg_usage_report, "report: --html and --format are two ways to pick the form: give one");
	if (html)
		fmt = VG_VIEW_HTML;
	if (argc - optind != 1)
		vg_cli_usage_exit(vg_usage_report, "report: expected one FILE.json");
	const char *file = argv[optind];
	struct vg_report r;
	char err[512];
	if (vg_report_read_file(file, &r, err, sizeof(err)) != 0)
		die_report(file, err);
	note_revision(file, &r);
	if (lo.on && vg_lines_begin(lo.dirs, lo.ndirs, lo.timeout) == 0)
		vg_lines_check_report(file, &r);
	r.json_hint[0] = '\0';
	int rc = vg_view_report(&r, file, fmt, out);
	if (lo.on)
		vg_lines_end();
	vg_report_free(&r);
	return rc;
}

int vg_cli_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rows", required_argument, NULL, 'n' }, { "all", no_argument, NULL, 'a' },
		{ "exit-code", no_argument, NULL, 'e' },  { "help", no_argument, NULL, 'h' },
		{ "html", no_argument, NULL, 'H' },       { "output", required_argument, NULL, 'o' },
		{ "lines", no_argument, NULL, 'l' },      { "debug-dir", required_argument, NULL, VG_OPT_DEBUG_DIR },
		{ "lines-timeout", required_argument, NULL, VG_OPT_LINES_TIMEOUT }, { NULL, 0, NULL, 0 },
	};
	struct vg_lines_opts lo = { 0 };
	struct vg_diff_opts o = { 0, 0 };
	int c, exit_code = 0, html = 0;
	const char *outp = NULL;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":n:aeHo:lh", opts, NULL)) != -1) {
		switch (c) {
		case 'n': {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || v == 0 || v > 100000)
				vg_cli_usage_exit(vg_usage_diff, "diff: invalid --rows %s (expected a number from 1 "
						  "to 100000)", vg_cli_q(optarg));
			o.max_rows = v;
			break;
		}
		case 'a': o.all = 1; break;
		case 'e': exit_code = 1; break;
		case 'H': html = 1; break;
		case 'o': outp = optarg; break;
		case 'l':
		case VG_OPT_DEBUG_DIR:
		case VG_OPT_LINES_TIMEOUT: lines_opt(&lo, c, optarg, "diff", vg_usage_diff); break;
		case 'h': return vg_cli_help("diff");
		default: return vg_cli_bad_option("diff", argv, c, vg_usage_diff);
		}
	}
	if (argc - optind != 2)
		vg_cli_usage_exit(vg_usage_diff, "diff: expected OLD.json and NEW.json");
	struct vg_report a, b;
	char err[512];
	if (vg_report_read_file(argv[optind], &a, err, sizeof(err)) != 0)
		die_report(argv[optind], err);
	if (vg_report_read_file(argv[optind + 1], &b, err, sizeof(err)) != 0)
		die_report(argv[optind + 1], err);
	note_revision(argv[optind], &a);
	note_revision(argv[optind + 1], &b);
	if (outp && !html)
		vg_cli_usage_exit(vg_usage_diff, "diff: -o goes with --html (the text goes to stdout)");
	if (lo.on && vg_lines_begin(lo.dirs, lo.ndirs, lo.timeout) == 0) {
		vg_lines_check_report(argv[optind], &a);
		vg_lines_check_report(argv[optind + 1], &b);
	}
	struct vg_strbuf out = { 0 };
	if ((html ? vg_report_diff_html(&a, &b, argv[optind], argv[optind + 1], &out)
		  : vg_report_diff_text(&a, &b, &o, &out)) != 0 || out.failed)
		vg_cli_die(1, "out of memory");
	int wrc = vg_view_write(&out, html ? outp : NULL);
	fflush(stdout);
	if (lo.on)
		vg_lines_end();
	int grew = vg_report_diff_grew(&a, &b) == 1;
	vg_strbuf_free(&out);
	vg_report_free(&a);
	vg_report_free(&b);
	return exit_code && grew ? 1 : wrc;
}
