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
#include "report/json_read.h"
#include "report/report.h"

const char vg_usage_report[] =
	"usage: vramguard report FILE.json\n"
	"\n"
	"Print a JSON report (VRAMGUARD_REPORT_FORMAT=json) as the text report the library would have written.\n";

const char vg_usage_diff[] =
	"usage: vramguard diff [--rows N] [--all] [--exit-code] OLD.json NEW.json\n"
	"\n"
	"Compare two reports, per device and per call site: what grew, what is new, what shrank or is gone, largest\n"
	"change first. Reports of one process are matched by call-site id; of different processes by call stack\n"
	"(native frames and, where the thread ran Python code, its Python frames).\n"
	"  -n, --rows N      rows per section (default 20)\n"
	"  -a, --all         also list call sites that did not change\n"
	"  -e, --exit-code   exit 1 if live memory grew on any device or call site (for scripts)\n";

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
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return vg_cli_help("report");
	if (argc != 2)
		vg_cli_usage_exit(vg_usage_report, "report: expected one FILE.json");
	struct vg_report r;
	char err[512];
	if (vg_report_read_file(argv[1], &r, err, sizeof(err)) != 0)
		die_report(argv[1], err);
	note_revision(argv[1], &r);
	r.json_hint[0] = '\0';
	struct vg_strbuf b = { 0 };
	vg_report_render_text(&r, &b);
	int rc = 0;
	if (b.failed || !b.data)
		vg_cli_die(1, "out of memory");
	if (fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout) != 0)
		rc = 1;
	vg_strbuf_free(&b);
	vg_report_free(&r);
	return rc;
}

int vg_cli_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rows", required_argument, NULL, 'n' }, { "all", no_argument, NULL, 'a' },
		{ "exit-code", no_argument, NULL, 'e' },  { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vg_diff_opts o = { 0, 0 };
	int c, exit_code = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":n:aeh", opts, NULL)) != -1) {
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
	struct vg_strbuf out = { 0 };
	if (vg_report_diff_text(&a, &b, &o, &out) != 0 || out.failed)
		vg_cli_die(1, "out of memory");
	fwrite(out.data, 1, out.len, stdout);
	int grew = vg_report_diff_grew(&a, &b) == 1;
	vg_strbuf_free(&out);
	vg_report_free(&a);
	vg_report_free(&b);
	return exit_code && grew ? 1 : 0;
}
