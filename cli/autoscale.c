/* `vramguard autoscale`: a receiver of Alertmanager's webhook that raises the limit an alert names (a shared region's
 * budget, a process's quota) by a step, within a ceiling, at most once per cool-down, while the job runs. The decisions
 * are in cli/autoscale_act.c and autoscale_shrink.c (their parts: cli/autoscale_target.h); this file has the options
 * (one table, for the command line and --config's file), the listener (cli/http.c: loopback or a Unix socket unless
 * told otherwise), the bearer token and the counters at /metrics. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/autoscale_act.h"
#include "cli/autoscale_shrink.h"
#include "cli/autoscale_target.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/http.h"
#include "cli/metrics.h"
#include "cli/scan.h"
#include "config/config.h"
#include "config/stat.h"

#define AS_TOKEN_MAX 512
#define AS_CONFIG_MAX (64 << 10)

struct as_opts {
	const char *listen, *socket, *token_path, *dir;
	bool allow_remote;
	char token[AS_TOKEN_MAX + 1];
	struct vg_as_policy pol;
	bool file_ceiling;              /* the global ceiling came from --config's file: the command line replaces it */
	char config[AS_CONFIG_MAX + 1]; /* the file's text, its values cut out in place (policy strings point into it) */
	char paths[3][PATH_MAX];        /* its relative socket, token-file and dir, made relative to its directory */
};

static int as_bad(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int as_bad(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

static int as_size(const char *what, const char *s, uint64_t *out, char *err, size_t len)
{
	char why[VG_ERR_MAX];
	if (vg_parse_size(s, (uint64_t)1 << 20, out, why, sizeof(why)) != 0 || *out == UINT64_MAX)
		return as_bad(err, len, "invalid %s %s: %s (expected e.g. 4096 for MiB, 2G, 512M)", what, vg_cli_q(s),
			      why[0] ? why : "too large");
	return 0;
}

static int as_ceiling_arg(struct as_opts *o, const char *s, bool file, char *err, size_t len)
{
	struct vg_as_policy *p = &o->pol;
	const char *eq = strchr(s, '=');
	if (!eq) {
		if (p->ceiling && file == o->file_ceiling)
			return as_bad(err, len, "--ceiling %s: a global ceiling was given already", vg_cli_q(s));
		o->file_ceiling = file;
		return as_size("--ceiling", s, &p->ceiling, err, len);
	}
	if (p->nceil == VG_AS_CEILINGS_MAX)
		return as_bad(err, len, "more than %d --ceiling", VG_AS_CEILINGS_MAX);
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
		if (!vg_as_region_name(c->region))     /* alerts name regions by NAME only (autoscale_act.c) */
			return as_bad(err, len, "invalid --ceiling %s: a region is named by its NAME, as the exporter's "
				      "labels name it (e.g. region:team=16G), not by a path", vg_cli_q(s));
	} else
		goto bad;
	if (as_size("--ceiling", eq + 1, &c->bytes, err, len))
		return -1;
	p->nceil++;
	return 0;
bad:
	return as_bad(err, len, "invalid --ceiling %s (expected SIZE, region:NAME=SIZE or pid:PID=SIZE, e.g. "
		      "region:team=16G)", vg_cli_q(s));
}

static int as_step_arg(struct vg_as_policy *p, const char *s, char *err, size_t len)
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
			return as_bad(err, len, "invalid --step %s (expected a size, 2G, or a percentage of the limit from "
				      "1%% to 1000%%, 25%%)", vg_cli_q(s));
		p->step_pct = (unsigned)v;
		return 0;
	}
	return as_size("--step", s, &p->step_bytes, err, len);
}

static int as_duration(const char *what, const char *s, double *out, char *err, size_t len)
{
	char num[32];
	size_t n = strlen(s);
	double mult = 1, v;
	if (n && strchr("smh", s[n - 1])) {
		mult = s[n - 1] == 'h' ? 3600 : s[n - 1] == 'm' ? 60 : 1;
		n--;
	}
	if (n && n < sizeof(num)) {
		memcpy(num, s, n);
		num[n] = '\0';
		if (vg_cli_seconds(num, &v) && v >= 0 && v * mult <= 7 * 86400.0) {
			*out = v * mult;
			return 0;
		}
	}
	return as_bad(err, len, "invalid %s %s (expected seconds or 30s, 5m, 1h; at most 7 days)", what, vg_cli_q(s));
}

/* A relative path of the file: relative to the file's directory. */
static const char *as_path(const char *file, const char *v, char *buf)
{
	const char *slash = strrchr(file, '/');
	if (v[0] == '/' || !v[0] || !slash)
		return v;
	snprintf(buf, PATH_MAX, "%.*s/%s", (int)(slash - file), file, v);
	return buf;
}

/* One option (its row k, VG_OPT_AS_*) with its value (NULL for a flag without one): 0, or -1 with the message in
 * err. file: the --config file it comes from, or NULL for the command line. */
static int as_set(struct as_opts *o, int k, const char *v, const char *file, char *err, size_t len)
{
	struct vg_as_policy *p = &o->pol;
	switch (k) {
	case VG_OPT_AS_CEILING: return as_ceiling_arg(o, v, file != NULL, err, len);
	case VG_OPT_AS_STEP: return as_step_arg(p, v, err, len);
	case VG_OPT_AS_COOLDOWN: return as_duration("--cooldown", v, &p->cooldown, err, len);
	case VG_OPT_AS_SHRINK_AFTER: return as_duration("--shrink-after", v, &p->shrink_after, err, len);
	case VG_OPT_AS_ALERT:
		if (p->nalerts == VG_AS_ALERTS_MAX || !v[0])
			return as_bad(err, len, "invalid --alert %s (an alertname; at most %d)", vg_cli_q(v),
				      VG_AS_ALERTS_MAX);
		p->alerts[p->nalerts++] = v;
		return 0;
	case VG_OPT_AS_DRY_RUN: p->dry_run = true; return 0;
	case VG_OPT_AS_ALLOW_REMOTE: o->allow_remote = true; return 0;
	case VG_OPT_AS_LISTEN: o->listen = v; return 0;
	case VG_OPT_AS_SOCKET: o->socket = file ? as_path(file, v, o->paths[0]) : v; return 0;
	case VG_OPT_AS_TOKEN_FILE: o->token_path = file ? as_path(file, v, o->paths[1]) : v; return 0;
	case VG_OPT_AS_DIR: o->dir = file ? as_path(file, v, o->paths[2]) : v; return 0;
	}
	return as_bad(err, len, "unknown option '%s'", vg_cli_command("autoscale")->flags[k].name);
}

static char *as_trim(char *s, char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	*end = '\0';
	return s;
}

_Static_assert(VG_OPT_END_autoscale <= 32, "as_config's seen is a 32-bit mask of the flags");

/* The names --config's file takes: "ceiling, step, ... or shrink-after" (every flag but config). */
static const char *as_config_names(const struct vg_cli_flag *flags)
{
	static char names[256];
	size_t o = 0;
	int left = VG_OPT_END_autoscale - 1;    /* names still to come */
	for (int k = 0; k < VG_OPT_END_autoscale && o < sizeof(names); k++) {
		if (k == VG_OPT_AS_CONFIG)
			continue;
		left--;
		o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", flags[k].name,
				      left > 1 ? ", " : left == 1 ? " or " : "");
	}
	return names;
}

/* --config FILE: `name = value` lines, names the long options', `#` comments; strict (FILE:LINE and exit 2). */
static int as_config(struct as_opts *o, const char *file)
{
	const struct vg_cli_flag *flags = vg_cli_command("autoscale")->flags;
	char err[VG_CLI_WHY_MAX];
	FILE *f = fopen(file, "re");
	if (!f)
		return vg_cli_fail(2, "autoscale: %s: cannot read --config: %s", file, strerror(errno));
	size_t n = fread(o->config, 1, AS_CONFIG_MAX + 1, f);
	bool ioerr = ferror(f);
	fclose(f);
	if (ioerr || n > AS_CONFIG_MAX || memchr(o->config, '\0', n))
		return vg_cli_fail(2, "autoscale: %s: cannot read --config: %s", file,
				   ioerr ? "read error" : n > AS_CONFIG_MAX ? "larger than 64 KiB" : "a NUL byte in it");
	o->config[n] = '\0';
	unsigned seen = 0;
	char *line = o->config;
	for (int ln = 1; line; ln++) {
		char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line), *next = nl ? nl + 1 : NULL;
		for (char *h = line; h < end; h++)       /* a comment: '#' at the start or after a blank */
			if (*h == '#' && (h == line || h[-1] == ' ' || h[-1] == '\t')) {
				end = h;
				break;
			}
		char *eq = memchr(line, '=', (size_t)(end - line));
		char *text = as_trim(line, end);
		if (!*text) {
			line = next;
			continue;
		}
		if (!eq)
			return vg_cli_fail(2, "autoscale: %s:%d: expected 'name = value', got %s", file, ln, vg_cli_q(text));
		char *name = as_trim(text, eq), *v = as_trim(eq + 1, end);
		int k = 0;
		while (k < VG_OPT_END_autoscale && (strcmp(flags[k].name, name) || k == VG_OPT_AS_CONFIG))
			k++;
		if (k == VG_OPT_END_autoscale)
			return vg_cli_fail(2, "autoscale: %s:%d: unknown option %s (expected %s)", file, ln, vg_cli_q(name),
					   as_config_names(flags));
		if (!flags[k].repeat && (seen & (1u << k)))
			return vg_cli_fail(2, "autoscale: %s:%d: %s given twice", file, ln, name);
		seen |= 1u << k;
		if (!flags[k].metavar) {
			if (strcmp(v, "true") && strcmp(v, "false"))
				return vg_cli_fail(2, "autoscale: %s:%d: invalid %s %s (expected true or false)", file, ln, name,
						   vg_cli_q(v));
			if (!strcmp(v, "false")) {
				line = next;
				continue;
			}
		}
		if (as_set(o, k, flags[k].metavar ? v : NULL, file, err, sizeof(err)) != 0)
			return vg_cli_fail(2, "autoscale: %s:%d: %s", file, ln, err);
		line = next;
	}
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

/* The command line, after --config's file when one is given (found by a first pass): its single-valued options
 * replace the file's, its repeatable ones add to them. */
static int as_parse(int argc, char **argv, struct as_opts *o)
{
	struct vg_cli_getopt g;
	const char *config = NULL, *usage = vg_cli_usage_of("autoscale");
	char err[VG_CLI_WHY_MAX];
	int k, rc;
	memset(o, 0, sizeof(*o));
	o->pol.cooldown = 300;
	o->pol.shrink_after = -1;
	as_step_arg(&o->pol, "25%", err, sizeof(err));
	vg_cli_getopt_init(&g, "autoscale", NULL, "");
	while ((k = vg_cli_getopt(&g, argc, argv)) != VG_CLI_OPT_END)
		if (k == VG_OPT_AS_CONFIG) {
			if (config)
				return vg_cli_usage(usage, "autoscale: --config given twice");
			config = optarg;
		}
	if (config && (rc = as_config(o, config)))
		return rc;
	vg_cli_getopt_init(&g, "autoscale", NULL, "");
	while ((k = vg_cli_getopt(&g, argc, argv)) != VG_CLI_OPT_END) {
		if (k == VG_CLI_OPT_HELP)
			return vg_cli_help("autoscale");
		if (k < 0)
			return vg_cli_bad_option(&g, argv);
		if (k != VG_OPT_AS_CONFIG && as_set(o, k, optarg, NULL, err, sizeof(err)) != 0)
			return vg_cli_usage(usage, "autoscale: %s", err);
	}
	if (optind < argc)
		return vg_cli_usage(usage, "autoscale: unexpected argument %s", vg_cli_q(argv[optind]));
	if (!o->pol.ceiling && !o->pol.nceil)
		return vg_cli_usage(usage, "autoscale: no --ceiling: say how far it may raise a limit "
				    "(--ceiling 16G, or region:NAME=SIZE, pid:PID=SIZE)");
	if (o->listen && o->socket)
		return vg_cli_usage(usage, "autoscale: --listen or --socket, not both");
	if (o->socket && o->allow_remote)
		return vg_cli_usage(usage, "autoscale: --allow-remote is for --listen");
	if (!o->socket && !o->listen)
		o->listen = VG_AS_LISTEN_DEFAULT;
	if (o->listen && !o->token_path)
		return vg_cli_usage(usage, "autoscale: --listen needs --token-file: any local user can "
				    "connect to a TCP port (or use --socket PATH, mode 0600)");
	if (o->token_path && (rc = as_token(o->token_path, o->token)))
		return rc;
	char why[VG_CLI_WHY_MAX];
	if (vg_cli_dir(o->dir, o->pol.dir, sizeof(o->pol.dir), why, sizeof(why)) != 0)
		return vg_cli_fail(2, "%s", why);
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

static void as_metrics(struct vg_http_out *out, const struct vg_as_state *st, bool head)
{
	struct vg_strbuf b = { 0 };
	vg_strbuf_printf(&b, "# HELP vramguard_autoscale_actions_total Decisions of vramguard autoscale on alerts, by "
			 "result.\n# TYPE vramguard_autoscale_actions_total counter\n");
	for (int r = 0; r < VG_AS_NRESULTS; r++)
		vg_strbuf_printf(&b, "vramguard_autoscale_actions_total{result=\"%s\"} %" PRIu64 "\n", vg_as_result_names[r],
				 st->count[r]);
	if (vg_strbuf_result(&b) != 0 || !b.data)
		vg_http_reply(out, "500 Internal Server Error", "text/plain", NULL, "out of memory\n", 14);
	else
		vg_http_reply(out, "200 OK", VG_METRICS_CT_TEXT, NULL, b.data, head ? 0 : b.len);
	vg_strbuf_free(&b);
}

struct as_server {
	const struct as_opts *o;
	struct vg_as_state *st;
};

/* A request the HTTP reader refused (too large, malformed): answered there; counted and said here. */
static void as_refused(void *ctx, const char *status)
{
	struct as_server *s = ctx;
	s->st->count[VG_AS_REFUSED_PAYLOAD]++;
	fprintf(stderr, "vramguard: autoscale: refused_payload: a request too large or malformed (HTTP %.3s): nothing "
		"changed\n", status);
}

static void as_serve(void *ctx, const struct vg_http_req *rq, struct vg_http_out *out)
{
	struct as_server *s = ctx;
	static const char plain[] = "text/plain; charset=utf-8";
	if (!strcmp(rq->target, "/metrics")) {
		if (strcmp(rq->method, "GET") && strcmp(rq->method, "HEAD"))
			vg_http_reply(out, "405 Method Not Allowed", plain, NULL, "only GET\n", 9);
		else
			as_metrics(out, s->st, !strcmp(rq->method, "HEAD"));
	} else if (strcmp(rq->target, "/") && strcmp(rq->target, "/alertmanager")) {
		vg_http_reply(out, "404 Not Found", plain, NULL, "not found: POST / (the webhook), GET /metrics\n", 46);
	} else if (strcmp(rq->method, "POST")) {
		vg_http_reply(out, "405 Method Not Allowed", plain, NULL, "only POST\n", 10);
	} else if (!as_authorized(s->o, rq)) {
		s->st->count[VG_AS_REFUSED_AUTH]++;
		fprintf(stderr, "vramguard: autoscale: refused_auth: a POST without the bearer token of --token-file: "
			"nothing changed\n");
		vg_http_reply(out, "401 Unauthorized", plain, "WWW-Authenticate: Bearer\r\n", "bearer token required\n",
			      22);
	} else {
		char msg[VG_CLI_WHY_MAX + 32];
		int code = vg_as_handle(&s->o->pol, s->st, rq->body, rq->bodylen, msg, sizeof(msg));
		vg_http_reply(out, code == 200 ? "200 OK" : "400 Bad Request", plain, NULL, msg, strlen(msg));
	}
}

/* Woken when a --shrink-after lowering is due (vg_as_tick does the due ones and says when the next is). */
static int as_tick(void *ctx)
{
	struct as_server *s = ctx;
	return vg_as_tick(&s->o->pol, s->st);
}

int vg_cli_autoscale(int argc, char **argv)
{
	static struct as_opts o;        /* the state is large (the cool-down table): not on the stack */
	static struct vg_as_state st;
	int rc = as_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	vg_http_stop_on_signals();
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
	char alerts[32] = "every alert name";
	if (o.pol.nalerts)
		snprintf(alerts, sizeof(alerts), "%d alert name%s", o.pol.nalerts, o.pol.nalerts > 1 ? "s" : "");
	fprintf(stderr, "vramguard: autoscale: step %s, ceiling %s (%d per target), cool-down %.0fs%s, %s%s\n",
		o.pol.step_text, ceil, o.pol.nceil, o.pol.cooldown, shrink, alerts,
		o.pol.dry_run ? ", dry run: nothing will be changed" : "");
	struct as_server srv = { &o, &st };
	struct vg_http_handler h = { .ctx = &srv, .body_max = VG_AS_BODY_MAX, .serve = as_serve, .refused = as_refused,
				     .tick = as_tick };
	vg_http_serve(lfd, &h);
	close(lfd);
	if (o.socket)
		unlink(o.socket);
	return 0;
}
