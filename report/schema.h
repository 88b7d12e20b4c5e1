/* The report's JSON schema, "vramguard.report/1": one row per key, one row list per object. The JSON writer
 * (report/json_write.c), the JSON reader (report/json_read.c), freeing a report (vg_report_free) and the tables of
 * docs/report-format.md (scripts/gen-report-doc.c, checked current by `make test`) all follow these rows, so a new
 * key is one row here plus its member in report/report.h. Rows are written in the order of the document's keys.
 *
 * X(key, type, member, aux, read, doc)
 *   key     the JSON key
 *   type    what the value is and how it maps onto the struct:
 *             U64, U32, INT    a number from a uint64_t, uint32_t or int member
 *             BOOL             true or false from an int member
 *             STR              a string from a char array member (cut at its size when read)
 *             ISTR             a string from a const char * member that points into the report's strings
 *                              (vg_report.strings), cut when read as a char array of aux bytes would cut it: the
 *                              frames' strings
 *             HEX              an address, "0x7f3a00000000", from a uint64_t member
 *             STRD             STR, but written as aux when the member is empty
 *             NU64, NSTR       U64 or STR, or null: aux is the int member that says the value is set, written
 *                              as null when it is 0. Reading a NU64 sets aux (0 for null, which also zeroes the
 *                              value); reading a NSTR leaves aux alone (null reads as "")
 *           Values that are not one member each, and why:
 *             ARRAY            member is the pointer to the elements, n<member> their count (size_t or uint32_t);
 *                              aux names the elements' object
 *             OBJECT           an object whose keys are members of the same struct (aux names it; member unused)
 *             COUNT            the count of the ARRAY row whose pointer is member: written from it; when read, it
 *                              must equal the number of elements that array has
 *             NOBJECT          OBJECT, or absent: member is the int that says it is there; written only when it
 *                              is non-zero; reading the object sets it to 1
 *             SCHEMA_ID        the constant VG_REPORT_SCHEMA; the reader checks it before anything else
 *             REVISION         the constant VG_REPORT_REVISION when written; read into a uint32_t member
 *             TIME             member (ns since the epoch) as UTC ISO-8601 text; the reader passes over it
 *   read    REQ: the reader refuses an object without the key; OPT: the key was added after the first reports of
 *           this schema version, and its absence reads as the member's zero (the doc text says what that means)
 *   doc     the key's meaning for the document: Markdown, one line. A number the code sets is taken from its constant,
 *           never written out: VG_SCHEMA_NUM(VG_REPORT_MAX_ALLOCS) for a constant of report/ or config/, and
 *           "${NAME}" for one of a folder report/ may not include (accounting/), which scripts/gen-report-doc.c
 *           replaces with the constant's value (it refuses a NAME it does not know)
 * Members, flags and element types are checked against the struct at compile time (report/schema.c). */
#ifndef VG_SCHEMA_H
#define VG_SCHEMA_H

#include <stddef.h>

#include "report/report.h"

/* A constant's value as a string, for the doc texts: "at most " VG_SCHEMA_NUM(VG_REPORT_MAX_ALLOCS). */
#define VG_SCHEMA_NUM(x) VG_SCHEMA_NUM_(x)
#define VG_SCHEMA_NUM_(x) #x

/* The top level. */
#define VG_SCHEMA_REPORT(X) \
	X(schema, SCHEMA_ID, _, _, REQ, "`\"" VG_REPORT_SCHEMA "\"`: the format and its major version (see *Versioning*)") \
	X(schema_revision, REVISION, schema_revision, _, OPT, "the revision within the major version: " \
	  VG_SCHEMA_NUM(VG_REPORT_REVISION) " (see " \
	  "*Versioning*). Added in revision 2: a report without it is revision 1") \
	X(reason, STR, reason, _, REQ, "`\"exit\"` (at process exit), `\"signal\"` (on `VRAMGUARD_SIGNAL`), " \
	  "`\"soft-limit\"` (a device's usage crossed its request; the warning line before it says which), " \
	  "`\"threshold\"` (the same for `VRAMGUARD_WARN_AT`), `\"denial\"` (an allocation was refused, with " \
	  "`denial` in `VRAMGUARD_REPORT_ON`; the live allocations are what held the memory) or `\"growth\"` (a call " \
	  "site kept growing for `VRAMGUARD_GROWTH_WINDOW`, with `growth` in `VRAMGUARD_REPORT_ON`; " \
	  "`devices[].growth` names it); which are written is " \
	  "`VRAMGUARD_REPORT_ON`'s choice; a reader should accept any other string too") \
	X(sequence, U64, sequence, _, REQ, "1, 2, ... : the report's number within the process") \
	X(pid, INT, pid, _, REQ, "process id") \
	X(time, TIME, time_ns, _, REQ, "the report's time, UTC ISO-8601 with milliseconds: " \
	  "`\"2026-11-21T21:50:03.123Z\"`") \
	X(time_ns, U64, time_ns, _, REQ, "the same time in nanoseconds since the epoch") \
	X(command, STR, command, _, REQ, "`/proc/self/cmdline`, arguments joined by spaces") \
	X(hostname, STR, hostname, _, REQ, "the host's name") \
	X(version, STR, version, _, REQ, "vramguard's version") \
	X(driver, STR, driver, _, REQ, "state of the CUDA driver at report time: `\"alive\"`, `\"deinitialized\"` or " \
	  "`\"unknown\"`") \
	X(backtrace_depth, INT, backtrace_depth, _, REQ, "frames recorded per call site (`VRAMGUARD_BACKTRACE`); 0: " \
	  "call sites are off") \
	X(count, STRD, count, "allocations", OPT, "what the quota counts (`VRAMGUARD_COUNT`): `\"device\"` or " \
	  "`\"allocations\"` (docs/quota.md, *What the quota counts*). Added in version 1: older reports lack it; read " \
	  "that as `\"allocations\"`") \
	X(devices, ARRAY, devices, device, REQ, "one object per device the process used (below)") \
	X(sites, ARRAY, sites, site, REQ, "call sites, largest live bytes first (below)") \
	X(modules, ARRAY, modules, module, OPT, "the loaded objects the sites' frames name, each once, with their build " \
	  "IDs: what `vramguard report --lines` needs to find their debug information, here or on another machine. " \
	  "Added in revision 3: older reports lack it") \
	X(allocations, OBJECT, _, allocations, REQ, "live allocations (below)") \
	X(streams, OBJECT, _, streams, REQ, "stream bookkeeping (below)")

#define VG_SCHEMA_DEVICE(X) \
	X(ordinal, INT, ordinal, _, REQ, "CUDA device ordinal as the process sees it (after `CUDA_VISIBLE_DEVICES`)") \
	X(uuid, STR, uuid, _, REQ, "`\"GPU-...\"` or `\"MIG-...\"`; `\"\"` if unknown") \
	X(quota_bytes, NU64, quota_bytes, quota_set, REQ, "the quota in force; **`null` when the device is " \
	  "unlimited**") \
	X(soft_limit_bytes, NU64, soft_bytes, soft_set, OPT, "the soft limit (`NVIDIA_GPU_MEMORY_REQUESTS` / " \
	  "`NVIDIA_GPU_MEMORY_REQUEST`): usage above it is reported, not denied; `null` when there is none. Added in " \
	  "version 1: reports written before soft limits existed lack it; read that as `null`") \
	X(soft_limit_source, NSTR, soft_source, soft_set, OPT, "the variable the soft limit came from, e.g. " \
	  "`\"NVIDIA_GPU_MEMORY_REQUEST\"`; `null` when there is none (and absent where `soft_limit_bytes` is)") \
	X(total_bytes, U64, total_bytes, _, REQ, "the device's memory as the driver reports it; 0 if unknown") \
	X(used_bytes, U64, used_bytes, _, REQ, "bytes charged against the quota now") \
	X(peak_bytes, U64, peak_bytes, _, REQ, "highest `used_bytes` seen (with several allocating threads, up to " \
	  "2 MiB a thread high: docs/quota.md, \"Atomicity\")") \
	X(allocs, U64, allocs, _, REQ, "charged allocations, ever") \
	X(frees, U64, frees, _, REQ, "frees of charged allocations, ever") \
	X(denied_count, U64, denied_count, _, REQ, "allocations refused because they would exceed the quota") \
	X(denied_bytes, U64, denied_bytes, _, REQ, "the bytes those refused allocations asked for, summed") \
	X(largest_bytes, U64, largest_bytes, _, REQ, "the largest single allocation charged") \
	X(allocated_bytes, U64, allocated_bytes, _, OPT, "the part of `used_bytes` that is allocations, " \
	  "stream-ordered ones by their size (all of it under `\"count\": \"allocations\"`; docs/quota.md, *What the " \
	  "quota counts*). Added in version 1, as are the keys below: older reports lack them; read 0 (`false`, " \
	  "`null`)") \
	X(pool_reserved_bytes, U64, pool_reserved_bytes, _, OPT, "the part that is memory stream-ordered pools keep " \
	  "reserved, charged in place of their allocations (0 under `\"count\": \"allocations\"`)") \
	X(pool_live_bytes, U64, pool_live_bytes, _, OPT, "of `pool_reserved_bytes`, what the pools have handed out") \
	X(graph_bytes, U64, graph_bytes, _, OPT, "the part that is graph memory reserved") \
	X(driver_bytes, U64, driver_bytes, _, OPT, "the part that is the driver's own memory for the process (context, " \
	  "modules, ...), measured with NVML; 0 if not measured") \
	X(driver_headroom_bytes, U64, driver_headroom_bytes, _, OPT, "charged beyond `driver_bytes` in advance, for " \
	  "what the driver takes later (`VRAMGUARD_DRIVER_HEADROOM`, what is left of it)") \
	X(driver_measured, BOOL, driver_measured, _, OPT, "`true` when NVML measured `driver_bytes` (else it is 0)") \
	X(driver_limit_bytes, NU64, driver_limit_bytes, driver_limit_set, OPT, "the driver's own limit for the " \
	  "container (R615 and later; docs/quota.md, *The driver's own limits*); `null` when it sets none") \
	X(compute_limit_permille, NU64, compute_limit_pm, compute_set, OPT, "the compute share in force, per mille " \
	  "of the GPU's time (`VRAMGUARD_COMPUTE_LIMIT`, `CUDA_DEVICE_SM_LIMIT`; docs/compute.md); `null` when there " \
	  "is none. Added in revision 4, as are the keys below up to `compute_waited_ns`: older reports lack them; " \
	  "read `null` and 0") \
	X(compute_limit_source, NSTR, compute_source, compute_set, OPT, "the variable or command that set it " \
	  "(`\"vramguard limit set\"`; `\"vramguard limit set --shared\"` where its part of the region's share holds); " \
	  "`null` when there is none") \
	X(gpu_time_ns, U64, gpu_time_ns, _, OPT, "the GPU's time the process used on the device, as the compute " \
	  "share measures it (docs/compute.md, *Measuring*); measured only in a process with a compute limit on " \
	  "some GPU (given live by `limit set --compute`: from then on), else 0") \
	X(compute_recent_permille, U64, compute_recent_pm, _, OPT, "the share of the GPU's time used over the last " \
	  "`compute_recent_seconds` (at most the last minute), per mille") \
	X(compute_recent_seconds, U64, compute_recent_s, _, OPT, "the span of `compute_recent_permille`, seconds; 0: " \
	  "not measured") \
	X(compute_waits, U64, compute_waits, _, OPT, "launches that waited because the process was ahead of its " \
	  "share") \
	X(compute_waited_ns, U64, compute_waited_ns, _, OPT, "the time they waited, summed") \
	X(timeline, NOBJECT, timeline_set, timeline, OPT, "the device's usage over the whole run, in at most " \
	  "${VG_TIMELINE_POINTS + 1} points (below, and *The usage timeline*). Added in revision 2: older reports lack it") \
	X(forecast_seconds, NU64, forecast_s, forecast_set, OPT, "at the rate its call sites grow (`growth`), the " \
	  "seconds from the report's time until `used_bytes` reaches the quota (0: it is there); `null` when there is " \
	  "no quota or nothing grows (flat or falling usage). Added in revision 5, as is `growth`: older reports lack " \
	  "them; read `null`") \
	X(growth, NOBJECT, growth_set, growth, OPT, "the call sites followed on the device and their growth (below, " \
	  "and *Growth and forecast*); absent when none is (call sites off, nothing allocated there yet)")

/* "timeline": members of struct vg_report_device. */
#define VG_SCHEMA_TIMELINE(X) \
	X(period_ms, U64, timeline_period_ms, _, REQ, "a point was taken at least this often (and on a significant " \
	  "change at most a tenth as often); it doubles each time the timeline is compacted") \
	X(compactions, U32, timeline_compactions, _, REQ, "how many times the points were halved to stay within " \
	  "${VG_TIMELINE_POINTS}") \
	X(points, ARRAY, timeline_points, timeline_point, REQ, "oldest first; the last one is the report's own time")

#define VG_SCHEMA_TIMELINE_POINT(X) \
	X(time_ns, U64, time_ns, _, REQ, "the point's time (ns since the epoch)") \
	X(used_bytes, U64, used_bytes, _, REQ, "`used_bytes` then") \
	X(peak_bytes, U64, peak_bytes, _, REQ, "the highest usage since the previous point (since the start, for the " \
	  "first): exact when the device's `peak_bytes` rose in that interval, else the highest usage sampled") \
	X(denied_count, U64, denied_count, _, REQ, "`denied_count` then (cumulative: the denials of an interval are " \
	  "the difference with the previous point)") \
	X(denied_bytes, U64, denied_bytes, _, REQ, "`denied_bytes` then (cumulative)")

/* "growth": members of struct vg_report_device. */
#define VG_SCHEMA_GROWTH(X) \
	X(window_ms, U64, growth_window_ms, _, REQ, "`VRAMGUARD_GROWTH_WINDOW`: a site is growing when it grew over " \
	  "this long") \
	X(step_ms, U64, growth_step_ms, _, REQ, "a point every this long: a ${VG_GROWTH_INTERVALS}th of the window, or " \
	  "`VRAMGUARD_DEVICE_POLL` if that is longer") \
	X(bytes_per_hour, U64, growth_bytes_per_hour, _, REQ, "the device's rate: the sum of its growing sites' (0: " \
	  "nothing grows); `forecast_seconds` is from it") \
	X(sites, ARRAY, growth_sites, growth_site, REQ, "the sites followed on the device, at most ${VG_GROWTH_SITES}: " \
	  "the largest holders and those that grew; growing ones first, fastest first")

#define VG_SCHEMA_GROWTH_SITE(X) \
	X(site, U32, site, _, REQ, "the site's `id` in `sites`") \
	X(growing, BOOL, growing, _, REQ, "its live bytes on the device rose in most of the last window's " \
	  "${VG_GROWTH_INTERVALS} intervals without returning to an earlier level (*Growth and forecast*)") \
	X(bytes_per_hour, NU64, bytes_per_hour, rate_set, REQ, "its rate while growing: the Theil-Sen slope of its " \
	  "points since it has been growing (at most two windows of them); `null` when it is not growing") \
	X(growing_since_ns, U64, growing_since_ns, _, REQ, "the start of the first window it grew over, growing " \
	  "continuously since (ns since the epoch); 0 when it is not growing") \
	X(points, ARRAY, points, growth_point, REQ, "its live bytes on the device at the last points, oldest first, " \
	  "at most ${VG_GROWTH_POINTS} (fewer when it was followed later)")

#define VG_SCHEMA_GROWTH_POINT(X) \
	X(time_ns, U64, time_ns, _, REQ, "the point's time (ns since the epoch)") \
	X(live_bytes, U64, live_bytes, _, REQ, "the site's live bytes on the device then")

#define VG_SCHEMA_SITE(X) \
	X(id, U32, id, _, REQ, "the site's id (see *Site ids*); 0 means \"no site\" and does not appear here") \
	X(api, STR, api, _, REQ, "the entry point of the site's first call: `\"cuMemAlloc_v2\"`, " \
	  "`\"cuMemAllocAsync\"`, `\"cuStreamCreate\"`, ...") \
	X(live_count, U64, live_count, _, REQ, "allocations from this site still alive") \
	X(live_bytes, U64, live_bytes, _, REQ, "the bytes of those allocations") \
	X(total_allocs, U64, total_allocs, _, REQ, "allocations ever made from this site") \
	X(total_bytes, U64, total_bytes, _, REQ, "the bytes of all of them") \
	X(frames, ARRAY, frames, frame, REQ, "the stack, innermost first (the caller of the CUDA entry point); `[]` " \
	  "when backtraces are off") \
	X(python, ARRAY, python, pyframe, OPT, "the Python stack of the allocating thread, innermost first " \
	  "(`VRAMGUARD_PYTHON`); `[]` when the thread ran no Python code or capture is off. Sites are told apart by " \
	  "both stacks. Added in revision 3: older reports lack it; read that as `[]`") \
	X(growth_bytes_per_hour, NU64, growth_bytes_per_hour, growth_set, OPT, "while the site grows " \
	  "(`devices[].growth`), its rate summed over its devices; `null` when it does not, or is not followed. Added " \
	  "in revision 5: older reports lack it; read `null`")

#define VG_SCHEMA_PYFRAME(X) \
	X(file, ISTR, file, VG_REPORT_FRAME_STR, REQ, "the code's file name as Python has it (`co_filename`)") \
	X(line, U32, line, _, REQ, "the line executing then; 0 if unknown") \
	X(function, ISTR, function, VG_REPORT_PY_FUNCTION_STR, REQ, "the function (`co_qualname` on Python 3.11 and later, else `co_name`)")

#define VG_SCHEMA_MODULE(X) \
	X(path, STR, path, _, REQ, "the object's path, as `frames[].module` names it") \
	X(build_id, STR, build_id, _, REQ, "its GNU build ID (`NT_GNU_BUILD_ID`), lowercase hex; `\"\"` if it has none") \
	X(base, HEX, base, _, REQ, "its load base in the reporting process (a frame's `address` minus its `module_offset`)")

#define VG_SCHEMA_FRAME(X) \
	X(address, HEX, address, _, REQ, "absolute return address in the reporting process (meaningful only in that " \
	  "process)") \
	X(module, ISTR, module, VG_REPORT_FRAME_STR, REQ, "path of the loaded object that contains it; `\"\"` if unknown (JIT code, " \
	  "vdso)") \
	X(module_offset, HEX, module_offset, _, REQ, "`address` minus the object's load base: what " \
	  "`addr2line -e MODULE` takes; `\"0x0\"` when `module` is `\"\"`") \
	X(symbol, ISTR, symbol, VG_REPORT_FRAME_STR, REQ, "nearest dynamic symbol (mangled, as in the ELF table); `\"\"` if none") \
	X(offset, U64, symbol_offset, _, REQ, "`address` minus the symbol's start; 0 when `symbol` is `\"\"`")

/* "allocations": members of struct vg_report. */
#define VG_SCHEMA_ALLOCATIONS(X) \
	X(live, U64, allocs_live, _, REQ, "every allocation alive at report time") \
	X(listed, COUNT, allocs, _, REQ, "how many are listed in `largest` (at most " \
	  VG_SCHEMA_NUM(VG_REPORT_MAX_ALLOCS) ")") \
	X(largest, ARRAY, allocs, alloc, REQ, "the largest live allocations, largest first")

#define VG_SCHEMA_ALLOC(X) \
	X(address, HEX, address, _, REQ, "device pointer, array or VMM handle (hex string)") \
	X(bytes, U64, bytes, _, REQ, "bytes charged") \
	X(device, INT, device, _, REQ, "device ordinal") \
	X(api, STR, api, _, REQ, "entry point that made it") \
	X(site, U32, site, _, REQ, "its call site's `id`; 0 if none (backtraces off)") \
	X(thread, U32, thread, _, REQ, "kernel thread id (`gettid`) of the allocating thread") \
	X(time_ns, U64, time_ns, _, REQ, "when it was made (ns since the epoch)")

/* "streams": members of struct vg_report. */
#define VG_SCHEMA_STREAMS(X) \
	X(created, U64, streams_created, _, REQ, "streams created, ever") \
	X(destroyed, U64, streams_destroyed, _, REQ, "streams destroyed, ever") \
	X(destroyed_pending, ARRAY, stream_events, stream_event, REQ, "streams destroyed while work was still " \
	  "queued, grouped by (creation site, destroy site)") \
	X(live, ARRAY, stream_live, stream_live, REQ, "streams alive at report time, grouped by creation site")

#define VG_SCHEMA_STREAM_EVENT(X) \
	X(create_site, U32, create_site, _, REQ, "the creation site's id; 0 if none") \
	X(destroy_site, U32, destroy_site, _, REQ, "the destroy site's id; 0 if none") \
	X(count, U64, count, _, REQ, "how many streams") \
	X(synchronized, BOOL, synchronized, _, REQ, "`VRAMGUARD_STREAM_CHECK=sync` waited for the queued work before " \
	  "letting the destroy through")

#define VG_SCHEMA_STREAM_LIVE(X) \
	X(create_site, U32, create_site, _, REQ, "the creation site's id; 0 if none") \
	X(count, U64, count, _, REQ, "how many streams") \
	X(pending, U64, pending, _, REQ, "how many had work queued (queried without blocking)") \
	X(capturing, U64, capturing, _, REQ, "how many were capturing a graph (those are never queried)")

/* O(name, struct, rows): every object, the top level first. An object's name is how ARRAY and OBJECT rows refer to
 * it (aux), the descriptor's name (vg_schema_<name>) and its table's marker in docs/report-format.md. */
#define VG_SCHEMA_OBJECTS(O) \
	O(report, struct vg_report, VG_SCHEMA_REPORT) \
	O(device, struct vg_report_device, VG_SCHEMA_DEVICE) \
	O(timeline, struct vg_report_device, VG_SCHEMA_TIMELINE) \
	O(timeline_point, struct vg_report_timeline_point, VG_SCHEMA_TIMELINE_POINT) \
	O(growth, struct vg_report_device, VG_SCHEMA_GROWTH) \
	O(growth_site, struct vg_report_growth_site, VG_SCHEMA_GROWTH_SITE) \
	O(growth_point, struct vg_report_growth_point, VG_SCHEMA_GROWTH_POINT) \
	O(site, struct vg_report_site, VG_SCHEMA_SITE) \
	O(frame, struct vg_report_frame, VG_SCHEMA_FRAME) \
	O(pyframe, struct vg_report_pyframe, VG_SCHEMA_PYFRAME) \
	O(module, struct vg_report_module, VG_SCHEMA_MODULE) \
	O(allocations, struct vg_report, VG_SCHEMA_ALLOCATIONS) \
	O(alloc, struct vg_report_alloc, VG_SCHEMA_ALLOC) \
	O(streams, struct vg_report, VG_SCHEMA_STREAMS) \
	O(stream_event, struct vg_report_stream_event, VG_SCHEMA_STREAM_EVENT) \
	O(stream_live, struct vg_report_stream_live, VG_SCHEMA_STREAM_LIVE)

/* ---- the rows as data, for the code that walks them ---- */

enum vg_schema_type {
	VG_SCHEMA_U64, VG_SCHEMA_U32, VG_SCHEMA_INT, VG_SCHEMA_BOOL, VG_SCHEMA_STR, VG_SCHEMA_ISTR, VG_SCHEMA_HEX,
	VG_SCHEMA_STRD,
	VG_SCHEMA_NU64, VG_SCHEMA_NSTR, VG_SCHEMA_ARRAY, VG_SCHEMA_OBJECT, VG_SCHEMA_NOBJECT, VG_SCHEMA_COUNT,
	VG_SCHEMA_SCHEMA_ID, VG_SCHEMA_REVISION, VG_SCHEMA_TIME,
};

/* How the document names each type's values (docs/report-format.md's tables). */
#define VG_SCHEMA_DOC_U64 "integer"
#define VG_SCHEMA_DOC_U32 "integer"
#define VG_SCHEMA_DOC_INT "integer"
#define VG_SCHEMA_DOC_BOOL "boolean"
#define VG_SCHEMA_DOC_STR "string"
#define VG_SCHEMA_DOC_ISTR "string"
#define VG_SCHEMA_DOC_HEX "string"
#define VG_SCHEMA_DOC_STRD "string"
#define VG_SCHEMA_DOC_NU64 "integer or `null`"
#define VG_SCHEMA_DOC_NSTR "string or `null`"
#define VG_SCHEMA_DOC_ARRAY "array"
#define VG_SCHEMA_DOC_OBJECT "object"
#define VG_SCHEMA_DOC_NOBJECT "object (or absent)"
#define VG_SCHEMA_DOC_COUNT "integer"
#define VG_SCHEMA_DOC_SCHEMA_ID "string"
#define VG_SCHEMA_DOC_REVISION "integer"
#define VG_SCHEMA_DOC_TIME "string"

#define VG_SCHEMA_REQ 0
#define VG_SCHEMA_OPT 1
#define VG_SCHEMA_MAX_FIELDS 64         /* keys per object: the reader keeps a bit per key */

/* The compile-time checks of the rows (report/schema.c, and the live view's in cli/view_json.h): 0, or a compile
 * error saying what when cond is false; whether expression e has type t (top-level qualifiers ignored). */
#define VG_SCHEMA_CHECK(cond, what) (0 * sizeof(struct { _Static_assert(cond, what); int vg_unused; }))
#define VG_SCHEMA_TYPE_IS(e, t) __builtin_types_compatible_p(__typeof__(e), t)

struct vg_schema_object;

struct vg_schema_field {
	const char *key;
	enum vg_schema_type type;
	int optional;                           /* OPT */
	const char *doc;
	const char *doc_type;                   /* VG_SCHEMA_DOC_<type>: the value's type as the document names it */
	size_t off;                             /* the member (ARRAY, COUNT: the pointer to the elements) */
	size_t size;                            /* STR, STRD, NSTR: the char array's size; ISTR: aux */
	size_t flag;                            /* NU64, NSTR, NOBJECT: the int member that says the value is set */
	size_t count, count_size;               /* ARRAY, COUNT: the n<member> counting the elements, and its size */
	size_t elem_size;                       /* ARRAY: one element */
	const struct vg_schema_object *sub;     /* ARRAY: the elements' object; OBJECT, NOBJECT: its own */
	const char *dflt;                       /* STRD: written when the member is empty */
};

struct vg_schema_object {
	const char *name;
	const struct vg_schema_field *fields;
	size_t nfields;
};

#define VG_SCHEMA_DECLARE(name, st, rows) extern const struct vg_schema_object vg_schema_##name;
VG_SCHEMA_OBJECTS(VG_SCHEMA_DECLARE)
#undef VG_SCHEMA_DECLARE

/* An ARRAY or COUNT row's elements and their number in obj (0 when the pointer is NULL), and setting both. */
void *vg_schema_elems(const struct vg_schema_field *f, const void *obj);
size_t vg_schema_nelems(const struct vg_schema_field *f, const void *obj);
void vg_schema_set_elems(const struct vg_schema_field *f, void *obj, void *elems, size_t n);

/* Free every array an object of o owns, its elements' arrays first, and leave the pointers NULL and counts 0. */
void vg_schema_free(const struct vg_schema_object *o, void *obj);

#endif
