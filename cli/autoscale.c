/* `vramguard autoscale`: a receiver of Alertmanager's webhook that raises the limit an alert names (a shared region's
 * budget, a process's quota) by a step, within a ceiling, at most once per cool-down, while the job runs. The
 * decisions are in cli/autoscale_act.c; this file has the flags, the listener (cli/http.c: loopback or a Unix socket
 * unless told otherwise), the bearer token and the counters at /metrics. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/autoscale.h"
#include "cli/http.h"
#include "cli/metrics.h"
#include "cli/scan.h"
#include "config/config.h"
#include "config/stat.h"

#define AS_LISTEN_DEFAULT "127.0.0.1:9848"
#define AS_TOKEN_MAX 512

const char vg_usage_autoscale[] =
	"usage: vramguard autoscale --ceiling SIZE|region:NAME=SIZE|pid:PID=SIZE... [--step SIZE|N%]\n"
	"                           [--listen ADDR:PORT [--allow-remote] | --socket PATH] [--token-file PATH]\n"
	"                           [--cooldown DURATION] [--alert NAME]... [--dry-run] [--shrink-after DURATION]\n"
	"                           [--dir DIR]\n"
	"\n"
	"Receive Alertmanager's webhook (POST /, payload version 4) and, for each firing alert whose labels name a\n"
	"vramguard region (region) or process (pid, with the exporter's command, region and gpu labels), raise that\n"
	"region's budget or process's quota on that GPU, as 'vramguard limit set' would (the same checks and\n"
	"ownership rules), while the job runs. Resolved alerts change nothing, unless --shrink-after. Every\n"
	"decision is one line on stderr and counted in vramguard_autoscale_actions_total{result} at GET /metrics.\n"
	"See docs/autoscale.md.\n"
	"  -c, --ceiling SIZE       never raise above SIZE (4096 = MiB, 8G); region:NAME=SIZE or pid:PID=SIZE for one\n"
	"                           target (repeatable; a target without a ceiling is never raised)\n"
	"  -s, --step SIZE|N%       how much one alert adds: a size (2G) or a percentage of the limit (default 25%)\n"
	"  -k, --cooldown DURATION  at most one raise per target (region or process, and GPU) this often: 300, 30s,\n"
	"                           5m, 1h (default 5m; 0: every alert)\n"
	"  -a, --alert NAME         act only on alerts of this alertname (repeatable; default every alert)\n"
	"  -n, --dry-run            decide and log, change nothing\n"
	"  -l, --listen ADDR:PORT   where to listen (default " AS_LISTEN_DEFAULT "); a non-loopback address only with\n"
	"      --allow-remote\n"
	"  -u, --socket PATH        listen on a Unix socket instead (mode 0600)\n"
	"  -t, --token-file PATH    the bearer token Alertmanager sends (http_config: authorization: credentials_file);\n"
	"                           required with --listen, the file readable by its owner only\n"
	"  -d, --dir DIR            where regions live (default VRAMGUARD_SHM_DIR, else /dev/shm)\n"
	"      --shrink-after DURATION  when an alert resolves, lower what this receiver raised back to the limit it\n"
	"                           had before, this long after (unless it fires again; not while the target uses\n"
	"                           more than that; a limit changed since by hand is left alone)\n";

struct as_opts {
	const char *listen, *socket;
	bool allow_remote;
	char token[AS_TOKEN_MAX + 1];
	struct vg_as_policy pol;
};

static volatile sig_atomic_t as_stop;

static void as_on_signal(int sig)
{
	as_stop = sig;
}

static int as_size(const char *what, const char *s, uint64_t *out)
{
	char err[VG_ERR_MAX];
	if (vg_parse_size(s, (uint64_t)1 << 20, out, err, sizeof(err)) != 0 || *out == UINT64_MAX)
		return vg_cli_usage(vg_usage_autoscale, "autoscale: invalid %s %s: %s (expected e.g. 4096 for MiB, 2G, "
				    "512M)", what, vg_cli_q(s), err[0] ? err : "too large");
	return 0;
}

static int as_ceiling_arg(struct vg_as_policy *p, const char *s)
{
	const char *eq = strchr(s, '=');
	if (!eq)
		return p->ceiling ? vg_cli_usage(vg_usage_autoscale, "autoscale: --ceiling %s: a global ceiling was "
						 "given already", vg_cli_q(s))
				  : as_size("--ceiling", s, &p->ceiling);
	if (p->nceil == VG_AS_CEILINGS_MAX)
		return vg_cli_usage(vg_usage_autoscale, "autoscale: more than %d --ceiling", VG_AS_CEILINGS_MAX);
	struct vg_as_ceiling *c = &p->ceil[p->nceil];
	memset(c, 0, sizeof(*c));
	size_t tl = (size_t)(eq - s);
	if (tl > 4 && !strncmp(s, "pid:", 4)) {
		char num[16], *end;
		if (tl - 4 >= sizeof(num))
			goto bad;
		memcpy(num, s + 4, tl - 4);
		num[tl - 4] = '\0';
		errno = 0;
		long v = strtol(num, &end, 10);
		if (errno || *end || v <= 0 || v > INT_MAX)
			goto bad;
		c->pid_target = true;
		c->pid = (int32_t)v;
	} else if (tl > 7 && !strncmp(s, "region:", 7) && tl - 7 < sizeof(c->region)) {
		memcpy(c->region, s + 7, tl - 7);
		c->region[tl - 7] = '\0';
	} else
		goto bad;
	if (as_size("--ceiling", eq + 1, &c->bytes))
		return 2;
	p->nceil++;
	return 0;
bad:
	return vg_cli_usage(vg_usage_autoscale, "autoscale: invalid --ceiling %s (expected SIZE, region:NAME=SIZE or "
			    "pid:PID=SIZE, e.g. region:team=16G)", vg_cli_q(s));
}

static int as_step_arg(struct vg_as_policy *p, const char *s)
{
	size_t n = strlen(s);
	snprintf(p->step_text, sizeof(p->step_text), "%s", s);
	p->step_pct = 0;
	p->step_bytes = 0;
	if (n && s[n - 1] == '%') {
		char *end;
		errno = 0;
		unsigned long v = strtoul(s, &end, 10);
		if (errno || end != s + n - 1 || s[0] < '0' || s[0] > '9' || v < 1 || v > 1000)
			return vg_cli_usage(vg_usage_autoscale, "autoscale: invalid --step %s (expected a size, 2G, or a "
					    "percentage of the limit from 1%% to 1000%%, 25%%)", vg_cli_q(s));
		p->step_pct = (unsigned)v;
		return 0;
	}
	return as_size("--step", s, &p->step_bytes);
}

static int as_duration(const char *s, double *out)
{
	char num[32];
	size_t n = strlen(s);
	double mult = 1;
	if (n && strchr("smh", s[n - 1])) {
		mult = s[n - 1] == 'h' ? 3600 : s[n - 1] == 'm' ? 60 : 1;
		n--;
	}
	if (!n || n >= sizeof(num))
		return -1;
	memcpy(num, s, n);
	num[n] = '\0';
	double v;
	if (!vg_cli_seconds(num, &v) || !(v >= 0) || v * mult > 7 * 86400.0)
		return -1;
	*out = v * mult;
	return 0;
}

static int as_token(const char *path, char *out)
{
	struct stat st;
	FILE *f = fopen(path, "re");
	if (!f)
		return vg_cli_fail(2, "autoscale: cannot read --token-file %s: %s", vg_cli_q(path), strerror(errno));
	if (vg_fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		fclose(f);
		return vg_cli_fail(2, "autoscale: --token-file %s must be a regular file readable by its owner only "
				  "(chmod 600 %s)", vg_cli_q(path), vg_cli_q(path));
	}
	size_t n = fread(out, 1, AS_TOKEN_MAX + 1, f);
	fclose(f);
	while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		n--;
	out[n <= AS_TOKEN_MAX ? n : AS_TOKEN_MAX] = '\0';
	if (!n || n > AS_TOKEN_MAX || strlen(out) != n || strpbrk(out, " \t\r\n"))
		return vg_cli_fail(2, "autoscale: --token-file %s: expected one token of 1 to %d characters without "
				  "spaces (e.g. from 'openssl rand -hex 32')", vg_cli_q(path), AS_TOKEN_MAX);
	return 0;
}

static int as_parse(int argc, char **argv, struct as_opts *o)
{
	static const struct option opts[] = {
		{ "ceiling", required_argument, NULL, 'c' }, { "step", required_argument, NULL, 's' },
		{ "cooldown", required_argument, NULL, 'k' }, { "alert", required_argument, NULL, 'a' },
		{ "dry-run", no_argument, NULL, 'n' },       { "listen", required_argument, NULL, 'l' },
		{ "allow-remote", no_argument, NULL, 'R' },  { "socket", required_argument, NULL, 'u' },
		{ "token-file", required_argument, NULL, 't' }, { "dir", required_argument, NULL, 'd' },
		{ "shrink-after", required_argument, NULL, 'S' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *token = NULL;
	int c, rc;
	memset(o, 0, sizeof(*o));
	o->pol.cooldown = 300;
	o->pol.shrink_after = -1;
	as_step_arg(&o->pol, "25%");
	optind = 1;
	while ((c = getopt_long(argc, argv, ":c:s:k:a:nl:u:t:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if ((rc = as_ceiling_arg(&o->pol, optarg)))
				return rc;
			break;
		case 's':
			if ((rc = as_step_arg(&o->pol, optarg)))
				return rc;
			break;
		case 'k':
			if (as_duration(optarg, &o->pol.cooldown) != 0)
				return vg_cli_usage(vg_usage_autoscale, "autoscale: invalid --cooldown %s (expected seconds "
						    "or 30s, 5m, 1h; at most 7 days)", vg_cli_q(optarg));
			break;
		case 'a':
			if (o->pol.nalerts == VG_AS_ALERTS_MAX || !optarg[0])
				return vg_cli_usage(vg_usage_autoscale, "autoscale: invalid --alert %s (an alertname; at most "
						    "%d)", vg_cli_q(optarg), VG_AS_ALERTS_MAX);
			o->pol.alerts[o->pol.nalerts++] = optarg;
			break;
		case 'n': o->pol.dry_run = true; break;
		case 'l': o->listen = optarg; break;
		case 'R': o->allow_remote = true; break;
		case 'u': o->socket = optarg; break;
		case 't': token = optarg; break;
		case 'd': dir = optarg; break;
		case 'S':
			if (as_duration(optarg, &o->pol.shrink_after) != 0)
				return vg_cli_usage(vg_usage_autoscale, "autoscale: invalid --shrink-after %s (expected "
						    "seconds or 30s, 5m, 1h; at most 7 days)", vg_cli_q(optarg));
			break;
		case 'h': fputs(vg_usage_autoscale, stdout); return 0;
		default: return vg_cli_bad_option("autoscale", argv, c, vg_usage_autoscale);
		}
	}
	if (optind < argc)
		return vg_cli_usage(vg_usage_autoscale, "autoscale: unexpected argument %s", vg_cli_q(argv[optind]));
	if (!o->pol.ceiling && !o->pol.nceil)
		return vg_cli_usage(vg_usage_autoscale, "autoscale: no --ceiling: say how far it may raise a limit "
				    "(--ceiling 16G, or region:NAME=SIZE, pid:PID=SIZE)");
	if (o->listen && o->socket)
		return vg_cli_usage(vg_usage_autoscale, "autoscale: --listen or --socket, not both");
	if (o->socket && o->allow_remote)
		return vg_cli_usage(vg_usage_autoscale, "autoscale: --allow-remote is for --listen");
	if (!o->socket && !o->listen)
		o->listen = AS_LISTEN_DEFAULT;
	if (o->listen && !token)
		return vg_cli_usage(vg_usage_autoscale, "autoscale: --listen needs --token-file: any local user can "
				    "connect to a TCP port (or use --socket PATH, mode 0600)");
	if (token && (rc = as_token(token, o->token)))
		return rc;
	char err[VG_CLI_WHY_MAX];
	if (vg_cli_dir(dir, o->pol.dir, sizeof(o->pol.dir), err, sizeof(err)) != 0)
		return vg_cli_fail(2, "%s", err);
	return -1;
}

/* The Authorization header against the token, in time independent of where they differ. */
static bool as_authorized(const struct as_opts *o, const struct vg_http_req *rq)
{
	if (!o->token[0])
		return true;
	char h[AS_TOKEN_MAX + 64];
	if (!vg_http_header(rq, "Authorization", h, sizeof(h)) || strncasecmp(h, "Bearer ", 7))
		return false;
	const char *t = h + 7;
	size_t tl = strlen(t), ol = strlen(o->token);
	unsigned char diff = tl != ol;
	for (size_t i = 0; i < ol; i++)
		diff |= (unsigned char)(o->token[i] ^ (i < tl ? t[i] : 0));
	return !diff;
}

static void as_metrics(int fd, const struct vg_as_state *st, bool head)
{
	struct vg_strbuf b = { 0 };
	vg_strbuf_printf(&b, "# HELP vramguard_autoscale_actions_total Decisions of vramguard autoscale on alerts, by "
			 "result.\n# TYPE vramguard_autoscale_actions_total counter\n");
	for (int r = 0; r < VG_AS_NRESULTS; r++)
		vg_strbuf_printf(&b, "vramguard_autoscale_actions_total{result=\"%s\"} %" PRIu64 "\n", vg_as_result_names[r],
				 st->count[r]);
	if (vg_strbuf_result(&b) != 0 || !b.data)
		vg_http_reply(fd, "500 Internal Server Error", "text/plain", NULL, "out of memory\n", 14);
	else
		vg_http_reply(fd, "200 OK", VG_METRICS_CT_TEXT, NULL, b.data, head ? 0 : b.len);
	vg_strbuf_free(&b);
}

static void as_serve_one(int cfd, const struct as_opts *o, struct vg_as_state *st)
{
	static const char plain[] = "text/plain; charset=utf-8";
	struct vg_http_req rq;
	int rc = vg_http_read(cfd, VG_AS_BODY_MAX, &rq);
	if (rc != 0) {
		if (rc == 1) {
			st->count[VG_AS_REFUSED_PAYLOAD]++;
			fprintf(stderr, "vramguard: autoscale: refused_payload: a request too large or malformed (HTTP): "
				"nothing changed\n");
		}
		return;
	}
	if (!strcmp(rq.target, "/metrics")) {
		if (strcmp(rq.method, "GET") && strcmp(rq.method, "HEAD"))
			vg_http_reply(cfd, "405 Method Not Allowed", plain, NULL, "only GET\n", 9);
		else
			as_metrics(cfd, st, !strcmp(rq.method, "HEAD"));
	} else if (strcmp(rq.target, "/") && strcmp(rq.target, "/alertmanager")) {
		vg_http_reply(cfd, "404 Not Found", plain, NULL, "not found: POST / (the webhook), GET /metrics\n", 46);
	} else if (strcmp(rq.method, "POST")) {
		vg_http_reply(cfd, "405 Method Not Allowed", plain, NULL, "only POST\n", 10);
	} else if (!as_authorized(o, &rq)) {
		st->count[VG_AS_REFUSED_AUTH]++;
		fprintf(stderr, "vramguard: autoscale: refused_auth: a POST without the bearer token of --token-file: "
			"nothing changed\n");
		vg_http_reply(cfd, "401 Unauthorized", plain, "WWW-Authenticate: Bearer\r\n", "bearer token required\n",
			      22);
	} else {
		char msg[VG_CLI_WHY_MAX + 32];
		int code = vg_as_handle(&o->pol, st, rq.body, rq.bodylen, msg, sizeof(msg));
		vg_http_reply(cfd, code == 200 ? "200 OK" : "400 Bad Request", plain, NULL, msg, strlen(msg));
	}
	vg_http_req_free(&rq);
}

int vg_cli_autoscale(int argc, char **argv)
{
	static struct as_opts o;        /* the state is large (the cool-down table): not on the stack */
	static struct vg_as_state st;
	int rc = as_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = as_on_signal;   /* no SA_RESTART: poll returns at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	char err[VG_CLI_WHY_MAX];
	bool loop = true;
	int lfd = o.socket ? vg_http_listen_unix(o.socket, "autoscale", err, sizeof(err))
			   : vg_http_listen(o.listen, "autoscale", "/", &loop, err, sizeof(err));
	if (lfd < 0)
		return vg_cli_fail(1, "autoscale: %s", err);
	if (!loop && !o.allow_remote) {
		close(lfd);
		return vg_cli_fail(2, "autoscale: --listen %s is not a loopback address: add --allow-remote if other "
				  "machines must reach it (the token then travels in clear unless a proxy adds TLS)",
				  vg_cli_q(o.listen));
	}
	char ceil[32] = "none";
	if (o.pol.ceiling)
		vg_cli_size(o.pol.ceiling, ceil, sizeof(ceil));
	char shrink[48] = "";
	if (o.pol.shrink_after >= 0)
		snprintf(shrink, sizeof(shrink), ", lowered again %.0fs after resolved", o.pol.shrink_after);
	fprintf(stderr, "vramguard: autoscale: step %s, ceiling %s (%d per target), cool-down %.0fs%s, %s%s\n",
		o.pol.step_text, ceil, o.pol.nceil, o.pol.cooldown, shrink,
		o.pol.nalerts ? "some alert names" : "every alert name", o.pol.dry_run ? ", dry run: nothing will be changed"
										      : "");
	while (!as_stop) {
		/* Woken for a connection, or when a --shrink-after lowering is due (vg_as_tick says when). */
		struct pollfd p = { lfd, POLLIN, 0 };
		if (poll(&p, 1, vg_as_tick(&o.pol, &st)) > 0 && (p.revents & POLLIN)) {
			int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (cfd >= 0) {
				as_serve_one(cfd, &o, &st);
				close(cfd);
			}
		}
	}
	close(lfd);
	if (o.socket)
		unlink(o.socket);
	return 0;
}
