/* The report model. A report is a self-contained snapshot (no pointers into live tables), so the same renderers
 * serve the library (exit and signal dumps) and the `vramguard` command (which rebuilds a vg_report from a JSON
 * file): the text form (report/text.c) and the JSON form (report/json_write.c, following the schema table in
 * report/schema.h, which every key of the JSON is a row of). Rendering allocates (a growable buffer); never call it
 * from a signal handler. */
#ifndef VG_REPORT_H
#define VG_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/json_out.h"
#include "report/strbuf.h"
#include "report/strpool.h"

#define VG_REPORT_SCHEMA "vramguard.report/1"
/* The revision of the schema this release writes (docs/report-format.md, *Versioning*): keys added within the major
 * version. A report without "schema_revision" is revision 1. */
#define VG_REPORT_REVISION 5
#define VG_REPORT_MAX_FRAMES 64
#define VG_REPORT_MAX_PYFRAMES 64
#define VG_REPORT_STRINGS_MAX ((size_t)1 << 30) /* a report's strings (vg_report_string) hold at most this */
#define VG_REPORT_FRAME_STR 256         /* a frame's module and symbol, a Python frame's file: at most this less one
					 * bytes (cut so when read) */
#define VG_REPORT_PY_FUNCTION_STR 128   /* a Python frame's function: the same */

/* The strings of frames (native and Python) are never NULL: they point into their report's pool (vg_report.strings),
 * or at constants. Millions of frames name a few thousand strings: each is kept once (docs/PERFORMANCE.md, "Issue 29:
 * big reports"). */
struct vg_report_frame {
	uint64_t address;               /* absolute return address in the reporting process */
	const char *module;             /* path of the object, "" if unknown */
	uint64_t module_offset;         /* address - load base: what `addr2line -e module` takes */
	const char *symbol;             /* function name, "" if unknown */
	uint64_t symbol_offset;         /* address - symbol start */
};

/* One Python frame of the allocating thread (VRAMGUARD_PYTHON), copied when the site was first seen: right even after
 * the code object is gone. */
struct vg_report_pyframe {
	const char *file;               /* co_filename as Python has it ("train.py", "/usr/lib/python3/x.py", "<string>") */
	uint32_t line;                  /* the line executing then; 0 if unknown */
	const char *function;           /* co_qualname where the interpreter has it (3.11+), else co_name */
};

/* A loaded object the report's frames name, with what identifies its bits on another machine. */
struct vg_report_module {
	char path[256];                 /* as the frames' `module` names it */
	char build_id[80];              /* the GNU build ID (NT_GNU_BUILD_ID) in lowercase hex, "" if it has none */
	uint64_t base;                  /* its load base in the reporting process (address - module_offset) */
};

struct vg_report_site {
	uint32_t id;                    /* stable for the life of the process (diffs of two dumps match by id) */
	char api[48];                   /* entry point of its first allocation ("cuMemAlloc_v2"), or the stream call */
	uint32_t nframes;               /* at most VG_REPORT_MAX_FRAMES */
	struct vg_report_frame *frames; /* innermost (the caller of the CUDA entry point) first */
	uint32_t npython;               /* at most VG_REPORT_MAX_PYFRAMES; 0 when the thread ran no Python code */
	struct vg_report_pyframe *python;       /* innermost first */
	uint64_t live_count, live_bytes;        /* allocations from this site still alive */
	uint64_t total_allocs, total_bytes;     /* ever made from this site */
	int growth_set;                 /* growing (revision 5): growth_bytes_per_hour is its rate, over its devices */
	uint64_t growth_bytes_per_hour;
};

struct vg_report_device {
	int ordinal;
	char uuid[96];
	int quota_set;                  /* 0: unlimited (JSON quota_bytes = null) */
	uint64_t quota_bytes;
	int soft_set;                   /* 0: no soft limit (JSON soft_limit_bytes = null; absent in older reports) */
	uint64_t soft_bytes;
	char soft_source[64];           /* the variable it came from, "" if unknown */
	uint64_t total_bytes;           /* the device's memory as the driver reports it, 0 if unknown */
	uint64_t used_bytes, peak_bytes;
	uint64_t allocs, frees;
	uint64_t denied_count, denied_bytes;
	uint64_t largest_bytes;
	/* What used_bytes is made of (docs/quota.md, "What the quota counts"). Under VRAMGUARD_COUNT=allocations
	 * used_bytes = allocated_bytes and the parts are 0. */
	uint64_t allocated_bytes;       /* the allocations themselves, stream-ordered ones by their size */
	uint64_t pool_reserved_bytes;   /* stream-ordered pools' reserved memory, charged in their allocations' place */
	uint64_t pool_live_bytes;       /* of which handed out */
	uint64_t graph_bytes;           /* graph memory reservation */
	uint64_t driver_bytes;          /* the driver's own memory for the process (NVML), 0 if not measured */
	uint64_t driver_headroom_bytes; /* charged beyond it in advance (VRAMGUARD_DRIVER_HEADROOM, what is left) */
	int driver_measured;            /* NVML measured it (else driver_bytes is 0) */
	int driver_limit_set;           /* the driver enforces a container limit here (R615+) */
	uint64_t driver_limit_bytes;
	/* The compute share (docs/compute.md; revision 4). */
	int compute_set;                /* a compute limit applies (JSON compute_limit_permille = null otherwise) */
	uint64_t compute_limit_pm;
	char compute_source[64];
	uint64_t gpu_time_ns;           /* measured only where some GPU of the process has a compute limit */
	uint64_t compute_recent_pm, compute_recent_s;
	uint64_t compute_waits, compute_waited_ns;
	/* The usage timeline (revision 2): absent (timeline_set 0) in older reports and for unused devices. */
	int timeline_set;
	uint64_t timeline_period_ms;    /* a point at least this often (and on change at most a tenth as often) */
	uint32_t timeline_compactions;  /* times the timeline was halved */
	size_t ntimeline_points;
	struct vg_report_timeline_point *timeline_points;       /* oldest first; owned by the report */
	/* Growth (revision 5; accounting/growth.h has the model): the forecast, and the call sites followed on the
	 * device (growth_set 0: none, or an older report). */
	int forecast_set;               /* 0: no quota, or nothing grows (JSON forecast_seconds = null) */
	uint64_t forecast_s;            /* seconds from the report's time until the quota is reached at growth_rate */
	int growth_set;
	uint64_t growth_window_ms, growth_step_ms;
	uint64_t growth_bytes_per_hour;         /* the sum of the growing sites' rates */
	size_t ngrowth_sites;
	struct vg_report_growth_site *growth_sites;     /* growing first, fastest first; then by live bytes */
};

/* A call site followed on a device: whether it grows, its rate, its live bytes over the last points. */
struct vg_report_growth_site {
	uint32_t site;                  /* its id in the report's sites */
	int growing;
	int rate_set;                   /* = growing: bytes_per_hour is set (JSON null otherwise) */
	uint64_t bytes_per_hour;
	uint64_t growing_since_ns;      /* the start of the first window it grew over, continuously since; 0: not growing */
	size_t npoints;
	struct vg_report_growth_point *points;  /* oldest first */
};

struct vg_report_growth_point {
	uint64_t time_ns;               /* CLOCK_REALTIME */
	uint64_t live_bytes;            /* the site's live bytes on the device then */
};

/* One point of a device's usage timeline (accounting/timeline.h has the model). */
struct vg_report_timeline_point {
	uint64_t time_ns;               /* CLOCK_REALTIME */
	uint64_t used_bytes;
	uint64_t peak_bytes;            /* the highest usage within the interval that ends here */
	uint64_t denied_count, denied_bytes;    /* cumulative */
};

/* One live allocation (the report lists the largest ones; see max_allocations). */
struct vg_report_alloc {
	uint64_t address;               /* device pointer, array or VMM handle */
	uint64_t bytes;
	int device;
	char api[48];
	uint32_t site;                  /* site id, 0 if none (backtraces off) */
	uint32_t thread;                /* kernel thread id of the allocating thread */
	uint64_t time_ns;               /* CLOCK_REALTIME when it was made */
};

/* Streams destroyed while work was still queued, grouped by (creation site, destroy site). */
struct vg_report_stream_event {
	uint32_t create_site, destroy_site;
	uint64_t count;
	int synchronized;               /* VRAMGUARD_STREAM_CHECK=sync waited for it before destroying */
};

/* Streams alive at report time, grouped by creation site. */
struct vg_report_stream_live {
	uint32_t create_site;
	uint64_t count;
	uint64_t pending;               /* how many had work queued (queried without blocking) */
	uint64_t capturing;             /* how many were capturing (never queried) */
};

struct vg_report {
	uint32_t schema_revision;       /* read from a report: its "schema_revision" (0: absent, revision 1) */
	char reason[16];                /* "exit", "signal", "soft-limit", "threshold", "denial", "growth" */
	uint64_t sequence;              /* 1, 2, ... within the process */
	int pid;
	uint64_t time_ns;               /* CLOCK_REALTIME of the report */
	char command[512];              /* /proc/self/cmdline, arguments joined by spaces */
	char hostname[256];
	char version[32];               /* vramguard's version */
	char driver[32];                /* "alive", "deinitialized" or "unknown" at report time */
	int backtrace_depth;
	char json_hint[512];            /* text form: how to get the full JSON (e.g. "set VRAMGUARD_REPORT_FORMAT=json") */

	size_t ndevices;
	char count[16];                 /* VRAMGUARD_COUNT: "device" or "allocations" */
	struct vg_report_device *devices;
	size_t nsites;                  /* sorted by live_bytes, descending, then total_bytes */
	struct vg_report_site *sites;
	size_t nmodules;                /* the objects sites[].frames[].module name, each once */
	struct vg_report_module *modules;
	uint64_t allocs_live;           /* every live allocation */
	size_t nallocs;                 /* the largest live allocations (at most VG_REPORT_MAX_ALLOCS) */
	struct vg_report_alloc *allocs;

	uint64_t streams_created, streams_destroyed;
	size_t nstream_events;
	struct vg_report_stream_event *stream_events;
	size_t nstream_live;
	struct vg_report_stream_live *stream_live;

	struct vg_strpool *strings;     /* the frames' strings, each once (NULL until the first); owned by the report */
};

#define VG_REPORT_MAX_ALLOCS 256        /* largest live allocations listed in a report */
#define VG_REPORT_TEXT_SITES 10         /* sites shown in the text form before "and N more" */
#define VG_REPORT_TEXT_FRAMES 8         /* frames per site in the text form (the JSON has them all) */

/* Render. Both append to out; return 0, or -ENOMEM if the buffer could not grow. The text form is report/text.c;
 * the JSON form (report/json_write.c) follows the schema table, report/schema.h. */
int vg_report_render_text(const struct vg_report *r, struct vg_strbuf *out);
int vg_report_render_json(const struct vg_report *r, struct vg_strbuf *out);

/* UTC time of a CLOCK_REALTIME nanosecond stamp: "2026-11-21T21:50:03.123Z" (iso) or "2026-11-21 21:50:03 UTC". */
void vg_report_time(uint64_t ns, int iso, char *buf, size_t len);

/* "21:50:03": the UTC time of day of a CLOCK_REALTIME nanosecond stamp. */
void vg_report_clock(uint64_t ns, char *buf, size_t len);

/* What a device's timeline says after from_ns (0: all of it): the highest peak of the points after it and the
 * point's time, the denials since (their counts less base_count / base_bytes, the figures at from_ns) and the
 * time of the first point that shows one (0: none). Points merely sum what their interval saw: a time is "by
 * then", within the interval that ends at it. npoints is 0 when the device has no timeline or no point after. */
struct vg_report_timeline_span {
	size_t npoints;
	uint64_t peak_bytes, peak_ns;
	uint64_t denied_count, denied_bytes, first_denial_ns;
	uint64_t used_bytes;            /* at the last point */
};
void vg_report_timeline_span(const struct vg_report_device *d, uint64_t from_ns, uint64_t base_count,
			     uint64_t base_bytes, struct vg_report_timeline_span *out);

/* True for a frame inside the CUDA runtime (libcudart, static cudart's internals, the cuda* API functions): the
 * text form and warnings name the first frame past them. */
bool vg_report_frame_is_runtime(const struct vg_report_frame *f);
/* How many leading frames of a site are in the CUDA runtime (0 if all are: then they are shown). */
size_t vg_report_runtime_prefix(const struct vg_report_site *s);
/* A frame's function for people: "func+0x1c", C++ names demangled without their parameters (when libstdc++ is
 * already in the process), "??" if unknown. */
void vg_report_frame_symbol_text(struct vg_strbuf *b, const struct vg_report_frame *f);

/* Frames as the text forms show them (report/text.c, `vramguard diff`): two aligned columns, the symbol (with its
 * source line under `--lines`: report/srcline.h) then the module and offset, each line indent spaces and the label
 * (labels padded alike; none when every label is NULL). A line without a frame says why its report r has none.
 * At most VG_REPORT_TEXT_FRAMES lines; r is each line's own, as `diff` shows two reports' sites side by side. */
struct vg_report_frame_line {
	const char *label;                      /* "created:", or NULL */
	const struct vg_report_frame *frame;    /* NULL: say why there is none */
	const struct vg_report *r;              /* the report the frame is from */
};
void vg_report_frames_text(struct vg_strbuf *out, const struct vg_report_frame_line *lines, size_t n, size_t indent);
/* A Python frame's line: indent spaces, "train.py:42 in step". */
void vg_report_pyframe_text(struct vg_strbuf *out, const struct vg_report_pyframe *f, size_t indent);

/* Growth in words (report/text_growth.c). A duration for people: "40 s", "3 min 20 s", "2 h 40 min", "3 days 4 h".
 * A site as one line names it: "site 7 (train.py:42 in step)", its innermost Python frame, else its first frame
 * past the CUDA runtime; "site 7" when r does not have it. A device's growth lines for the text form (nothing when
 * nothing grows): "growing: +40.00 MiB/h at site 7 (...); at the current rate the quota is reached in 2 h 40 min". */
void vg_report_duration(uint64_t seconds, char *buf, size_t len);
void vg_report_site_name(struct vg_strbuf *out, const struct vg_report *r, uint32_t id);
void vg_report_growth_text(const struct vg_report *r, const struct vg_report_device *d, struct vg_strbuf *out);

/* Free the arrays and strings of a report built by the library or by the JSON reader (not the struct itself):
 * report/schema.c, which walks the rows. */
void vg_report_free(struct vg_report *r);
/* The NUL-terminated s, cut at size - 1 bytes, kept in r's strings, which it creates on first use: a frame's
 * string. NULL when memory is short. */
const char *vg_report_string(struct vg_report *r, const char *s, size_t size);

#endif
