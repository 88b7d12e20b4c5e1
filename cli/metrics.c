/* `vramguard exporter`'s exposition (cli/metrics.h): one scrape copies every slot of every region in the directory
 * (accounting/region_scan.h: consistent copies, no lock taken, nothing written), then writes one family after the
 * other, as both formats want each family's samples together: the rows of cli/metrics_table.h, in their order, with
 * their names, types, help and labels. A figure the slots do not carry is left out, never written as 0. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/metrics.h"
#include "cli/metrics_table.h"
#include "cli/scan.h"
#include "config/config.h"

#define MX_ID_MAX 80
#define MX_POD_MAX 128

struct mx_proc {
	const struct vg_scan_region *sr;
	struct vg_slot_view v;
	char region[VG_REGION_NAME_MAX + 8];
	char container[MX_ID_MAX], pod[MX_POD_MAX];
	pid_t here;                     /* its PID in the exporter's PID namespace, 0 when not found */
};

struct mx_snap {
	struct vg_scan scan;
	struct mx_proc *p;
	size_t n;
};

/* One value of a family for a process (and its region device d) or a region device; false: absent. */
typedef bool (*mx_get)(const struct mx_proc *p, const struct vg_scan_region *sr, int d, const struct vg_dev_view *dv,
		       uint64_t *val);

/* What the exporter says of itself: its counters, whether it could read the directory, how long the scrape took. */
struct mx_self {
	const struct vg_metrics_state *st;
	bool up;                        /* the directory could be read */
	double t0;                      /* when the scrape began (vg_cli_now) */
};

struct mx_family;
/* Writes the samples of one of the exporter's own families. */
typedef void (*mx_put)(struct vg_strbuf *b, const struct mx_family *f, const struct mx_self *s);

/* A row of cli/metrics_table.h. Its values come from a process or a region (get: PROC*, REGION* label sets), or
 * from the exporter itself (put: REASON, NONE). */
struct mx_family {
	const char *name, *type, *help;
	unsigned labels;                /* bits of enum vg_metric_label */
	bool counter;
	mx_get get;
	mx_put put;
};

static const char *const mx_label_names[VG_METRIC_NLABELS] = {
#define MX_LABEL_NAME(name, on, doc) #name,
	VG_METRIC_LABELS(MX_LABEL_NAME)
#undef MX_LABEL_NAME
};

/* Prometheus refuses a whole scrape for one label value that is not UTF-8 (and so every series of the node, and every
 * alert built on them): a byte that is not part of a well-formed character becomes U+FFFD, as `top --json` writes
 * it (the same vg_utf8_len). Commands, pod names, GPU UUIDs and region names are other users' bytes. escape: the
 * exposition's escapes too (\ " newline); without, the value as Prometheus reads it back (an alert's label). */
static void mx_text(struct vg_strbuf *b, const char *s, bool escape)
{
	size_t n = strlen(s), i = 0, run = 0;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t k = vg_utf8_len(s + i, n - i);
		if (k > 1 || (k == 1 && (!escape || (c != '\\' && c != '"' && c != '\n')))) {
			i += k;
			continue;
		}
		vg_strbuf_add(b, s + run, i - run);
		vg_strbuf_str(b, k == 0 ? "\xef\xbf\xbd" : c == '\\' ? "\\\\" : c == '"' ? "\\\"" : "\\n");
		run = ++i;
	}
	vg_strbuf_add(b, s + run, n - run);
}

void vg_metrics_escape(struct vg_strbuf *b, const char *s)
{
	mx_text(b, s, true);
}

void vg_metrics_label(struct vg_strbuf *b, const char *s)
{
	mx_text(b, s, false);
}

static void mx_label(struct vg_strbuf *b, bool first, const char *name, const char *val)
{
	vg_strbuf_printf(b, "%s%s=\"", first ? "" : ",", name);
	vg_metrics_escape(b, val);
	vg_strbuf_str(b, "\"");
}

/* One sample of family f: its labels, in the order of enum vg_metric_label, valued from v (by that enum), then
 * val. */
static void mx_sample(struct vg_strbuf *b, const struct mx_family *f, const char *const v[VG_METRIC_NLABELS],
		      uint64_t val)
{
	bool first = true;
	vg_strbuf_printf(b, "%s{", f->name);
	for (int l = 0; l < VG_METRIC_NLABELS; l++) {
		if (!(f->labels & (1u << l)))
			continue;
		mx_label(b, first, mx_label_names[l], v[l]);
		first = false;
	}
	size_t n = strlen(f->name);
	unsigned long long x = val;
	if (n > 6 && !strcmp(f->name + n - 6, "_ratio"))        /* per mille (metrics_table.h) */
		vg_strbuf_printf(b, "} %llu.%03llu\n", x / 1000, x % 1000);
	else if (n > 14 && !strcmp(f->name + n - 14, "_seconds_total"))  /* nanoseconds */
		vg_strbuf_printf(b, "} %llu.%09llu\n", x / 1000000000, x % 1000000000);
	else
		vg_strbuf_printf(b, "} %llu\n", x);
}

/* ---- the values of the processes' and regions' families: mx_<id> of each row ---- */

static bool mx_process_compute_limit_ratio(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
					   const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)dv;
	*val = p->v.compute_pm[d];
	return p->v.compute_published && *val != 0;
}

static bool mx_process_gpu_time_seconds_total(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
					      const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)dv;
	*val = p->v.gpu_time_ns[d];
	return p->v.compute_published && (*val != 0 || p->v.compute_pm[d] != 0);
}

static bool mx_process_quota_forecast_seconds(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
					      const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)dv;
	*val = p->v.forecast_s[d];
	return (p->v.forecast_set >> d & 1) != 0;
}

static bool mx_process_used_bytes(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
				  const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)dv;
	*val = p->v.used[d];
	return true;
}

static bool mx_process_peak_bytes(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
				  const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)dv;
	*val = p->v.peak[d];
	return true;
}

/* The quota that applies: the tighter of the process's own and its shared region's budget, as `top` shows it. */
static bool mx_process_quota_bytes(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
				   const struct vg_dev_view *dv, uint64_t *val)
{
	(void)dv;
	uint64_t own = p->v.quota[d], lim = vg_dev_limit(&sr->r, d);
	*val = own < lim ? own : lim;
	return *val != VG_REGION_NONE;
}

static bool mx_process_allocated_bytes(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
				       const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)dv;
	*val = p->v.alloc[d];
	return p->v.count_mode != 0;    /* not published yet: absent */
}

static bool mx_process_driver_bytes(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
				    const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)dv;
	*val = p->v.driver[d];
	return p->v.count_mode != 0;
}

static bool mx_process_denials_total(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
				     const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)d, (void)dv;
	*val = p->v.denied;
	return true;
}

/* The soft limit (NVIDIA_GPU_MEMORY_REQUEST, VRAMGUARD_WARN_AT): absent when none, or not published yet. */
static bool mx_process_soft_limit_bytes(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
					const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)dv;
	*val = p->v.soft[d];
	return p->v.count_mode != 0 && *val != VG_REGION_NONE;
}

/* The process's counters over all its GPUs, published by its sampler with the device figures: absent until then. */
static bool mx_process_allocations_total(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
					 const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)d, (void)dv;
	*val = p->v.allocs;
	return p->v.count_mode != 0;
}

static bool mx_process_denied_bytes_total(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
					  const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)d, (void)dv;
	*val = p->v.denied_bytes;
	return p->v.count_mode != 0;
}

static bool mx_process_live_allocations(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
					const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)d, (void)dv;
	*val = p->v.live_allocs;
	return p->v.count_mode != 0;
}

static bool mx_process_streams_destroyed_pending_total(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
						       const struct vg_dev_view *dv, uint64_t *val)
{
	(void)sr, (void)d, (void)dv;
	*val = p->v.streams_pending;
	return p->v.count_mode != 0;
}

static bool mx_region_budget_bytes(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
				   const struct vg_dev_view *dv, uint64_t *val)
{
	(void)p, (void)sr, (void)d;
	*val = dv->limit;
	return dv->limit != VG_REGION_NONE;
}

static bool mx_region_used_bytes(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
				 const struct vg_dev_view *dv, uint64_t *val)
{
	(void)p, (void)sr, (void)d;
	*val = dv->used;
	return true;
}

static bool mx_region_peak_bytes(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
				 const struct vg_dev_view *dv, uint64_t *val)
{
	(void)p, (void)sr, (void)d;
	*val = dv->peak;
	return true;
}

static bool mx_region_denials_total(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
				    const struct vg_dev_view *dv, uint64_t *val)
{
	(void)p, (void)sr, (void)d;
	*val = dv->denied;
	return true;
}

static bool mx_region_members(const struct mx_proc *p, const struct vg_scan_region *sr, int d,
			      const struct vg_dev_view *dv, uint64_t *val)
{
	(void)p, (void)d, (void)dv;
	*val = (uint64_t)vg_region_members(&sr->r);
	return true;
}

/* ---- the exporter's own families ---- */

static void mx_exporter_segments_skipped_total(struct vg_strbuf *b, const struct mx_family *f, const struct mx_self *s)
{
	/* Each reason's count is the state's skipped_<reason>. */
#define MX_REASON_NAME(r) #r,
#define MX_REASON_COUNT(r) s->st->skipped_##r,
	static const char *const reasons[] = { VG_METRIC_REASONS(MX_REASON_NAME) };
	const uint64_t counts[] = { VG_METRIC_REASONS(MX_REASON_COUNT) };
#undef MX_REASON_NAME
#undef MX_REASON_COUNT
	const char *v[VG_METRIC_NLABELS] = { 0 };
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		v[VG_METRIC_LABEL_reason] = reasons[i];
		mx_sample(b, f, v, counts[i]);
	}
}

static void mx_up(struct vg_strbuf *b, const struct mx_family *f, const struct mx_self *s)
{
	vg_strbuf_printf(b, "%s %d\n", f->name, s->up ? 1 : 0);
}

static void mx_exporter_scrape_duration_seconds(struct vg_strbuf *b, const struct mx_family *f,
						const struct mx_self *s)
{
	vg_strbuf_printf(b, "%s %.6f\n", f->name, vg_cli_now() - s->t0);
}

/* ---- the families, in the rows' order ---- */

/* Where a row's values come from, by its label set: mx_<id> of the row. */
#define MX_FROM_PROC_GPU(id) .get = mx_##id
#define MX_FROM_PROC(id) .get = mx_##id
#define MX_FROM_REGION_GPU(id) .get = mx_##id
#define MX_FROM_REGION(id) .get = mx_##id
#define MX_FROM_REASON(id) .put = mx_##id
#define MX_FROM_NONE(id) .put = mx_##id

static const struct mx_family mx_families[VG_METRIC_COUNT] = {
#define MX_FAMILY(id, ty, ls, hp, dc) \
	{ .name = "vramguard_" #id, .type = VG_METRIC_TYPE_##ty, .help = hp, .labels = VG_METRIC_LABELS_##ls, \
	  .counter = VG_METRIC_IS_COUNTER_##ty, MX_FROM_##ls(id) },
	VG_METRICS(MX_FAMILY)
#undef MX_FAMILY
};

/* ---- container and pod of a process, where /proc says without privileges ---- */

static ssize_t mx_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* The first run of 64 hex digits in a cgroup path: docker-ID.scope, cri-containerd-ID.scope, crio-ID.scope,
 * /docker/ID, libpod-ID.scope. */
static void mx_container_id(const char *cg, char *out, size_t len)
{
	for (const char *p = cg; *p; p++) {
		size_t n = 0;
		while (isxdigit((unsigned char)p[n]) && !isupper((unsigned char)p[n]))
			n++;
		if (n == 64 && (p == cg || !isalnum((unsigned char)p[-1]))) {
			snprintf(out, len, "%.64s", p);
			return;
		}
		if (n)
			p += n - 1;
	}
}

/* VAR's value in a NUL-separated environ block. */
static const char *mx_env(const char *env, size_t n, const char *var)
{
	size_t vl = strlen(var);
	for (size_t i = 0; i < n; i += strlen(env + i) + 1)
		if (!strncmp(env + i, var, vl) && env[i + vl] == '=')
			return env + i + vl + 1;
	return NULL;
}

/* Processes of PID namespaces nested in ours, as (their own innermost PID, the PID here): a job in a container has
 * its own PID in its slot, which names nobody (or somebody else) here. Read once per scrape from every
 * /proc/N/status's "NSpid:" line (world-readable), the first time a slot's PID does not match here. */
struct mx_nspid {
	pid_t inner, here;
};

struct mx_nsmap {
	struct mx_nspid *v;
	size_t n, cap;
	bool read;
};

static void mx_nsmap_read(struct mx_nsmap *m)
{
	m->read = true;
	DIR *d = opendir("/proc");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long here = strtol(e->d_name, &end, 10);
		if (*end || here <= 0 || here > INT32_MAX)
			continue;
		int depth;
		pid_t inner = vg_proc_inner_pid((pid_t)here, &depth);
		if (depth < 2)
			continue;       /* a process of this namespace itself, or gone */
		if (m->n == m->cap) {
			size_t cap = m->cap ? 2 * m->cap : 64;
			struct mx_nspid *v = realloc(m->v, cap * sizeof(*v));
			if (!v)
				break;
			m->v = v;
			m->cap = cap;
		}
		m->v[m->n++] = (struct mx_nspid){ .inner = (pid_t)inner, .here = (pid_t)here };
	}
	closedir(d);
}

/* The PID here of the slot's process: its own PID when that names it here (same start time), else the nested
 * namespace's process with that innermost PID and the same start time (start times count from the host's boot in
 * every PID namespace); 0 when none. */
static pid_t mx_pid_here(struct mx_nsmap *m, const struct vg_slot_view *v)
{
	if (vg_proc_start(v->pid) == v->start)
		return v->pid;
	if (!m->read)
		mx_nsmap_read(m);
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].inner == v->pid && vg_proc_start(m->v[i].here) == v->start)
			return m->v[i].here;
	return 0;
}

static void mx_identity(struct mx_proc *p, struct mx_nsmap *m)
{
	/* Only the process the slot names (same start time): another namespace's PID would name somebody else. */
	if (p->v.life != VG_LIFE_ALIVE || p->v.pid <= 0)
		return;
	pid_t pid = mx_pid_here(m, &p->v);
	if (pid <= 0)
		return;
	p->here = pid;
	char path[64], cg[4096];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	bool kube = false;
	if (mx_read(path, cg, sizeof(cg)) > 0) {
		mx_container_id(cg, p->container, sizeof(p->container));
		kube = strstr(cg, "kubepods") != NULL;
	}
	static char env[65536];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	ssize_t n = mx_read(path, env, sizeof(env));
	if (n <= 0)
		return;         /* another user's process: not readable without privileges */
	const char *pod = mx_env(env, (size_t)n, "POD_NAME");
	if (!pod && kube)
		pod = mx_env(env, (size_t)n, "HOSTNAME");       /* a pod's hostname is its name */
	if (pod) {
		size_t pl = strnlen(pod, sizeof(p->pod) - 1);
		pl = pod[pl] ? vg_utf8_cut(pod, pl) : pl;       /* cut short: at a character boundary */
		memcpy(p->pod, pod, pl);
		p->pod[pl] = '\0';
	}
}

/* ---- the scrape ---- */

static void mx_head(struct vg_strbuf *b, const struct mx_family *f, bool om)
{
	size_t n = strlen(f->name);
	if (f->counter && om)
		n -= strlen("_total");          /* OpenMetrics: the family is named without the suffix */
	vg_strbuf_printf(b, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)n, f->name, f->help, (int)n, f->name, f->type);
}

/* A process family's samples: each process, on each GPU it uses for a per-GPU family. */
static void mx_proc_family(struct vg_strbuf *b, const struct mx_snap *sn, const struct mx_family *f)
{
	bool per_gpu = f->labels & VG_METRIC_HAS(gpu);
	for (size_t i = 0; i < sn->n; i++) {
		const struct mx_proc *p = &sn->p[i];
		/* The PID as the exporter (and `limit set --pid`, and the autoscale receiver beside it) sees it: a
		 * job in a container of its own registers the PID it sees there, which names nobody, or somebody else,
		 * here. */
		char pid[16], gpu[16];
		const char *v[VG_METRIC_NLABELS] = {
			[VG_METRIC_LABEL_pid] = pid, [VG_METRIC_LABEL_command] = p->v.cmd,
			[VG_METRIC_LABEL_region] = p->region, [VG_METRIC_LABEL_gpu] = gpu,
			[VG_METRIC_LABEL_container] = p->container, [VG_METRIC_LABEL_pod] = p->pod,
		};
		snprintf(pid, sizeof(pid), "%d", (int)(p->here > 0 ? p->here : p->v.pid));
		for (int d = 0; d < VG_REGION_DEVS; d++) {
			struct vg_dev_view dv;
			uint64_t val;
			if (!per_gpu) {
				if (d > 0 || !f->get(p, p->sr, 0, NULL, &val))
					break;
			} else if (!vg_slot_uses(&p->sr->r, &p->v, d) || !vg_dev_read(&p->sr->r, d, &dv) ||
				   !f->get(p, p->sr, d, &dv, &val)) {
				continue;
			} else {
				snprintf(gpu, sizeof(gpu), "%d", (int)dv.ordinal);
				v[VG_METRIC_LABEL_gpu_uuid] = dv.uuid;
			}
			mx_sample(b, f, v, val);
		}
	}
}

/* A region family's samples: each shared region (not the control segments), on each of its GPUs for a per-GPU
 * family. */
static void mx_region_family(struct vg_strbuf *b, const struct mx_snap *sn, const struct mx_family *f)
{
	bool per_gpu = f->labels & VG_METRIC_HAS(gpu);
	for (size_t i = 0; i < sn->scan.n; i++) {
		const struct vg_scan_region *sr = &sn->scan.v[i];
		char label[VG_REGION_NAME_MAX + 8], gpu[16];
		const char *v[VG_METRIC_NLABELS] = { [VG_METRIC_LABEL_region] = label, [VG_METRIC_LABEL_gpu] = gpu };
		if (sr->control)
			continue;
		vg_cli_region_label(&sr->r, sr->label, label, sizeof(label));
		for (int d = 0; d < VG_REGION_DEVS; d++) {
			struct vg_dev_view dv;
			uint64_t val;
			if (!per_gpu) {
				if (d > 0 || !f->get(NULL, sr, 0, NULL, &val))
					break;
			} else if (!vg_dev_read(&sr->r, d, &dv) || !f->get(NULL, sr, d, &dv, &val)) {
				continue;
			} else {
				snprintf(gpu, sizeof(gpu), "%d", (int)dv.ordinal);
				v[VG_METRIC_LABEL_gpu_uuid] = dv.uuid;
			}
			mx_sample(b, f, v, val);
		}
	}
}

static void mx_family(struct vg_strbuf *b, const struct mx_snap *sn, const struct mx_self *s, const struct mx_family *f,
		      bool om)
{
	mx_head(b, f, om);
	if (f->put)
		f->put(b, f, s);
	else if (f->labels & VG_METRIC_HAS(pid))
		mx_proc_family(b, sn, f);
	else
		mx_region_family(b, sn, f);
}

/* Say a skipped file once: the scan's reason, when it differs from the last one said. */
static void mx_note(struct vg_metrics_state *st, const struct vg_scan *s)
{
	char note[sizeof(st->last_note)] = "";
	if (s->bad)
		snprintf(note, sizeof(note), "%s", s->bad_why);
	else if (s->changed)
		snprintf(note, sizeof(note), "%s", s->changed_why);
	else if (s->denied)
		snprintf(note, sizeof(note), "%s", s->denied_why);
	if (note[0] && strcmp(note, st->last_note) != 0)
		fprintf(stderr, "vramguard: warning: exporter: skipped: %s\n", note);
	memcpy(st->last_note, note, sizeof(note));
}

/* Copy every live slot of the scan's regions into sn->p, with each process's identity; 0, or -1 with err (out of
 * memory). */
static int mx_take(struct mx_snap *sn, char *err, size_t errlen)
{
	struct mx_nsmap nsmap = { 0 };
	size_t cap = 0;
	for (size_t i = 0; i < sn->scan.n; i++)
		cap += sn->scan.v[i].r.nslots;
	sn->p = cap ? calloc(cap, sizeof(*sn->p)) : NULL;
	if (cap && !sn->p) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < sn->scan.n; i++) {
		const struct vg_scan_region *sr = &sn->scan.v[i];
		for (uint32_t k = 0; k < sr->r.nslots; k++) {
			struct mx_proc *p = &sn->p[sn->n];
			if (!vg_slot_read(&sr->r, k, &p->v) || !p->v.alive)
				continue;
			p->sr = sr;
			if (!sr->control)
				vg_cli_region_label(&sr->r, sr->label, p->region, sizeof(p->region));
			mx_identity(p, &nsmap);
			sn->n++;
		}
	}
	free(nsmap.v);
	return 0;
}

int vg_metrics_build(struct vg_metrics_state *st, const char *dir, const char *shared_name, bool om,
		     struct vg_strbuf *b, char *err, size_t errlen)
{
	struct mx_self self = { st, true, vg_cli_now() };
	struct mx_snap sn = { 0 };
	char *names[1] = { (char *)shared_name };
	/* No VG_SCAN_CLEAN: cleaning takes a region's lock, which the jobs wait for. VG_SCAN_READ: copies only, so
	 * that a file truncated by its owner is one file skipped (reason "changed"), never the exporter's death. */
	if (vg_scan_open(&sn.scan, dir, names, shared_name && shared_name[0] ? 1 : 0, VG_SCAN_DIR | VG_SCAN_READ, err,
			 errlen) != 0)
		return -1;
	if (sn.scan.no_dir) {
		snprintf(err, errlen, "%s", sn.scan.dir_why);
		self.up = false;
	}
	if (mx_take(&sn, err, errlen) != 0) {
		vg_scan_close(&sn.scan);
		return -1;
	}
	st->skipped_permission += (uint64_t)sn.scan.denied;
	st->skipped_invalid += (uint64_t)sn.scan.bad;
	st->skipped_changed += (uint64_t)sn.scan.changed;
	mx_note(st, &sn.scan);

	for (size_t f = 0; f < VG_METRIC_COUNT; f++)
		mx_family(b, &sn, &self, &mx_families[f], om);
	if (om)
		vg_strbuf_str(b, "# EOF\n");
	free(sn.p);
	vg_scan_close(&sn.scan);
	return self.up ? 0 : -1;
}
