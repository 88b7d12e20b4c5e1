/* `vramguard run`: validate the configuration with the library's own parser, put the library in front of
 * LD_PRELOAD and exec the job. Its flags, and their lines in --help, come from the options table's flag column
 * (config/options.h): a flag sets its row's variable, so `run` cannot offer what the library does not read. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/cli.h"
#include "config/config.h"

#define VG_RUN_FLAG_WIDTH 19    /* "--shared-limit SPEC": the usage column starts after the longest flag */
#define VG_RUN_LONG_ONLY 256    /* getopt_long's value for row i without a short flag: 256 + i */
#define VG_RUN_ROWS_MAX 64      /* vg_options rows (vg_config.secure_ignored has a bit per row) */

static const char run_head[] =
	"usage: vramguard run [options] -- COMMAND [ARGS...]\n"
	"\n"
	"Validate the configuration, add libvramguard.so in front of LD_PRELOAD and exec COMMAND. Exit status,\n"
	"standard streams and signals are COMMAND's own. Options override the environment:\n";

static const char run_tail[] =
	"  -h, --help              this help\n"
	"\n"
	"An invalid value is rejected before COMMAND starts, with the library's message (exit status 2).\n"
	"If COMMAND cannot be run the exit status is 127 (not found) or 126 (not executable).\n";

/* Appends to text[*o..len): the text is fixed when the command is built, and fits (run.sh compares it whole). */
static void put(char *text, size_t len, size_t *o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *text, size_t len, size_t *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*o >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(text + *o, len - *o, fmt, ap);
	va_end(ap);
	*o += n > 0 ? (size_t)n : 0;
}

/* One line per flag: "  -l, --limit SPEC        NVIDIA_GPU_MEMORY_LIMITS: <usage>", a '\n' in the usage going on
 * under the usage column. */
const char *vg_usage_run(void)
{
	static char text[4096];
	size_t o = 0;

	if (text[0])
		return text;
	put(text, sizeof(text), &o, "%s", run_head);
	for (size_t i = 0; i < vg_options_count; i++) {
		const struct vg_option_flag *f = &vg_options[i].flag;
		const char *u = f->usage;
		char shrt[8] = "    ", flag[64];

		if (!f->name)
			continue;
		if (f->short_name)
			snprintf(shrt, sizeof(shrt), "-%c, ", f->short_name);
		snprintf(flag, sizeof(flag), "--%s %s", f->name, f->metavar);
		put(text, sizeof(text), &o, "  %s%-*s %s: ", shrt, VG_RUN_FLAG_WIDTH, flag, vg_options[i].name);
		for (;;) {
			const char *nl = strchr(u, '\n');
			int n = nl ? (int)(nl - u) : (int)strlen(u);

			put(text, sizeof(text), &o, "%.*s\n", n, u);
			if (!nl)
				break;
			u = nl + 1;
			put(text, sizeof(text), &o, "%*s", 2 + 4 + VG_RUN_FLAG_WIDTH + 1, "");
		}
	}
	put(text, sizeof(text), &o, "%s", run_tail);
	return text;
}

/* bin/vramguard -> bin/../lib/libvramguard.so (installed), or build/vramguard -> build/libvramguard.so: found
 * relative to the command itself, so a relocated install works. */
int vg_cli_find_library(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	static const char *const rel[] = { "libvramguard.so", "../lib/libvramguard.so",
					   "../lib/vramguard/libvramguard.so", "../lib64/libvramguard.so" };
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char cand[PATH_MAX + 64];
		snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
		if (access(cand, R_OK) == 0 && realpath(cand, out) && strlen(out) < len)
			return 0;
	}
	return -1;
}

/* The command reads its environment as an ordinary process would (vg_config_load's secure = 0): it is not meant to
 * be installed setuid, and `run` checks the variables the way the job will read them when it is not either. */
const char *vg_cli_env_get(const char *name)
{
	return getenv(name);
}

static bool preload_has(const char *list, const char *lib)
{
	size_t n = strlen(lib);
	for (const char *p = list; *p;) {
		while (*p == ':' || *p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ':' && *e != ' ')
			e++;
		if ((size_t)(e - p) == n && !strncmp(p, lib, n))
			return true;
		p = e;
	}
	return false;
}

int vg_cli_run(int argc, char **argv)
{
	struct option opts[VG_RUN_ROWS_MAX + 2];
	char shorts[2 * VG_RUN_ROWS_MAX + 4] = "+:";
	size_t n = 0, s = 2;
	int c;

	for (size_t i = 0; i < vg_options_count && i < VG_RUN_ROWS_MAX; i++) {
		const struct vg_option_flag *f = &vg_options[i].flag;
		if (!f->name)
			continue;
		int val = f->short_name ? f->short_name : VG_RUN_LONG_ONLY + (int)i;

		opts[n++] = (struct option){ f->name, required_argument, NULL, val };
		if (f->short_name) {
			shorts[s++] = f->short_name;
			shorts[s++] = ':';
		}
	}
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
	shorts[s++] = 'h';
	shorts[s] = '\0';
	optind = 1;
	while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		const char *var = NULL;
		if (c == 'h')
			return vg_cli_help("run");
		if (c >= VG_RUN_LONG_ONLY && (size_t)(c - VG_RUN_LONG_ONLY) < vg_options_count)
			var = vg_options[c - VG_RUN_LONG_ONLY].name;
		for (size_t i = 0; !var && c > 0 && c < VG_RUN_LONG_ONLY && i < vg_options_count; i++)
			if (vg_options[i].flag.name && vg_options[i].flag.short_name == c)
				var = vg_options[i].name;
		if (!var)
			return vg_cli_bad_option("run", argv, c, vg_usage_run());
		if (setenv(var, optarg, 1) != 0)
			vg_cli_die(1, "setenv %s: %s", var, strerror(errno));
	}
	if (optind >= argc)
		vg_cli_usage_exit(vg_usage_run(), "run: no command given");
	struct vg_config cfg;
	if (vg_config_load(&cfg, vg_cli_env_get, 0) != 0) {
		fprintf(stderr, "%s\n", cfg.error);
		return 2;
	}
	char lib[PATH_MAX];
	if (vg_cli_find_library(lib, sizeof(lib)) != 0)
		vg_cli_die(1, "cannot find libvramguard.so next to this command or in its ../lib "
			   "(reinstall vramguard)");
	const char *old = getenv("LD_PRELOAD");
	if (!old || !*old) {
		setenv("LD_PRELOAD", lib, 1);
	} else if (!preload_has(old, lib)) {
		size_t len = strlen(lib) + strlen(old) + 2;
		char *v = malloc(len);
		if (!v)
			vg_cli_die(1, "out of memory");
		snprintf(v, len, "%s:%s", lib, old);
		setenv("LD_PRELOAD", v, 1);
		free(v);
	}
	execvp(argv[optind], argv + optind);
	int e = errno;
	fprintf(stderr, "vramguard: error: cannot run %s: %s\n", vg_cli_q(argv[optind]), strerror(e));
	return e == ENOENT ? 127 : 126;
}
