/* Helpers every command shares (cli/cli.h): the command table's rows as usage texts, `help` and getopt_long's
 * tables; error and usage messages, option errors, the regions' directory, the library's place. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "config/config.h"
#include "report/strbuf.h"

#define VG_CLI_HELP_COL 27      /* where a flag's help starts; a longer flag has it on the next line */
#define VG_CLI_LONG_ONLY 256    /* getopt_long's value for row i: VG_CLI_LONG_ONLY + i (its letter, when short) */

/* ---- the command table as data ---- */

#define VG_CLI_FLAG_ROW(id, lng, shrt, kind, help) { lng, shrt, kind, help, NULL },
#define VG_CLI_FLAG_END { NULL, 0, false, NULL, NULL, NULL }   /* not counted: an array is never empty */
#define VG_CLI_COMMAND_PARTS(name, fn, summary, usage, flags, about, notes)                                           \
	static const struct vg_cli_flag vg_cli_flags_##name[] = { flags(VG_CLI_FLAG_ROW) VG_CLI_FLAG_END };            \
	static const char *const vg_cli_usage_##name[] = { usage, NULL };                                              \
	_Static_assert(VG_OPT_END_##name <= VG_CLI_FLAGS_MAX, "too many flags for getopt's tables: " #name);
VG_COMMANDS(VG_CLI_COMMAND_PARTS)
#define VG_CLI_COMMAND_ROW(name, fn, summary, usage, flags, about, notes)                                             \
	{ #name, summary, vg_cli_usage_##name, about, notes, vg_cli_flags_##name,                                     \
	  sizeof(vg_cli_flags_##name) / sizeof(vg_cli_flags_##name[0]) - 1 },
static const struct vg_cli_command vg_cli_commands[] = { VG_COMMANDS(VG_CLI_COMMAND_ROW) };
#define VG_CLI_NCOMMANDS (sizeof(vg_cli_commands) / sizeof(vg_cli_commands[0]))

const struct vg_cli_command *vg_cli_command(const char *name)
{
	for (size_t i = 0; i < VG_CLI_NCOMMANDS; i++)
		if (!strcmp(vg_cli_commands[i].name, name))
			return &vg_cli_commands[i];
	return NULL;
}

const char *vg_cli_command_names(void)
{
	static char names[256];
	size_t o = 0;
	if (names[0])
		return names;
	for (size_t i = 0; i < VG_CLI_NCOMMANDS && o < sizeof(names); i++)
		o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "", vg_cli_commands[i].name);
	return names;
}

/* A row without a name stands for the options table's flags (VG_OPTION_FLAGS): one command has it, `run`. */
const struct vg_cli_flag *vg_cli_flags(const struct vg_cli_command *c, size_t *n)
{
	static struct vg_cli_flag spliced[VG_CLI_FLAGS_MAX];
	static const struct vg_cli_command *spliced_for;
	static size_t nspliced;
	bool splice = false;

	for (size_t i = 0; i < c->nflags; i++)
		splice |= !c->flags[i].name;
	if (!splice) {
		*n = c->nflags;
		return c->flags;
	}
	for (size_t i = 0; c != spliced_for && i < c->nflags; i++) {
		if (c->flags[i].name && nspliced < VG_CLI_FLAGS_MAX)
			spliced[nspliced++] = c->flags[i];
		for (size_t o = 0; !c->flags[i].name && o < vg_options_count && nspliced < VG_CLI_FLAGS_MAX; o++) {
			const struct vg_option_flag *f = &vg_options[o].flag;
			if (f->name)
				spliced[nspliced++] = (struct vg_cli_flag){ f->name, f->short_name, false, f->metavar,
									    f->usage, vg_options[o].name };
		}
	}
	spliced_for = c;
	*n = nspliced;
	return spliced;
}

/* "usage: vramguard FORM": a '\n' in a form goes on under its first operand. */
static void vg_cli_put_form(struct vg_strbuf *b, const char *lead, const char *form)
{
	size_t indent = strlen(lead) + strcspn(form, " \n") + 1;
	vg_strbuf_str(b, lead);
	for (;;) {
		const char *nl = strchr(form, '\n');
		vg_strbuf_add(b, form, nl ? (size_t)(nl - form) : strlen(form));
		vg_strbuf_str(b, "\n");
		if (!nl)
			break;
		vg_strbuf_spaces(b, indent);
		form = nl + 1;
	}
}

/* "  -s, --shared NAME|PATH   help": the help at VG_CLI_HELP_COL (a '\n' in it goes on there), on the next line
 * when the flag is longer; a flag without a letter where others have one gets the letter's room. */
static void vg_cli_put_flag(struct vg_strbuf *b, const struct vg_cli_flag *f, bool letters)
{
	char head[128], letter[8] = "";
	const char *help = f->help;
	if (f->short_name)
		snprintf(letter, sizeof(letter), "-%c, ", f->short_name);
	else if (letters)
		snprintf(letter, sizeof(letter), "    ");
	int n = snprintf(head, sizeof(head), "  %s--%s%s%s", letter, f->name, f->metavar ? " " : "",
			 f->metavar ? f->metavar : "");
	vg_strbuf_str(b, head);
	if (n + 2 > VG_CLI_HELP_COL) {
		vg_strbuf_str(b, "\n");
		n = 0;
	}
	vg_strbuf_spaces(b, (size_t)(VG_CLI_HELP_COL - n));
	if (f->env)
		vg_strbuf_printf(b, "%s: ", f->env);
	for (;;) {
		const char *nl = strchr(help, '\n');
		vg_strbuf_add(b, help, nl ? (size_t)(nl - help) : strlen(help));
		vg_strbuf_str(b, "\n");
		if (!nl)
			break;
		vg_strbuf_spaces(b, VG_CLI_HELP_COL);
		help = nl + 1;
	}
}

static void vg_cli_put_usage(struct vg_strbuf *b, const struct vg_cli_command *c)
{
	size_t n;
	const struct vg_cli_flag *flags = vg_cli_flags(c, &n);
	bool letters = false;

	for (size_t i = 0; c->usage[i]; i++)
		vg_cli_put_form(b, i ? "       vramguard " : "usage: vramguard ", c->usage[i]);
	vg_strbuf_printf(b, "\n%s", c->about);
	for (size_t i = 0; i < n; i++)
		letters |= flags[i].short_name != 0;
	for (size_t i = 0; i < n; i++)
		vg_cli_put_flag(b, &flags[i], letters);
	vg_strbuf_str(b, c->notes);
}

/* `vramguard help`'s list: each command and its summary. */
static void vg_cli_put_list(struct vg_strbuf *b)
{
	size_t w = 0;
	for (size_t i = 0; i < VG_CLI_NCOMMANDS; i++)
		w = strlen(vg_cli_commands[i].name) > w ? strlen(vg_cli_commands[i].name) : w;
	vg_strbuf_str(b, "usage: vramguard COMMAND [ARGS...]\n       vramguard --help | --version\n\n");
	for (size_t i = 0; i < VG_CLI_NCOMMANDS; i++)
		vg_strbuf_printf(b, "  %-*s  %s\n", (int)w, vg_cli_commands[i].name, vg_cli_commands[i].summary);
	vg_strbuf_printf(b, "\n%s", VG_COMMANDS_ABOUT);
}

const char *vg_cli_usage_of(const char *cmd)
{
	static char *text[VG_CLI_NCOMMANDS + 1];
	const struct vg_cli_command *c = cmd ? vg_cli_command(cmd) : NULL;
	size_t k = c ? (size_t)(c - vg_cli_commands) : VG_CLI_NCOMMANDS;
	struct vg_strbuf b = { 0 };

	if (cmd && !c)
		return "";
	if (text[k])
		return text[k];
	if (c)
		vg_cli_put_usage(&b, c);
	else
		vg_cli_put_list(&b);
	if (b.failed || !b.data) {
		vg_strbuf_free(&b);
		return "vramguard: out of memory\n";
	}
	return text[k] = b.data;
}

int vg_cli_help(const char *cmd)
{
	if (cmd && !vg_cli_command(cmd))
		return vg_cli_fail(2, "help: unknown command %s (expected one of %s)", vg_cli_q(cmd),
				   vg_cli_command_names());
	fputs(vg_cli_usage_of(cmd), stdout);
	return 0;
}

int vg_cli_help_command(int argc, char **argv)
{
	if (argc > 2)
		return vg_cli_usage(vg_cli_usage_of("help"), "help: expected one COMMAND, got %s too", vg_cli_q(argv[2]));
	return vg_cli_help(argc > 1 ? argv[1] : NULL);
}

/* ---- options ---- */

void vg_cli_getopt_init(struct vg_cli_getopt *g, const char *cmd, const char *what, const char *mode)
{
	size_t n = 0, s = 0;

	memset(g, 0, sizeof(*g));
	g->cmd = vg_cli_command(cmd);
	g->what = what ? what : cmd;
	g->flags = vg_cli_flags(g->cmd, &g->nflags);
	while (*mode)
		g->shorts[s++] = *mode++;
	g->shorts[s++] = ':';           /* a missing value is ':', not '?' */
	for (size_t i = 0; i < g->nflags; i++) {
		const struct vg_cli_flag *f = &g->flags[i];
		g->longs[n++] = (struct option){ f->name, f->metavar ? required_argument : no_argument, NULL,
						 VG_CLI_LONG_ONLY + (int)i };
		if (f->short_name) {
			g->shorts[s++] = f->short_name;
			if (f->metavar)
				g->shorts[s++] = ':';
		}
	}
	g->longs[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	g->longs[n] = (struct option){ NULL, 0, NULL, 0 };
	g->shorts[s++] = 'h';
	g->shorts[s] = '\0';
	optind = 0;                     /* 0: getopt starts over, whatever an earlier parse left */
}

int vg_cli_getopt(struct vg_cli_getopt *g, int argc, char **argv)
{
	int c;

	g->longindex = -1;
	c = g->raw = getopt_long(argc, argv, g->shorts, g->longs, &g->longindex);
	if (c == -1)
		return VG_CLI_OPT_END;
	if (c == 'h')
		return VG_CLI_OPT_HELP;
	if (c == 1)
		return VG_CLI_OPT_OPERAND;
	if (c >= VG_CLI_LONG_ONLY && (size_t)(c - VG_CLI_LONG_ONLY) < g->nflags)
		return c - VG_CLI_LONG_ONLY;
	for (size_t i = 0; c != '?' && c != ':' && i < g->nflags; i++)
		if (g->flags[i].short_name == c)
			return (int)i;
	return VG_CLI_OPT_BAD;
}

/* How a message names the option getopt_long just refused or returned: -x as typed, a long one as its argument. */
static const char *vg_cli_opt_typed(const struct vg_cli_getopt *g, char **argv, int letter, char buf[3])
{
	if (letter >= VG_CLI_LONG_ONLY && (size_t)(letter - VG_CLI_LONG_ONLY) < g->nflags)
		letter = g->flags[letter - VG_CLI_LONG_ONLY].short_name;
	if (!letter || letter == '?' || letter >= VG_CLI_LONG_ONLY)
		return argv[optind - 1];
	buf[0] = '-';
	buf[1] = (char)letter;
	buf[2] = '\0';
	return buf;
}

int vg_cli_bad_option(const struct vg_cli_getopt *g, char **argv)
{
	char buf[3];
	if (g->raw == ':')
		fprintf(stderr, "vramguard: error: %s: option %s needs a value\n", g->what, vg_cli_q(argv[optind - 1]));
	else
		fprintf(stderr, "vramguard: error: %s: unknown option %s\n", g->what,
			vg_cli_q(vg_cli_opt_typed(g, argv, optopt, buf)));
	fputs(vg_cli_usage_of(g->cmd->name), stderr);
	return 2;
}

int vg_cli_refuse_option(const struct vg_cli_getopt *g, char **argv)
{
	char buf[3];
	fprintf(stderr, "vramguard: error: %s: unknown option %s\n", g->what,
		vg_cli_q(g->longindex >= 0 ? argv[optind - 1] : vg_cli_opt_typed(g, argv, g->raw, buf)));
	fputs(vg_cli_usage_of(g->cmd->name), stderr);
	return 2;
}

const char *vg_cli_negative(const struct vg_cli_getopt *g, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--"))
			return NULL;
		if (a[0] == '-' && a[1] >= '0' && a[1] <= '9')
			return a;
		for (size_t k = 0; k < g->nflags; k++) {
			const struct vg_cli_flag *f = &g->flags[k];
			if (f->metavar && ((a[0] == '-' && a[1] == f->short_name && f->short_name && !a[2]) ||
					   (a[0] == '-' && a[1] == '-' && !strcmp(a + 2, f->name)))) {
				i++;    /* its value, whatever it looks like */
				break;
			}
		}
	}
	return NULL;
}

/* ---- messages ---- */

int vg_cli_fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("vramguard: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return code;
}

int vg_cli_vusage(const char *usage, const char *fmt, va_list ap)
{
	fputs("vramguard: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n%s", usage);
	return 2;
}

int vg_cli_usage(const char *usage, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vg_cli_vusage(usage, fmt, ap);
	va_end(ap);
	return rc;
}

const char *vg_cli_q(const char *s)
{
	static char buf[8][VG_QUOTE_BUF];
	static unsigned next;
	return vg_quote(s, buf[next++ % 8], VG_QUOTE_BUF);
}

/* ---- values, time, places ---- */

bool vg_cli_seconds(const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return errno == 0 && *s && !*end;
}

double vg_cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* VRAMGUARD_SHM_DIR and VRAMGUARD_SHARED are read by the library's own loader; vg_cli_env_dir stands in for
 * VRAMGUARD_SHM_DIR where --dir gave one. */
static const char *vg_cli_env_dir;
static bool vg_cli_env_dir_set;

static const char *vg_cli_getenv(const char *name)
{
	if (strcmp(name, "VRAMGUARD_SHM_DIR") == 0)
		return vg_cli_env_dir_set ? vg_cli_env_dir : getenv(name);
	return strcmp(name, "VRAMGUARD_SHARED") == 0 ? getenv(name) : NULL;
}

const struct vg_config *vg_cli_env(const char *dir, char *err, size_t errlen)
{
	static struct vg_config cfg;
	vg_cli_env_dir = dir;
	vg_cli_env_dir_set = dir != NULL;
	if (vg_config_load(&cfg, vg_cli_getenv, 0) != 0) {
		const char *e = cfg.error, *head = "vramguard: error: ";
		snprintf(err, errlen, "%s", strncmp(e, head, strlen(head)) == 0 ? e + strlen(head) : e);
		return NULL;
	}
	return &cfg;
}

const char *vg_cli_env_get(const char *name)
{
	return getenv(name);
}

int vg_cli_dir(const char *opt, char *out, size_t len, char *err, size_t errlen)
{
	const char *what = "--dir", *v = opt;
	if (!v) {
		const struct vg_config *cfg = vg_cli_env(NULL, err, errlen);
		if (!cfg)
			return -EINVAL;
		v = cfg->shm_dir;
		what = "VRAMGUARD_SHM_DIR";
	}
	size_t n = strlen(v);
	while (n > 1 && v[n - 1] == '/')
		n--;
	if (v[0] != '/' || n >= len || n >= VG_CLI_DIR_MAX) {
		snprintf(err, errlen, "invalid %s %s: %s", what, vg_cli_q(v),
			 v[0] != '/' ? "expected an absolute directory path (e.g. /dev/shm)"
				     : "path too long (at most 255 bytes)");
		return -EINVAL;
	}
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

/* bin/vramguard -> bin/../lib/libvramguard.so (installed), or build/vramguard -> build/libvramguard.so: found
 * relative to the command itself, so a relocated install works. The Debian package's place (`make deb`) is the
 * multiarch one, /usr/lib/x86_64-linux-gnu/vramguard/. */
int vg_cli_find_library(char *out, size_t len)
{
	static const char *const rel[] = { "libvramguard.so", "../lib/libvramguard.so",
					   "../lib/vramguard/libvramguard.so", "../lib64/libvramguard.so",
					   "../lib/x86_64-linux-gnu/vramguard/libvramguard.so" };
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char cand[PATH_MAX + 64];
		snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
		if (access(cand, R_OK) == 0 && realpath(cand, out) && strlen(out) < len)
			return 0;
	}
	return -1;
}
