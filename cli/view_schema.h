/* The JSON schemas of the live view, "vramguard.top/1" (`top --json`) and "vramguard.limits/1" (`limit show
 * --json`): one row per key, one row list per object, in the order the keys are written, as the report's schema
 * (report/schema.h) is written. The writers (cli/top_json.c, cli/limit_show.c, through VG_CJ_OBJECT of
 * cli/view_json.h, which checks each row's value against its type at compile time) and the tables of
 * docs/report-format.md (scripts/gen-report-doc.c, from the rows as struct vg_schema_object: VG_VIEW_DEFINE below,
 * checked current by `make test`) all follow these rows, so a new key is one row here. Only macros (and
 * report/schema.h's declarations): the doc generator includes this header without the command's code.
 *
 * X(key, type, value, doc)
 *   key     the JSON key
 *   type    how the value is written (cli/view_json.h) and what the document calls it (VG_VIEW_DOC_<type>):
 *             INT, U64   a number from an int, or from an unsigned integer
 *             BOOL       true or false
 *             TRI        true (1), false (0) or null (-1)
 *             STR        a char array (escaped, bounded by its size: the views of region_scan.h are copies)
 *             WORD       a string vramguard chose: a literal or a name such as vg_life_name's
 *             NSTR       a string, or null where value is NULL
 *             LIMIT      a size in bytes, or null for VG_REGION_NONE (no limit)
 *             NZU64      a number, or null for 0 (not yet)
 *             PUB        a number the process's sampler publishes, or null before its first round: value is
 *                        VG_VIEW_PUBLISHED(p, the number)
 *             ARRAY      value is a call that writes the elements: "[" and "]" are written around it
 *   value   an expression of the writer's variables, each list saying which are in scope (a row's value is
 *           evaluated only where a writer expands the list)
 *   doc     the key's meaning for the document: Markdown, one line, no '|'; numbers as report/schema.h says
 *
 * Variables the values use: b (struct vg_strbuf *, the output, for ARRAY calls), sr (const struct vg_scan_region *),
 * info (struct vg_region_info of sr), d (a region device's index) and dev (struct vg_dev_view of it), k (a slot's
 * index) and p (const struct vg_slot_view * of it); for `top` sn and o (its snapshot and options), g (const struct
 * vg_top_gpu *), bu (struct vg_top_budget); for `limit show` s (const struct vg_scan *) and only_pid (int32_t, 0
 * for every process). */
#ifndef VG_CLI_VIEW_SCHEMA_H
#define VG_CLI_VIEW_SCHEMA_H

#include "report/schema.h"

#define VG_VIEW_TOP_SCHEMA "vramguard.top/1"
#define VG_VIEW_LIMITS_SCHEMA "vramguard.limits/1"

/* Each type, as the report's schema has its types: VG_VIEW_AS_<type>, the report's type that writes the same JSON
 * (TRI, which the report has not, as its BOOL); VG_VIEW_DOC_<type>, how the document names it; VG_VIEW_IS_<type>(v),
 * what a row's value must be, checked where a writer expands the rows (cli/view_json.h). */
#define VG_VIEW_AS_INT VG_SCHEMA_INT
#define VG_VIEW_DOC_INT VG_SCHEMA_DOC_INT
#define VG_VIEW_IS_INT(v) VG_SCHEMA_TYPE_IS(v, int)
#define VG_VIEW_AS_U64 VG_SCHEMA_U64
#define VG_VIEW_DOC_U64 VG_SCHEMA_DOC_U64
#define VG_VIEW_IS_U64(v) (VG_SCHEMA_TYPE_IS(v, uint64_t) || VG_SCHEMA_TYPE_IS(v, uint32_t))
#define VG_VIEW_AS_BOOL VG_SCHEMA_BOOL
#define VG_VIEW_DOC_BOOL VG_SCHEMA_DOC_BOOL
#define VG_VIEW_IS_BOOL(v) (VG_SCHEMA_TYPE_IS(v, bool) || VG_SCHEMA_TYPE_IS(v, int))
#define VG_VIEW_AS_TRI VG_SCHEMA_BOOL
#define VG_VIEW_DOC_TRI "boolean or `null`"
#define VG_VIEW_IS_TRI(v) VG_SCHEMA_TYPE_IS(v, int)
#define VG_VIEW_AS_STR VG_SCHEMA_STR
#define VG_VIEW_DOC_STR VG_SCHEMA_DOC_STR
#define VG_VIEW_IS_STR(v) (!VG_SCHEMA_TYPE_IS(v, __typeof__(&(v)[0])))     /* an array: its size bounds it */
#define VG_VIEW_AS_WORD VG_SCHEMA_STR
#define VG_VIEW_DOC_WORD VG_SCHEMA_DOC_STR
#define VG_VIEW_IS_WORD(v) (VG_SCHEMA_TYPE_IS(&*(v), const char *) || VG_SCHEMA_TYPE_IS(&*(v), char *))
#define VG_VIEW_AS_NSTR VG_SCHEMA_NSTR
#define VG_VIEW_DOC_NSTR VG_SCHEMA_DOC_NSTR
#define VG_VIEW_IS_NSTR(v) VG_VIEW_IS_WORD(v)
#define VG_VIEW_AS_LIMIT VG_SCHEMA_NU64
#define VG_VIEW_DOC_LIMIT VG_SCHEMA_DOC_NU64
#define VG_VIEW_IS_LIMIT(v) VG_SCHEMA_TYPE_IS(v, uint64_t)
#define VG_VIEW_AS_NZU64 VG_SCHEMA_NU64
#define VG_VIEW_DOC_NZU64 VG_SCHEMA_DOC_NU64
#define VG_VIEW_IS_NZU64(v) VG_SCHEMA_TYPE_IS(v, uint64_t)
#define VG_VIEW_AS_PUB VG_SCHEMA_NU64
#define VG_VIEW_DOC_PUB VG_SCHEMA_DOC_NU64
#define VG_VIEW_IS_PUB(v) VG_SCHEMA_TYPE_IS(v, uint64_t)
#define VG_VIEW_PUBLISHED(p, v) ((p)->count_mode ? (uint64_t)(v) : VG_REGION_NONE)
#define VG_VIEW_AS_ARRAY VG_SCHEMA_ARRAY
#define VG_VIEW_DOC_ARRAY VG_SCHEMA_DOC_ARRAY
#define VG_VIEW_IS_ARRAY(call) 1                /* a call that writes the elements: nothing to check */

/* ---- `top --json`: sn, o ---- */
#define VG_VIEW_TOP(X) \
	X(schema, WORD, VG_VIEW_TOP_SCHEMA, "`\"" VG_VIEW_TOP_SCHEMA "\"`: the format and its major version (versioning " \
	  "follows the report's rule)") \
	X(time_ns, U64, sn->now_ns, "the snapshot's time, in nanoseconds since the epoch") \
	X(dir, STR, o->dir, "the directory of the regions (`--dir`, else `VRAMGUARD_SHM_DIR`, else `/dev/shm`)") \
	X(regions, ARRAY, top_json_regions(b, sn), "the shared regions (below)") \
	X(processes, ARRAY, top_json_processes(b, sn), "the processes of every region, control segments included " \
	  "(below)") \
	X(totals, ARRAY, top_json_totals(b, sn), "one per physical GPU, by `uuid` (below)") \
	X(exited, INT, sn->nexited, "processes shown with `state` `\"exited\"`") \
	X(unverifiable, INT, sn->nunverifiable, "processes of shared regions shown as `\"unverifiable\"`") \
	X(unreadable, INT, sn->scan.denied, "region files that could not be opened for lack of permission") \
	X(skipped, INT, sn->scan.bad, "files refused for another reason (not a region, another layout version)") \
	X(changed, INT, sn->scan.changed, "region files skipped because they changed while read (their owner " \
	  "truncated or replaced them); the next snapshot reads them again") \
	X(missing, INT, sn->scan.missing, "regions named with `--shared` that do not exist") \
	X(removed, INT, sn->scan.removed, "control segments of exited processes this snapshot removed") \
	X(removed_regions, INT, sn->scan.removed_regions, "shared regions whose members had all exited, this snapshot " \
	  "removed (never persistent ones)") \
	X(reclaimed, INT, sn->scan.reclaimed, "shares of exited processes this snapshot reclaimed")

/* A region, in `top`'s regions[] and `limit show`'s: sr, info. */
#define VG_VIEW_REGION(X) \
	X(kind, WORD, sr->control ? "control" : "shared", "`\"shared\"`; in `limit show` also `\"control\"`: a " \
	  "process's own control segment") \
	X(name, NSTR, sr->control ? NULL : sr->label, "the region's name; `null` for a control segment") \
	X(path, STR, sr->r.path, "its file") \
	X(created_spec, STR, info.created_spec, "the budget it was made with, `\"\"` for none") \
	X(spec, STR, info.spec, "the one in force; after `limit set` with keys only, the old default stays in front: " \
	  "`\"8G,0:3G\"`") \
	X(writable, BOOL, sr->admin, "by the user running the command: the owner, the group of a group-writable " \
	  "file, or root; never a file every user can write") \
	X(persistent, BOOL, info.persistent, "made by `vramguard region create`: it outlives its members") \
	X(slots, U64, sr->r.nslots, "how many processes it can hold at once") \
	X(members, INT, vg_region_members(&sr->r), "processes in it, alive or unverifiable now") \
	X(reclaimed, U64, info.reclaimed, "shares of dead processes reclaimed, ever") \
	X(evicted, U64, info.evicted, "slots freed by `vramguard region evict`, ever") \
	X(devices, ARRAY, vg_cj_region_devices(b, sr), "the GPUs registered in it (below)")

/* The first keys of every device object: d, dev. */
#define VG_VIEW_DEVICE_ID(X) \
	X(index, INT, d, "the device's index in the region") \
	X(uuid, STR, dev.uuid, "the GPU's UUID; `\"ordinal:N\"` for a GPU registered without one") \
	X(ordinal, INT, dev.ordinal, "the CUDA ordinal of the process that registered it: spec keys `N:` mean this")

/* A region's devices[]: sr, d, dev. */
#define VG_VIEW_REGION_DEVICE(X) \
	VG_VIEW_DEVICE_ID(X) \
	X(total_bytes, U64, dev.total, "the GPU's memory; 0 if unknown") \
	X(limit_bytes, LIMIT, dev.limit, "the region's budget there; `null` for none (always in a control segment)") \
	X(used_bytes, U64, dev.used, "in use by the region's processes, as the region counts it") \
	X(peak_bytes, U64, dev.peak, "the highest `used_bytes` seen") \
	X(denied, U64, dev.denied, "charges refused by the budget")

/* The first keys of a process, in `top` and `limit show`: p. */
#define VG_VIEW_PROCESS_ID(X) \
	X(pid, INT, p->pid, "as the process's own PID namespace numbers it") \
	X(command, STR, p->cmd, "its command line, arguments joined by spaces, cut to fit its slot (at a character " \
	  "boundary)") \
	X(alive, TRI, p->life == VG_LIFE_ALIVE ? 1 : p->alive ? -1 : 0, "`true`, `false`, or `null` for unverifiable") \
	X(state, WORD, vg_life_name(p->life), "`\"alive\"`: its liveness lock or, without one, its PID and start time " \
	  "say so; `\"exited\"`: exited without leaving, in a region the command could not write, not in the totals; " \
	  "`\"unverifiable\"`: another PID namespace's member without a liveness lock, counted, freed by " \
	  "`vramguard region evict`")

/* Where the process is: k, p. */
#define VG_VIEW_PROCESS_SLOT(X) \
	X(slot, U64, k, "its slot in the region") \
	X(denied, U64, p->denied, "allocations refused to it, by either limit")

/* Its last `limit set --pid` request: p. */
#define VG_VIEW_PROCESS_REQUEST(X) \
	X(requested_limit, NSTR, p->limit_spec[0] ? p->limit_spec : NULL, "the last `limit set --pid` spec, or `null`") \
	X(applied, BOOL, !p->pending, "`false` while the process has not applied that request yet; `true` when it has " \
	  "or there is none")

/* `top`'s processes[]: sr, k, p. */
#define VG_VIEW_TOP_PROCESS(X) \
	VG_VIEW_PROCESS_ID(X) \
	X(region, NSTR, sr->control ? NULL : sr->label, "its region's name; `null` for a process with its own control " \
	  "segment") \
	X(path, STR, sr->r.path, "its region's file") \
	VG_VIEW_PROCESS_SLOT(X) \
	X(last_report_ns, NZU64, p->last_report_ns, "when it last wrote a report (nanoseconds since the epoch); `null` " \
	  "before its first") \
	X(allocations, PUB, VG_VIEW_PUBLISHED(p, p->allocs), "allocations it made, over all its GPUs; `null` until its " \
	  "sampler published its counters (each `VRAMGUARD_DEVICE_POLL` round)") \
	X(denied_bytes, PUB, VG_VIEW_PUBLISHED(p, p->denied_bytes), "bytes asked for by the allocations refused to it; " \
	  "`null` like `allocations`") \
	X(live_allocations, PUB, VG_VIEW_PUBLISHED(p, p->live_allocs), "its allocations not freed yet; `null` like " \
	  "`allocations`") \
	X(streams_destroyed_pending, PUB, VG_VIEW_PUBLISHED(p, p->streams_pending), "streams it destroyed while work was " \
	  "still queued; `null` like `allocations`") \
	VG_VIEW_PROCESS_REQUEST(X) \
	X(devices, ARRAY, top_json_process_devices(b, sr, p), "every GPU the process registered in its region (its " \
	  "slot's `bound` bits), in a control segment and in a shared region alike (below)")

/* A process's devices[] in `top`: sr, p, d, dev. */
#define VG_VIEW_TOP_PROCESS_DEVICE(X) \
	VG_VIEW_DEVICE_ID(X) \
	X(used_bytes, U64, p->used[d], "in use by the process: exact in a shared region; in a control segment its " \
	  "quota's counter, which includes its threads' small-allocation credit (up to 2 MiB a thread not yet handed " \
	  "out: docs/quota.md, \"Atomicity\")") \
	X(allocated_bytes, U64, p->alloc[d], "the part of `used_bytes` that is allocations (the process publishes it " \
	  "each `VRAMGUARD_DEVICE_POLL` period; 0 until it has). `used_bytes` is live: what was allocated since the " \
	  "last period is in `used_bytes` only; what was freed since lowers this too, so that it and `driver_bytes` " \
	  "never add up to more than `used_bytes`") \
	X(driver_bytes, U64, p->driver[d], "the part that is the driver's own memory for the process (context, " \
	  "modules, ...); 0 if not measured") \
	X(count, NSTR, p->count_mode == 1 ? "device" : p->count_mode == 2 ? "allocations" : NULL, "what its quota " \
	  "counts (`VRAMGUARD_COUNT`): `\"device\"` or `\"allocations\"`; `null` until it has published its figures") \
	X(peak_bytes, U64, p->peak[d], "the highest `used_bytes` seen") \
	X(quota_bytes, LIMIT, vg_top_effective(sr, p, d), "the quota in force: the tighter of `own_quota_bytes` and " \
	  "`region_limit_bytes`; `null` for none") \
	X(own_quota_bytes, LIMIT, p->quota[d], "the process's own quota; `null` for none") \
	X(region_limit_bytes, LIMIT, vg_dev_limit(&sr->r, d), "its region's budget there; `null` for none (always in " \
	  "a control segment)")

/* `top`'s totals[]: sn, g. */
#define VG_VIEW_TOP_GPU(X) \
	X(uuid, STR, g->uuid, "the GPU (an `\"ordinal:N\"` key stands for itself)") \
	X(ordinal, INT, g->first.ordinal, "its ordinal, as the first region that has it says") \
	X(total_bytes, U64, g->first.total, "its memory, as that region says; 0 if unknown") \
	X(used_bytes, U64, g->used, "in use by live processes") \
	X(processes, INT, g->procs, "live processes using it") \
	X(budgets, ARRAY, top_json_budgets(b, sn, g), "the shared regions with a budget on it (below)")

/* A GPU's budgets[]: bu. */
#define VG_VIEW_TOP_BUDGET(X) \
	X(region, STR, bu.sr->label, "the region's name") \
	X(limit_bytes, U64, bu.limit, "its budget on the GPU") \
	X(used_bytes, U64, bu.used, "in use, as the region counts it")

/* ---- `limit show --json`: s, only_pid ---- */
#define VG_VIEW_LIMITS(X) \
	X(schema, WORD, VG_VIEW_LIMITS_SCHEMA, "`\"" VG_VIEW_LIMITS_SCHEMA "\"`: the format and its major version " \
	  "(versioning follows the report's rule)") \
	X(dir, STR, s->dir, "the directory of the regions") \
	X(regions, ARRAY, limit_json_regions(b, s, only_pid), "the shared regions and control segments, each as in " \
	  "`top` (a control segment with `kind` `\"control\"` and `name` `null`) with its processes (below)") \
	X(unreadable, INT, s->denied, "as in `top`") \
	X(skipped, INT, s->bad, "as in `top`") \
	X(changed, INT, s->changed, "as in `top`")

/* What a region has in `limit show` after the keys of VG_VIEW_REGION: sr, info, only_pid. */
#define VG_VIEW_LIMITS_REGION(X) \
	X(compute_limit, NSTR, sr->control || !info.compute_spec[0] ? NULL : info.compute_spec, "the region-wide " \
	  "compute share (`limit set --compute --shared`, in `VRAMGUARD_COMPUTE_LIMIT`'s syntax), which the members " \
	  "that want a GPU at the same time divide; `null` for none (always in a control segment)") \
	X(processes, ARRAY, limit_json_processes(b, sr, only_pid), "its processes (below); with `--pid`, only that one")

/* `limit show`'s processes[]: sr, k, p. */
#define VG_VIEW_LIMITS_PROCESS(X) \
	VG_VIEW_PROCESS_ID(X) \
	VG_VIEW_PROCESS_SLOT(X) \
	VG_VIEW_PROCESS_REQUEST(X) \
	X(requests, U64, p->limit_seq, "how many `limit set --pid` requests it received") \
	X(requested_compute, NSTR, p->compute_spec[0] ? p->compute_spec : NULL, "the last `limit set --compute --pid` " \
	  "share, or `null`") \
	X(compute_applied, BOOL, !p->compute_pending, "`false` while the process has not applied that share yet (it " \
	  "does within a second); `true` when it has or there is none") \
	X(devices, ARRAY, limit_json_process_devices(b, sr, p), "every GPU the process registered in its region " \
	  "(below)")

/* A process's devices[] in `limit show`: p, d, dev. */
#define VG_VIEW_LIMITS_PROCESS_DEVICE(X) \
	VG_VIEW_DEVICE_ID(X) \
	X(quota_bytes, LIMIT, p->quota[d], "the process's own quota; `null` for none") \
	X(used_bytes, U64, p->used[d], "in use by the process, as in `top`") \
	X(peak_bytes, U64, p->peak[d], "the highest `used_bytes` seen") \
	X(compute_limit_permille, NZU64, (uint64_t)(p->compute_published ? p->compute_pm[d] : 0), "the compute share " \
	  "in force there, per mille of the GPU's time (its own, or its part of the region's, whichever is lower), as " \
	  "the process publishes it each second; `null` for none or not published yet")

/* O(name, rows): every object, each document first. The name is the table's marker in docs/report-format.md,
 * "<!-- schema:NAME -->" (beside the report's objects: the names differ). */
#define VG_VIEW_OBJECTS(O) \
	O(top, VG_VIEW_TOP) \
	O(region, VG_VIEW_REGION) \
	O(region_device, VG_VIEW_REGION_DEVICE) \
	O(top_process, VG_VIEW_TOP_PROCESS) \
	O(top_process_device, VG_VIEW_TOP_PROCESS_DEVICE) \
	O(top_gpu, VG_VIEW_TOP_GPU) \
	O(top_budget, VG_VIEW_TOP_BUDGET) \
	O(limits, VG_VIEW_LIMITS) \
	O(limits_region, VG_VIEW_LIMITS_REGION) \
	O(limits_process, VG_VIEW_LIMITS_PROCESS) \
	O(limits_process_device, VG_VIEW_LIMITS_PROCESS_DEVICE)

/* An object's rows as data, vg_view_<name>, for the code that walks rows rather than expanding them in a writer
 * (the doc generator): key, type and doc of each row, as VG_SCHEMA_DEFINE makes the report's. Values are never
 * expanded here, so a view's objects are defined where they are walked (VG_VIEW_OBJECTS(VG_VIEW_DEFINE)). */
#define VG_VIEW_ROW(k, t, value, text) { .key = #k, .type = VG_VIEW_AS_##t, .doc = text, .doc_type = VG_VIEW_DOC_##t },
#define VG_VIEW_DEFINE(name, rows) \
	static const struct vg_schema_field vg_view_fields_##name[] = { rows(VG_VIEW_ROW) }; \
	static const struct vg_schema_object vg_view_##name = { \
		#name, vg_view_fields_##name, sizeof(vg_view_fields_##name) / sizeof(vg_view_fields_##name[0]) \
	};

#endif
