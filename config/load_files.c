/* The loaders of the rows that name files, directories and file modes: VRAMGUARD_REPORT, VRAMGUARD_REPORT_MODE,
 * VRAMGUARD_SHM_DIR and the VRAMGUARD_SHARED family (with the NAME -> file rule). These are the rows a secure-mode
 * process ignores (options.h), but for VRAMGUARD_SHARED_SLOTS, an integer row that row.c loads. */
#include "config/options.h"
#include "config/template.h"

#include <errno.h>
#include <string.h>

int vg_load_report_mode(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n, i;
	unsigned mode = 0;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	for (i = 0; i < n && t[i] >= '0' && t[i] <= '7' && i < 4; i++)
		mode = mode * 8 + (unsigned)(t[i] - '0');
	if (i == n && n >= 1 && mode <= 0777) {
		cfg->report_mode = mode;
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected an octal file mode from 0 to 0777 (e.g. 0600, 0640, 0644)");
	return -EINVAL;
}

/* A path whose last component is empty, "." or "..": it can only name a directory. */
static int vg_names_dir(const char *t, size_t n)
{
	size_t i = n;

	while (i > 0 && t[i - 1] != '/')
		i--;
	return i == n || vg_eq_ci(t + i, n - i, ".") || vg_eq_ci(t + i, n - i, "..");
}

int vg_load_report(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t, *reason, *bad;
	size_t n, badn;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	if (vg_eq_ci(t, n, "stderr")) {
		cfg->report_dest = VG_REPORT_STDERR;
		cfg->report_path[0] = '\0';
		return 0;
	}
	if (vg_eq_ci(t, n, "off")) {
		cfg->report_dest = VG_REPORT_OFF;
		cfg->report_path[0] = '\0';
		return 0;
	}
	reason = vg_report_template_check(t, n, &bad, &badn);
	if (!reason && vg_names_dir(t, n))
		reason = "names a directory, not a file";
	if (!reason && n >= sizeof(cfg->report_path))
		reason = "path template too long (at most 1023 bytes)";
	if (!reason) {
		memcpy(cfg->report_path, t, n);
		cfg->report_path[n] = '\0';
		cfg->report_dest = VG_REPORT_PATH;
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, reason);
	if (bad) {
		vg_buf_char(&b, ' ');
		vg_buf_quote(&b, bad, badn);
	}
	vg_buf_str(&b, " (expected e.g. " VG_REPORT_EXAMPLES "; specifiers " VG_TEMPLATE_SPECIFIERS ")");
	return -EINVAL;
}
_Static_assert(VG_REPORT_PATH_MAX == 1024, "the message says at most 1023 bytes");

/* ---- shared regions ---- */

/* Declared in config.h; accounting/region.h's vg_region_path is this rule. */
int vg_shared_path(const char *dir, const char *v, char *out, size_t outlen, char *err, size_t errlen)
{
	struct vg_buf e, o;
	size_t n, i;

	vg_buf_init(&e, err, errlen);
	if (!dir || !*dir)
		dir = VG_SHM_DIR_DEFAULT;
	if (!v || !*v) {
		vg_buf_str(&e, "empty region name");
		return -EINVAL;
	}
	n = strlen(v);
	if (v[0] == '/') {
		if (n >= outlen || n >= VG_SHARED_PATH_MAX) {
			vg_buf_str(&e, "region path too long (at most 511 bytes)");
			return -EINVAL;
		}
		if (v[n - 1] == '/') {
			vg_buf_str(&e, "region path ");
			vg_buf_quote(&e, v, n);
			vg_buf_str(&e, " names a directory (expected a file in it, e.g. DIR/job)");
			return -EINVAL;
		}
		memcpy(out, v, n + 1);
		return 0;
	}
	for (i = 0; i < n; i++)
		if (!(vg_isalpha(v[i]) || vg_isdigit(v[i]) || v[i] == '.' || v[i] == '_' || v[i] == '-'))
			break;
	if (i < n || n >= VG_SHARED_NAME_MAX || v[0] == '.' || strncmp(v, "proc.", 5) == 0) {
		vg_buf_str(&e, "a region is a NAME of at most 63 characters from A-Z a-z 0-9 . _ - (not starting with '.' "
			       "or 'proc.') or an absolute path");
		return -EINVAL;
	}
	if (strlen(dir) + 1 + strlen(VG_SHARED_PREFIX) + n >= outlen) {
		vg_buf_str(&e, "region path too long");
		return -EINVAL;
	}
	vg_buf_init(&o, out, outlen);
	vg_buf_str(&o, dir);
	vg_buf_str(&o, "/" VG_SHARED_PREFIX);
	vg_buf_str(&o, v);
	return 0;
}

int vg_load_shm_dir(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	while (n > 1 && t[n - 1] == '/')
		n--;
	if (t[0] == '/' && n < sizeof(cfg->shm_dir) && !memchr(t, '\0', n)) {
		memcpy(cfg->shm_dir, t, n);
		cfg->shm_dir[n] = '\0';
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, t[0] != '/' ? "expected an absolute directory path (e.g. /dev/shm)"
				   : "path too long (at most 255 bytes)");
	return -EINVAL;
}

int vg_load_shared(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n;
	struct vg_buf b;
	char name[VG_SHARED_PATH_MAX], why[200];

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	if (n >= sizeof(name)) {
		vg_err_head(&b, cfg, opt->name, v);
		vg_buf_str(&b, "too long");
		return -EINVAL;
	}
	memcpy(name, t, n);
	name[n] = '\0';
	if (vg_shared_path(cfg->shm_dir, name, cfg->shared_path, sizeof(cfg->shared_path), why, sizeof(why)) == 0 &&
	    n < sizeof(cfg->shared_name)) {
		memcpy(cfg->shared_name, name, n + 1);
		return 0;
	}
	cfg->shared_path[0] = '\0';
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, why);
	return -EINVAL;
}

/* The region's budget stays text (it is stored in the region and resolved per GPU there); parse it here only to
 * refuse a bad one early with the usual message. Without VRAMGUARD_SHARED_LIMITS the budget is the text of
 * NVIDIA_GPU_MEMORY_LIMITS (already checked: it loads first), and only where there is a region to give it to: a
 * process without one keeps any NVIDIA_GPU_MEMORY_LIMITS it could use before, however long. */
int vg_load_shared_limits(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	static const struct vg_option fallback = { .name = "NVIDIA_GPU_MEMORY_LIMITS" };
	const struct vg_option *from = opt;
	const char *v, *t;
	size_t n;
	struct vg_limits l;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n)) {
		from = &fallback;
		if (!cfg->shared_path[0] || !vg_get_trimmed(from, get, &v, &t, &n))
			return 0;
	}
	if (n >= sizeof(cfg->shared_spec)) {
		vg_err_head(&b, cfg, from->name, v);
		vg_buf_str(&b, "too long for a shared region's budget (at most 255 bytes)");
		return -EINVAL;
	}
	if (from == opt &&
	    vg_parse_limits_ex(opt->name, v, VG_MIB, 1, VG_LIMITS_EXAMPLES, &l, cfg->error, sizeof(cfg->error)))
		return -EINVAL;
	memcpy(cfg->shared_spec, t, n);
	cfg->shared_spec[n] = '\0';
	cfg->shared_spec_source = from->name;
	return 0;
}

int vg_load_shared_mode(struct vg_config *cfg, const struct vg_option *opt, vg_getenv_fn get)
{
	const char *v, *t;
	size_t n;
	struct vg_buf b;

	if (!vg_get_trimmed(opt, get, &v, &t, &n))
		return 0;
	if (vg_eq_ci(t, n, "0600") || vg_eq_ci(t, n, "600")) {
		cfg->shared_mode = 0600;
		return 0;
	}
	if (vg_eq_ci(t, n, "0660") || vg_eq_ci(t, n, "660")) {
		cfg->shared_mode = 0660;
		return 0;
	}
	vg_err_head(&b, cfg, opt->name, v);
	vg_buf_str(&b, "expected 0600 (this user only) or 0660 (this user and the file's group)");
	return -EINVAL;
}
