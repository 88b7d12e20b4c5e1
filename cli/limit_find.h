/* Finding what `vramguard limit` names (cli/limit_find.c): a shared region by NAME or PATH, a process by its PID
 * (its control segment, or its slot in a shared region). Below limit set, limit show, region evict and autoscale,
 * which find their targets with it; the parts of `limit`, bottom to top: this file; limit_set.c (changing a limit)
 * and limit_show.c (the limits in force); limit.c, the command. */
#ifndef VG_CLI_LIMIT_FIND_H
#define VG_CLI_LIMIT_FIND_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/cli.h"
#include "cli/scan.h"

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
