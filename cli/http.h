/* The command's small HTTP/1.1 server, shared by `vramguard exporter` (GET /metrics) and `vramguard autoscale`
 * (POST of Alertmanager's webhook, GET /metrics): one request per connection, served concurrently by one poll(2)
 * loop (cli/http.c): every connection non-blocking with its own buffer and its own deadlines (a whole request within
 * VG_HTTP_TIMEOUT_S of its connection, a whole answer within VG_HTTP_TIMEOUT_S of its start), at most
 * VG_HTTP_CONNS_MAX open at once, bounded header and body sizes. The request reader (cli/http_req.c) takes bytes,
 * not a socket, so that tests/fuzz/fuzz_http.c drives it as the loop does. Listening on TCP (ADDR:PORT, port 0 for
 * any free port, said on stderr) or on a Unix socket (mode 0600). Why a loop of our own and not libmicrohttpd:
 * docs/http.md. */
#ifndef VG_CLI_HTTP_H
#define VG_CLI_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/http_req.h"

#define VG_HTTP_TIMEOUT_S 2
/* Connections open at once. A newcomer past it takes the place of the oldest one still sending its request; while
 * every one is being answered, newcomers wait in the listen backlog. */
#define VG_HTTP_CONNS_MAX 128
#define VG_HTTP_BACKLOG 512          /* listen(2)'s: a burst of newcomers waits there, not refused */

/* Listen on ADDR:PORT ([::1]:PORT for IPv6); say "vramguard: WHO: listening on http://HOST:PORT/PATH" on stderr.
 * *loopback (may be NULL) tells whether the address bound is a loopback one (127.0.0.0/8, ::1). The socket
 * (non-blocking), or -1 with the message in err. */
int vg_http_listen(const char *spec, const char *who, const char *path, bool *loopback, char *err, size_t errlen);
/* Listen on a Unix socket at path, mode 0600 (a stale socket there is replaced; any other file is refused). */
int vg_http_listen_unix(const char *path, const char *who, char *err, size_t errlen);

/* ---- serving (cli/http.c) ---- */

/* A connection's answer, made by the server's handler with vg_http_reply and written by the loop as the client
 * takes it. */
struct vg_http_out;
/* The whole answer (Connection: close); extra: more header lines, each ending "\r\n", or NULL. A second call
 * replaces the first; out of memory, the connection is closed unanswered. */
void vg_http_reply(struct vg_http_out *out, const char *status, const char *type, const char *extra,
		   const char *body, size_t len);

struct vg_http_handler {
	void *ctx;
	size_t body_max;                /* the largest request body taken (Content-Length) */
	/* A whole request: answer it with vg_http_reply (no answer: 500). Called in the loop: it should not wait. */
	void (*serve)(void *ctx, const struct vg_http_req *rq, struct vg_http_out *out);
	/* A request the reader refused and answered itself (400, 411, 413, 431), for the caller's counters; or NULL. */
	void (*refused)(void *ctx, const char *status);
	/* Once a round, before waiting: the caller's own timers (a textfile to rewrite, a limit to lower). The
	 * milliseconds until it wants to be called again, -1 for never; or NULL. */
	int (*tick)(void *ctx);
};
/* Serve lfd (vg_http_listen's; -1: no socket, only the ticks) until vg_http_stopping(). A connection that cannot
 * get the memory it needs is closed; the loop goes on. */
void vg_http_serve(int lfd, const struct vg_http_handler *h);

/* SIGINT and SIGTERM end a server's loop: vg_http_stopping turns true and the loop's wait returns at once (the
 * signals are blocked outside it, so that one arriving between the check and the wait is not lost). SIGPIPE is
 * ignored: a client gone in the middle of an answer is not the server's end. */
void vg_http_stop_on_signals(void);
bool vg_http_stopping(void);

#endif
