/* `vramguard dump PID`: ask a running process for a report with its report signal, and print the file it wrote. The
 * target's own settings (its initial environment, read with the library's parser) say which signal and where. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/cli.h"
#include "config/config.h"
#include "config/template.h"

const char vg_usage_dump[] =
	"usage: vramguard dump PID [--wait SECONDS]\n"
	"\n"
	"Send a running process its report signal (VRAMGUARD_SIGNAL, default SIGUSR1) and print the path of the\n"
	"report it writes. The process must run under vramguard with VRAMGUARD_REPORT set to a file template;\n"
	"the signal is not sent if the process does not catch it (it would terminate the process).\n"
	"  -w, --wait SECONDS   how long to wait for the report (default 10)\n";

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
	struct vg_template_part part;
	size_t o = 0, at = 0, n = strlen(tmpl);
#define PUT(ch) do { if (o + 2 >= len) return -1; out[o++] = (ch); } while (0)
	while (vg_template_next(tmpl, n, &at, &part)) {
		char num[32];
		const char *s = part.text;
		size_t sn = part.n;
		if (part.spec == 'n') {
			PUT('*');
			continue;
		}
		if (part.spec == 'p')
			snprintf(num, sizeof(num), "%d", pid);
		if (part.spec) {        /* a value: a '/' in it becomes '_', as in the file's name */
			s = part.spec == 'p' ? num : part.spec == 'r' ? "signal" : host;
			sn = strlen(s);
		}
		for (size_t i = 0; i < sn; i++) {
			if (strchr("*?[\\", s[i]))
				PUT('\\');
			PUT(part.spec && s[i] == '/' ? '_' : s[i]);
		}
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

int vg_cli_dump(int argc, char **argv)
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
		vg_cli_usage_exit(vg_usage_dump, "dump: invalid PID %s (expected a process id, a positive number)",
				  vg_cli_q(neg));
	optind = 1;
	while ((c = getopt_long(argc, argv, ":w:h", opts, NULL)) != -1) {
		if (c == 'h')
			return vg_cli_help("dump");
		if (c != 'w')
			return vg_cli_bad_option("dump", argv, c, vg_usage_dump);
		if (!vg_cli_seconds(optarg, &wait_s) || !(wait_s > 0) || wait_s > 86400)
			vg_cli_usage_exit(vg_usage_dump, "dump: invalid --wait %s (expected seconds, e.g. 10 or 0.5)",
					  vg_cli_q(optarg));
	}
	if (argc - optind != 1)
		vg_cli_usage_exit(vg_usage_dump, "dump: expected one PID");
	char *end;
	errno = 0;
	long pidl = strtol(argv[optind], &end, 10);
	if (errno || *end || pidl <= 0 || pidl > INT_MAX)
		vg_cli_usage_exit(vg_usage_dump, "dump: invalid PID %s (expected a process id, a positive number)",
				  vg_cli_q(argv[optind]));
	int pid = (int)pidl;

	char path[PATH_MAX];
	size_t len;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	char *maps = read_small_file(path, &len);
	if (!maps)
		vg_cli_die(1, errno == ENOENT ? "no process %d" : "cannot read /proc/%d/maps (not your process?)", pid);
	bool guarded = strstr(maps, "/libvramguard.so") != NULL;
	free(maps);
	if (!guarded)
		vg_cli_die(1, "process %d is not running under vramguard (libvramguard.so is not loaded in it)", pid);
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	target_env = read_small_file(path, &target_env_len);
	if (!target_env)
		vg_cli_die(1, "cannot read the environment of process %d: %s", pid, strerror(errno));
	struct vg_config cfg;
	if (vg_config_load(&cfg, target_getenv, 0) != 0)
		vg_cli_die(1, "process %d has an invalid vramguard configuration: %s", pid,
		    cfg.error + (strncmp(cfg.error, "vramguard: error: ", 18) ? 0 : 18));
	if (cfg.signal == 0)
		vg_cli_die(1, "process %d has reports on signal turned off (VRAMGUARD_SIGNAL=off)", pid);
	if (cfg.report_dest == VG_REPORT_OFF)
		vg_cli_die(1, "process %d has reports turned off (VRAMGUARD_REPORT=off)", pid);
	if (cfg.report_dest == VG_REPORT_STDERR)
		vg_cli_die(1, "process %d writes its reports to its own stderr only (VRAMGUARD_REPORT is unset or "
			   "'stderr'): send the signal yourself (kill -%s %d) and read its stderr, or start it with "
			   "VRAMGUARD_REPORT=/path/vg-%%p-%%n.json", pid, cfg.signal_name + 3, pid);
	int caught = catches(pid, cfg.signal);
	if (caught != 1)
		vg_cli_die(1, "process %d does not catch %s: vramguard installs its handler at the process's first CUDA "
			   "call, and never over the application's own; not sending it, since it would terminate the "
			   "process", pid, cfg.signal_name);

	/* The report lands where the template says, relative to the target's working directory. */
	char host[256] = "", glob[PATH_MAX], full[PATH_MAX * 2];
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	if (template_glob(cfg.report_path, pid, host, glob, sizeof(glob)) != 0)
		vg_cli_die(1, "VRAMGUARD_REPORT of process %d is too long", pid);
	if (glob[0] == '/')
		snprintf(full, sizeof(full), "%s", glob);
	else {
		char cwdlink[64], cwd[PATH_MAX];
		snprintf(cwdlink, sizeof(cwdlink), "/proc/%d/cwd", pid);
		ssize_t n = readlink(cwdlink, cwd, sizeof(cwd) - 1);
		if (n <= 0)
			vg_cli_die(1, "cannot find the working directory of process %d", pid);
		cwd[n] = '\0';
		snprintf(full, sizeof(full), "%s/%s", cwd, glob);
	}
	char *slash = strrchr(full, '/');
	*slash = '\0';
	const char *dir = full[0] ? full : "/", *pattern = slash + 1;
	if (strchr(dir, '*'))
		vg_cli_die(1, "VRAMGUARD_REPORT of process %d puts %%n in a directory name; dump needs it in the file "
			   "name", pid);

	struct name_set before;
	list_matches(dir, pattern, &before);
	if (kill(pid, cfg.signal) != 0)
		vg_cli_die(1, "cannot signal process %d: %s", pid, strerror(errno));
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
			vg_cli_die(1, "process %d exited before writing a report", pid);
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	free_set(&before);
	vg_cli_die(1, "no new report from process %d in %s after %.1f s (see its stderr for a 'vramguard: warning' "
		   "line)", pid, vg_cli_q(dir), wait_s);
}
