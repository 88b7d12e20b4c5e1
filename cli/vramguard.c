/* The `vramguard` command's main: a launcher that validates the configuration with the library's own parser and
 * execs the job under the preload (run), tools to read reports (report, diff), to ask a running process for one
 * (dump), to see what the library would do on this machine (check), to watch and change running jobs (top, limit,
 * region, exporter, autoscale), and to put containers under a quota (cdi: a CDI spec). Each command has its own
 * file; their rows (cli/commands.h) drive the dispatch below, `help` and the usage texts (cli/cli.c). The top of
 * cli/: nothing calls into this file. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "accounting/fault.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "config/config.h"

#define VG_MAIN_ROW(name, fn, summary, usage, flags, about, notes) { #name, fn },
static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} vg_main_commands[] = { VG_COMMANDS(VG_MAIN_ROW) };

int main(int argc, char **argv)
{
	/* C++ frames in reports are shown demangled when libstdc++'s demangler is at hand; the command may load it. */
	(void)dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
	opterr = 0;     /* the commands say which option is wrong themselves (vg_cli_bad_option), bounded */
	/* A region file truncated by its owner while a command works on it costs that file, not the command
	 * (accounting/fault.h). exec resets it: the job of `run` gets the default action back. */
	vg_fault_install();
	if (argc < 2) {
		fputs(vg_cli_usage_of(NULL), stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
		return vg_cli_help(NULL);
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("vramguard %s\n", VG_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(vg_main_commands) / sizeof(vg_main_commands[0]); i++)
		if (!strcmp(cmd, vg_main_commands[i].name))
			return vg_main_commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "vramguard: error: unknown command %s (see 'vramguard --help')\n%s", vg_cli_q(cmd),
		vg_cli_usage_of(NULL));
	return 2;
}
