/* `vramguard exporter`: the regions of VRAMGUARD_SHM_DIR as Prometheus metrics (cli/metrics.c builds them), served
 * over HTTP/1.1 (GET /metrics, cli/http.c: every connection served at once, each with its deadlines, so that a stuck
 * client cannot hold up a scrape), written atomically for node_exporter's textfile collector, or printed once. Every scrape reads copies of
 * the slots and takes no lock a job waits for. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/http.h"
#include "cli/metrics.h"
#include "config/config.h"

struct exp_opts {
	const char *listen, *textfile;
	double interval;
	bool once;
	char dir[VG_CLI_DIR_MAX];
	char shared[VG_SHARED_PATH_MAX];
};

static int exp_build(struct vg_metrics_state *st, const struct exp_opts *o, bool om, struct vg_strbuf *b)
{
	char err[VG_CLI_WHY_MAX];
	if (vg_metrics_build(st, o->dir, o->shared, om, b, err, sizeof(err)) != 0)
		fprintf(stderr, "vramguard: warning: exporter: %s\n", err);
	return vg_strbuf_result(b);
}

/* Write the exposition to o->textfile through a temporary file of the same directory, then rename: a reader sees
 * the old file or the new one, never half of one. The temporary is made by mkostemp (O_CREAT|O_EXCL, a name nobody
 * can guess): the collector's directory is often writable by others (a group), and a name they could guess (it was
 * TEXTFILE.PID.tmp) lets them plant a symlink there through which root writes, and re-modes, any file. */
static int exp_textfile(struct vg_metrics_state *st, const struct exp_opts *o)
{
	struct vg_strbuf b = { 0 };
	char tmp[4096];
	if (exp_build(st, o, false, &b) != 0 || !b.data) {
		vg_strbuf_free(&b);
		return vg_cli_fail(1, "exporter: out of memory");
	}
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", o->textfile) >= (int)sizeof(tmp)) {
		vg_strbuf_free(&b);
		return vg_cli_fail(1, "exporter: --textfile %s: name too long", vg_cli_q(o->textfile));
	}
	int fd = mkostemp(tmp, O_CLOEXEC), e = 0;
	const char *what = "write";
	if (fd < 0) {
		e = errno;
		vg_strbuf_free(&b);
		return vg_cli_fail(1, "exporter: cannot create a temporary file beside %s: %s", vg_cli_q(o->textfile),
				   strerror(e));
	}
	/* node_exporter reads it as whoever it runs as; it holds nothing secret. */
	if (fchmod(fd, 0644) != 0)
		what = "chmod", e = errno;
	for (size_t at = 0; at < b.len && !e;) {
		ssize_t w = write(fd, b.data + at, b.len - at);
		if (w < 0 && errno != EINTR)
			e = errno;
		else if (w > 0)
			at += (size_t)w;
	}
	if (close(fd) != 0 && !e)
		what = "close", e = errno;
	if (!e && rename(tmp, o->textfile) != 0)
		what = "rename", e = errno;
	vg_strbuf_free(&b);
	if (e) {
		unlink(tmp);
		return vg_cli_fail(1, "exporter: cannot %s %s: %s", what, vg_cli_q(!strcmp(what, "rename") ? o->textfile
											: tmp), strerror(e));
	}
	return 0;
}

/* ---- HTTP (cli/http.c) ---- */

struct exp_server {
	struct vg_metrics_state *st;
	const struct exp_opts *o;
	double next;                    /* the next --textfile rewrite (monotonic seconds), with --interval */
	int rc;
};

static void exp_serve(void *ctx, const struct vg_http_req *rq, struct vg_http_out *out)
{
	struct exp_server *s = ctx;
	static const char plain[] = "text/plain; charset=utf-8";
	if (strcmp(rq->target, "/metrics") != 0) {
		vg_http_reply(out, "404 Not Found", plain, NULL, "not found: try /metrics\n", 24);
		return;
	}
	if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0) {
		vg_http_reply(out, "405 Method Not Allowed", plain, NULL, "only GET\n", 9);
		return;
	}
	/* OpenMetrics when the Accept header asks for it */
	char accept[1024] = "";
	vg_http_header(rq, "Accept", accept, sizeof(accept));
	bool om = strstr(accept, "application/openmetrics-text") != NULL;
	struct vg_strbuf b = { 0 };
	if (exp_build(s->st, s->o, om, &b) != 0 || !b.data)
		vg_http_reply(out, "500 Internal Server Error", plain, NULL, "out of memory\n", 14);
	else
		vg_http_reply(out, "200 OK", om ? VG_METRICS_CT_OPENMETRICS : VG_METRICS_CT_TEXT, NULL, b.data,
			      strcmp(rq->method, "HEAD") ? b.len : 0);
	vg_strbuf_free(&b);
}

/* --textfile with --interval: rewritten when due; the milliseconds until the next time. */
static int exp_tick(void *ctx)
{
	struct exp_server *s = ctx;
	if (!s->o->textfile || !s->o->interval)
		return -1;
	double now = vg_cli_now();
	if (now >= s->next) {
		if (exp_textfile(s->st, s->o) != 0)
			s->rc = 1;      /* said; try again next round */
		s->next = now + s->o->interval;
	}
	return (int)((s->next - vg_cli_now()) * 1000) + 1;
}

static int exp_parse(int argc, char **argv, struct exp_opts *o)
{
	struct vg_cli_getopt g;
	const char *dir = NULL, *usage = vg_cli_usage_of("exporter");
	int k;
	memset(o, 0, sizeof(*o));
	vg_cli_getopt_init(&g, "exporter", NULL, "");
	while ((k = vg_cli_getopt(&g, argc, argv)) != VG_CLI_OPT_END) {
		switch (k) {
		case VG_OPT_EXPORTER_LISTEN: o->listen = optarg; break;
		case VG_OPT_EXPORTER_TEXTFILE: o->textfile = optarg; break;
		case VG_OPT_EXPORTER_INTERVAL: {
			double v;
			if (!vg_cli_seconds(optarg, &v) || !(v >= 0.1 && v <= 86400))
				return vg_cli_usage(usage, "exporter: invalid --interval %s (expected seconds from 0.1 to "
						    "86400, e.g. 15)", vg_cli_q(optarg));
			o->interval = v;
			break;
		}
		case VG_OPT_EXPORTER_ONCE: o->once = true; break;
		case VG_OPT_EXPORTER_DIR: dir = optarg; break;
		case VG_CLI_OPT_HELP: return vg_cli_help("exporter");
		default: return vg_cli_bad_option(&g, argv);
		}
	}
	if (optind < argc)
		return vg_cli_usage(usage, "exporter: unexpected argument %s", vg_cli_q(argv[optind]));
	if (o->interval && !o->textfile)
		return vg_cli_usage(usage, "exporter: --interval is for --textfile");
	if (o->once && o->listen)
		return vg_cli_usage(usage, "exporter: --once does not serve: drop --listen");
	if (o->textfile && !o->textfile[0])
		return vg_cli_usage(usage, "exporter: --textfile needs a file name");
	char err[VG_CLI_WHY_MAX];
	if (vg_cli_dir(dir, o->dir, sizeof(o->dir), err, sizeof(err)) != 0)
		return vg_cli_fail(2, "%s", err);
	const struct vg_config *cfg = vg_cli_env(o->dir, err, sizeof(err));
	if (!cfg)
		return vg_cli_fail(2, "%s", err);
	snprintf(o->shared, sizeof(o->shared), "%s", cfg->shared_name);
	if (!o->listen && !o->textfile && !o->once)
		o->listen = VG_EXPORTER_LISTEN_DEFAULT;
	return -1;
}

int vg_cli_exporter(int argc, char **argv)
{
	struct exp_opts o;
	int rc = exp_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	struct vg_metrics_state st;
	memset(&st, 0, sizeof(st));
	if (o.once && !o.textfile) {
		struct vg_strbuf b = { 0 };
		rc = exp_build(&st, &o, false, &b) == 0 && b.data &&
			     fwrite(b.data, 1, b.len, stdout) == b.len && fflush(stdout) == 0 ? 0 : 1;
		vg_strbuf_free(&b);
		return rc;
	}
	if (o.textfile && (o.once || (!o.interval && !o.listen)))
		return exp_textfile(&st, &o);

	vg_http_stop_on_signals();
	char err[VG_CLI_WHY_MAX];
	int lfd = -1;
	if (o.listen && (lfd = vg_http_listen(o.listen, "exporter", "/metrics", NULL, err, sizeof(err))) < 0)
		return vg_cli_fail(1, "exporter: %s", err);
	struct exp_server srv = { &st, &o, vg_cli_now(), 0 };
	struct vg_http_handler h = { .ctx = &srv, .body_max = 0, .serve = exp_serve, .tick = exp_tick };
	vg_http_serve(lfd, &h);
	rc = srv.rc;
	if (lfd >= 0)
		close(lfd);
	return rc;
}
