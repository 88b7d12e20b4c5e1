/* The options table: one X-macro row per environment variable, config/'s list that drives code (as
 * interposer/hooks.h is the interposer's). Expanded in options.c into the public vg_options[] (docs/env.md, the man
 * page, `vramguard check`, and `vramguard run`'s flags and --help) and in load.c into the loaders, so a variable
 * cannot be documented without being parsed, nor parsed without being documented.
 * Columns: X(name, summary, type, default, values, doc, secure, loader, range, flag). summary: one short line, the
 * README's configuration table (scripts/gen-env-doc.c --readme); doc: the whole story, docs/env.md.
 * - Enum rows are parsed from their own "values" text ("off, error, ..."): the n-th word maps to enum value n.
 * - Integer rows are parsed from their own range: VG_RANGE(min, max, unit, field) with loader vg_load_integer
 *   (row.c) takes plain decimal digits from min to max into vg_config's member field, and its message says
 *   "expected UNIT, an integer from MIN to MAX" (no "UNIT, " when unit is NULL). Every other row: VG_NO_RANGE.
 * - Secure mode (AT_SECURE: setuid/setgid, file capabilities): the environment is a less privileged user's, and
 *   anything created on its say-so is created with the program's privileges. A row that names a file, a directory
 *   or a file mode is VG_IGNORED(value) there: its own loader reads the safe value instead, so the safe values are
 *   parsed like any other and the docs show them. Limits stay VG_READ: they only restrict the process.
 * - flag: VG_FLAG(long, short, METAVAR, usage) when `vramguard run` sets the variable from a flag (short 0: none;
 *   usage follows the variable's name in `run --help`, a '\n' in it starts an indented continuation line), else
 *   VG_NO_FLAG.
 * To add a variable: one row here, a loader (vg_load_integer for an integer; else a vg_load_* function in load.c,
 * or in load_files.c for the rows that name files), and a decision for secure mode. Internal to config/: the rest
 * of the tree reads vg_options[]. */
#ifndef VG_CONFIG_OPTIONS_H
#define VG_CONFIG_OPTIONS_H

#include "config/internal.h"

#define VG_READ NULL
#define VG_IGNORED(value) value
#define VG_FLAG(lng, shrt, metavar, usage) { lng, shrt, metavar, usage }
#define VG_NO_FLAG { NULL, 0, NULL, NULL }
/* field must be an int or an unsigned member of struct vg_config (anything else does not compile): the loader
 * stores through an unsigned, which an int may be accessed as. */
#define VG_RANGE(lo, hi, unit, field)                                                                                 \
	{ lo, hi, unit, _Generic(((struct vg_config *)0)->field, int: offsetof(struct vg_config, field),              \
				 unsigned: offsetof(struct vg_config, field)) }
#define VG_NO_RANGE { 0, 0, NULL, 0 }
#define VG_LOG_VALUES "off, error, warn, info, debug"
#define VG_MANAGED_VALUES "count, ignore"
#define VG_FORMAT_VALUES "text, json"
#define VG_STREAM_VALUES "warn, sync, off"
#define VG_CONTROL_VALUES "on, off"
#define VG_COUNT_VALUES "device, allocations"
#define VG_SIGNAL_WORDS "off, USR1, USR2, HUP, WINCH, PWR, URG, RTMIN+N"
#define VG_REPORT_EXAMPLES "stderr, off, /tmp/vramguard-%p-%n.json"

#define VG_OPTIONS(X)                                                                                                 \
	X("NVIDIA_GPU_MEMORY_LIMITS",                                                                                 \
	  "the quota: `4096` (MiB), `4G`, `1.5GiB`, `50%` of the device, per device `0:4G,1:2G`, by UUID "            \
	  "`GPU-…:4G`, a default plus exceptions `8G,1:2G`",                                                          \
	  "limits", "unlimited",                                                                                      \
	  "`SIZE`, `N%`, `unlimited`, or a list `[KEY:]VALUE,...` with KEY an ordinal, `GPU-<uuid>` or `MIG-<uuid>`"  \
	  " (`=` works for `:`); bare number = MiB; units K, M, G, T (binary), B",                                    \
	  "Per-process VRAM quota per device; a value without a key applies to every device. Beats every other"       \
	  " limit variable: NVIDIA_GPU_MEMORY_LIMIT, then CUDA_DEVICE_MEMORY_LIMIT_<i>, then CUDA_DEVICE_MEMORY_LIMIT" \
	  " (set to values that disagree: one info line names the one ignored)",                                      \
	  VG_READ, vg_load_limits, VG_NO_RANGE,                                                                       \
	  VG_FLAG("limit", 'l', "SPEC", "4096 (MiB), 4G, 1.5GiB, 50%, 0:4G,1:2G, GPU-<uuid>:4G"))                     \
	X("NVIDIA_GPU_MEMORY_LIMIT",                                                                                  \
	  "one quota for every device, as NVIDIA's container toolkit names it (`8G`, `8192`, `50%`); used where "     \
	  "NVIDIA_GPU_MEMORY_LIMITS says nothing",                                                                    \
	  "size", "unlimited",                                                                                        \
	  "one `SIZE`, `N%` or `unlimited`, no device key; bare number = MiB; units as NVIDIA_GPU_MEMORY_LIMITS",     \
	  "Per-process VRAM quota for every device (the name NVIDIA's container toolkit gives one value); used where" \
	  " NVIDIA_GPU_MEMORY_LIMITS says nothing; beats CUDA_DEVICE_MEMORY_LIMIT_<i> and CUDA_DEVICE_MEMORY_LIMIT",  \
	  VG_READ, vg_load_limit_one, VG_NO_RANGE, VG_NO_FLAG)                                                        \
	X("CUDA_DEVICE_MEMORY_LIMIT",                                                                                 \
	  "HAMi-core's name for the quota of every device, with lower precedence (a bare number is bytes, as in "     \
	  "HAMi-core)",                                                                                               \
	  "limits", "unlimited",                                                                                      \
	  "as NVIDIA_GPU_MEMORY_LIMITS, but a bare number is in bytes (as in HAMi-core)",                             \
	  "HAMi-core compatible quota for every device; used where NVIDIA_GPU_MEMORY_LIMITS,"                         \
	  " NVIDIA_GPU_MEMORY_LIMIT and CUDA_DEVICE_MEMORY_LIMIT_<i> say nothing",                                    \
	  VG_READ, vg_load_hami, VG_NO_RANGE, VG_NO_FLAG)                                                             \
	X("CUDA_DEVICE_MEMORY_LIMIT_<i>",                                                                             \
	  "HAMi-core's name for device i's quota (bytes), with lower precedence",                                     \
	  "size", "unlimited",                                                                                        \
	  "one `SIZE`, `N%` or `unlimited`; bare number = bytes; i = 0..63",                                          \
	  "HAMi-core compatible quota for device ordinal i; beats CUDA_DEVICE_MEMORY_LIMIT, loses to"                 \
	  " NVIDIA_GPU_MEMORY_LIMITS and NVIDIA_GPU_MEMORY_LIMIT", VG_READ, vg_load_hami_indexed, VG_NO_RANGE,        \
	  VG_NO_FLAG)                                                                                                 \
	X("NVIDIA_GPU_MEMORY_REQUESTS",                                                                               \
	  "a soft limit per device: crossing it denies nothing, logs one warning and writes a report (reason "        \
	  "`soft-limit`)",                                                                                            \
	  "limits", "(none)",                                                                                         \
	  "as NVIDIA_GPU_MEMORY_LIMITS; `unlimited` means no soft limit",                                             \
	  "Soft limit per device: usage above it denies nothing, but logs one warning and writes a report (reason"    \
	  " `soft-limit`), once per crossing (again only after usage fell below 90% of it); beats"                    \
	  " NVIDIA_GPU_MEMORY_REQUEST. One above the quota never triggers", VG_READ, vg_load_requests, VG_NO_RANGE,   \
	  VG_NO_FLAG)                                                                                                 \
	X("NVIDIA_GPU_MEMORY_REQUEST",                                                                                \
	  "a soft limit for every device; used where NVIDIA_GPU_MEMORY_REQUESTS says nothing",                        \
	  "size", "(none)",                                                                                           \
	  "as NVIDIA_GPU_MEMORY_LIMIT; `unlimited` means no soft limit",                                              \
	  "Soft limit for every device (see NVIDIA_GPU_MEMORY_REQUESTS); used where NVIDIA_GPU_MEMORY_REQUESTS says"  \
	  " nothing", VG_READ, vg_load_request_one, VG_NO_RANGE, VG_NO_FLAG)                                          \
	X("VRAMGUARD_WARN_AT",                                                                                        \
	  "an alert threshold, `80%` of the quota or a size (`3G`, `0:80%,1:6G`): one warning and a report (reason "  \
	  "`threshold`)",                                                                                             \
	  "limits", "(none)",                                                                                         \
	  "`N%` of the quota (of the device's memory when there is none), `SIZE`, `unlimited`, or a list"            \
	  " `[KEY:]VALUE,...` as NVIDIA_GPU_MEMORY_LIMITS; bare number = MiB",                                        \
	  "Alert threshold per device: usage above it denies nothing, but logs one warning and writes a report"       \
	  " (reason `threshold`), once per crossing (again only after usage fell below 90% of it), at most one per"   \
	  " VRAMGUARD_REPORT_INTERVAL per device. With NVIDIA_GPU_MEMORY_REQUEST[S] too, the lower of the two"        \
	  " applies and messages name it (its reason stays `soft-limit`); a percentage is of the quota at first use", \
	  VG_READ, vg_load_warn_at, VG_NO_RANGE, VG_NO_FLAG)                                                          \
	X("VRAMGUARD_COUNT",                                                                                          \
	  "what the quota counts: `device` (what the GPU holds for the process: pools and the driver's own memory "   \
	  "too) or `allocations`",                                                                                    \
	  "enum", "device", VG_COUNT_VALUES,                                                                          \
	  "What the quota counts: device = the device memory the process holds (its allocations, what its"            \
	  " stream-ordered pools keep reserved, graph memory, the driver's own memory for the process);"              \
	  " allocations = only the bytes the process asked for", VG_READ, vg_load_count, VG_NO_RANGE, VG_NO_FLAG)     \
	X("VRAMGUARD_DEVICE_POLL",                                                                                    \
	  "how often (ms) the driver's own memory is measured again (NVML), with VRAMGUARD_COUNT=device",             \
	  "integer", VG_STR(VG_DEVICE_POLL_DEFAULT),                                                                  \
	  VG_STR(VG_DEVICE_POLL_MIN) " to " VG_STR(VG_DEVICE_POLL_MAX) " (decimal, milliseconds)",                    \
	  "How often a background thread re-measures the driver's own memory for the process (NVML) when"             \
	  " VRAMGUARD_COUNT=device, and samples each device's usage timeline (either mode)", VG_READ,                 \
	  vg_load_integer, VG_RANGE(VG_DEVICE_POLL_MIN, VG_DEVICE_POLL_MAX, "milliseconds", device_poll_ms),          \
	  VG_NO_FLAG)                                                                                                 \
	X("VRAMGUARD_DRIVER_HEADROOM",                                                                                \
	  "charged for the driver beyond its first measurement (kernels loaded later); `0` for none",                 \
	  "size", "192M", "`SIZE` (bare number = MiB; units K, M, G, B), `0` for none",                               \
	  "When VRAMGUARD_COUNT=device: what the driver's own memory is charged beyond its first measurement, in"     \
	  " advance, so that what the driver takes later (kernels loaded at their first launch, which no call"        \
	  " shows) stays inside the quota; once it grows past that, what is measured is charged", VG_READ,            \
	  vg_load_driver_headroom, VG_NO_RANGE, VG_NO_FLAG)                                                           \
	X("VRAMGUARD_COMPUTE_LIMIT",                                                                                  \
	  "the compute share: `50%` of the GPU's time, per device `0:30%,1:70%`, by UUID `GPU-…:40%`, a default "    \
	  "plus exceptions `50%,1:20%` (docs/compute.md)",                                                            \
	  "shares", "unlimited",                                                                                      \
	  "`N%` (N a whole number from 1 to 100), `unlimited`, or a list `[KEY:]VALUE,...` with KEY as in"           \
	  " NVIDIA_GPU_MEMORY_LIMITS",                                                                                \
	  "Per-process share of each GPU's time (100% measures and never delays); a value without a key applies to"  \
	  " every device. Beats CUDA_DEVICE_SM_LIMIT_<i>, then CUDA_DEVICE_SM_LIMIT (set to values that disagree:"    \
	  " one info line names the one ignored)",                                                                    \
	  VG_READ, vg_load_compute, VG_NO_RANGE,                                                                      \
	  VG_FLAG("compute", 'c', "SPEC", "50%, 0:30%,1:70%, GPU-<uuid>:40%, unlimited"))                            \
	X("CUDA_DEVICE_SM_LIMIT",                                                                                     \
	  "HAMi-core's name for the compute share of every device (`50`), with lower precedence",                     \
	  "percent", "unlimited",                                                                                     \
	  "an integer from 0 to 100, no `%`; 0 and 100 mean no limit (as in HAMi-core)",                             \
	  "HAMi-core compatible compute share for every device; used where VRAMGUARD_COMPUTE_LIMIT and"               \
	  " CUDA_DEVICE_SM_LIMIT_<i> say nothing. Stricter than HAMi-core, which reads hex, octal (a leading 0), a"   \
	  " sign, a suffix such as `%` and values above 100 as some share or none: each is an error here",            \
	  VG_READ, vg_load_sm, VG_NO_RANGE, VG_NO_FLAG)                                                               \
	X("CUDA_DEVICE_SM_LIMIT_<i>",                                                                                 \
	  "HAMi-core's name for device i's compute share, with lower precedence",                                     \
	  "percent", "unlimited",                                                                                     \
	  "as CUDA_DEVICE_SM_LIMIT, but 0 means unset (CUDA_DEVICE_SM_LIMIT applies, as in HAMi-core); i = 0..63",   \
	  "HAMi-core compatible compute share for device ordinal i; beats CUDA_DEVICE_SM_LIMIT, loses to"             \
	  " VRAMGUARD_COMPUTE_LIMIT", VG_READ, vg_load_sm_indexed, VG_NO_RANGE, VG_NO_FLAG)                          \
	X("VRAMGUARD_LOG",                                                                                            \
	  "what vramguard writes to stderr: `off`, `error`, `warn`, `info`, `debug`",                                 \
	  "enum", "warn", VG_LOG_VALUES, "Which messages vramguard writes to stderr",                                 \
	  VG_READ, vg_load_log, VG_NO_RANGE,                                                                          \
	  VG_FLAG("log", 0, "LEVEL", "off, error, warn, info, debug"))                                                \
	X("VRAMGUARD_MANAGED",                                                                                        \
	  "whether managed (unified) memory counts against the quota: `count` or `ignore`",                           \
	  "enum", "count", VG_MANAGED_VALUES,                                                                         \
	  "Whether cuMemAllocManaged allocations count against the quota", VG_READ, vg_load_managed, VG_NO_RANGE,     \
	  VG_NO_FLAG)                                                                                                 \
	X("VRAMGUARD_BACKTRACE",                                                                                      \
	  "call-site depth, 0–64 (0: no call sites; cost in docs/PERFORMANCE.md)",                                    \
	  "integer", VG_STR(VG_BACKTRACE_DEFAULT),                                                                    \
	  "0 to " VG_STR(VG_BACKTRACE_MAX) " (decimal); 0 disables call-site capture",                                \
	  "Stack frames recorded per call site (allocations, stream creation) for reports",                           \
	  VG_READ, vg_load_integer, VG_RANGE(0, VG_BACKTRACE_MAX, NULL, backtrace_depth),                             \
	  VG_FLAG("backtrace", 'b', "N", "call-site depth 0..64 (0: none)"))                                          \
	X("VRAMGUARD_PYTHON",                                                                                         \
	  "`on`: call sites made from Python code carry the Python stack too (docs/python.md); `off`",                \
	  "enum", "on", VG_CONTROL_VALUES,                                                                            \
	  "on: a call site made by a thread running Python code records that thread's Python stack too (file, line,"  \
	  " function; innermost VRAMGUARD_BACKTRACE frames), read without the GIL; CPython 3.9 to 3.13"              \
	  " (docs/python.md); nothing in a process without CPython; off: native frames only",                        \
	  VG_READ, vg_load_python, VG_NO_RANGE,                                                                       \
	  VG_FLAG("python", 0, "MODE", "on or off: Python frames in call sites"))                                     \
	X("VRAMGUARD_SIGNAL",                                                                                         \
	  "the signal that asks a running job for a report (`USR1`, `USR2`, `RTMIN+N`...) or `off`",                  \
	  "signal", "USR1",                                                                                           \
	  VG_SIGNAL_WORDS "; `SIG` prefix optional, any case; N from 0 to SIGRTMAX-SIGRTMIN",                         \
	  "Signal that asks a running process for a report; only taken over if it still has its default disposition", \
	  VG_READ, vg_load_signal, VG_NO_RANGE,                                                                       \
	  VG_FLAG("signal", 's', "SIG", "USR1, USR2, HUP, WINCH, PWR, URG, RTMIN+N or off"))                          \
	X("VRAMGUARD_REPORT",                                                                                         \
	  "where reports go: `stderr`, `off`, or a file template (`%p` pid, `%n` sequence, `%r` reason, `%h` host)",  \
	  "path", "stderr",                                                                                           \
	  "`stderr`, `off`, or a file path template: `%p` pid, `%n` report number, `%r` reason (exit, signal,"        \
	  " soft-limit, threshold, denial, growth), `%h` host name, `%%` a literal %; at most 1023 bytes",           \
	  "Where reports go (see VRAMGUARD_REPORT_ON for when); files are created exclusively, never overwritten,"     \
	  " symlinks not followed", VG_IGNORED("stderr"), vg_load_report, VG_NO_RANGE,                                \
	  VG_FLAG("report", 'r', "PATH", "stderr, off, or a file template (%p pid, %n sequence,\n"                    \
		  "%r reason, %h host name), e.g. /tmp/vg-%p-%n.json"))                                               \
	X("VRAMGUARD_REPORT_FORMAT",                                                                                  \
	  "`text` or `json` (docs/report-format.md)",                                                                 \
	  "enum", "text", VG_FORMAT_VALUES, "Format of reports",                                                      \
	  VG_READ, vg_load_report_format, VG_NO_RANGE,                                                                \
	  VG_FLAG("format", 'f', "FMT", "text or json"))                                                              \
	X("VRAMGUARD_REPORT_MODE",                                                                                    \
	  "permissions of report files before the umask (e.g. `0640`); reports name the job's code and command line", \
	  "octal", "0600", "an octal file mode from 0 to 0777, e.g. 0600, 0640, 0644",                                \
	  "Permissions of report files (before the umask); reports name the job's code and command line",             \
	  VG_IGNORED(""), vg_load_report_mode, VG_NO_RANGE, VG_NO_FLAG)                                               \
	X("VRAMGUARD_REPORT_ON",                                                                                      \
	  "when reports are written: `exit`, `signal`, `threshold`, `denial` (at the first refused allocation), "    \
	  "`growth` (a call site keeps growing)",                                                                     \
	  "list", "exit,signal,threshold",                                                                            \
	  "a comma-separated list of " VG_REPORT_ON_WORDS " (any case, each once)",                                   \
	  "When reports are written: `exit`, on VRAMGUARD_SIGNAL (`signal`: without it no handler is installed),"     \
	  " at the first denied allocation (`denial`, then at most one per VRAMGUARD_REPORT_INTERVAL), at a soft"     \
	  " limit's crossing (`threshold`: VRAMGUARD_WARN_AT and NVIDIA_GPU_MEMORY_REQUEST[S]; without it the"        \
	  " warning line stays), when a call site has kept growing for VRAMGUARD_GROWTH_WINDOW (`growth`, then at"    \
	  " most one per window)", VG_READ, vg_load_report_on, VG_NO_RANGE, VG_NO_FLAG)                               \
	X("VRAMGUARD_GROWTH_WINDOW",                                                                                  \
	  "how long a call site must keep growing to be called growing, and the least time between two `growth` "     \
	  "reports (docs/report-format.md, *Growth and forecast*)",                                                   \
	  "duration", "10m",                                                                                          \
	  "`N` seconds, or `Ns`, `Nm`, `Nh`, `Nd` (N a whole number), from 1 s to 7 days",                            \
	  "The window a call site's growth is judged on: its live bytes are sampled every tenth of it (or every"      \
	  " VRAMGUARD_DEVICE_POLL, if longer), and it is growing when they rose in most of the window's last ten"     \
	  " intervals without returning to an earlier level; then reports give its rate and, with a quota, when the"  \
	  " quota is reached at that rate. Also the least time between two `growth` reports (VRAMGUARD_REPORT_ON)",   \
	  VG_READ, vg_load_growth_window, VG_NO_RANGE, VG_NO_FLAG)                                                    \
	X("VRAMGUARD_REPORT_INTERVAL",                                                                                \
	  "least seconds between two denial reports, or two soft-limit warnings of a device",                         \
	  "integer", VG_STR(VG_REPORT_INTERVAL_DEFAULT),                                                              \
	  "1 to " VG_STR(VG_REPORT_INTERVAL_MAX) " (decimal, seconds)",                                               \
	  "Least time between two `denial` reports of a process, and between two soft limit warnings (and"           \
	  " `threshold` or `soft-limit` reports) of one device; what happens in between is counted",                  \
	  VG_READ, vg_load_integer, VG_RANGE(1, VG_REPORT_INTERVAL_MAX, "seconds", report_interval_s), VG_NO_FLAG)    \
	X("VRAMGUARD_STREAM_CHECK",                                                                                   \
	  "a stream destroyed with work queued: `warn`, `sync` (wait for it first) or `off`",                         \
	  "enum", "warn", VG_STREAM_VALUES,                                                                           \
	  "A stream destroyed with work still queued: warn (rate-limited, both call sites, listed in the report),"    \
	  " sync (wait for it to finish, and say so) or off", VG_READ, vg_load_stream_check, VG_NO_RANGE,             \
	  VG_FLAG("stream-check", 0, "MODE", "warn, sync or off"))                                                    \
	X("VRAMGUARD_SHM_DIR",                                                                                        \
	  "where regions and control segments live (a memory-backed `emptyDir` in Kubernetes)",                       \
	  "path", VG_SHM_DIR_DEFAULT, "an absolute directory path, at most 255 bytes",                                \
	  "Where named shared regions and control segments live (a memory-backed file system: /dev/shm, or a"         \
	  " Kubernetes `emptyDir: {medium: Memory}`)", VG_IGNORED(""), vg_load_shm_dir, VG_NO_RANGE, VG_NO_FLAG)      \
	X("VRAMGUARD_SHARED",                                                                                         \
	  "a region NAME (or absolute path): one budget per GPU for every process naming it",                         \
	  "name", "(none)",                                                                                           \
	  "a NAME (`A-Z a-z 0-9 . _ -`, at most 63, not starting with `.` or `proc.`: file"                           \
	  " VRAMGUARD_SHM_DIR/vramguard.NAME) or an absolute PATH",                                                   \
	  "Processes naming the same region share one VRAM budget per GPU, on top of their own quota; the tighter"    \
	  " of the two applies", VG_IGNORED(""), vg_load_shared, VG_NO_RANGE,                                         \
	  VG_FLAG("shared", 0, "NAME|PATH", "join a shared region: the processes naming it share one VRAM\n"          \
		  "budget per GPU (file VRAMGUARD_SHM_DIR/vramguard.NAME, or PATH)"))                                 \
	X("VRAMGUARD_SHARED_LIMITS",                                                                                  \
	  "the region's budget when this process creates it",                                                         \
	  "limits", "NVIDIA_GPU_MEMORY_LIMITS",                                                                       \
	  "as NVIDIA_GPU_MEMORY_LIMITS; ordinal keys mean the ordinal of the process that first used the GPU",        \
	  "The shared region's budget per GPU, used when this process creates the region (a region keeps the"         \
	  " budget it was made with; a different value is reported; `vramguard limit set --shared` changes it)",      \
	  VG_IGNORED(""), vg_load_shared_limits, VG_NO_RANGE,                                                         \
	  VG_FLAG("shared-limit", 0, "SPEC", "the region's budget if this job creates it (syntax\n"                   \
		  "of --limit; default: the --limit value)"))                                                         \
	X("VRAMGUARD_SHARED_MODE",                                                                                    \
	  "the mode of a region this process creates: `0600`, or `0660` (its group may join)",                        \
	  "octal", "0600", "0600 (this user) or 0660 (this user and the file's group)",                               \
	  "Permissions of a shared region this process creates; 0660 also lets it join a region of another user"      \
	  " whose group it is in (made with 0660 too)", VG_IGNORED(""), vg_load_shared_mode, VG_NO_RANGE, VG_NO_FLAG) \
	X("VRAMGUARD_SHARED_SLOTS",                                                                                   \
	  "how many processes a region this process creates can hold at once, 1–16384",                               \
	  "integer", VG_STR(VG_SHARED_SLOTS_DEFAULT),                                                                 \
	  "1 to " VG_STR(VG_SHARED_SLOTS_MAX) " (decimal)",                                                           \
	  "Processes a shared region this process creates can hold at once (about 1.8 KiB of the file each)",           \
	  VG_IGNORED(""), vg_load_integer, VG_RANGE(1, VG_SHARED_SLOTS_MAX, NULL, shared_slots), VG_NO_FLAG)          \
	X("VRAMGUARD_CONTROL",                                                                                        \
	  "`on`: a control segment, so that `top` and `limit set --pid` reach the process; `off`",                    \
	  "enum", "on", VG_CONTROL_VALUES,                                                                            \
	  "on: a process outside any shared region makes a control segment in VRAMGUARD_SHM_DIR so that"              \
	  " `vramguard top` sees it and `vramguard limit set --pid` reaches it; off: none",                           \
	  VG_IGNORED("off"), vg_load_control, VG_NO_RANGE, VG_NO_FLAG)


#endif
