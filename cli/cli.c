/* Helpers every command shares (cli/cli.h): error and usage messages, option errors, the regions' directory. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "config/config.h"

int vg_cli_fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("vramguard: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return code;
}

int vg_cli_vusage(const char *usage, const char *fmt, va_list ap)
{
	fputs("vramguard: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n%s", usage);
	return 2;
}

int vg_cli_usage(const char *usage, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vg_cli_vusage(usage, fmt, ap);
	va_end(ap);
	return rc;
}

const char *vg_cli_q(const char *s)
{
	static char buf[8][VG_QUOTE_BUF];
	static unsigned next;
	return vg_quote(s, buf[next++ % 8], VG_QUOTE_BUF);
}

int vg_cli_bad_option(const char *cmd, char **argv, int c, const char *usage)
{
	char opt[3] = { '-', (char)optopt, '\0' };
	const char *what = optopt && optopt != '?' ? opt : argv[optind - 1];
	if (c == ':')
		fprintf(stderr, "vramguard: error: %s: option %s needs a value\n", cmd, vg_cli_q(argv[optind - 1]));
	else
		fprintf(stderr, "vramguard: error: %s: unknown option %s\n", cmd, vg_cli_q(what));
	fputs(usage, stderr);
	return 2;
}

const char *vg_cli_negative(int argc, char **argv, const char *const *valued)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--"))
			return NULL;
		if (a[0] == '-' && a[1] >= '0' && a[1] <= '9')
			return a;
		for (const char *const *v = valued; *v; v++)
			if (!strcmp(a, *v)) {
				i++;            /* its value, whatever it looks like */
				break;
			}
	}
	return NULL;
}

/* VRAMGUARD_SHM_DIR and VRAMGUARD_SHARED are read by the library's own loader; vg_cli_env_dir stands in for
 * VRAMGUARD_SHM_DIR where --dir gave one. */
static const char *vg_cli_env_dir;
static bool vg_cli_env_dir_set;

static const char *vg_cli_getenv(const char *name)
{
	if (strcmp(name, "VRAMGUARD_SHM_DIR") == 0)
		return vg_cli_env_dir_set ? vg_cli_env_dir : getenv(name);
	return strcmp(name, "VRAMGUARD_SHARED") == 0 ? getenv(name) : NULL;
}

const struct vg_config *vg_cli_env(const char *dir, char *err, size_t errlen)
{
	static struct vg_config cfg;
	vg_cli_env_dir = dir;
	vg_cli_env_dir_set = dir != NULL;
	if (vg_config_load(&cfg, vg_cli_getenv, 0) != 0) {
		const char *e = cfg.error, *head = "vramguard: error: ";
		snprintf(err, errlen, "%s", strncmp(e, head, strlen(head)) == 0 ? e + strlen(head) : e);
		return NULL;
	}
	return &cfg;
}

int vg_cli_dir(const char *opt, char *out, size_t len, char *err, size_t errlen)
{
	const char *what = "--dir", *v = opt;
	if (!v) {
		const struct vg_config *cfg = vg_cli_env(NULL, err, errlen);
		if (!cfg)
			return -EINVAL;
		v = cfg->shm_dir;
		what = "VRAMGUARD_SHM_DIR";
	}
	size_t n = strlen(v);
	while (n > 1 && v[n - 1] == '/')
		n--;
	if (v[0] != '/' || n >= len || n >= VG_CLI_DIR_MAX) {
		snprintf(err, errlen, "invalid %s %s: %s", what, vg_cli_q(v),
			 v[0] != '/' ? "expected an absolute directory path (e.g. /dev/shm)"
				     : "path too long (at most 255 bytes)");
		return -EINVAL;
	}
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

double vg_cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool vg_cli_seconds(const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	return errno == 0 && *s && !*end;
}
