/* `vramguard run`: validate the configuration with the library's own parser, put the library in front of
 * LD_PRELOAD and exec the job. Its flags, their lines in its usage and in the man page come from the options table's
 * flag column (config/options.h, spliced into run's row of cli/commands.h): a flag sets its row's variable, so `run`
 * cannot offer what the library does not read. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "config/config.h"

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
	struct vg_cli_getopt g;
	int k;

	vg_cli_getopt_init(&g, "run", NULL, "+");
	while ((k = vg_cli_getopt(&g, argc, argv)) != VG_CLI_OPT_END) {
		if (k == VG_CLI_OPT_HELP)
			return vg_cli_help("run");
		if (k < 0)
			return vg_cli_bad_option(&g, argv);
		if (setenv(g.flags[k].env, optarg, 1) != 0)
			return vg_cli_fail(1, "setenv %s: %s", g.flags[k].env, strerror(errno));
	}
	if (optind >= argc)
		return vg_cli_usage(vg_cli_usage_of("run"), "run: no command given");
	struct vg_config cfg;
	if (vg_config_load(&cfg, vg_cli_env_get, 0) != 0) {
		fprintf(stderr, "%s\n", cfg.error);
		return 2;
	}
	char lib[PATH_MAX];
	if (vg_cli_find_library(lib, sizeof(lib)) != 0)
		return vg_cli_fail(1, "cannot find libvramguard.so next to this command or in its ../lib "
				   "(reinstall vramguard)");
	const char *old = getenv("LD_PRELOAD");
	if (!old || !*old) {
		setenv("LD_PRELOAD", lib, 1);
	} else if (!preload_has(old, lib)) {
		size_t len = strlen(lib) + strlen(old) + 2;
		char *v = malloc(len);
		if (!v)
			return vg_cli_fail(1, "out of memory");
		snprintf(v, len, "%s:%s", lib, old);
		setenv("LD_PRELOAD", v, 1);
		free(v);
	}
	execvp(argv[optind], argv + optind);
	int e = errno;
	fprintf(stderr, "vramguard: error: cannot run %s: %s\n", vg_cli_q(argv[optind]), strerror(e));
	return e == ENOENT ? 127 : 126;
}
