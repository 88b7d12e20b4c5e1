/* The command's small HTTP/1.1 server, shared by `vramguard exporter` (GET /metrics) and `vramguard autoscale`
 * (POST of Alertmanager's webhook, GET /metrics): one request per connection, one connection at a time, read and
 * write timeouts so that a stuck client cannot hold up the next one, bounded header and body sizes. Listening on
 * TCP (ADDR:PORT, port 0 for any free port, said on stderr) or on a Unix socket (mode 0600). */
#ifndef VG_CLI_HTTP_H
#define VG_CLI_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#define VG_HTTP_HEAD_MAX 8192
#define VG_HTTP_TIMEOUT_S 2

/* Listen on ADDR:PORT ([::1]:PORT for IPv6); say "vramguard: WHO: listening on http://HOST:PORT/PATH" on stderr.
 * *loopback (may be NULL) tells whether the address bound is a loopback one (127.0.0.0/8, ::1). The socket, or -1
 * with the message in err. */
int vg_http_listen(const char *spec, const char *who, const char *path, bool *loopback, char *err, size_t errlen);
/* Listen on a Unix socket at path, mode 0600 (a stale socket there is replaced; any other file is refused). */
int vg_http_listen_unix(const char *path, const char *who, char *err, size_t errlen);

struct vg_http_req {
	char method[16], target[1024];  /* target without its query string */
	char *head;                     /* the request line and headers, NUL-terminated */
	char *body;                     /* Content-Length bytes, NUL-terminated (NULL when there is none) */
	size_t bodylen;
};
/* Read one request from cfd (a connection just accepted): the headers (at most VG_HTTP_HEAD_MAX bytes) and a body of
 * at most body_max bytes announced by Content-Length (a chunked body is refused). 0 with rq filled (free it with
 * vg_http_req_free); 1 when the request was refused and answered (400, 411, 413, 431); -1 when the client closed
 * or timed out (nothing to answer). */
int vg_http_read(int cfd, size_t body_max, struct vg_http_req *rq);
void vg_http_req_free(struct vg_http_req *rq);
/* The value of header name (case-insensitive) into out, trimmed; false if absent. */
bool vg_http_header(const struct vg_http_req *rq, const char *name, char *out, size_t len);
/* Send a whole response (Connection: close); extra: more header lines, each ending "\r\n", or NULL. */
void vg_http_reply(int fd, const char *status, const char *type, const char *extra, const char *body, size_t len);
/* SIGINT and SIGTERM end a server's loop: vg_http_stopping turns true and a poll waiting returns at once (no
 * SA_RESTART). SIGPIPE is ignored: a client gone in the middle of an answer is not the server's end. */
void vg_http_stop_on_signals(void);
bool vg_http_stopping(void);

#endif
