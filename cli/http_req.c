/* The command's HTTP/1.1 request reader (cli/http_req.h): bytes in as they come, one bounded request out. No socket
 * here, so that the server's loop (cli/http.c) and the fuzzer (tests/fuzz/fuzz_http.c) drive the same code. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/http_req.h"

/* Header lines end with CRLF, or with a bare LF from a client that sends those (RFC 9112 lets a server accept it). */
static bool http_find(const char *head, const char *name, const char **val, size_t *vlen)
{
	size_t nl = strlen(name);
	for (const char *l = strchr(head, '\n'); l; l = strchr(l + 1, '\n')) {
		const char *s = l + 1;
		if (strncasecmp(s, name, nl) != 0 || s[nl] != ':')
			continue;
		s += nl + 1;
		while (*s == ' ' || *s == '\t')
			s++;
		const char *e = strchr(s, '\n');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
			n--;
		*val = s;
		*vlen = n;
		return true;
	}
	return false;
}

bool vg_http_header(const struct vg_http_req *rq, const char *name, char *out, size_t len)
{
	const char *v;
	size_t n;
	if (!rq->head || !http_find(rq->head, name, &v, &n) || !len)
		return false;
	if (n >= len)
		n = len - 1;
	memcpy(out, v, n);
	out[n] = '\0';
	return true;
}

void vg_http_in_free(struct vg_http_in *in)
{
	free(in->buf);
	in->buf = NULL;
	in->cap = in->got = 0;
}

/* The most the request may still need: the headers' room before their end came, then the body's. */
static size_t http_want(const struct vg_http_in *in)
{
	if (!in->hl)
		return VG_HTTP_HEAD_MAX - in->got;
	return in->got < in->hl + in->clen ? in->hl + in->clen - in->got : 0;
}

char *vg_http_in_room(struct vg_http_in *in, size_t *len)
{
	size_t want = http_want(in);
	/* The headers' buffer first; for a body, doubled each time it is full, up to what the request needs, so that a
	 * client announcing 1 MiB holds only about what it sent. One byte more for the NUL after what came. */
	if (!in->buf || (in->got + 1 == in->cap && want)) {
		size_t cap = in->buf ? in->cap * 2 : VG_HTTP_HEAD_MAX + 1;
		if (cap > in->got + want + 1)
			cap = in->got + want + 1;
		char *b = realloc(in->buf, cap);
		if (!b)
			return NULL;
		in->buf = b;
		in->cap = cap;
	}
	size_t room = in->cap - in->got - 1;
	*len = want < room ? want : room;
	return in->buf + in->got;
}

static enum vg_http_read http_refuse(struct vg_http_in *in, const char *status, const char *why)
{
	in->status = status;
	snprintf(in->why, sizeof(in->why), "%s", why);
	return VG_HTTP_REFUSED;
}

/* The headers have come (the request line and header lines, then an empty line): check them. */
static enum vg_http_read http_head(struct vg_http_in *in, char *last_lf)
{
	struct vg_http_req *rq = &in->rq;
	char *buf = in->buf;
	if (memchr(buf, '\0', in->hl))
		return http_refuse(in, "400 Bad Request", "bad request: a NUL byte in the headers\n");
	/* The headers end with their last line's LF; the body is not searched. */
	last_lf[1] = '\0';
	if (sscanf(buf, "%15s %1023s", rq->method, rq->target) != 2)
		return http_refuse(in, "400 Bad Request", "bad request\n");
	char *q = strchr(rq->target, '?');
	if (q)
		*q = '\0';
	const char *v;
	size_t vl;
	if (http_find(buf, "Transfer-Encoding", &v, &vl))
		return http_refuse(in, "411 Length Required", "send the body with Content-Length\n");
	unsigned long long clen = 0;
	if (http_find(buf, "Content-Length", &v, &vl)) {
		char num[24], *e;
		if (!vl || vl >= sizeof(num) || v[0] < '0' || v[0] > '9')
			return http_refuse(in, "400 Bad Request", "bad Content-Length\n");
		memcpy(num, v, vl);
		num[vl] = '\0';
		errno = 0;
		clen = strtoull(num, &e, 10);
		if (errno || *e)
			return http_refuse(in, "400 Bad Request", "bad Content-Length\n");
	}
	if (clen > in->body_max) {
		in->status = "413 Content Too Large";
		snprintf(in->why, sizeof(in->why), "body too large: %llu bytes, at most %zu\n", clen, in->body_max);
		return VG_HTTP_REFUSED;
	}
	in->clen = (size_t)clen;
	return VG_HTTP_MORE;
}

enum vg_http_read vg_http_in_feed(struct vg_http_in *in, size_t n)
{
	in->got += n;
	in->buf[in->got] = '\0';
	if (!in->hl) {
		/* The end of the headers, the first empty line: an LF followed by LF or CRLF. Looked for from where the last
		 * look stopped (less the two bytes a pattern may have begun with), so a trickling client costs each byte
		 * once. */
		size_t at = in->scanned > 2 ? in->scanned - 2 : 0;
		char *p = in->buf + at, *end = in->buf + in->got;
		for (; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) {
			if (p + 1 < end && p[1] == '\n') {
				in->hl = (size_t)(p - in->buf) + 2;
				break;
			}
			if (p + 2 < end && p[1] == '\r' && p[2] == '\n') {
				in->hl = (size_t)(p - in->buf) + 3;
				break;
			}
			if (p + 2 >= end)
				break;  /* its pattern may end in bytes not come yet */
		}
		if (!in->hl) {
			in->scanned = in->got;
			if (in->got >= VG_HTTP_HEAD_MAX)
				return http_refuse(in, "431 Request Header Fields Too Large", "request too large\n");
			return VG_HTTP_MORE;
		}
		enum vg_http_read r = http_head(in, p);
		if (r != VG_HTTP_MORE)
			return r;
	}
	if (in->got < in->hl + in->clen)
		return VG_HTTP_MORE;
	/* Whole. Bytes after the body (a pipelined request) are cut off. The pointers are taken now: the buffer may have
	 * moved (realloc) since the headers came. */
	in->rq.head = in->buf;
	in->rq.body = in->clen ? in->buf + in->hl : NULL;
	in->rq.bodylen = in->clen;
	in->buf[in->hl + in->clen] = '\0';
	return VG_HTTP_DONE;
}
