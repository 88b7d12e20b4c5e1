/* The `vramguard` command: a launcher that validates the configuration with the library's own parser and execs the
 * job under the preload, plus tools to read reports (report, diff), to ask a running process for one (dump), to
 * see what the library would do on this machine (check), and to watch and change running jobs (top, limit: in
 * cli/top.c and cli/limit.c). Unlike the library, this program may exit. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "cli/diff.h"
#include "cli/top.h"
#include "config/config.h"
#include "report/json_read.h"
#include "report/report.h"


static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "vramguard: error: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

/* ---- help ---- */

static const char usage_main[] =
	"usage: vramguard run [options] -- COMMAND [ARGS...]   run a job under vramguard\n"
	"       vramguard report FILE.json                     print a JSON report as text\n"
	"       vramguard diff OLD.json NEW.json               what grew between two reports\n"
	"       vramguard dump PID [--wait SECONDS]            ask a running job for a report\n"
	"       vramguard check                                configuration, driver, devices and quotas\n"
	"       vramguard top [--once] [--json]                processes under vramguard: VRAM in use, quotas\n"
	"       vramguard limit set SPEC --shared NAME         change a shared region's budget while it runs\n"
	"       vramguard limit set SPEC --pid PID             change one process's quota while it runs\n"
	"       vramguard limit show [--shared NAME] [--json]  the limits in force\n"
	"       vramguard region create|rm|reset|evict NAME    a shared region's life: make one that outlives its\n"
	"                                                      jobs, remove it, rebuild its totals, evict a member\n"
	"       vramguard help [COMMAND] | --help | --version\n"
	"\n"
	"vramguard enforces per-process GPU memory quotas and reports leaks for CUDA jobs (PyTorch, JAX, CuPy,\n"
	"TensorFlow, CUDA C). The quota comes from NVIDIA_GPU_MEMORY_LIMITS (e.g. 4096 = 4096 MiB, 4G, 50%,\n"
	"0:4G,1:2G); see 'vramguard help run' and the man page vramguard(1).\n";

static const char usage_run[] =
	"usage: vramguard run [options] -- COMMAND [ARGS...]\n"
	"\n"
	"Validate the configuration, add libvramguard.so in front of LD_PRELOAD and exec COMMAND. Exit status,\n"
	"standard streams and signals are COMMAND's own. Options override the environment:\n"
	"  -l, --limit SPEC        NVIDIA_GPU_MEMORY_LIMITS: 4096 (MiB), 4G, 1.5GiB, 50%, 0:4G,1:2G, GPU-<uuid>:4G\n"
	"  -r, --report PATH       VRAMGUARD_REPORT: stderr, off, or a file template (%p pid, %n sequence,\n"
	"                          %r reason, %h host name), e.g. /tmp/vg-%p-%n.json\n"
	"  -f, --format FMT        VRAMGUARD_REPORT_FORMAT: text or json\n"
	"  -b, --backtrace N       VRAMGUARD_BACKTRACE: call-site depth 0..64 (0: none)\n"
	"  -s, --signal SIG        VRAMGUARD_SIGNAL: USR1, USR2, HUP, WINCH, PWR, URG, RTMIN+N or off\n"
	"      --log LEVEL         VRAMGUARD_LOG: off, error, warn, info, debug\n"
	"      --stream-check MODE VRAMGUARD_STREAM_CHECK: warn, sync or off\n"
	"      --shared NAME|PATH  VRAMGUARD_SHARED: join a shared region: the processes naming it share one VRAM\n"
	"                          budget per GPU (file VRAMGUARD_SHM_DIR/vramguard.NAME, or PATH)\n"
	"      --shared-limit SPEC VRAMGUARD_SHARED_LIMITS: the region's budget if this job creates it (syntax\n"
	"                          of --limit; default: the --limit value)\n"
	"  -h, --help              this help\n"
	"\n"
	"An invalid value is rejected before COMMAND starts, with the library's message (exit status 2).\n"
	"If COMMAND cannot be run the exit status is 127 (not found) or 126 (not executable).\n";

static const char usage_report[] =
	"usage: vramguard report FILE.json\n"
	"\n"
	"Print a JSON report (VRAMGUARD_REPORT_FORMAT=json) as the text report the library would have written.\n";

static const char usage_diff[] =
	"usage: vramguard diff [--rows N] [--all] [--exit-code] OLD.json NEW.json\n"
	"\n"
	"Compare two reports, per device and per call site: what grew, what is new, what shrank or is gone, largest\n"
	"change first. Reports of one process are matched by call-site id; of different processes by call stack.\n"
	"  -n, --rows N      rows per section (default 20)\n"
	"  -a, --all         also list call sites that did not change\n"
	"  -e, --exit-code   exit 1 if live memory grew on any device or call site (for scripts)\n";

static const char usage_dump[] =
	"usage: vramguard dump PID [--wait SECONDS]\n"
	"\n"
	"Send a running process its report signal (VRAMGUARD_SIGNAL, default SIGUSR1) and print the path of the\n"
	"report it writes. The process must run under vramguard with VRAMGUARD_REPORT set to a file template;\n"
	"the signal is not sent if the process does not catch it (it would terminate the process).\n"
	"  -w, --wait SECONDS   how long to wait for the report (default 10)\n";

static const char usage_help[] =
	"usage: vramguard help [COMMAND]\n"
	"\n"
	"Print the usage of COMMAND (run, report, diff, dump, check, top, limit), or of every command. The manual page\n"
	"vramguard(1) has the details.\n";

static const char usage_check[] =
	"usage: vramguard check\n"
	"\n"
	"Print the effective configuration from the environment, the library that 'run' would load, whether\n"
	"libcuda.so.1 and NVML are found, the driver version, and each visible device with its memory and quota.\n"
	"No CUDA context is created. Exit status 2 if the configuration is invalid.\n";

static int help_for(const char *cmd)
{
	if (!cmd)
		fputs(usage_main, stdout);
	else if (!strcmp(cmd, "run"))
		fputs(usage_run, stdout);
	else if (!strcmp(cmd, "report"))
		fputs(usage_report, stdout);
	else if (!strcmp(cmd, "diff"))
		fputs(usage_diff, stdout);
	else if (!strcmp(cmd, "dump"))
		fputs(usage_dump, stdout);
	else if (!strcmp(cmd, "check"))
		fputs(usage_check, stdout);
	else if (!strcmp(cmd, "top"))
		fputs(vg_usage_top, stdout);
	else if (!strcmp(cmd, "limit"))
		fputs(vg_usage_limit, stdout);
	else if (!strcmp(cmd, "region"))
		fputs(vg_usage_region, stdout);
	else if (!strcmp(cmd, "help"))
		fputs(usage_help, stdout);
	else
		die(2, "help: unknown command %s (expected one of run, report, diff, dump, check, top, limit, region, help)",
		    vg_cli_q(cmd));
	return 0;
}

static void usage_error(const char *usage, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void usage_error(const char *usage, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "vramguard: error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", usage);
	exit(2);
}

/* ---- the library next to this command ---- */

/* bin/vramguard -> bin/../lib/libvramguard.so (installed), or build/vramguard -> build/libvramguard.so: found
 * relative to the command itself, so a relocated install works. */
static int find_library(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	static const char *const rel[] = { "libvramguard.so", "../lib/libvramguard.so",
					   "../lib/vramguard/libvramguard.so", "../lib64/libvramguard.so" };
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char cand[PATH_MAX + 64];
		snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
		if (access(cand, R_OK) == 0 && realpath(cand, out) && strlen(out) < len)
			return 0;
	}
	return -1;
}

/* The command reads its environment as an ordinary process would (vg_config_load's secure = 0): it is not meant to
 * be installed setuid, and `run` checks the variables the way the job will read them when it is not either. */
static const char *env_get(const char *name)
{
	return getenv(name);
}

/* ---- run ---- */

static bool preload_has(const char *list, const char *lib)
{
	size_t n = strlen(lib);
	for (const char *p = list; *p;) {
		while (*p == ':' || *p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ':' && *e != ' ')
			e++;
		if ((size_t)(e - p) == n && !strncmp(p, lib, n))
			return true;
		p = e;
	}
	return false;
}

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "limit", required_argument, NULL, 'l' },     { "report", required_argument, NULL, 'r' },
		{ "format", required_argument, NULL, 'f' },    { "backtrace", required_argument, NULL, 'b' },
		{ "signal", required_argument, NULL, 's' },    { "log", required_argument, NULL, 'L' },
		{ "stream-check", required_argument, NULL, 'S' }, { "help", no_argument, NULL, 'h' },
		{ "shared", required_argument, NULL, 'H' },   { "shared-limit", required_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:l:r:f:b:s:h", opts, NULL)) != -1) {
		const char *var = NULL;
		switch (c) {
		case 'l': var = "NVIDIA_GPU_MEMORY_LIMITS"; break;
		case 'r': var = "VRAMGUARD_REPORT"; break;
		case 'f': var = "VRAMGUARD_REPORT_FORMAT"; break;
		case 'b': var = "VRAMGUARD_BACKTRACE"; break;
		case 's': var = "VRAMGUARD_SIGNAL"; break;
		case 'L': var = "VRAMGUARD_LOG"; break;
		case 'S': var = "VRAMGUARD_STREAM_CHECK"; break;
		case 'H': var = "VRAMGUARD_SHARED"; break;
		case 'B': var = "VRAMGUARD_SHARED_LIMITS"; break;
		case 'h': return help_for("run");
		default: return vg_cli_bad_option("run", argv, c, usage_run);
		}
		if (setenv(var, optarg, 1) != 0)
			die(1, "setenv %s: %s", var, strerror(errno));
	}
	if (optind >= argc)
		usage_error(usage_run, "run: no command given%s", "");
	struct vg_config cfg;
	if (vg_config_load(&cfg, env_get, 0) != 0) {
		fprintf(stderr, "%s\n", cfg.error);
		return 2;
	}
	char lib[PATH_MAX];
	if (find_library(lib, sizeof(lib)) != 0)
		die(1, "cannot find libvramguard.so next to this command or in its ../lib (reinstall vramguard)");
	const char *old = getenv("LD_PRELOAD");
	if (!old || !*old) {
		setenv("LD_PRELOAD", lib, 1);
	} else if (!preload_has(old, lib)) {
		size_t n = strlen(lib) + strlen(old) + 2;
		char *v = malloc(n);
		if (!v)
			die(1, "out of memory");
		snprintf(v, n, "%s:%s", lib, old);
		setenv("LD_PRELOAD", v, 1);
		free(v);
	}
	execvp(argv[optind], argv + optind);
	int e = errno;
	fprintf(stderr, "vramguard: error: cannot run %s: %s\n", vg_cli_q(argv[optind]), strerror(e));
	return e == ENOENT ? 127 : 126;
}

/* ---- report and diff ---- */

/* The reader's I/O errors already name the file; its parse errors do not. */
static void die_report(const char *file, const char *err) __attribute__((noreturn));
static void die_report(const char *file, const char *err)
{
	if (!strncmp(err, "cannot read ", 12))
		die(1, "%s", err);
	die(1, "%s: %s", vg_cli_q(file), err);
}

static int cmd_report(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return help_for("report");
	if (argc != 2)
		usage_error(usage_report, "report: expected one FILE.json%s", "");
	struct vg_report r;
	char err[512];
	if (vg_report_read_file(argv[1], &r, err, sizeof(err)) != 0)
		die_report(argv[1], err);
	snprintf(r.json_hint, sizeof(r.json_hint), "%s", "");
	struct vg_strbuf b = { 0 };
	vg_report_render_text(&r, &b);
	int rc = 0;
	if (b.failed || !b.data)
		die(1, "out of memory");
	if (fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout) != 0)
		rc = 1;
	vg_strbuf_free(&b);
	vg_report_free(&r);
	return rc;
}

static int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rows", required_argument, NULL, 'n' }, { "all", no_argument, NULL, 'a' },
		{ "exit-code", no_argument, NULL, 'e' },  { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vg_diff_opts o = { 0, 0 };
	int c, exit_code = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":n:aeh", opts, NULL)) != -1) {
		switch (c) {
		case 'n': {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || v == 0 || v > 100000)
				usage_error(usage_diff, "diff: invalid --rows %s (expected a number from 1 to 100000)",
					    vg_cli_q(optarg));
			o.max_rows = v;
			break;
		}
		case 'a': o.all = 1; break;
		case 'e': exit_code = 1; break;
		case 'h': return help_for("diff");
		default: return vg_cli_bad_option("diff", argv, c, usage_diff);
		}
	}
	if (argc - optind != 2)
		usage_error(usage_diff, "diff: expected OLD.json and NEW.json%s", "");
	struct vg_report a, b;
	char err[512];
	if (vg_report_read_file(argv[optind], &a, err, sizeof(err)) != 0)
		die_report(argv[optind], err);
	if (vg_report_read_file(argv[optind + 1], &b, err, sizeof(err)) != 0)
		die_report(argv[optind + 1], err);
	struct vg_strbuf out = { 0 };
	if (vg_report_diff_text(&a, &b, &o, &out) != 0 || out.failed)
		die(1, "out of memory");
	fwrite(out.data, 1, out.len, stdout);
	int grew = vg_report_diff_grew(&a, &b) == 1;
	vg_strbuf_free(&out);
	vg_report_free(&a);
	vg_report_free(&b);
	return exit_code && grew ? 1 : 0;
}

/* ---- dump ---- */

/* The target's environment (its initial one, from /proc/PID/environ), for its vramguard settings. */
static char *target_env;
static size_t target_env_len;

static const char *target_getenv(const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < target_env_len;) {
		const char *kv = target_env + i;
		size_t l = strnlen(kv, target_env_len - i);
		if (l > n && kv[n] == '=' && !strncmp(kv, name, n))
			return kv + n + 1;
		i += l + 1;
	}
	return NULL;
}

static char *read_small_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	while (buf) {
		if (n == cap) {
			char *nb = cap < (64u << 20) ? realloc(buf, cap * 2 + 1) : NULL;
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	int e = errno;
	close(fd);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	errno = e;
	return buf;
}

/* Is signal sig in the process's caught set (SigCgt in /proc/PID/status)? */
static int catches(int pid, int sig)
{
	char path[64];
	size_t len;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	char *st = read_small_file(path, &len);
	if (!st)
		return -1;
	const char *p = strstr(st, "\nSigCgt:");
	int rc = -1;
	if (p) {
		unsigned long long mask = strtoull(p + 8, NULL, 16);
		rc = (mask >> (sig - 1)) & 1;
	}
	free(st);
	return rc;
}

/* The report path template as a glob for this process: %p -> pid, %r -> signal, %h -> host, %n -> '*'. */
static int template_glob(const char *tmpl, int pid, const char *host, char *out, size_t len)
{
	size_t o = 0;
#define PUT(ch) do { if (o + 2 >= len) return -1; out[o++] = (ch); } while (0)
	for (const char *p = tmpl; *p; p++) {
		if (*p == '%' && p[1]) {
			char num[32];
			const char *s = NULL;
			p++;
			if (*p == 'p') {
				snprintf(num, sizeof(num), "%d", pid);
				s = num;
			} else if (*p == 'r') {
				s = "signal";
			} else if (*p == 'h') {
				s = host;
			} else if (*p == 'n') {
				PUT('*');
				continue;
			} else {
				s = "%";
			}
			for (; *s; s++) {
				if (strchr("*?[\\", *s))
					PUT('\\');
				PUT(*s == '/' ? '_' : *s);
			}
			continue;
		}
		if (strchr("*?[\\", *p))
			PUT('\\');
		PUT(*p);
	}
#undef PUT
	out[o] = '\0';
	return 0;
}

struct name_set {
	char **v;
	size_t n;
};

/* Regular files in dir whose names match the glob's last component. */
static void list_matches(const char *dir, const char *pattern, struct name_set *s)
{
	s->v = NULL;
	s->n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (fnmatch(pattern, e->d_name, 0) != 0 || strstr(e->d_name, ".vgtmp."))
			continue;
		char **nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
		if (!nv)
			break;
		s->v = nv;
		s->v[s->n++] = strdup(e->d_name);
	}
	closedir(d);
}

static bool in_set(const struct name_set *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] && !strcmp(s->v[i], name))
			return true;
	return false;
}

static void free_set(struct name_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

static int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "wait", required_argument, NULL, 'w' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	static const char *const valued[] = { "-w", "--wait", NULL };
	double wait_s = 10;
	int c;
	/* "dump -1" is a PID that is wrong, not an option getopt does not know. */
	const char *neg = vg_cli_negative(argc, argv, valued);
	if (neg)
		usage_error(usage_dump, "dump: invalid PID %s (expected a process id, a positive number)", vg_cli_q(neg));
	optind = 1;
	while ((c = getopt_long(argc, argv, ":w:h", opts, NULL)) != -1) {
		if (c == 'h')
			return help_for("dump");
		if (c != 'w')
			return vg_cli_bad_option("dump", argv, c, usage_dump);
		char *end;
		errno = 0;
		wait_s = strtod(optarg, &end);
		if (errno || *end || !*optarg || !(wait_s > 0) || wait_s > 86400)
			usage_error(usage_dump, "dump: invalid --wait %s (expected seconds, e.g. 10 or 0.5)", vg_cli_q(optarg));
	}
	if (argc - optind != 1)
		usage_error(usage_dump, "dump: expected one PID%s", "");
	char *end;
	errno = 0;
	long pidl = strtol(argv[optind], &end, 10);
	if (errno || *end || pidl <= 0 || pidl > INT_MAX)
		usage_error(usage_dump, "dump: invalid PID %s (expected a process id, a positive number)",
			    vg_cli_q(argv[optind]));
	int pid = (int)pidl;

	char path[PATH_MAX];
	size_t len;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	char *maps = read_small_file(path, &len);
	if (!maps)
		die(1, errno == ENOENT ? "no process %d" : "cannot read /proc/%d/maps (not your process?)", pid);
	bool guarded = strstr(maps, "/libvramguard.so") != NULL;
	free(maps);
	if (!guarded)
		die(1, "process %d is not running under vramguard (libvramguard.so is not loaded in it)", pid);
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	target_env = read_small_file(path, &target_env_len);
	if (!target_env)
		die(1, "cannot read the environment of process %d: %s", pid, strerror(errno));
	struct vg_config cfg;
	if (vg_config_load(&cfg, target_getenv, 0) != 0)
		die(1, "process %d has an invalid vramguard configuration: %s", pid,
		    cfg.error + (strncmp(cfg.error, "vramguard: error: ", 18) ? 0 : 18));
	if (cfg.signal == 0)
		die(1, "process %d has reports on signal turned off (VRAMGUARD_SIGNAL=off)", pid);
	if (cfg.report_dest == VG_REPORT_OFF)
		die(1, "process %d has reports turned off (VRAMGUARD_REPORT=off)", pid);
	if (cfg.report_dest == VG_REPORT_STDERR)
		die(1, "process %d writes its reports to its own stderr only (VRAMGUARD_REPORT is unset or 'stderr'): "
		       "send the signal yourself (kill -%s %d) and read its stderr, or start it with "
		       "VRAMGUARD_REPORT=/path/vg-%%p-%%n.json", pid, cfg.signal_name + 3, pid);
	int caught = catches(pid, cfg.signal);
	if (caught != 1)
		die(1, "process %d does not catch %s: vramguard installs its handler at the process's first CUDA call, "
		       "and never over the application's own; not sending it, since it would terminate the process",
		    pid, cfg.signal_name);

	/* The report lands where the template says, relative to the target's working directory. */
	char host[256] = "", glob[PATH_MAX], full[PATH_MAX * 2];
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	if (template_glob(cfg.report_path, pid, host, glob, sizeof(glob)) != 0)
		die(1, "VRAMGUARD_REPORT of process %d is too long", pid);
	if (glob[0] == '/')
		snprintf(full, sizeof(full), "%s", glob);
	else {
		char cwdlink[64], cwd[PATH_MAX];
		snprintf(cwdlink, sizeof(cwdlink), "/proc/%d/cwd", pid);
		ssize_t n = readlink(cwdlink, cwd, sizeof(cwd) - 1);
		if (n <= 0)
			die(1, "cannot find the working directory of process %d", pid);
		cwd[n] = '\0';
		snprintf(full, sizeof(full), "%s/%s", cwd, glob);
	}
	char *slash = strrchr(full, '/');
	*slash = '\0';
	const char *dir = full[0] ? full : "/", *pattern = slash + 1;
	if (strchr(dir, '*'))
		die(1, "VRAMGUARD_REPORT of process %d puts %%n in a directory name; dump needs it in the file name", pid);

	struct name_set before;
	list_matches(dir, pattern, &before);
	if (kill(pid, cfg.signal) != 0)
		die(1, "cannot signal process %d: %s", pid, strerror(errno));
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct name_set after;
		list_matches(dir, pattern, &after);
		for (size_t i = 0; i < after.n; i++) {
			if (after.v[i] && !in_set(&before, after.v[i])) {
				printf("%s/%s\n", dir, after.v[i]);
				free_set(&after);
				free_set(&before);
				return 0;
			}
		}
		free_set(&after);
		clock_gettime(CLOCK_MONOTONIC, &now);
		double el = (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
		if (el >= wait_s)
			break;
		if (kill(pid, 0) != 0)
			die(1, "process %d exited before writing a report", pid);
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	free_set(&before);
	die(1, "no new report from process %d in %s after %.1f s (see its stderr for a 'vramguard: warning' line)",
	    pid, vg_cli_q(dir), wait_s);
}

/* ---- check ---- */

typedef int nvml_ret;
typedef struct nvml_dev *nvml_dev;
struct nvml_memory {
	unsigned long long total, free, used;
};

static void print_bytes(const char *label, uint64_t v)
{
	char b[32];
	printf("%s%s", label, vg_format_bytes(v, b, sizeof(b)));
}

/* check must see the driver as it is: if the library is preloaded into this command (LD_PRELOAD inherited from a
 * vramguard-run shell, say), run again without it. */
static void check_without_preload(char **argv)
{
	const char *pre = getenv("LD_PRELOAD");
	if (!dlsym(RTLD_DEFAULT, "vg_instance_marker") || getenv("__VRAMGUARD_CHECK_REEXEC") || !pre)
		return;
	char *keep = malloc(strlen(pre) + 1);
	if (!keep)
		return;
	size_t o = 0;
	for (const char *p = pre; *p;) {
		while (*p == ':' || *p == ' ')
			p++;
		const char *e = p;
		while (*e && *e != ':' && *e != ' ')
			e++;
		size_t n = (size_t)(e - p);
		if (n && !(n >= 15 && !strncmp(e - 15, "libvramguard.so", 15))) {
			if (o)
				keep[o++] = ':';
			memcpy(keep + o, p, n);
			o += n;
		}
		p = e;
	}
	keep[o] = '\0';
	if (o)
		setenv("LD_PRELOAD", keep, 1);
	else
		unsetenv("LD_PRELOAD");
	free(keep);
	setenv("__VRAMGUARD_CHECK_REEXEC", "1", 1);
	execv("/proc/self/exe", argv - 1);      /* argv was shifted past the program name */
}

static int cmd_check(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return help_for("check");
	if (argc > 1)
		usage_error(usage_check, "check: unexpected argument %s", vg_cli_q(argv[1]));
	check_without_preload(argv);
	unsetenv("__VRAMGUARD_CHECK_REEXEC");
	printf("vramguard %s\n", VG_VERSION);
	if (dlsym(RTLD_DEFAULT, "vg_instance_marker"))
		printf("note:     libvramguard.so is preloaded into this command (/etc/ld.so.preload?): the device memory "
		       "below is what it reports\n");
	char lib[PATH_MAX];
	if (find_library(lib, sizeof(lib)) == 0)
		printf("library:  %s\n", lib);
	else
		printf("library:  not found next to this command or in its ../lib\n");

	struct vg_config cfg;
	int cfg_rc = vg_config_load(&cfg, env_get, 0);
	printf("configuration (from the environment):\n");
	for (size_t i = 0; i < vg_options_count; i++) {
		const struct vg_option *o = &vg_options[i];
		if (strchr(o->name, '<')) {
			/* CUDA_DEVICE_MEMORY_LIMIT_<i>: list the ones that are set */
			for (int d = 0; d < VG_MAX_DEVICES; d++) {
				char name[64];
				snprintf(name, sizeof(name), "CUDA_DEVICE_MEMORY_LIMIT_%d", d);
				if (getenv(name))
					printf("  %-28s %s\n", name, getenv(name));
			}
			continue;
		}
		const char *v = getenv(o->name);
		printf("  %-28s %s%s\n", o->name, v && *v ? v : o->dflt, v && *v ? "" : " (default)");
	}
	if (cfg_rc != 0) {
		printf("  %s\n", cfg.error);
	} else {
		printf("  valid\n");
		if (cfg.note[0])
			printf("  note: %s\n", cfg.note);
		if (cfg.count == VG_COUNT_DEVICE)
			printf("  the quota counts the device memory a process holds (VRAMGUARD_COUNT=device: allocations, "
			       "pools' reserved memory, graph memory, the driver's own, re-measured every %u ms)\n",
			       cfg.device_poll_ms);
		else
			printf("  the quota counts the bytes a process asks for (VRAMGUARD_COUNT=allocations)\n");
	}

	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!cuda) {
		printf("libcuda.so.1: not found (no NVIDIA driver here): %s\n", dlerror());
		return cfg_rc ? 2 : 0;
	}
	struct link_map *lm = NULL;
	dlinfo(cuda, RTLD_DI_LINKMAP, &lm);
	int ver = 0;
	CUresult (*drv_ver)(int *) = (CUresult(*)(int *))dlsym(cuda, "cuDriverGetVersion");
	if (drv_ver)
		drv_ver(&ver);
	printf("libcuda.so.1: %s (CUDA %d.%d)\n", lm && lm->l_name[0] ? lm->l_name : "found", ver / 1000,
	       (ver % 1000) / 10);

	void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	nvml_ret (*nv_init)(void) = nvml ? (nvml_ret(*)(void))dlsym(nvml, "nvmlInit_v2") : NULL;
	nvml_ret (*nv_drv)(char *, unsigned) =
		nvml ? (nvml_ret(*)(char *, unsigned))dlsym(nvml, "nvmlSystemGetDriverVersion") : NULL;
	nvml_ret (*nv_by_uuid)(const char *, nvml_dev *) =
		nvml ? (nvml_ret(*)(const char *, nvml_dev *))dlsym(nvml, "nvmlDeviceGetHandleByUUID") : NULL;
	nvml_ret (*nv_mem)(nvml_dev, struct nvml_memory *) =
		nvml ? (nvml_ret(*)(nvml_dev, struct nvml_memory *))dlsym(nvml, "nvmlDeviceGetMemoryInfo") : NULL;
	bool have_nvml = nv_init && nv_init() == 0;
	if (have_nvml) {
		char dv[96] = "?";
		if (nv_drv)
			nv_drv(dv, sizeof(dv));
		printf("NVML:         found (driver %s)\n", dv);
	} else {
		printf("NVML:         %s\n", nvml ? "found but not initialised" : "not found (memory in use not shown)");
	}

	/* cuInit and device queries create no context. */
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(cuda, "cuInit");
	CUresult (*count)(int *) = (CUresult(*)(int *))dlsym(cuda, "cuDeviceGetCount");
	CUresult (*name)(char *, int, CUdevice) = (CUresult(*)(char *, int, CUdevice))dlsym(cuda, "cuDeviceGetName");
	CUresult (*total)(size_t *, CUdevice) = (CUresult(*)(size_t *, CUdevice))dlsym(cuda, "cuDeviceTotalMem_v2");
	CUresult (*uuidf)(CUuuid *, CUdevice) = (CUresult(*)(CUuuid *, CUdevice))dlsym(cuda, "cuDeviceGetUuid_v2");
	int n = 0;
	CUresult rc = init && count ? init(0) : CUDA_ERROR_NOT_FOUND;
	if (rc == CUDA_SUCCESS)
		rc = count(&n);
	if (rc != CUDA_SUCCESS) {
		printf("devices:      none usable (cuInit/cuDeviceGetCount returned %d)\n", (int)rc);
		return cfg_rc ? 2 : 0;
	}
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	printf("devices:      %d visible%s%s%s\n", n, cvd ? " (CUDA_VISIBLE_DEVICES=" : "", cvd ? cvd : "", cvd ? ")" : "");
	for (int d = 0; d < n; d++) {
		char nm[256] = "?", uuid[VG_UUID_MAX] = "";
		size_t tot = 0;
		if (name)
			name(nm, sizeof(nm), d);
		if (total)
			total(&tot, d);
		CUuuid u;
		if (uuidf && uuidf(&u, d) == CUDA_SUCCESS) {
			const unsigned char *b = (const unsigned char *)u.bytes;
			snprintf(uuid, sizeof(uuid),
				 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
				 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
		}
		printf("  GPU %d  %s  %s\n", d, nm, uuid[0] ? uuid : "(no uuid)");
		print_bytes("         memory ", tot);
		nvml_dev h;
		struct nvml_memory m;
		if (have_nvml && nv_by_uuid && nv_mem && uuid[0] && nv_by_uuid(uuid, &h) == 0 && nv_mem(h, &m) == 0)
			print_bytes(", in use on the card ", m.used);
		if (cfg_rc == 0) {
			const char *src = NULL;
			uint64_t q = vg_config_limit_for(&cfg, d, uuid[0] ? uuid : NULL, tot, &src);
			if (q == UINT64_MAX)
				printf(", quota: unlimited");
			else
				print_bytes(", quota ", q), printf(" (%s)", src ? src : "?");
			uint64_t r = vg_config_request_for(&cfg, d, uuid[0] ? uuid : NULL, tot, &src);
			if (r == UINT64_MAX)
				printf(", request: none\n");
			else
				print_bytes(", request ", r), printf(" (%s)%s\n", src ? src : "?",
								     q != UINT64_MAX && r >= q ? ": not below the quota, never "
								     "triggers" : "");
		} else {
			printf(", quota: configuration invalid\n");
		}
	}
	return cfg_rc ? 2 : 0;
}

int main(int argc, char **argv)
{
	/* C++ frames in reports are shown demangled when libstdc++'s demangler is at hand; the command may load it. */
	(void)dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
	opterr = 0;     /* the commands say which option is wrong themselves (vg_cli_bad_option), bounded */
	if (argc < 2) {
		fputs(usage_main, stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
		return help_for(NULL);
	if (!strcmp(cmd, "help")) {
		if (argc > 3)
			usage_error(usage_help, "help: expected one COMMAND, got %s too", vg_cli_q(argv[3]));
		return help_for(argc > 2 ? argv[2] : NULL);
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("vramguard %s\n", VG_VERSION);
		return 0;
	}
	argc--;
	argv++;
	if (!strcmp(cmd, "run"))
		return cmd_run(argc, argv);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc, argv);
	if (!strcmp(cmd, "diff"))
		return cmd_diff(argc, argv);
	if (!strcmp(cmd, "dump"))
		return cmd_dump(argc, argv);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc, argv);
	if (!strcmp(cmd, "top"))
		return vg_cli_top(argc, argv);
	if (!strcmp(cmd, "limit"))
		return vg_cli_limit(argc, argv);
	if (!strcmp(cmd, "region"))
		return vg_cli_region(argc, argv);
	fprintf(stderr, "vramguard: error: unknown command %s (see 'vramguard --help')\n%s", vg_cli_q(cmd), usage_main);
	return 2;
}
