/* `vramguard cdi`: write a Container Device Interface spec (kind vramguard.dev/quota, one device per quota size) whose
 * edits mount the library read-only into a container and preload it with that quota, so that
 * `podman run --device vramguard.dev/quota=4G IMAGE` puts an image that knows nothing of vramguard under a quota.
 * Every SPEC is checked with the library's own parser before anything is written; the file is replaced atomically
 * (a temporary file in the same directory, then rename), so a runtime reading the directory never sees half a spec.
 * The YAML is written by hand: every string double-quoted, with YAML's escapes (docs/cdi.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "config/config.h"

#define VG_CDI_DEVICES_MAX 64
#define VG_CDI_NAME_MAX 128

struct cdi_device {
	const char *spec;
	char name[VG_CDI_NAME_MAX];
};

static bool alnum(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* CDI's device names: a letter or digit first and last, letters, digits and _ - . : between. A SPEC's ',' becomes
 * '_', '%' "pct" and '=' ':' (0=4G means 0:4G); anything else a name cannot hold is refused. */
static int cdi_name(const char *spec, char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = spec; *p; p++) {
		const char *put = NULL;
		char one[2] = { *p, '\0' };
		char ch = *p;

		if (alnum(ch) || ch == '.' || ch == '-' || ch == '_' || ch == ':')
			put = one;
		else if (ch == ',')
			put = "_";
		else if (ch == '%')
			put = "pct";
		else if (ch == '=')
			put = ":";
		else
			return -EINVAL;
		size_t n = strlen(put);
		if (o + n >= len)
			return -ENAMETOOLONG;
		memcpy(out + o, put, n);
		o += n;
	}
	out[o] = '\0';
	return o && alnum(out[0]) && alnum(out[o - 1]) ? 0 : -EINVAL;
}

/* The inside of a YAML double-quoted scalar: '"' and '\' escaped, control bytes as \xNN (the code point of the same
 * byte). Other bytes pass as they are (UTF-8). */
static void yq_inside(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
}

static void yq(FILE *f, const char *s)
{
	fputc('"', f);
	yq_inside(f, s);
	fputc('"', f);
}

/* "NAME=value" as one quoted list item. */
static void yenv(FILE *f, const char *indent, const char *name, const char *value)
{
	fprintf(f, "%s- \"", indent);
	yq_inside(f, name);
	fputc('=', f);
	yq_inside(f, value);
	fputs("\"\n", f);
}

static void cdi_write(FILE *f, const struct cdi_device *dev, int n, const char *lib, const char *shared)
{
	fprintf(f, "# Written by vramguard %s ('vramguard cdi'): a Container Device Interface spec. Regenerate it\n"
		   "# rather than edit it. Use: podman run --device %s=%s IMAGE (docs/cdi.md).\n",
		VG_VERSION, VG_CDI_KIND, dev[0].name);
	fprintf(f, "cdiVersion: ");
	yq(f, VG_CDI_VERSION);
	fprintf(f, "\nkind: ");
	yq(f, VG_CDI_KIND);
	fprintf(f, "\ndevices:\n");
	for (int i = 0; i < n; i++) {
		fprintf(f, "  - name: ");
		yq(f, dev[i].name);
		fprintf(f, "\n    containerEdits:\n      env:\n");
		yenv(f, "        ", "NVIDIA_GPU_MEMORY_LIMITS", dev[i].spec);
	}
	/* What every device shares: applied once whichever device a container asks for. */
	fprintf(f, "containerEdits:\n  env:\n");
	yenv(f, "    ", "LD_PRELOAD", VG_CDI_LIB_IN);
	if (shared)
		yenv(f, "    ", "VRAMGUARD_SHARED", shared);
	fprintf(f, "  mounts:\n    - hostPath: ");
	yq(f, lib);
	fprintf(f, "\n      containerPath: ");
	yq(f, VG_CDI_LIB_IN);
	fprintf(f, "\n      options: [\"ro\", \"nosuid\", \"nodev\", \"bind\"]\n");
}

/* DIR/vramguard.dev-quota.yaml replaced by text[0..len): temporary file in DIR, fsync, rename. 0, or the exit
 * status after one error line. */
static int cdi_store(const char *dir, const char *text, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", dir, VG_CDI_FILE) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, VG_CDI_FILE) >= (int)sizeof(tmp))
		return vg_cli_fail(2, "cdi: --output %s is too long", vg_cli_q(dir));
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return vg_cli_fail(1, "cdi: cannot make directory %s: %s", vg_cli_q(dir), strerror(errno));
	int fd = mkstemp(tmp);
	if (fd < 0)
		return vg_cli_fail(1, "cdi: cannot write in %s: %s", vg_cli_q(dir), strerror(errno));
	const char *what = "write";
	int e = 0;
	for (size_t o = 0; o < len && !e;) {
		ssize_t w = write(fd, text + o, len - o);
		if (w < 0 && errno != EINTR)
			e = errno;
		else if (w > 0)
			o += (size_t)w;
	}
	/* Runtimes read the spec as whoever they run as; it holds nothing secret. */
	if (!e && fchmod(fd, 0644) != 0)
		what = "chmod", e = errno;
	if (!e && fsync(fd) != 0)
		what = "fsync", e = errno;
	if (close(fd) != 0 && !e)
		what = "close", e = errno;
	if (!e && rename(tmp, path) != 0)
		what = "rename", e = errno;
	if (e) {
		unlink(tmp);
		return vg_cli_fail(1, "cdi: cannot %s %s: %s", what, vg_cli_q(path), strerror(e));
	}
	return 0;
}

int vg_cli_cdi(int argc, char **argv)
{
	struct cdi_device dev[VG_CDI_DEVICES_MAX];
	const char *shared = NULL, *out = NULL, *libarg = NULL, *usage = vg_cli_usage_of("cdi");
	char err[VG_ERR_MAX];
	struct vg_cli_getopt g;
	int n = 0, k;

	vg_cli_getopt_init(&g, "cdi", NULL, "");
	while ((k = vg_cli_getopt(&g, argc, argv)) != VG_CLI_OPT_END) {
		switch (k) {
		case VG_OPT_CDI_LIMIT:
			if (n == VG_CDI_DEVICES_MAX)
				return vg_cli_usage(usage, "cdi: at most %d --limit", VG_CDI_DEVICES_MAX);
			dev[n++].spec = optarg;
			break;
		case VG_OPT_CDI_SHARED: shared = optarg; break;
		case VG_OPT_CDI_OUTPUT: out = optarg; break;
		case VG_OPT_CDI_LIB: libarg = optarg; break;
		case VG_CLI_OPT_HELP: return vg_cli_help("cdi");
		default: return vg_cli_bad_option(&g, argv);
		}
	}
	if (optind < argc)
		return vg_cli_usage(usage, "cdi: unexpected argument %s", vg_cli_q(argv[optind]));
	if (!n)
		return vg_cli_usage(usage, "cdi: no --limit given (e.g. --limit 4G)");

	/* Everything is checked before anything is written. */
	for (int i = 0; i < n; i++) {
		struct vg_limits ls;
		if (!dev[i].spec[0])
			return vg_cli_fail(2, "cdi: empty --limit (expected e.g. 4G, 8192, 50%%, 0:4G,1:2G)");
		if (strlen(dev[i].spec) >= VG_SPEC_MAX)
			return vg_cli_fail(2, "cdi: --limit %s is too long (at most %d bytes)", vg_cli_q(dev[i].spec),
					   VG_SPEC_MAX - 1);
		if (vg_parse_limits("NVIDIA_GPU_MEMORY_LIMITS", dev[i].spec, (uint64_t)1 << 20, &ls, err,
				    sizeof(err)) != 0) {
			fprintf(stderr, "%s\n", err);
			return 2;
		}
		if (cdi_name(dev[i].spec, dev[i].name, sizeof(dev[i].name)) != 0)
			return vg_cli_fail(2, "cdi: cannot name a CDI device after --limit %s (letters, digits and "
					   "_ - . : , %% = only, a letter or digit first and last)", vg_cli_q(dev[i].spec));
		for (int j = 0; j < i; j++)
			if (!strcmp(dev[i].name, dev[j].name))
				return vg_cli_fail(2, "cdi: --limit %s and --limit %s make the same device %s",
						   vg_cli_q(dev[j].spec), vg_cli_q(dev[i].spec), vg_cli_q(dev[i].name));
	}
	if (shared) {
		char path[VG_SHARED_PATH_MAX];
		if (vg_shared_path(NULL, shared, path, sizeof(path), err, sizeof(err)) != 0)
			return vg_cli_fail(2, "cdi: invalid --shared %s: %s", vg_cli_q(shared), err);
	}
	char lib[PATH_MAX];
	if (libarg) {
		if (libarg[0] != '/')
			return vg_cli_fail(2, "cdi: --lib %s is not an absolute path (a runtime mounts it from the host's "
					   "root)", vg_cli_q(libarg));
		if (!realpath(libarg, lib))
			return vg_cli_fail(1, "cdi: --lib %s: %s", vg_cli_q(libarg), strerror(errno));
	} else if (vg_cli_find_library(lib, sizeof(lib)) != 0) {
		return vg_cli_fail(1, "cdi: cannot find libvramguard.so next to this command or in its ../lib (give "
				   "--lib PATH)");
	}
	if (access(lib, R_OK) != 0)
		return vg_cli_fail(1, "cdi: cannot read the library %s: %s", vg_cli_q(lib), strerror(errno));

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return vg_cli_fail(1, "out of memory");
	cdi_write(f, dev, n, lib, shared);
	if (fclose(f) != 0)
		return vg_cli_fail(1, "out of memory");
	int rc = 0;
	if (!out) {
		if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)
			rc = vg_cli_fail(1, "cdi: cannot write the spec to standard output: %s", strerror(errno));
	} else {
		rc = cdi_store(out, text, len);
	}
	free(text);
	return rc;
}
