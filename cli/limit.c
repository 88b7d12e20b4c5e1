/* `vramguard limit set|show`: change a shared region's budget or one process's own quota while jobs run, and show
 * the limits in force. The command only writes the request into the region (accounting/region.h); each process
 * applies it at its next allocation. This file: the subcommands' dispatch; its parts are limit_set.c and
 * limit_show.c, and below them limit_find.c (finding what they name). */
#define _GNU_SOURCE
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/limit_set.h"
#include "cli/limit_show.h"

int vg_cli_limit(int argc, char **argv)
{
	if (argc < 2)
		return vg_cli_usage(vg_cli_usage_of("limit"), "limit: expected 'set' or 'show'");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))
		return vg_cli_help("limit");
	if (!strcmp(argv[1], "set"))
		return vg_limit_set(argc - 1, argv + 1);
	if (!strcmp(argv[1], "show"))
		return vg_limit_show(argc - 1, argv + 1);
	return vg_cli_usage(vg_cli_usage_of("limit"), "limit: unknown subcommand %s (expected 'set' or 'show')",
			    vg_cli_q(argv[1]));
}
