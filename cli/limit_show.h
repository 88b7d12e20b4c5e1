/* `vramguard limit show` (cli/limit_show.c): the limits in force, as tables or as one vramguard.limits/1 document. */
#ifndef VG_CLI_LIMIT_SHOW_H
#define VG_CLI_LIMIT_SHOW_H

/* The subcommand: argv[0] is "show". Exit status 0 done, 1 error, 2 usage. */
int vg_limit_show(int argc, char **argv);

#endif
