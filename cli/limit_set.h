/* `vramguard limit set` (cli/limit_set.c): a new limit written into a shared region or a process's slot, for the
 * command and for `vramguard autoscale`. */
#ifndef VG_CLI_LIMIT_SET_H
#define VG_CLI_LIMIT_SET_H

#include <stdint.h>
#include <stdio.h>

struct vg_limits;

/* The subcommand: argv[0] is "set". Exit status 0 done, 1 error, 2 usage. */
int vg_limit_set(int argc, char **argv);

/* What `limit set` does, for it and for `vramguard autoscale` (the same checks and ownership rules): set the shared
 * region's budget, or process pid's own quota (found as vg_limit_find_pid finds it), to spec (already checked into
 * *l by vg_region_spec_check). The confirmation line goes to out (NULL: none), errors to stderr. 0, or the exit
 * status after saying why. */
int vg_limit_set_shared(const char *dir, const char *name, const char *spec, const struct vg_limits *l, FILE *out);
int vg_limit_set_pid(const char *dir, const char *shared, int32_t pid, const char *spec, const struct vg_limits *l,
		     FILE *out);

#endif
