/* The command's HTTP server (cli/http.c) with a handler of the test's own, for what the exporter and the receiver
 * cannot show: answers larger than the kernel's socket buffers (a client that never reads them must not hold up the
 * others), and a count of the requests served.
 *
 *   http_serve [BIG_MIB]      listen on 127.0.0.1 (any free port, said on stderr as the commands say it) and serve:
 *                             GET /big: BIG_MIB MiB (default 16) of 'x'; GET /small: "small\n"; GET /count: the
 *                             requests answered so far; anything else 404. SIGTERM ends it (exit 0). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/http.h"

struct serve_ctx {
	char *big;
	size_t biglen;
	unsigned long served;
};

static void serve(void *ctx, const struct vg_http_req *rq, struct vg_http_out *out)
{
	struct serve_ctx *s = ctx;
	char n[32];
	s->served++;
	if (!strcmp(rq->target, "/big"))
		vg_http_reply(out, "200 OK", "text/plain", NULL, s->big, s->biglen);
	else if (!strcmp(rq->target, "/small"))
		vg_http_reply(out, "200 OK", "text/plain", NULL, "small\n", 6);
	else if (!strcmp(rq->target, "/count")) {
		int len = snprintf(n, sizeof(n), "%lu\n", s->served);
		vg_http_reply(out, "200 OK", "text/plain", NULL, n, (size_t)len);
	} else
		vg_http_reply(out, "404 Not Found", "text/plain", NULL, "not found\n", 10);
}

int main(int argc, char **argv)
{
	struct serve_ctx s = { NULL, (size_t)(argc > 1 ? atoi(argv[1]) : 16) << 20, 0 };
	char err[256];
	s.big = malloc(s.biglen);
	if (!s.big)
		return 1;
	memset(s.big, 'x', s.biglen);
	vg_http_stop_on_signals();
	int lfd = vg_http_listen("127.0.0.1:0", "http_serve", "/", NULL, err, sizeof(err));
	if (lfd < 0) {
		fprintf(stderr, "http_serve: %s\n", err);
		return 1;
	}
	struct vg_http_handler h = { .ctx = &s, .body_max = 4096, .serve = serve };
	vg_http_serve(lfd, &h);
	close(lfd);
	free(s.big);
	return 0;
}
