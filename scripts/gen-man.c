/* Regenerates the parts of docs/vramguard.1 that come from the options table (config/options.h): `run`'s options
 * (the flag column) and the ENVIRONMENT section (every row). Reads the page on stdin and writes it on stdout with
 * the text between each pair of marker comments replaced; everything else is copied as it is. The tests compare
 * its output with the page, so the man page cannot drift from the parser.
 *   make build/gen-man && build/gen-man < docs/vramguard.1 > vramguard.1.new && mv vramguard.1.new docs/vramguard.1 */
#include "config/config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define BEGIN_MARK ".\\\" BEGIN GENERATED "
#define END_MARK ".\\\" END GENERATED "
#define MARK_NOTE " (scripts/gen-man.c from the options table; do not edit by hand)"

/* Text for a roff line: '\' escaped, a hyphen that starts a word (an option: --limit) as \-, `code` in bold,
 * <name> (a placeholder, as in CUDA_DEVICE_MEMORY_LIMIT_<i>) in italics. Never at the start of a line: callers
 * print a request or text before it, and a leading '.' or '\'' is guarded. */
static void roff_text(const char *s, int line_start)
{
	int code = 0;

	if (line_start && (*s == '.' || *s == '\''))
		fputs("\\&", stdout);
	for (const char *p = s; *p; p++) {
		if (*p == '\\')
			fputs("\\e", stdout);
		else if (*p == '`') {
			fputs(code ? "\\fR" : "\\fB", stdout);
			code = !code;
		} else if (*p == '-' && (p == s || p[-1] == ' ' || p[-1] == '-' || p[-1] == '(' || p[1] == '-'))
			fputs("\\-", stdout);
		else if (*p == '<' && strchr(p, '>') && isalpha((unsigned char)p[1])) {
			const char *e = strchr(p, '>');
			printf("\\fI%.*s\\fP", (int)(e - p - 1), p + 1);
			p = e;
		} else if (*p == '\n')
			fputc(' ', stdout);
		else
			fputc(*p, stdout);
	}
	if (code)
		fputs("\\fR", stdout);
}

/* A name or flag in a tag line: the text, lower-case metavariables in italics. */
static void roff_var(const char *name)
{
	fputs("\\fB", stdout);
	roff_text(name, 0);
	fputs("\\fR", stdout);
}

static void metavar(const char *m)
{
	fputs(" \\fI", stdout);
	for (; *m; m++)
		fputc(tolower((unsigned char)*m), stdout);
	fputs("\\fR", stdout);
}

static void run_options(void)
{
	for (size_t i = 0; i < vg_options_count; i++) {
		const struct vg_option *o = &vg_options[i];
		const struct vg_option_flag *f = &o->flag;

		if (!f->name)
			continue;
		fputs(".TP\n", stdout);
		if (f->short_name)
			printf("\\fB\\-%c\\fR, ", f->short_name);
		fputs("\\fB\\-\\-", stdout);
		for (const char *c = f->name; *c; c++)
			fputs(*c == '-' ? "\\-" : (char[2]){ *c, 0 }, stdout);
		fputs("\\fR", stdout);
		metavar(f->metavar);
		fputc('\n', stdout);
		printf(".BR %s :\n", o->name);
		roff_text(f->usage, 1);
		fputs(".\n", stdout);
	}
}

static void environment(void)
{
	size_t n = 0;

	fputs(".nh\n", stdout); /* no hyphenation: the names are long and must read as written */
	fputs("vramguard reads these variables once, when the process first calls into CUDA. An empty variable is unset;\n"
	      "an invalid value fails closed (CUDA calls return an error, one line names the variable and the bad\n"
	      "token). docs/env.md has the same table with the rules between variables.\n", stdout);
	for (size_t i = 0; i < vg_options_count; i++) {
		const struct vg_option *o = &vg_options[i];

		fputs(".TP\n", stdout);
		roff_var(o->name);
		fputc('\n', stdout);
		roff_text(o->doc, 1);
		fputs(".\nValues: ", stdout);
		roff_text(o->values, 0);
		fputs(". Default: ", stdout);
		roff_text(o->dflt, 0);
		fputs(".\n", stdout);
	}
	fputs(".PP\n"
	      "In a program that runs with elevated privileges (setuid, setgid or file capabilities:\n"
	      ".BR AT_SECURE ),\n"
	      "the variables that name files, directories or modes\n"
	      ".RB (", stdout);
	for (size_t i = 0; i < vg_options_count; i++)
		if (vg_options[i].secure)
			printf("%s%s", n++ ? " \", \" " : " ", vg_options[i].name);
	fputs(" )\n"
	      "are ignored and not parsed: no shared region, no control segment, reports on stderr. The quota still applies;\n"
	      "one line at the first CUDA call names the ignored variables that were set.\n"
	      ".hy\n", stdout);
}

int main(void)
{
	static const struct {
		const char *name;
		void (*write)(void);
	} parts[] = { { "RUN OPTIONS", run_options }, { "ENVIRONMENT", environment } };
	char line[4096];
	int skipping = -1, done = 0;

	while (fgets(line, sizeof(line), stdin)) {
		if (skipping >= 0) {
			if (strncmp(line, END_MARK, strlen(END_MARK)) != 0)
				continue;
			fputs(line, stdout);
			skipping = -1;
			continue;
		}
		fputs(line, stdout);
		if (strncmp(line, BEGIN_MARK, strlen(BEGIN_MARK)) != 0)
			continue;
		for (size_t p = 0; p < sizeof(parts) / sizeof(parts[0]); p++) {
			size_t n = strlen(parts[p].name);
			if (!strncmp(line + strlen(BEGIN_MARK), parts[p].name, n) &&
			    !strcmp(line + strlen(BEGIN_MARK) + n, MARK_NOTE "\n")) {
				parts[p].write();
				skipping = (int)p;
				done |= 1 << p;
			}
		}
		if (skipping < 0) {
			fprintf(stderr, "gen-man: unknown marker: %s", line);
			return 1;
		}
	}
	if (skipping >= 0 || done != 3) {
		fprintf(stderr, "gen-man: expected both marker pairs, BEGIN/END GENERATED RUN OPTIONS and ENVIRONMENT, each "
				"as '%sNAME%s'\n", BEGIN_MARK, MARK_NOTE);
		return 1;
	}
	return fflush(stdout) ? 1 : 0;
}
