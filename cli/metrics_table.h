/* `vramguard exporter`'s metrics, one row each, and their labels: the exposition (cli/metrics.c), the tables of
 * docs/metrics.md and the contract docs/metrics.json (scripts/gen-metrics-doc.c, both checked current by `make
 * test`), and through the contract the checks of the examples' rules and dashboard (tests/lint/check_prometheus.py)
 * all follow these rows, so a new metric is one row here and its value in cli/metrics.c. Only macros and enums: the
 * doc generator includes this header without the command's code.
 *
 * X(id, type, labels, help, doc)
 *   id      the metric is named vramguard_<id>; a counter's id ends in _total (the text format's family and sample
 *           name; OpenMetrics names the family without it, its samples with it)
 *   type    GAUGE or COUNTER
 *   labels  the label set, VG_METRIC_LABELS_<labels> below, which also says where the samples come from:
 *             PROC_GPU    a process on each GPU it uses        PROC    a process
 *             REGION_GPU  a shared region on each of its GPUs  REGION  a shared region
 *             REASON      the exporter's skipped files, by reason
 *             NONE        the exporter itself, one sample
 *           cli/metrics.c reads a process's or region's value through mx_<id> (a compile error when it has none)
 *   help    the # HELP text as served: plain text, one line, no backslash
 *   doc     what the metric means in docs/metrics.md: Markdown, one line, no '|'; a number the code sets as
 *           "${NAME}", NAME the constant (scripts/gen-metrics-doc.c fills it in), as report/schema.h's doc texts
 * A value is an integer as mx_<id> gives it: bytes and counts as they are; for an id ending in _ratio per mille,
 * for an id ending in _seconds_total nanoseconds (the exposition prints them as a fraction and as seconds).
 * Rows are written in the exposition's order. */
#ifndef VG_CLI_METRICS_TABLE_H
#define VG_CLI_METRICS_TABLE_H

#define VG_METRICS(X) \
	X(process_used_bytes, GAUGE, PROC_GPU, \
	  "Device memory the process has in use on the GPU, as its quota counts it (VRAMGUARD_COUNT).", \
	  "memory the process has in use on the GPU, as its quota counts it (`VRAMGUARD_COUNT`: allocations, or the " \
	  "device's figure)") \
	X(process_peak_bytes, GAUGE, PROC_GPU, "Highest used bytes of the process on the GPU.", "its highest `used`") \
	X(process_quota_bytes, GAUGE, PROC_GPU, \
	  "The quota that applies: the tighter of the process's own and its shared region's budget (absent: none).", \
	  "the quota that applies: the tighter of its own (`NVIDIA_GPU_MEMORY_LIMITS`, `limit set --pid`) and its " \
	  "shared region's budget; **absent** when neither limits it") \
	X(process_allocated_bytes, GAUGE, PROC_GPU, \
	  "Bytes of the process's allocations themselves (published each VRAMGUARD_DEVICE_POLL round).", \
	  "bytes of its allocations themselves; **absent** until its sampler has published them (every " \
	  "`VRAMGUARD_DEVICE_POLL`)") \
	X(process_driver_bytes, GAUGE, PROC_GPU, \
	  "The driver's own memory (context, modules) counted in used bytes (published each poll round).", \
	  "the driver's own memory (context, modules) counted in `used`; absent like `allocated`") \
	X(process_soft_limit_bytes, GAUGE, PROC_GPU, \
	  "The process's soft limit on the GPU (NVIDIA_GPU_MEMORY_REQUEST, VRAMGUARD_WARN_AT; absent: none).", \
	  "the soft limit (`NVIDIA_GPU_MEMORY_REQUEST`, `VRAMGUARD_WARN_AT`); absent when none, or not published yet") \
	X(process_compute_limit_ratio, GAUGE, PROC_GPU, \
	  "The process's compute share of the GPU, a fraction of its time (VRAMGUARD_COMPUTE_LIMIT; absent: none).", \
	  "its compute share of the GPU, a fraction of the GPU's time (`VRAMGUARD_COMPUTE_LIMIT`, " \
	  "`CUDA_DEVICE_SM_LIMIT`; docs/compute.md); **absent** when it has none, or has not launched there yet") \
	X(process_gpu_time_seconds_total, COUNTER, PROC_GPU, \
	  "GPU time the process used on the GPU, as its compute share measures it (published each second).", \
	  "the GPU's time it used, as the compute share measures it (docs/compute.md, *Measuring*); measured only in " \
	  "a process with a compute limit on some GPU; absent before its first launch there") \
	X(process_quota_forecast_seconds, GAUGE, PROC_GPU, \
	  "Seconds until the process reaches its quota on the GPU at the rate its call sites grow (absent: none).", \
	  "at the rate its call sites grow on the GPU (the sum of the growing ones', docs/report-format.md, *Growth " \
	  "and forecast*), the seconds until its usage reaches its own quota there; **absent** when it has no quota " \
	  "there or nothing grows (flat or falling usage); updated each `VRAMGUARD_DEVICE_POLL` round, from a point " \
	  "every tenth of `VRAMGUARD_GROWTH_WINDOW`") \
	X(process_denials_total, COUNTER, PROC, \
	  "Allocations refused to the process (its quota or its region's budget).", \
	  "allocations refused to the process (its quota or its region's budget)") \
	X(process_allocations_total, COUNTER, PROC, \
	  "Allocations the process made, over all its GPUs (published each poll round).", \
	  "allocations made, over all its GPUs; absent until its sampler has published them") \
	X(process_denied_bytes_total, COUNTER, PROC, \
	  "Bytes asked for by the allocations refused to the process (published each poll round).", \
	  "bytes asked for by the refused allocations; absent like `allocations_total`") \
	X(process_live_allocations, GAUGE, PROC, \
	  "Allocations of the process not freed yet (published each poll round).", \
	  "allocations not freed yet (its allocation tables' records: pointers, arrays, `cuMemCreate` handles); " \
	  "absent like `allocations_total`") \
	X(process_streams_destroyed_pending_total, COUNTER, PROC, \
	  "Streams the process destroyed with work still queued (published each poll round).", \
	  "streams destroyed while work was still queued (`VRAMGUARD_STREAM_CHECK`); absent like `allocations_total`") \
	X(region_budget_bytes, GAUGE, REGION_GPU, "The shared region's budget on the GPU.", \
	  "the shared region's budget on the GPU; absent when it has none there") \
	X(region_used_bytes, GAUGE, REGION_GPU, \
	  "Bytes charged against the shared region's budget on the GPU (its members' sum).", \
	  "charged against the budget: the members' sum") \
	X(region_peak_bytes, GAUGE, REGION_GPU, "Highest used bytes of the shared region.", "its highest `used`") \
	X(region_denials_total, COUNTER, REGION_GPU, "Charges refused by the shared region's budget on the GPU.", \
	  "charges the region's budget refused") \
	X(region_members, GAUGE, REGION, "Processes in the shared region (alive or unverifiable).", \
	  "processes in the region (alive or unverifiable)") \
	X(exporter_segments_skipped_total, COUNTER, REASON, \
	  "Region files skipped since the exporter started, summed over scrapes, by reason.", \
	  "region files skipped, summed over the exporter's scrapes") \
	X(up, GAUGE, NONE, "1 if the regions' directory could be read.", \
	  "1 when the regions' directory could be read, else 0") \
	X(exporter_scrape_duration_seconds, GAUGE, NONE, \
	  "Time this scrape took to read the regions and build the exposition.", \
	  "how long this scrape took to read the regions and build the exposition")

/* L(name, on, doc): every label, in the order a sample writes those it has. on: the metrics that have it, doc: its
 * value, both Markdown for docs/metrics.md's table of labels (doc as the metrics' doc). */
#define VG_METRIC_LABELS(L) \
	L(pid, "process metrics", "the process's PID as the exporter sees it: for a job in a container with a PID " \
	  "namespace of its own, its PID in the exporter's namespace (on the host, with `hostPID`), found through " \
	  "`/proc/*/status` `NSpid` and the start time; the PID the job registered (its container's number) only when " \
	  "the exporter cannot see the process (a sibling namespace). `vramguard limit set --pid` and `vramguard " \
	  "autoscale` beside the exporter take this PID") \
	L(command, "process metrics", "its command line, arguments joined by spaces, cut at ${VG_REGION_CMD_MAX - 1} " \
	  "bytes") \
	L(region, "process and region metrics", "the shared region's name (`VRAMGUARD_SHARED`); `\"\"` for a process " \
	  "with its own control segment") \
	L(gpu, "per-GPU metrics", "the CUDA ordinal of the process that first registered the GPU in the file") \
	L(gpu_uuid, "per-GPU metrics", "`GPU-...` / `MIG-...`, or `ordinal:N` where the driver gave no UUID") \
	L(container, "process metrics", "the 64-hex container id in `/proc/PID/cgroup` (docker, containerd, CRI-O, " \
	  "podman); `\"\"` if none or unreadable") \
	L(pod, "process metrics", "`POD_NAME` from `/proc/PID/environ` (Kubernetes downward API), else `HOSTNAME` " \
	  "when the cgroup path is under `kubepods`; `\"\"` if unreadable (another user's process: no privileges are " \
	  "used)") \
	L(reason, "`vramguard_exporter_segments_skipped_total`", "why the files were skipped: `permission` (another " \
	  "user's, without permission), `invalid` (corrupt, foreign, another layout version) or `changed` (truncated " \
	  "or replaced by its owner while read)")

/* R(name): the values of the reason label, in the order written. */
#define VG_METRIC_REASONS(R) R(permission) R(invalid) R(changed)

enum vg_metric_label {
#define VG_METRIC_LABEL_ID(name, on, doc) VG_METRIC_LABEL_##name,
	VG_METRIC_LABELS(VG_METRIC_LABEL_ID)
#undef VG_METRIC_LABEL_ID
	VG_METRIC_NLABELS
};

/* The label sets, as bits of enum vg_metric_label. */
#define VG_METRIC_HAS(name) (1u << VG_METRIC_LABEL_##name)
#define VG_METRIC_LABELS_PROC \
	(VG_METRIC_HAS(pid) | VG_METRIC_HAS(command) | VG_METRIC_HAS(region) | VG_METRIC_HAS(container) | \
	 VG_METRIC_HAS(pod))
#define VG_METRIC_LABELS_PROC_GPU (VG_METRIC_LABELS_PROC | VG_METRIC_HAS(gpu) | VG_METRIC_HAS(gpu_uuid))
#define VG_METRIC_LABELS_REGION VG_METRIC_HAS(region)
#define VG_METRIC_LABELS_REGION_GPU (VG_METRIC_HAS(region) | VG_METRIC_HAS(gpu) | VG_METRIC_HAS(gpu_uuid))
#define VG_METRIC_LABELS_REASON VG_METRIC_HAS(reason)
#define VG_METRIC_LABELS_NONE 0u

/* Each type: its name in the exposition, and whether it is a counter. */
#define VG_METRIC_TYPE_GAUGE "gauge"
#define VG_METRIC_TYPE_COUNTER "counter"
#define VG_METRIC_IS_COUNTER_GAUGE 0
#define VG_METRIC_IS_COUNTER_COUNTER 1

enum vg_metric_id {
#define VG_METRIC_ID(id, type, labels, help, doc) VG_METRIC_##id,
	VG_METRICS(VG_METRIC_ID)
#undef VG_METRIC_ID
	VG_METRIC_COUNT
};

#endif
