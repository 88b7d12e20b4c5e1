/* Regenerates the parts of docs/vramguard.1 that come from a table: the SYNOPSIS (the command table's usage forms,
 * cli/commands.h), each command's option list (its flag rows; `run`'s are the options table's flag column,
 * config/options.h) and the ENVIRONMENT section (every row of the options table). Reads the page on stdin and
 * writes it on stdout with the text between each pair of marker comments replaced; everything else is copied as it
 * is. The tests compare its output with the page, so the man page cannot drift from the parser or the commands.
 *   make build/gen-man && build/gen-man < docs/vramguard.1 > vramguard.1.new && mv vramguard.1.new docs/vramguard.1 */
#include "cli/commands.h"
#include "config/config.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define BEGIN_MARK ".\\\" BEGIN GENERATED "
#define END_MARK ".\\\" END GENERATED "
#define MARK_NOTE " (scripts/gen-man.c from the options table; do not edit by hand)"
#define MARK_NOTE_CLI " (scripts/gen-man.c from cli/commands.h; do not edit by hand)"
#define PARTS_MAX 32

/* The command table's rows, as this program needs them. */
struct gm_flag {
	const char *name;
	char short_name;
	bool repeat;
	const char *metavar, *help;
};
#define GM_FLAG(id, lng, shrt, kind, help) { lng, shrt, kind, help },
#define GM_PARTS(name, fn, summary, usage, flags, about, notes)                                                       \
	static const struct gm_flag gm_flags_##name[] = { flags(GM_FLAG){ NULL, 0, false, NULL, NULL } };              \
	static const char *const gm_usage_##name[] = { usage, NULL };
VG_COMMANDS(GM_PARTS)
#define GM_COMMAND(name, fn, summary, usage, flags, about, notes)                                                     \
	{ #name, gm_usage_##name, gm_flags_##name, sizeof(gm_flags_##name) / sizeof(gm_flags_##name[0]) - 1 },
static const struct gm_command {
	const char *name;
	const char *const *usage;
	const struct gm_flag *flags;
	size_t nflags;
} gm_commands[] = { VG_COMMANDS(GM_COMMAND) };
#define GM_NCOMMANDS (sizeof(gm_commands) / sizeof(gm_commands[0]))

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

/* A flag's tag line: "\\fB\\-l\\fR, \\fB\\-\\-limit\\fR \\fIspec\\fR". */
static void flag_tag(char short_name, const char *name, const char *mv)
{
	fputs(".TP\n", stdout);
	if (short_name)
		printf("\\fB\\-%c\\fR, ", short_name);
	fputs("\\fB\\-\\-", stdout);
	for (const char *c = name; *c; c++)
		fputs(*c == '-' ? "\\-" : (char[2]){ *c, 0 }, stdout);
	fputs("\\fR", stdout);
	if (mv)
		metavar(mv);
	fputc('\n', stdout);
}

/* The options table's flags (`run`'s): each with the variable it sets. */
static void option_flags(void)
{
	for (size_t i = 0; i < vg_options_count; i++) {
		const struct vg_option *o = &vg_options[i];
		const struct vg_option_flag *f = &o->flag;

		if (!f->name)
			continue;
		flag_tag(f->short_name, f->name, f->metavar);
		printf(".BR %s :\n", o->name);
		roff_text(f->usage, 1);
		fputs(".\n", stdout);
	}
}

static const struct gm_command *command_options;       /* the command the part being written is for */

/* One command's flags, in the order of its rows (a row without a name: the options table's). */
static void options(void)
{
	const struct gm_command *c = command_options;

	for (size_t i = 0; i < c->nflags; i++) {
		const struct gm_flag *f = &c->flags[i];

		if (!f->name) {
			option_flags();
			continue;
		}
		flag_tag(f->short_name, f->name, f->metavar);
		roff_text(f->help, 1);
		fputs(".\n", stdout);
	}
}

/* One piece of a usage form: a flag or a word typed as it is in bold, what the user gives (upper case in the usage,
 * and the "options" of `run [options]`) in lower-case italics. */
static void synopsis_piece(const char *p, size_t n)
{
	bool given = n == 7 && !strncmp(p, "options", 7);

	for (size_t i = 0; i < n && p[0] != '-'; i++)
		given |= isupper((unsigned char)p[i]) != 0;
	fputs(given ? "\\fI" : "\\fB", stdout);
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '-')
			fputs("\\-", stdout);
		else
			fputc(given ? tolower((unsigned char)p[i]) : p[i], stdout);
	}
	fputs("\\fR", stdout);
}

/* A usage form as one line: pieces between the roman punctuation (brackets, bars, "...", and the ':' and '=' of
 * ADDR:PORT or region:NAME=SIZE). */
static void synopsis_form(const char *form)
{
	fputs("\\fBvramguard\\fR", stdout);
	for (const char *p = form; *p;) {
		size_t n = 0;

		if (*p == ' ' || *p == '\n') {
			fputc(' ', stdout);
			p++;
			continue;
		}
		if (!strncmp(p, "...", 3)) {
			fputs("...", stdout);
			p += 3;
			continue;
		}
		if (strchr("[]()|:=", *p)) {
			fputc(*p++, stdout);
			continue;
		}
		while (p[n] && !strchr(" \n[]()|:=", p[n]) && strncmp(p + n, "...", 3))
			n++;
		if (p == form)
			fputc(' ', stdout);
		synopsis_piece(p, n);
		p += n;
	}
	fputc('\n', stdout);
}

static void synopsis(void)
{
	for (size_t c = 0; c < GM_NCOMMANDS; c++)
		for (size_t i = 0; gm_commands[c].usage[i]; i++) {
			if (c || i)
				fputs(".br\n", stdout);
			synopsis_form(gm_commands[c].usage[i]);
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

/* The parts of the page, each between its pair of markers: the SYNOPSIS, one OPTIONS part per command that has
 * flags ("TOP OPTIONS"), the ENVIRONMENT. Each must be there, once. */
struct part {
	char name[32];
	const char *note;
	void (*write)(void);
	const struct gm_command *command;
	bool done;
};

static size_t parts_list(struct part *parts)
{
	size_t n = 0;

	parts[n++] = (struct part){ "SYNOPSIS", MARK_NOTE_CLI, synopsis, NULL, false };
	for (size_t c = 0; c < GM_NCOMMANDS && n < PARTS_MAX - 1; c++) {
		if (!gm_commands[c].nflags)
			continue;
		struct part *p = &parts[n++];
		size_t k;
		for (k = 0; gm_commands[c].name[k] && k < sizeof(p->name) - 9; k++)
			p->name[k] = (char)toupper((unsigned char)gm_commands[c].name[k]);
		snprintf(p->name + k, sizeof(p->name) - k, " OPTIONS");
		/* run's flags are the options table's */
		p->note = gm_commands[c].flags[0].name ? MARK_NOTE_CLI : MARK_NOTE;
		p->write = options;
		p->command = &gm_commands[c];
		p->done = false;
	}
	parts[n++] = (struct part){ "ENVIRONMENT", MARK_NOTE, environment, NULL, false };
	return n;
}

int main(void)
{
	struct part parts[PARTS_MAX];
	size_t nparts = parts_list(parts);
	char line[4096];
	int skipping = -1;

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
		for (size_t p = 0; p < nparts && skipping < 0; p++) {
			const char *rest = line + strlen(BEGIN_MARK);
			size_t n = strlen(parts[p].name);
			if (parts[p].done || strncmp(rest, parts[p].name, n) || strncmp(rest + n, parts[p].note,
											strlen(parts[p].note)) ||
			    strcmp(rest + n + strlen(parts[p].note), "\n"))
				continue;
			command_options = parts[p].command;
			parts[p].write();
			parts[p].done = true;
			skipping = (int)p;
		}
		if (skipping < 0) {
			fprintf(stderr, "gen-man: unknown or repeated marker: %s", line);
			return 1;
		}
	}
	for (size_t p = 0; p < nparts; p++)
		if (!parts[p].done || skipping >= 0) {
			fprintf(stderr, "gen-man: expected the marker pair BEGIN/END GENERATED %s, as '%s%s%s'\n",
				parts[p].name, BEGIN_MARK, parts[p].name, parts[p].note);
			return 1;
		}
	return fflush(stdout) ? 1 : 0;
}
