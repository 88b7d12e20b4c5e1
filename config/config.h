/* vramguard configuration: the one options table (options.h), strict parsers for sizes and per-device limit
 * lists. No CUDA here, and nothing from the rest of the tree: config/ is the bottom layer. The interposer resolves a
 * limit against a device (ordinal, UUID, total memory) itself. */
#ifndef VG_CONFIG_H
#define VG_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define VG_VERSION "0.3.0"          /* the library and the command */
#define VG_MAX_DEVICES 64           /* CUDA ordinals 0..63 are tracked; higher ones pass through unlimited */
#define VG_MAX_LIMIT_ENTRIES 64     /* keys in one per-device list */
#define VG_UUID_MAX 96              /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", "MIG-..." */
#define VG_ERR_MAX 320              /* one error line */

/* Call-site depth when VRAMGUARD_BACKTRACE is unset. A plain decimal literal: the docs show it stringified. */
#define VG_BACKTRACE_DEFAULT 16
#define VG_BACKTRACE_MAX 64         /* VRAMGUARD_BACKTRACE's upper bound (frames per call site) */
#define VG_SIGNAL_NAME_MAX 16       /* "SIGRTMIN+NN", "off" */
#define VG_REPORT_PATH_MAX 1024     /* a VRAMGUARD_REPORT template, NUL included */
#define VG_SHM_DIR_MAX 256          /* VRAMGUARD_SHM_DIR, NUL included */
#define VG_SHM_DIR_DEFAULT "/dev/shm" /* VRAMGUARD_SHM_DIR unset */
#define VG_SHARED_PREFIX "vramguard." /* a region's file: DIR/vramguard.NAME (control segments: vramguard.proc.*) */
#define VG_SHARED_NAME_MAX 64       /* NAME in VRAMGUARD_SHARED=NAME, NUL included */
#define VG_SHARED_PATH_MAX 512      /* the shared region's file, NUL included */
#define VG_SHARED_SLOTS_DEFAULT 1024 /* VRAMGUARD_SHARED_SLOTS: processes per shared region (region.h's numbers) */
#define VG_SHARED_SLOTS_MAX 16384
#define VG_SPEC_MAX 256             /* a limit list kept as text (a region's budget), NUL included */
#define VG_NOTE_MAX 640             /* vg_config.note: one info line, NUL included */
#define VG_DEVICE_POLL_DEFAULT 500  /* VRAMGUARD_DEVICE_POLL, milliseconds. Plain decimal literals: the docs show */
#define VG_DEVICE_POLL_MIN 50       /* them stringified */
#define VG_DEVICE_POLL_MAX 60000
#define VG_REPORT_INTERVAL_DEFAULT 60 /* VRAMGUARD_REPORT_INTERVAL, seconds. Plain decimal literals: the docs show */
#define VG_REPORT_INTERVAL_MAX 86400  /* them stringified */
#define VG_REPORT_ON_WORDS "exit, signal, denial, threshold, growth" /* VRAMGUARD_REPORT_ON: word n is bit 1 << n */
#define VG_GROWTH_WINDOW_DEFAULT 600  /* VRAMGUARD_GROWTH_WINDOW, seconds (10 minutes); the docs show "10m" */
#define VG_GROWTH_WINDOW_MAX 604800   /* 7 days */

enum vg_limit_kind {
	VG_LIMIT_UNSET = 0,             /* nothing said for this device */
	VG_LIMIT_BYTES,                 /* .bytes */
	VG_LIMIT_PERCENT,               /* .ppm: parts per million of the device's total memory */
	VG_LIMIT_UNLIMITED,             /* said explicitly: "unlimited" */
};

struct vg_limit {
	enum vg_limit_kind kind;
	uint64_t bytes;
	uint32_t ppm;                   /* 50% -> 500000 */
	const char *source;             /* the variable it came from, e.g. "NVIDIA_GPU_MEMORY_LIMITS" */
};

struct vg_limit_entry {
	int ordinal;                    /* >= 0, or -1 when keyed by uuid */
	char uuid[VG_UUID_MAX];         /* "GPU-..."/"MIG-..." as written (compared case-insensitively) */
	struct vg_limit limit;
};

/* One parsed limit variable: an optional bare default plus keyed entries. */
struct vg_limits {
	struct vg_limit dflt;
	int n;
	struct vg_limit_entry e[VG_MAX_LIMIT_ENTRIES];
};

enum vg_log_level { VG_LOG_OFF = 0, VG_LOG_ERROR, VG_LOG_WARN, VG_LOG_INFO, VG_LOG_DEBUG };
enum vg_managed_policy { VG_MANAGED_COUNT = 0, VG_MANAGED_IGNORE };
enum vg_report_dest { VG_REPORT_STDERR = 0, VG_REPORT_OFF, VG_REPORT_PATH };
enum vg_report_format { VG_FORMAT_TEXT = 0, VG_FORMAT_JSON };
enum vg_stream_check { VG_STREAM_WARN = 0, VG_STREAM_SYNC, VG_STREAM_OFF };
enum vg_control { VG_CONTROL_ON = 0, VG_CONTROL_OFF };
/* VRAMGUARD_REPORT_ON: when reports are written, bits in the order of VG_REPORT_ON_WORDS. Unset: exit, signal and
 * threshold (a soft limit's crossing already wrote a report before the variable existed). */
enum {
	VG_REPORT_ON_EXIT = 1,
	VG_REPORT_ON_SIGNAL = 2,
	VG_REPORT_ON_DENIAL = 4,
	VG_REPORT_ON_THRESHOLD = 8,
	VG_REPORT_ON_GROWTH = 16,
	VG_REPORT_ON_DEFAULT = VG_REPORT_ON_EXIT | VG_REPORT_ON_SIGNAL | VG_REPORT_ON_THRESHOLD,
};
/* VRAMGUARD_COUNT: what the quota counts. device: the device memory the process holds (allocations, the memory
 * stream-ordered pools keep reserved, graph memory, the driver's own memory for the process); allocations: only
 * the bytes the process asked for. */
enum vg_count { VG_COUNT_DEVICE = 0, VG_COUNT_ALLOCATIONS };

#define VG_DRIVER_HEADROOM_DEFAULT ((uint64_t)192 << 20)

struct vg_config {
	struct vg_limits limits;        /* NVIDIA_GPU_MEMORY_LIMITS */
	struct vg_limit limit_one;      /* NVIDIA_GPU_MEMORY_LIMIT: one value for every device (below the list) */
	struct vg_limits hami;          /* CUDA_DEVICE_MEMORY_LIMIT and CUDA_DEVICE_MEMORY_LIMIT_<i> (lower precedence) */
	struct vg_limits requests;      /* NVIDIA_GPU_MEMORY_REQUESTS: soft limits per device */
	struct vg_limit request_one;    /* NVIDIA_GPU_MEMORY_REQUEST: one soft limit for every device (below the list) */
	struct vg_limits warn_at;       /* VRAMGUARD_WARN_AT: soft limits per device; a percentage is of the quota */
	struct vg_limits compute;       /* VRAMGUARD_COMPUTE_LIMIT: percentages (ppm, whole percents) or unlimited */
	struct vg_limits sm;            /* CUDA_DEVICE_SM_LIMIT (its default) and CUDA_DEVICE_SM_LIMIT_<i> (ordinal
					 * entries), HAMi-core's names: lower precedence; 0 and 100 read as unlimited */
	unsigned report_on;             /* VRAMGUARD_REPORT_ON: VG_REPORT_ON_* bits */
	unsigned report_interval_s;     /* VRAMGUARD_REPORT_INTERVAL: 1..VG_REPORT_INTERVAL_MAX seconds */
	unsigned growth_window_s;       /* VRAMGUARD_GROWTH_WINDOW: 1..VG_GROWTH_WINDOW_MAX seconds */
	enum vg_count count;            /* VRAMGUARD_COUNT */
	unsigned device_poll_ms;        /* VRAMGUARD_DEVICE_POLL: VG_DEVICE_POLL_MIN..MAX */
	uint64_t driver_headroom;       /* VRAMGUARD_DRIVER_HEADROOM, bytes */
	int log_level;                  /* enum vg_log_level */
	int managed;                    /* enum vg_managed_policy */
	int backtrace_depth;            /* VRAMGUARD_BACKTRACE: frames per call site, 0..64; 0 = no call sites */
	int signal;                     /* VRAMGUARD_SIGNAL: signal number that asks for a report, 0 = off */
	char signal_name[VG_SIGNAL_NAME_MAX]; /* canonical: "SIGUSR1", "SIGRTMIN+3", or "off" */
	int report_dest;                /* enum vg_report_dest */
	char report_path[VG_REPORT_PATH_MAX]; /* VG_REPORT_PATH: the validated template, unexpanded; else "" */
	int report_format;              /* enum vg_report_format */
	unsigned report_mode;           /* VRAMGUARD_REPORT_MODE: permissions of report files, default 0600 */
	int stream_check;               /* enum vg_stream_check */
	char shm_dir[VG_SHM_DIR_MAX];   /* VRAMGUARD_SHM_DIR: where named regions and control segments live */
	char shared_path[VG_SHARED_PATH_MAX]; /* VRAMGUARD_SHARED resolved to a file; "" = no shared region */
	char shared_name[VG_SHARED_PATH_MAX]; /* VRAMGUARD_SHARED as written (NAME or PATH) */
	char shared_spec[VG_SPEC_MAX];  /* the region's budget as text: VRAMGUARD_SHARED_LIMITS, else
					 * NVIDIA_GPU_MEMORY_LIMITS, else "" (no budget) */
	const char *shared_spec_source; /* the variable shared_spec came from, or NULL */
	unsigned shared_mode;           /* VRAMGUARD_SHARED_MODE: 0600 or 0660 */
	unsigned shared_slots;          /* VRAMGUARD_SHARED_SLOTS: process slots of a region this process creates */
	int control;                    /* enum vg_control: VRAMGUARD_CONTROL */
	int python;                     /* enum vg_control: VRAMGUARD_PYTHON (on: Python frames in call sites) */
	int secure;                     /* loaded for a secure-mode process: the rows that name files were not read */
	uint64_t secure_ignored;        /* bit i: vg_options[i] was set (not blank) and ignored in secure mode */
	char note[VG_NOTE_MAX];         /* "" or one line for the library to log at info level, without
					 * "vramguard: info: ": variables of one precedence chain set to values that
					 * disagree, and which of them are ignored */
	int valid;                      /* 0: some variable was invalid; error[] says which */
	char error[VG_ERR_MAX];         /* the first error, one line without trailing newline */
};

/* Parse a size. A bare number is in units of default_unit (1 MiB for NVIDIA_GPU_MEMORY_LIMITS, 1 byte for HAMi's
 * variables). Units K M G T, KB MB GB TB, KiB MiB GiB TiB (all binary, case-insensitive) and B (bytes); a decimal
 * fraction is allowed ("1.5G"). Writes *out and returns 0, or returns -EINVAL with a message in err (no variable name,
 * e.g. "unknown unit 'XB'"). Zero is rejected. */
int vg_parse_size(const char *s, uint64_t default_unit, uint64_t *out, char *err, size_t errlen);

/* Parse one limit variable's value into *out ("4096", "50%", "0:4G,1:2G", "0=4G", "8G,1:2G", "GPU-...:4G",
 * "1:unlimited"). On error returns -EINVAL and writes a full one-line message in err naming var and the bad token,
 * with a valid example. */
int vg_parse_limits(const char *var, const char *value, uint64_t default_unit, struct vg_limits *out, char *err,
		    size_t errlen);

/* Read every option from the environment through getenv_fn (tests pass their own; NULL: getenv), validate, fill
 * *cfg. Always returns with cfg usable: on error cfg->valid = 0 and cfg->error holds the first message
 * ("vramguard: error: ..."). Returns 0 or -EINVAL.
 * secure: the process runs with elevated privileges (the library passes getauxval(AT_SECURE)). Its environment
 * belongs to a less privileged user, so the rows whose vg_option.secure is set (files, directories, file modes) are
 * not read: each takes that safe value, whatever it was set to (an invalid value fails nothing), and
 * cfg->secure_ignored records which of them were set. Every other row, the limits first, is read as usual. */
int vg_config_load(struct vg_config *cfg, const char *(*getenv_fn)(const char *name), int secure);

/* The one line a secure-mode process prints about it, without "vramguard: <level>: ", into out (always
 * terminated, cut to fit). Returns the level to print it at: VG_LOG_WARN when some ignored variable was set (the
 * line names exactly those), VG_LOG_INFO when none was (it says there is no control segment), VG_LOG_OFF with out
 * empty when cfg was not loaded in secure mode. */
int vg_config_secure_note(const struct vg_config *cfg, char *out, size_t len);

/* The effective limit for one device. total is the device's memory in bytes (for percentages); uuid may be NULL.
 * Precedence: NVIDIA_GPU_MEMORY_LIMITS keyed entry (ordinal or uuid), its bare default, then
 * NVIDIA_GPU_MEMORY_LIMIT, then CUDA_DEVICE_MEMORY_LIMIT_<ordinal> (or a keyed entry of CUDA_DEVICE_MEMORY_LIMIT),
 * then CUDA_DEVICE_MEMORY_LIMIT. Returns the limit in bytes, or UINT64_MAX for unlimited; *source (if not NULL)
 * gets the name of the variable that decided (also for an explicit "unlimited"), or NULL when none said anything. */
uint64_t vg_config_limit_for(const struct vg_config *cfg, int ordinal, const char *uuid, uint64_t total,
			     const char **source);

/* The soft limit (request) for one device, resolved like vg_config_limit_for: NVIDIA_GPU_MEMORY_REQUESTS keyed
 * entry, its bare default, then NVIDIA_GPU_MEMORY_REQUEST. Returns bytes, or UINT64_MAX (VG_NO_LIMIT) when there
 * is none: nothing set, "unlimited", a percentage of an unknown total (0), or an invalid cfg. *source as above. */
uint64_t vg_config_request_for(const struct vg_config *cfg, int ordinal, const char *uuid, uint64_t total,
			       const char **source);

/* VRAMGUARD_WARN_AT for one device: keyed entry, else its bare default. A percentage is of quota, or of total when
 * quota is UINT64_MAX (no quota). Returns bytes, or UINT64_MAX when none. *source as above. The interposer takes the
 * lower of this and vg_config_request_for as the device's one soft limit. */
uint64_t vg_config_warn_for(const struct vg_config *cfg, int ordinal, const char *uuid, uint64_t quota, uint64_t total,
			    const char **source);

/* Parse a compute share list ("50%", "0:30%,1:70%", "GPU-...:40%", "50%,1:20%", "unlimited") as
 * VRAMGUARD_COMPUTE_LIMIT takes it: the keys of vg_parse_limits, each value a whole percentage from 1% to 100%
 * (kind VG_LIMIT_PERCENT, ppm a multiple of 10000) or "unlimited". Errors as vg_parse_limits. */
int vg_parse_compute(const char *var, const char *value, struct vg_limits *out, char *err, size_t errlen);

/* The compute share of one device, in whole percents of the GPU's time: 1..100, or 0 for no limit. Precedence:
 * VRAMGUARD_COMPUTE_LIMIT keyed entry (a UUID key beats an ordinal key), its bare default, then
 * CUDA_DEVICE_SM_LIMIT_<ordinal>, then CUDA_DEVICE_SM_LIMIT. *source (if not NULL) as vg_config_limit_for's: the
 * variable that decided (also for an explicit "unlimited", or HAMi-core's 0 / 100), else NULL. An invalid cfg
 * gives 0. */
unsigned vg_config_compute_for(const struct vg_config *cfg, int ordinal, const char *uuid, const char **source);

/* The limit one parsed list gives a device (keyed entry, else its bare default): bytes or UINT64_MAX for unlimited.
 * *said (if not NULL) is 0 when the list says nothing about the device (the result is then UINT64_MAX). */
uint64_t vg_limits_for(const struct vg_limits *ls, int ordinal, const char *uuid, uint64_t total, const char **source,
		       int *said);

/* VRAMGUARD_SHARED's value to a file: a NAME gives DIR/vramguard.NAME (dir NULL or "": VG_SHM_DIR_DEFAULT), an
 * absolute PATH is taken as is. Names starting with "proc." are reserved for control segments
 * (DIR/vramguard.proc.PID.START). Returns 0 or -EINVAL with a one-line reason in err. The loader resolves
 * cfg->shared_path with it; accounting/region.h's vg_region_path is the same rule for the commands. */
int vg_shared_path(const char *dir, const char *name_or_path, char *out, size_t outlen, char *err, size_t errlen);

/* A row's flag of `vramguard run` (cli/run.c builds its getopt_long table and its --help from these; the man page's
 * run options come from them too). */
struct vg_option_flag {
	const char *name;               /* long flag without "--", e.g. "limit"; NULL: `run` has no flag for the row */
	char short_name;                /* 'l' for -l, or 0 */
	const char *metavar;            /* "SPEC", "PATH", ... */
	const char *usage;              /* what follows the variable's name in `run --help`; a '\n' starts an indented
					 * continuation line */
};

/* An integer row's bounds (VG_RANGE in config/options.h): its loader accepts plain decimal digits from min to max and
 * stores the value in the vg_config member at offset field (an int or an unsigned); unit is the word its message
 * uses ("seconds"), or NULL. max 0: the row is not an integer. */
struct vg_option_range {
	unsigned long min, max;
	const char *unit;
	size_t field;
};

/* The options table (config/options.h): one row per environment variable, the source of docs/env.md, of the man
 * page's ENVIRONMENT section and of `vramguard run`'s flags and their --help text. */
struct vg_option {
	const char *name;               /* exact variable name; "CUDA_DEVICE_MEMORY_LIMIT_<i>" for the indexed form */
	const char *summary;            /* one short line: the README's configuration table */
	const char *type;               /* "limits", "enum", ... for the docs */
	const char *dflt;               /* default, as the docs show it */
	const char *values;             /* accepted values / syntax, one line */
	const char *doc;                /* one line */
	const char *secure;             /* NULL: read in secure mode too. Else the row names a file, a directory or a
					 * file mode and is ignored in secure mode, where it reads as this value
					 * ("" = its default) */
	struct vg_option_range range;   /* an integer row's bounds */
	struct vg_option_flag flag;     /* `vramguard run`'s flag for it, if any */
};
extern const struct vg_option vg_options[];
extern const size_t vg_options_count;

/* Write the options table as a Markdown table (docs/env.md is checked against this by the tests). */
void vg_options_write_markdown(FILE *f);
/* The short table of the README (variable, default, summary), checked against this by the tests too. */
void vg_options_write_summary(FILE *f);

/* User text (a value, a path, an argument) as every message quotes it: 'text', control bytes as '?'; past 80 bytes
 * its start and end, 'start...end' (5000 bytes), so that a line stays short whatever it was given. buf should have
 * VG_QUOTE_BUF bytes. No heap, no stdio. Returns buf. */
#define VG_QUOTE_BUF 128
const char *vg_quote(const char *s, char *buf, size_t len);

/* Format bytes for people: "4.00 GiB", "512.00 MiB", "1023 B". Returns buf. */
const char *vg_format_bytes(uint64_t bytes, char *buf, size_t len);

/* A GPU's 16-byte UUID (CUuuid's bytes) as CUDA, NVML and nvidia-smi write it: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
 * (lower-case hex; buf should have VG_UUID_MAX bytes). Returns buf. */
const char *vg_format_uuid(const char bytes[16], char *buf, size_t len);

/* UTF-8 (RFC 3629), for every writer of text others parse (the JSON writer, the HTML page, the exporter's label
 * values) and every place that cuts text short (the command line a region's slot keeps). No heap, no stdio.
 * vg_utf8_len: the length of the character at s (n bytes there): 1 for ASCII, 2 to 4 for a well-formed sequence, 0
 * if the bytes are not one (a stray byte, an overlong form, a surrogate, past U+10FFFF, or cut short by n).
 * vg_utf8_cut: where to cut s[0..n) so that it does not end inside a character: n, or less by the bytes of the one
 * multibyte character that n cut short (bytes that are not UTF-8 at all are left for the writers to replace). */
size_t vg_utf8_len(const char *s, size_t n);
size_t vg_utf8_cut(const char *s, size_t n);

#endif
