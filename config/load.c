/* Reading the environment: the loaders of the options table's rows that need code of their own (row.c reads the
 * enum and integer rows from their columns; load_files.c has those that name files), the defaults, vg_config_load
 * and the line a secure-mode process prints. */
#include "config/options.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* Loaders: read their variable(s), fill cfg, or fill cfg->error and return -EINVAL. */
static int vg_load_limits(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_parse_limits_ex(opt->name, get(opt->name), VG_MIB, 1, VG_LIMITS_EXAMPLES, &cfg->limits, cfg->error,
				  sizeof(cfg->error));
}

/* A single-value NVIDIA variable: the list parser without keys, its one value kept. */
static int vg_load_one(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get, const char *examples,
		       struct vg_limit *out)
{
	struct vg_limits one;

	if (vg_parse_limits_ex(opt->name, get(opt->name), VG_MIB, 0, examples, &one, cfg->error, sizeof(cfg->error)))
		return -EINVAL;
	*out = one.dflt;        /* VG_LIMIT_UNSET when empty */
	return 0;
}

static int vg_load_limit_one(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_one(cfg, opt, get, VG_LIMIT_ONE_EXAMPLES, &cfg->limit_one);
}

static int vg_load_requests(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_parse_limits_ex(opt->name, get(opt->name), VG_MIB, 1, VG_LIMITS_EXAMPLES, &cfg->requests,
				  cfg->error, sizeof(cfg->error));
}

static int vg_load_request_one(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_one(cfg, opt, get, VG_REQUEST_ONE_EXAMPLES, &cfg->request_one);
}

static int vg_load_warn_at(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_parse_limits_ex(opt->name, get(opt->name), VG_MIB, 1, VG_WARN_AT_EXAMPLES, &cfg->warn_at,
				  cfg->error, sizeof(cfg->error));
}

static int vg_load_hami(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_parse_limits_ex(opt->name, get(opt->name), 1, 1, VG_HAMI_EXAMPLES, &cfg->hami, cfg->error,
				  sizeof(cfg->error));
}

static int vg_load_hami_indexed(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	int i, j;

	(void)opt;
	for (i = 0; i < VG_MAX_DEVICES; i++) {
		const char *var = vg_hami_names[i];
		struct vg_limits one;
		const char *v = get(var);

		if (!v)
			continue;
		if (vg_parse_limits_ex(var, v, 1, 0, VG_HAMI_INDEXED_EXAMPLES, &one, cfg->error, sizeof(cfg->error)))
			return -EINVAL;
		if (one.dflt.kind == VG_LIMIT_UNSET)
			continue; /* empty: unset */
		for (j = 0; j < cfg->hami.n; j++) {
			if (cfg->hami.e[j].ordinal == i) {
				struct vg_buf b;
				vg_buf_init(&b, cfg->error, sizeof(cfg->error));
				vg_buf_str(&b, "vramguard: error: invalid ");
				vg_buf_str(&b, var);
				vg_buf_char(&b, ' ');
				vg_buf_quote(&b, v, strlen(v));
				vg_buf_str(&b, ": device ");
				vg_buf_u64(&b, (uint64_t)i);
				vg_buf_str(&b, " is also set in CUDA_DEVICE_MEMORY_LIMIT (expected e.g. "
					       VG_HAMI_INDEXED_EXAMPLES ")");
				return -EINVAL;
			}
		}
		if (cfg->hami.n >= VG_MAX_LIMIT_ENTRIES)
			return -EINVAL; /* unreachable: at most 64 distinct ordinals */
		cfg->hami.e[cfg->hami.n].ordinal = i;
		cfg->hami.e[cfg->hami.n].uuid[0] = '\0';
		cfg->hami.e[cfg->hami.n].limit = one.dflt;
		cfg->hami.n++;
	}
	return 0;
}

/* VRAMGUARD_REPORT_ON: a comma-separated list of VG_REPORT_ON_WORDS, each at most once; any unknown word fails. */
static int vg_load_report_on(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n;
	unsigned bits = 0;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	for (const char *p = t, *end = t + n;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p)), *w = p;
		size_t wn = comma ? (size_t)(comma - p) : (size_t)(end - p);
		vg_trim(&w, &wn);
		int idx = wn ? vg_enum_index(VG_REPORT_ON_WORDS, w, wn) : -1;
		if (idx < 0 || (bits & (1u << idx))) {
			vg_err_head(&b, cfg, opt->name, v);
			/* The word is quoted unless it is the whole value (quoted already): one short line either way. */
			bool whole = wn == n;
			vg_buf_str(&b, wn == 0 ? "empty item" : idx < 0 ? whole ? "unknown word" : "unknown word "
									: "repeated word ");
			if (wn && !whole)
				vg_buf_quote(&b, w, wn);
			vg_buf_str(&b, " (expected a list of " VG_REPORT_ON_WORDS ", e.g. exit,signal,denial)");
			return -EINVAL;
		}
		bits |= 1u << idx;
		if (!comma)
			break;
		p = comma + 1;
	}
	cfg->report_on = bits;
	return 0;
}

/* VRAMGUARD_GROWTH_WINDOW: whole seconds, or a whole number of s, m, h or d; 1 s to 7 days. */
static int vg_load_growth_window(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n;
	unsigned long value, mult = 1;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	if (n > 1 && (t[n - 1] == 's' || t[n - 1] == 'm' || t[n - 1] == 'h' || t[n - 1] == 'd')) {
		mult = t[n - 1] == 'd' ? 86400 : t[n - 1] == 'h' ? 3600 : t[n - 1] == 'm' ? 60 : 1;
		n--;
	}
	if (vg_uint_in(t, n, 1, VG_GROWTH_WINDOW_MAX / mult, &value)) {
		cfg->growth_window_s = (unsigned)(value * mult);
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected a duration such as 600 (seconds), 90s, 10m, 2h or 1d, from 1 s to 7 days");
	return -EINVAL;
}

static int vg_load_log(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_enum(cfg, opt, get, &cfg->log_level);
}

static int vg_load_managed(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_enum(cfg, opt, get, &cfg->managed);
}

static int vg_load_report_format(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_enum(cfg, opt, get, &cfg->report_format);
}

static int vg_load_stream_check(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_enum(cfg, opt, get, &cfg->stream_check);
}

static int vg_load_count(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	int v = (int)cfg->count;

	if (vg_load_enum(cfg, opt, get, &v))
		return -EINVAL;
	cfg->count = (enum vg_count)v;
	return 0;
}

static int vg_load_driver_headroom(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v = get(opt->name);
	cfg->driver_headroom = VG_DRIVER_HEADROOM_DEFAULT;
	if (!v)
		return 0;
	char err[VG_ERR_MAX];
	uint64_t bytes = 0;
	if (strcmp(v, "0") == 0 || vg_parse_size(v, VG_MIB, &bytes, err, sizeof(err)) == 0) {
		cfg->driver_headroom = bytes;
		return 0;
	}
	struct vg_buf b;
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected a size such as 192M, 1G or 0");
	return -EINVAL;
}

/* The report signals by name; the words must match VG_SIGNAL_WORDS (RTMIN+N is handled apart). */
static const struct {
	const char *name;
	int signo;
} vg_signals[] = {
	{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
	{ "WINCH", SIGWINCH }, { "PWR", SIGPWR }, { "URG", SIGURG },
};

static int vg_load_signal(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n, i;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	if (vg_eq_ci(t, n, "off")) {
		cfg->signal = 0;
		memcpy(cfg->signal_name, "off", 4);
		return 0;
	}
	if (n > 3 && vg_eq_ci(t, 3, "sig")) {
		t += 3;
		n -= 3;
	}
	for (i = 0; i < sizeof(vg_signals) / sizeof(vg_signals[0]); i++) {
		if (vg_eq_ci(t, n, vg_signals[i].name)) {
			cfg->signal = vg_signals[i].signo;
			vg_buf_init(&b, cfg->signal_name, sizeof(cfg->signal_name));
			vg_buf_str(&b, "SIG");
			vg_buf_str(&b, vg_signals[i].name);
			return 0;
		}
	}
	if (n > 6 && vg_eq_ci(t, 6, "rtmin+")) {
		int max = SIGRTMAX - SIGRTMIN, k = 0; /* glibc decides SIGRTMIN at run time */

		for (i = 6; i < n && vg_isdigit(t[i]); i++) {
			k = k * 10 + (t[i] - '0');
			if (k > max)
				break;
		}
		if (i == n) {
			cfg->signal = SIGRTMIN + k;
			vg_buf_init(&b, cfg->signal_name, sizeof(cfg->signal_name));
			vg_buf_str(&b, "SIGRTMIN+");
			vg_buf_u64(&b, (uint64_t)k);
			return 0;
		}
		for (i = 6; i < n && vg_isdigit(t[i]); i++)
			;
		if (i == n) { /* a number, only too large */
			vg_err_head(&b, cfg, opt->name, v);
			vg_buf_str(&b, "expected RTMIN+N with N from 0 to ");
			vg_buf_u64(&b, (uint64_t)(max < 0 ? 0 : max));
			return -EINVAL;
		}
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected one of " VG_SIGNAL_WORDS);
	return -EINVAL;
}

static int vg_load_python(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_enum(cfg, opt, get, &cfg->python);
}

static int vg_load_control(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	return vg_load_enum(cfg, opt, get, &cfg->control);
}

#define VG_OPTION_LOADER(name, summary, type, dflt, values, doc, secure, load, range, flag) load,
static const vg_load_fn vg_option_loaders[] = { VG_OPTIONS(VG_OPTION_LOADER) };

static const char *vg_libc_getenv(const char *name)
{
	return getenv(name);
}

/* The environment of a secure-mode process as the rows it ignores see it: each reads its own safe value from the
 * table, and nothing else (a loader that looks at another variable, as VRAMGUARD_SHARED_LIMITS does, finds it
 * unset). */
static const char *vg_secure_getenv(const char *name)
{
	size_t i;

	for (i = 0; i < vg_options_count; i++)
		if (vg_options[i].secure && strcmp(vg_options[i].name, name) == 0)
			return vg_options[i].secure;
	return NULL;
}


/* Every field's default; the table's "Default" column says the same in words. In secure mode, the rows it ignores
 * hold their safe values from the start (the table's "Secure mode" column). */
static void vg_config_defaults(struct vg_config *cfg, int secure)
{
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	cfg->log_level = VG_LOG_WARN;
	cfg->managed = VG_MANAGED_COUNT;
	cfg->backtrace_depth = VG_BACKTRACE_DEFAULT;
	cfg->signal = SIGUSR1;
	memcpy(cfg->signal_name, "SIGUSR1", sizeof("SIGUSR1"));
	cfg->report_dest = VG_REPORT_STDERR;
	cfg->report_format = VG_FORMAT_TEXT;
	cfg->report_mode = 0600;
	cfg->stream_check = VG_STREAM_WARN;
	memcpy(cfg->shm_dir, VG_SHM_DIR_DEFAULT, sizeof(VG_SHM_DIR_DEFAULT));
	cfg->shared_mode = 0600;
	cfg->shared_slots = VG_SHARED_SLOTS_DEFAULT;
	cfg->control = VG_CONTROL_ON;
	cfg->python = VG_CONTROL_ON;
	cfg->count = VG_COUNT_DEVICE;
	cfg->device_poll_ms = VG_DEVICE_POLL_DEFAULT;
	cfg->report_on = VG_REPORT_ON_DEFAULT;
	cfg->report_interval_s = VG_REPORT_INTERVAL_DEFAULT;
	cfg->growth_window_s = VG_GROWTH_WINDOW_DEFAULT;
	cfg->secure = secure != 0;
	for (i = 0; cfg->secure && i < vg_options_count; i++)
		if (vg_options[i].secure) /* valid values (test_config): this cannot fail */
			(void)vg_option_loaders[i](cfg, &vg_options[i], vg_secure_getenv);
}

int vg_config_load(struct vg_config *cfg, const char *(*getenv_fn)(const char *name), int secure)
{
	size_t i;

	vg_config_defaults(cfg, secure);
	cfg->valid = 1;
	if (!getenv_fn)
		getenv_fn = vg_libc_getenv;
	/* Secure mode: the rows it ignores are not parsed (a value that would be invalid cannot fail the process
	 * either); only whether each was set is kept, for the one line the library prints, before anything can fail. */
	for (i = 0; secure && i < vg_options_count; i++) {
		const char *v, *t;
		size_t n;

		if (vg_options[i].secure && vg_get_trimmed(&vg_options[i], getenv_fn, &v, &t, &n))
			cfg->secure_ignored |= (uint64_t)1 << i;
	}
	/* Variables are read by name, never by walking environ: unknown VRAMGUARD_* names are simply not looked at,
	 * so a newer launcher's variables do not break an older library. */
	for (i = 0; i < vg_options_count; i++) {
		if (secure && vg_options[i].secure)
			continue;
		if (vg_option_loaders[i](cfg, &vg_options[i], getenv_fn)) {
			char msg[VG_ERR_MAX];
			uint64_t ignored = cfg->secure_ignored;

			memcpy(msg, cfg->error, sizeof(msg));
			msg[VG_ERR_MAX - 1] = '\0';
			vg_config_defaults(cfg, secure); /* fail closed: no half-parsed limits */
			cfg->valid = 0;
			memcpy(cfg->error, msg, sizeof(msg));
			cfg->secure_ignored = ignored;
			return -EINVAL;
		}
	}
	vg_config_note(cfg, getenv_fn);
	return 0;
}

int vg_config_secure_note(const struct vg_config *cfg, char *out, size_t len)
{
	struct vg_buf b;
	size_t i, named = 0;

	vg_buf_init(&b, out, len);
	if (!cfg->secure)
		return VG_LOG_OFF;
	vg_buf_str(&b, "this program runs with elevated privileges (setuid/setgid or capabilities): ");
	for (i = 0; i < vg_options_count; i++) {
		if (!(cfg->secure_ignored >> i & 1))
			continue;
		if (named++)
			vg_buf_str(&b, ", ");
		vg_buf_str(&b, vg_options[i].name);
	}
	if (!named) {
		/* Nothing the user asked for was dropped; the one difference to see is that `vramguard top` and
		 * `vramguard limit set --pid` do not reach this process. */
		vg_buf_str(&b, "no control segment");
		return VG_LOG_INFO;
	}
	vg_buf_str(&b, " ignored: no shared region, no control segment, reports go to stderr");
	return VG_LOG_WARN;
}
