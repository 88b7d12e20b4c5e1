/* `vramguard limit`'s parts: limit.c dispatches and finds what a command names (a shared region, a process by its
 * PID), limit_set.c changes a limit, limit_show.c shows the limits in force (tables, or the vramguard.limits/1
 * document of cli/view_schema.h). */
#ifndef VG_CLI_LIMIT_H
#define VG_CLI_LIMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/scan.h"

struct vg_limits;

/* The subcommands: argv[0] is "set" / "show". Exit status 0 done, 1 error, 2 usage. */
int vg_limit_set(int argc, char **argv);
int vg_limit_show(int argc, char **argv);

/* What `limit set` does, for it and for `vramguard autoscale` (the same checks and ownership rules): set the shared
 * region's budget, or process pid's own quota (found as vg_limit_find_pid finds it), to spec (already checked into
 * *l by vg_region_spec_check). The confirmation line goes to out (NULL: none), errors to stderr. 0, or the exit
 * status after saying why. */
int vg_limit_set_shared(const char *dir, const char *name, const char *spec, const struct vg_limits *l, FILE *out);
int vg_limit_set_pid(const char *dir, const char *shared, int32_t pid, const char *spec, const struct vg_limits *l,
		     FILE *out);

/* --pid's value: 0, or the exit status 2 after the usage message. */
int vg_limit_pid_arg(const char *s, int32_t *pid);
/* Open the shared region NAME or PATH of dir, for changing it if writable: 0, or the exit status after saying why. */
int vg_limit_open_shared(const char *dir, const char *name, struct vg_region *r, bool writable);
/* The slot of the process the caller names pid in r (inner: its PID in its own PID namespace, vg_proc_inner_pid;
 * start: its start time): the one with its start time and either its PID here or, for a job in a container with a
 * PID namespace of its own, its PID there (a slot records the PID its process sees; start times count from boot in
 * every namespace). -1 when none; -2 when two fit (two containers' PID 1 started in the same clock tick): which one
 * is meant cannot be told; -3 when r is a file opened for changes that its owner truncated meanwhile
 * (vg_region_guarded: r is then dead). `limit --pid` and `region evict` find a process with it. */
int vg_limit_slot_of(struct vg_region *r, int32_t pid, int32_t inner, uint64_t start);
/* The region and slot of a live process: its control segment, or a slot in a shared region (only the one named
 * with --shared if given). 0 with r open (writable if want_write), or the exit status after saying why. */
int vg_limit_find_pid(const char *dir, const char *shared, int32_t pid, bool want_write, struct vg_region *out,
		      int *slot);

#endif
