/* The command's HTTP/1.1 request reader (cli/http_req.c): bytes in as they come, one bounded request out. It takes
 * bytes, not a socket, so that the server's loop (cli/http.h) and tests/fuzz/fuzz_http.c drive the same code; it
 * knows nothing of the server. */
#ifndef VG_CLI_HTTP_REQ_H
#define VG_CLI_HTTP_REQ_H

#include <stdbool.h>
#include <stddef.h>

#define VG_HTTP_HEAD_MAX 8192

struct vg_http_req {
	char method[16], target[1024];  /* target without its query string */
	char *head;                     /* the request line and headers, NUL-terminated, no NUL inside */
	char *body;                     /* Content-Length bytes, NUL-terminated (NULL when there is none) */
	size_t bodylen;
};

/* What vg_http_in_feed says of the bytes so far. */
enum vg_http_read { VG_HTTP_MORE, VG_HTTP_DONE, VG_HTTP_REFUSED };

/* One request being read: zeroed, then body_max set (the largest Content-Length taken; 0 refuses any body). The
 * headers are at most VG_HTTP_HEAD_MAX bytes; a chunked body is refused; lines may end with CRLF or a bare LF. */
struct vg_http_in {
	size_t body_max;
	char *buf;                      /* what came, a NUL after it; grown as the body comes, never past what it needs */
	size_t cap, got;
	size_t scanned;                 /* the headers' end is looked for from here (each byte looked at once) */
	size_t hl, clen;                /* the headers' length once their end came (0 before), the Content-Length */
	const char *status;             /* VG_HTTP_REFUSED: "400 Bad Request", 411, 413, 431 */
	char why[96];                   /* and the answer's body, one line */
	struct vg_http_req rq;          /* VG_HTTP_DONE: the request, pointing into buf */
};
/* Where the next bytes go and how many may come (*len > 0 while the request is not whole): NULL when out of memory. */
char *vg_http_in_room(struct vg_http_in *in, size_t *len);
/* n bytes were written at vg_http_in_room's pointer: VG_HTTP_MORE, VG_HTTP_DONE (in->rq) or VG_HTTP_REFUSED
 * (in->status, in->why). Bytes after a whole request (a pipelined one) are ignored: one request a connection. */
enum vg_http_read vg_http_in_feed(struct vg_http_in *in, size_t n);
void vg_http_in_free(struct vg_http_in *in);
/* The value of header name (case-insensitive) into out, trimmed; false if absent. */
bool vg_http_header(const struct vg_http_req *rq, const char *name, char *out, size_t len);

#endif
