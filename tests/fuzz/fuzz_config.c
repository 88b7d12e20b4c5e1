/* Fuzz target for config/: vg_parse_size, vg_parse_limits and vg_config_load with a fake getenv fed from the input.
 * The first byte picks the entry point (byte % 3):
 *   0  vg_parse_size: the next byte picks the default unit (% 4: 1 B, 1 MiB, 0, 1 TiB), the rest is the value;
 *   1  vg_parse_limits: the next byte picks the variable (% 3: NVIDIA_GPU_MEMORY_LIMITS in MiB,
 *      CUDA_DEVICE_MEMORY_LIMIT in bytes, an unknown name in MiB), the rest is the value;
 *   2  vg_config_load: the rest is records separated by NUL bytes, each a variable selector byte and the value; a
 *      later record for the same variable wins. A selector below 0x80 picks one of the first 13 of vg_fuzz_vars
 *      (% 13, 'A' = 0); from 0x80 on, one of those added later (0x80 = NVIDIA_GPU_MEMORY_LIMIT, ...), so the
 *      seeds written before keep their meaning (0x80 + 5, 6, 7: VRAMGUARD_COMPUTE_LIMIT, CUDA_DEVICE_SM_LIMIT,
 *      CUDA_DEVICE_SM_LIMIT_1).
 * Properties: errors are one line, name the variable and quote the token; accepted values are in range; a parsed
 * list printed back canonically parses to the same list; the loader agrees with the parsers and fails closed. */
#include "config/config.h"
#include "report/path.h"
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <signal.h>
#include <strings.h>

#define VG_FUZZ_NAME "config"
#define MiB ((uint64_t)1 << 20)

static void check_line(const char *err, size_t cap)
{
	size_t n = strnlen(err, cap), i;

	VG_FUZZ_CHECK(n < cap);
	for (i = 0; i < n; i++)
		VG_FUZZ_CHECK((unsigned char)err[i] >= 0x20 && err[i] != 0x7f);
}

static void check_limit(const struct vg_limit *l, const char *var)
{
	switch (l->kind) {
	case VG_LIMIT_BYTES:
		VG_FUZZ_CHECK(l->bytes > 0);
		break;
	case VG_LIMIT_PERCENT:
		VG_FUZZ_CHECK(l->ppm > 0 && l->ppm <= 1000000);
		break;
	case VG_LIMIT_UNLIMITED:
		break;
	default:
		VG_FUZZ_CHECK(!"a parsed limit has no kind");
	}
	VG_FUZZ_CHECK(l->source != NULL && strcmp(l->source, var) == 0);
}

/* A list parsed without error: in range, keys unique. */
static void check_limits(const struct vg_limits *ls, const char *var)
{
	int i, j;

	VG_FUZZ_CHECK(ls->n >= 0 && ls->n <= VG_MAX_LIMIT_ENTRIES);
	VG_FUZZ_CHECK(ls->n > 0 || ls->dflt.kind != VG_LIMIT_UNSET);
	if (ls->dflt.kind != VG_LIMIT_UNSET)
		check_limit(&ls->dflt, var);
	for (i = 0; i < ls->n; i++) {
		const struct vg_limit_entry *e = &ls->e[i];
		check_limit(&e->limit, var);
		if (e->ordinal >= 0) {
			VG_FUZZ_CHECK(e->ordinal < VG_MAX_DEVICES && e->uuid[0] == '\0');
		} else {
			size_t n = strnlen(e->uuid, sizeof(e->uuid));
			VG_FUZZ_CHECK(e->ordinal == -1 && n >= 5 && n < sizeof(e->uuid));
			VG_FUZZ_CHECK(strncasecmp(e->uuid, "GPU-", 4) == 0 || strncasecmp(e->uuid, "MIG-", 4) == 0);
		}
		for (j = 0; j < i; j++) {
			if (e->ordinal >= 0)
				VG_FUZZ_CHECK(ls->e[j].ordinal != e->ordinal);
			else
				VG_FUZZ_CHECK(ls->e[j].ordinal >= 0 || strcasecmp(ls->e[j].uuid, e->uuid) != 0);
		}
	}
}

static int limit_eq(const struct vg_limit *a, const struct vg_limit *b)
{
	if (a->kind != b->kind)
		return 0;
	if (a->kind == VG_LIMIT_BYTES)
		return a->bytes == b->bytes;
	if (a->kind == VG_LIMIT_PERCENT)
		return a->ppm == b->ppm;
	return 1;
}

static int limits_eq(const struct vg_limits *a, const struct vg_limits *b)
{
	int i;

	if (a->n != b->n || !limit_eq(&a->dflt, &b->dflt))
		return 0;
	for (i = 0; i < a->n; i++)
		if (a->e[i].ordinal != b->e[i].ordinal || strcmp(a->e[i].uuid, b->e[i].uuid) != 0 ||
		    !limit_eq(&a->e[i].limit, &b->e[i].limit))
			return 0;
	return 1;
}

static size_t put_limit(char *p, const struct vg_limit *l)
{
	if (l->kind == VG_LIMIT_BYTES)
		return (size_t)sprintf(p, "%lluB", (unsigned long long)l->bytes);
	if (l->kind == VG_LIMIT_PERCENT)
		return (size_t)sprintf(p, "%u.%04u%%", l->ppm / 10000, l->ppm % 10000);
	return (size_t)sprintf(p, "unlimited");
}

/* Print a list canonically ("123B,0:50.0000%,GPU-...:unlimited") and parse it again: the same list. */
static void check_reparse(const struct vg_limits *ls, const char *var, uint64_t unit)
{
	char *text = malloc((size_t)(ls->n + 1) * (VG_UUID_MAX + 40)), err[VG_ERR_MAX];
	struct vg_limits again;
	size_t len = 0;
	int i, rc;

	VG_FUZZ_CHECK(text != NULL);
	text[0] = '\0';
	if (ls->dflt.kind != VG_LIMIT_UNSET)
		len += put_limit(text + len, &ls->dflt);
	for (i = 0; i < ls->n; i++) {
		if (len)
			text[len++] = ',';
		if (ls->e[i].ordinal >= 0)
			len += (size_t)sprintf(text + len, "%d:", ls->e[i].ordinal);
		else
			len += (size_t)sprintf(text + len, "%s:", ls->e[i].uuid);
		len += put_limit(text + len, &ls->e[i].limit);
	}
	rc = vg_parse_limits(var, text, unit, &again, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "canonical form '%s' rejected: %s\n", text, err);
	VG_FUZZ_CHECK(rc == 0);
	VG_FUZZ_CHECK(limits_eq(ls, &again));
	free(text);
}

static void fuzz_size(const uint8_t *data, size_t size)
{
	static const uint64_t units[] = { 1, MiB, 0, (uint64_t)1 << 40 };
	uint64_t unit = size ? units[data[0] % 4] : 1, v = 0xdeadbeef;
	char *s = vg_fuzz_strndup(data + (size ? 1 : 0), size ? size - 1 : 0), err[VG_ERR_MAX];
	struct vg_limits ls;
	int rc;

	err[0] = 'x';
	rc = vg_parse_size(s, unit, &v, err, sizeof(err));
	VG_FUZZ_CHECK(rc == 0 || rc == -EINVAL);
	if (rc == 0) {
		VG_FUZZ_CHECK(v > 0); /* a default unit of 0 only refuses bare numbers */
		/* A size alone is also a valid limit list of one default, the same bytes. */
		rc = vg_parse_limits("NVIDIA_GPU_MEMORY_LIMITS", s, unit, &ls, err, sizeof(err));
		VG_FUZZ_CHECK(rc == 0 && ls.n == 0 && ls.dflt.kind == VG_LIMIT_BYTES && ls.dflt.bytes == v);
	} else {
		VG_FUZZ_CHECK(v == 0xdeadbeef);
		VG_FUZZ_CHECK(err[0] != '\0');
		check_line(err, sizeof(err));
	}
	/* A tiny error buffer: cut, never overrun. */
	{
		char *small = malloc(3);
		VG_FUZZ_CHECK(small != NULL);
		if (vg_parse_size(s, unit, &v, small, 3) != 0)
			VG_FUZZ_CHECK(strnlen(small, 3) < 3);
		free(small);
	}
	free(s);
}

static void fuzz_limits(const uint8_t *data, size_t size)
{
	static const char *const vars[] = { "NVIDIA_GPU_MEMORY_LIMITS", "CUDA_DEVICE_MEMORY_LIMIT", "FUZZ_LIMITS" };
	static const uint64_t units[] = { MiB, 1, MiB };
	unsigned which = size ? data[0] % 3 : 0;
	const char *var = vars[which];
	char *s = vg_fuzz_strndup(data + (size ? 1 : 0), size ? size - 1 : 0), err[VG_ERR_MAX], head[128];
	struct vg_limits *ls = malloc(sizeof(*ls));
	int rc;

	VG_FUZZ_CHECK(ls != NULL);
	rc = vg_parse_limits(var, s, units[which], ls, err, sizeof(err));
	VG_FUZZ_CHECK(rc == 0 || rc == -EINVAL);
	if (rc == 0) {
		if (ls->n == 0 && ls->dflt.kind == VG_LIMIT_UNSET) {
			/* only an empty or blank value means "unset" */
			size_t i;
			for (i = 0; s[i]; i++)
				VG_FUZZ_CHECK(strchr(" \t\n\r\v\f", s[i]) != NULL);
		} else {
			check_limits(ls, var);
			check_reparse(ls, var, units[which]);
		}
	} else {
		snprintf(head, sizeof(head), "vramguard: error: invalid %s '", var);
		VG_FUZZ_CHECK(strncmp(err, head, strlen(head)) == 0);
		VG_FUZZ_CHECK(strstr(err, " (expected e.g. ") != NULL);
		check_line(err, sizeof(err));
		VG_FUZZ_CHECK(ls->n == 0 && ls->dflt.kind == VG_LIMIT_UNSET); /* nothing half-parsed */
	}
	free(ls);
	free(s);
}

/* ---- vg_config_load with a fake environment ---- */

static const char *const vg_fuzz_vars[] = {
	"NVIDIA_GPU_MEMORY_LIMITS", "CUDA_DEVICE_MEMORY_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT_0",
	"CUDA_DEVICE_MEMORY_LIMIT_1", "CUDA_DEVICE_MEMORY_LIMIT_7", "CUDA_DEVICE_MEMORY_LIMIT_63",
	"VRAMGUARD_LOG", "VRAMGUARD_MANAGED", "VRAMGUARD_BACKTRACE", "VRAMGUARD_SIGNAL", "VRAMGUARD_REPORT",
	"VRAMGUARD_REPORT_FORMAT", "VRAMGUARD_STREAM_CHECK",
	/* selected by 0x80 + i */
	"NVIDIA_GPU_MEMORY_LIMIT", "NVIDIA_GPU_MEMORY_REQUESTS", "NVIDIA_GPU_MEMORY_REQUEST", "VRAMGUARD_COUNT",
	"VRAMGUARD_DEVICE_POLL", "VRAMGUARD_COMPUTE_LIMIT", "CUDA_DEVICE_SM_LIMIT", "CUDA_DEVICE_SM_LIMIT_1",
};
#define NVARS (sizeof(vg_fuzz_vars) / sizeof(vg_fuzz_vars[0]))
#define NVARS_FIRST 13
_Static_assert(NVARS_FIRST == 13, "'A' + i selects variable i because 'A' % 13 == 0");

static char *env_value[NVARS];
static int env_unknown_name; /* the loader asked for a name outside the options table */

static const char *fake_getenv(const char *name)
{
	size_t i;

	for (i = 0; i < NVARS; i++)
		if (strcmp(name, vg_fuzz_vars[i]) == 0)
			return env_value[i];
	if (strncmp(name, "CUDA_DEVICE_MEMORY_LIMIT_", 25) != 0 && strncmp(name, "VRAMGUARD_", 10) != 0 &&
	    strncmp(name, "CUDA_DEVICE_SM_LIMIT_", 21) != 0 && strcmp(name, "CUDA_DEVICE_SM_LIMIT") != 0 &&
	    strcmp(name, "NVIDIA_GPU_MEMORY_LIMITS") != 0 && strcmp(name, "NVIDIA_GPU_MEMORY_LIMIT") != 0 &&
	    strcmp(name, "NVIDIA_GPU_MEMORY_REQUESTS") != 0 && strcmp(name, "NVIDIA_GPU_MEMORY_REQUEST") != 0)
		env_unknown_name = 1;
	return NULL;
}

static void check_config(const struct vg_config *cfg)
{
	static const uint64_t totals[] = { 0, 1, 16ull << 30, UINT64_MAX };
	size_t t;
	int ord, i;

	VG_FUZZ_CHECK(cfg->log_level >= VG_LOG_OFF && cfg->log_level <= VG_LOG_DEBUG);
	VG_FUZZ_CHECK(cfg->managed == VG_MANAGED_COUNT || cfg->managed == VG_MANAGED_IGNORE);
	VG_FUZZ_CHECK(cfg->backtrace_depth >= 0 && cfg->backtrace_depth <= VG_BACKTRACE_MAX);
	VG_FUZZ_CHECK(strnlen(cfg->signal_name, sizeof(cfg->signal_name)) < sizeof(cfg->signal_name));
	VG_FUZZ_CHECK((cfg->signal == 0) == (strcmp(cfg->signal_name, "off") == 0));
	VG_FUZZ_CHECK(cfg->signal == 0 || strncmp(cfg->signal_name, "SIG", 3) == 0);
	VG_FUZZ_CHECK(cfg->signal >= 0 && cfg->signal <= SIGRTMAX);
	VG_FUZZ_CHECK(cfg->report_format == VG_FORMAT_TEXT || cfg->report_format == VG_FORMAT_JSON);
	VG_FUZZ_CHECK(cfg->stream_check >= VG_STREAM_WARN && cfg->stream_check <= VG_STREAM_OFF);
	VG_FUZZ_CHECK(strnlen(cfg->report_path, sizeof(cfg->report_path)) < sizeof(cfg->report_path));
	if (cfg->report_dest == VG_REPORT_PATH) {
		char *out = malloc(VG_REPORT_PATH_MAX * 8);
		VG_FUZZ_CHECK(out != NULL);
		VG_FUZZ_CHECK(cfg->report_path[0] != '\0');
		/* what the loader accepted, the reporter can expand */
		VG_FUZZ_CHECK(vg_report_path_expand(cfg->report_path, -12, 3, "exit", "host/x", out,
						    VG_REPORT_PATH_MAX * 8) == 0);
		free(out);
	} else {
		VG_FUZZ_CHECK(cfg->report_dest == VG_REPORT_STDERR || cfg->report_dest == VG_REPORT_OFF);
		VG_FUZZ_CHECK(cfg->report_path[0] == '\0');
	}
	if (cfg->limits.n || cfg->limits.dflt.kind != VG_LIMIT_UNSET)
		check_limits(&cfg->limits, "NVIDIA_GPU_MEMORY_LIMITS");
	if (cfg->requests.n || cfg->requests.dflt.kind != VG_LIMIT_UNSET)
		check_limits(&cfg->requests, "NVIDIA_GPU_MEMORY_REQUESTS");
	if (cfg->limit_one.kind != VG_LIMIT_UNSET)
		check_limit(&cfg->limit_one, "NVIDIA_GPU_MEMORY_LIMIT");
	if (cfg->request_one.kind != VG_LIMIT_UNSET)
		check_limit(&cfg->request_one, "NVIDIA_GPU_MEMORY_REQUEST");
	VG_FUZZ_CHECK(cfg->count == VG_COUNT_DEVICE || cfg->count == VG_COUNT_ALLOCATIONS);
	VG_FUZZ_CHECK(cfg->device_poll_ms >= VG_DEVICE_POLL_MIN && cfg->device_poll_ms <= VG_DEVICE_POLL_MAX);
	check_line(cfg->note, sizeof(cfg->note));
	for (i = 0; i < cfg->hami.n; i++) /* CUDA_DEVICE_MEMORY_LIMIT's keys and the _<i> variables together */
		VG_FUZZ_CHECK(cfg->hami.e[i].limit.kind != VG_LIMIT_UNSET);
	if (cfg->compute.n || cfg->compute.dflt.kind != VG_LIMIT_UNSET)
		check_limits(&cfg->compute, "VRAMGUARD_COMPUTE_LIMIT");
	for (i = 0; i < cfg->compute.n; i++) /* whole percentages */
		VG_FUZZ_CHECK(cfg->compute.e[i].limit.ppm % 10000 == 0);
	VG_FUZZ_CHECK(cfg->compute.dflt.ppm % 10000 == 0 && cfg->sm.dflt.ppm % 10000 == 0);
	for (i = 0; i < cfg->sm.n; i++) /* CUDA_DEVICE_SM_LIMIT_<i>: one entry per ordinal, never HAMi-core's 0 */
		VG_FUZZ_CHECK(cfg->sm.e[i].ordinal == 1 && cfg->sm.e[i].limit.kind != VG_LIMIT_UNSET &&
			      strcmp(cfg->sm.e[i].limit.source, "CUDA_DEVICE_SM_LIMIT_1") == 0);
	for (ord = -1; ord <= VG_MAX_DEVICES; ord++) { /* a share is 0 (none) or 1..100, and says where it came from */
		const char *src = (const char *)1;
		unsigned pct = vg_config_compute_for(cfg, ord, cfg->compute.n ? cfg->compute.e[0].uuid : NULL, &src);
		VG_FUZZ_CHECK(pct <= 100 && (pct == 0 || src != NULL));
		VG_FUZZ_CHECK(src == NULL || strcmp(src, "VRAMGUARD_COMPUTE_LIMIT") == 0 ||
			      strncmp(src, "CUDA_DEVICE_SM_LIMIT", 20) == 0);
	}
	/* Resolving never fails; a percentage never exceeds the device; a limit always says where it came from. */
	for (ord = -1; ord <= VG_MAX_DEVICES; ord += (ord < 8 ? 1 : 55)) {
		for (t = 0; t < sizeof(totals) / sizeof(totals[0]); t++) {
			const char *src = (const char *)1;
			const char *uuid = cfg->limits.n ? cfg->limits.e[0].uuid : NULL;
			uint64_t l = vg_config_limit_for(cfg, ord, uuid, totals[t], &src);
			if (l != UINT64_MAX)
				VG_FUZZ_CHECK(src != NULL);
			src = (const char *)1;
			l = vg_config_request_for(cfg, ord, uuid, totals[t], &src);
			if (l != UINT64_MAX)
				VG_FUZZ_CHECK(src != NULL && strncmp(src, "NVIDIA_GPU_MEMORY_REQUEST", 25) == 0);
			VG_FUZZ_CHECK(src == NULL || strncmp(src, "NVIDIA_GPU_MEMORY_REQUEST", 25) == 0);
		}
	}
}

static void fuzz_env(const uint8_t *data, size_t size)
{
	struct vg_config *cfg = malloc(sizeof(*cfg));
	size_t i = 0, k;
	int rc;

	VG_FUZZ_CHECK(cfg != NULL);
	memset(env_value, 0, sizeof(env_value));
	env_unknown_name = 0;
	while (i < size) {
		const uint8_t *end = memchr(data + i, 0, size - i);
		size_t n = end ? (size_t)(end - (data + i)) : size - i;
		if (n > 0) {
			unsigned v = data[i] < 0x80 ? data[i] % NVARS_FIRST
						    : NVARS_FIRST + (data[i] - 0x80u) % (NVARS - NVARS_FIRST);
			free(env_value[v]);
			env_value[v] = vg_fuzz_strndup(data + i + 1, n - 1);
		}
		i += n + 1;
	}
	/* Secure mode reads less and never fails more: the same environment loads there if it loads at all, with the
	 * safe values in place. Where both fail, the messages may differ: a variable secure mode ignores may be the
	 * first invalid one without it (regression: an invalid VRAMGUARD_REPORT before an invalid format). */
	rc = vg_config_load(cfg, fake_getenv, 1);
	VG_FUZZ_CHECK(rc == 0 || rc == -EINVAL);
	VG_FUZZ_CHECK(cfg->secure && cfg->report_dest == VG_REPORT_STDERR && cfg->control == VG_CONTROL_OFF);
	VG_FUZZ_CHECK(cfg->shared_path[0] == '\0' && cfg->shm_dir[0] == '/');
	int secure_rc = rc;
	rc = vg_config_load(cfg, fake_getenv, 0);
	VG_FUZZ_CHECK(rc != 0 || secure_rc == 0);
	VG_FUZZ_CHECK(!env_unknown_name);
	VG_FUZZ_CHECK(rc == 0 || rc == -EINVAL);
	VG_FUZZ_CHECK((rc == 0) == (cfg->valid == 1));
	check_line(cfg->error, sizeof(cfg->error));
	if (rc == 0) {
		struct vg_limits *ls = malloc(sizeof(*ls));
		char err[VG_ERR_MAX];
		VG_FUZZ_CHECK(ls != NULL);
		check_config(cfg);
		/* The loader and the public parser agree on the main variable. */
		VG_FUZZ_CHECK(vg_parse_limits("NVIDIA_GPU_MEMORY_LIMITS", env_value[0], MiB, ls, err, sizeof(err)) == 0);
		VG_FUZZ_CHECK(limits_eq(ls, &cfg->limits));
		VG_FUZZ_CHECK(vg_parse_limits("CUDA_DEVICE_MEMORY_LIMIT", env_value[1], 1, ls, err, sizeof(err)) == 0);
		VG_FUZZ_CHECK(vg_parse_compute("VRAMGUARD_COMPUTE_LIMIT", env_value[NVARS - 3], ls, err, sizeof(err)) == 0);
		VG_FUZZ_CHECK(limits_eq(ls, &cfg->compute));
		free(ls);
	} else {
		/* Fails closed: one message naming a variable, every setting at its default, no limit. */
		VG_FUZZ_CHECK(strncmp(cfg->error, "vramguard: error: invalid ", 26) == 0);
		VG_FUZZ_CHECK(cfg->limits.n == 0 && cfg->limits.dflt.kind == VG_LIMIT_UNSET);
		VG_FUZZ_CHECK(cfg->hami.n == 0 && cfg->hami.dflt.kind == VG_LIMIT_UNSET);
		VG_FUZZ_CHECK(cfg->requests.n == 0 && cfg->requests.dflt.kind == VG_LIMIT_UNSET);
		VG_FUZZ_CHECK(cfg->limit_one.kind == VG_LIMIT_UNSET && cfg->request_one.kind == VG_LIMIT_UNSET);
		VG_FUZZ_CHECK(cfg->compute.n == 0 && cfg->compute.dflt.kind == VG_LIMIT_UNSET);
		VG_FUZZ_CHECK(cfg->sm.n == 0 && cfg->sm.dflt.kind == VG_LIMIT_UNSET);
		VG_FUZZ_CHECK(cfg->note[0] == '\0' && cfg->count == VG_COUNT_DEVICE);
		VG_FUZZ_CHECK(cfg->backtrace_depth == VG_BACKTRACE_DEFAULT && cfg->signal == SIGUSR1);
		VG_FUZZ_CHECK(cfg->report_dest == VG_REPORT_STDERR && cfg->report_path[0] == '\0');
		for (k = 0; k < NVARS; k++)
			if (strncmp(cfg->error + 26, vg_fuzz_vars[k], strlen(vg_fuzz_vars[k])) == 0)
				break;
		VG_FUZZ_CHECK(k < NVARS);
	}
	for (k = 0; k < NVARS; k++)
		free(env_value[k]);
	free(cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_size(data + 1, size - 1);
		break;
	case 1:
		fuzz_limits(data + 1, size - 1);
		break;
	default:
		fuzz_env(data + 1, size - 1);
		break;
	}
	return 0;
}

#ifdef VG_FUZZ_REPLAY
#include "tests/fuzz/replay.h"
#endif
