/* The command's HTTP/1.1 server parts (cli/http.h): listening, reading one bounded request, answering it. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/http.h"
#include "config/stat.h"

static bool http_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a))
			return true;
		return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
	}
	return false;
}

int vg_http_listen(const char *spec, const char *who, const char *path, bool *loopback, char *err, size_t errlen)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec || !colon[1] || (size_t)(colon - spec) >= sizeof(host)) {
		snprintf(err, errlen, "invalid --listen %s (expected ADDR:PORT, e.g. 127.0.0.1:9847 or [::1]:9847)",
			 vg_cli_q(spec));
		return -1;
	}
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *ai;
	int g = getaddrinfo(host, colon + 1, &hints, &ai);
	if (g != 0) {
		snprintf(err, errlen, "invalid --listen %s: %s (expected ADDR:PORT, e.g. 127.0.0.1:9847)", vg_cli_q(spec),
			 gai_strerror(g));
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 16) != 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", vg_cli_q(spec), strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[128] = "?", p[16] = "?";
	memset(&ss, 0, sizeof(ss));
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p, sizeof(p), NI_NUMERICHOST | NI_NUMERICSERV);
	if (loopback)
		*loopback = http_is_loopback(&ss);
	fprintf(stderr, "vramguard: %s: listening on http://%s%s%s:%s%s\n", who, strchr(h, ':') ? "[" : "", h,
		strchr(h, ':') ? "]" : "", p, path);
	return fd;
}

int vg_http_listen_unix(const char *path, const char *who, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (!path[0] || strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "invalid --socket %s (expected a path of 1 to %zu bytes)", vg_cli_q(path),
			 sizeof(sa.sun_path) - 1);
		return -1;
	}
	struct stat st;
	if (vg_lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "--socket %s exists and is not a socket: choose another path", vg_cli_q(path));
			return -1;
		}
		unlink(path);   /* a socket left by an earlier run */
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	mode_t old = umask(077);        /* created 0600: only this user (and root) may connect */
	int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (fd < 0 || rc != 0 || chmod(path, 0600) != 0 || listen(fd, 16) != 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", vg_cli_q(path), strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fprintf(stderr, "vramguard: %s: listening on unix:%s (mode 0600)\n", who, path);
	return fd;
}

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

/* The end of the headers, the first empty line: the LF that ends the last header line, the empty line's own length
 * after it in *len ("\r\n" or a bare "\n"). NULL while it has not come. */
static char *http_head_end(char *buf, size_t *len)
{
	for (char *p = strchr(buf, '\n'); p; p = strchr(p + 1, '\n')) {
		if (p[1] == '\n' || (p[1] == '\r' && p[2] == '\n')) {
			*len = p[1] == '\n' ? 1 : 2;
			return p;
		}
	}
	return NULL;
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

static void http_send(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return;
		}
		data += n;
		len -= (size_t)n;
	}
}

void vg_http_reply(int fd, const char *status, const char *type, const char *extra, const char *body, size_t len)
{
	char head[512];
	int n = snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
			 "Connection: close\r\n\r\n", status, type, len, extra ? extra : "");
	http_send(fd, head, (size_t)n < sizeof(head) ? (size_t)n : sizeof(head) - 1);
	http_send(fd, body, len);
}

static const char http_plain[] = "text/plain; charset=utf-8";

static int http_refuse(int fd, struct vg_http_req *rq, const char *status, const char *msg)
{
	vg_http_reply(fd, status, http_plain, NULL, msg, strlen(msg));
	vg_http_req_free(rq);
	return 1;
}

void vg_http_req_free(struct vg_http_req *rq)
{
	free(rq->head);
	rq->head = rq->body = NULL;
	rq->bodylen = 0;
}

/* recv() within the request's deadline: a client that trickles a byte at a time is dropped when the whole request
 * has taken VG_HTTP_TIMEOUT_S, not only when one recv() waits that long (the servers answer one at a time). */
static ssize_t http_recv(int fd, char *buf, size_t len, const struct timespec *deadline)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long long left = (deadline->tv_sec - now.tv_sec) * 1000000LL + (deadline->tv_nsec - now.tv_nsec) / 1000;
	if (left <= 0)
		return -1;
	struct timeval tv = { (time_t)(left / 1000000), (suseconds_t)(left % 1000000) };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return recv(fd, buf, len, 0);
}

int vg_http_read(int cfd, size_t body_max, struct vg_http_req *rq)
{
	memset(rq, 0, sizeof(*rq));
	struct timeval tv = { VG_HTTP_TIMEOUT_S, 0 };
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += VG_HTTP_TIMEOUT_S;
	setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* One buffer: the headers, then the body (what came with the headers is moved in front of the rest). */
	size_t cap = VG_HTTP_HEAD_MAX + body_max + 1, got = 0;
	char *buf = malloc(cap);
	if (!buf)
		return -1;
	rq->head = buf;
	char *end = NULL;
	size_t blank = 0;
	while (!end && got < VG_HTTP_HEAD_MAX) {
		ssize_t n = http_recv(cfd, buf + got, VG_HTTP_HEAD_MAX - got, &deadline);
		if (n <= 0) {
			vg_http_req_free(rq);
			return -1;      /* closed, timed out (a stuck client), or a signal: drop it */
		}
		got += (size_t)n;
		buf[got] = '\0';
		end = http_head_end(buf, &blank);
	}
	if (!end)
		return http_refuse(cfd, rq, "431 Request Header Fields Too Large", "request too large\n");
	size_t hl = (size_t)(end - buf) + 1 + blank, extra = got - hl;
	char *rest = buf + hl;
	end[1] = '\0';                  /* the headers end with their last line's LF; the body is not searched */
	if (sscanf(buf, "%15s %1023s", rq->method, rq->target) != 2)
		return http_refuse(cfd, rq, "400 Bad Request", "bad request\n");
	char *q = strchr(rq->target, '?');
	if (q)
		*q = '\0';
	const char *v;
	size_t vl;
	if (http_find(buf, "Transfer-Encoding", &v, &vl))
		return http_refuse(cfd, rq, "411 Length Required", "send the body with Content-Length\n");
	unsigned long long clen = 0;
	if (http_find(buf, "Content-Length", &v, &vl)) {
		char num[24], *e;
		if (!vl || vl >= sizeof(num) || v[0] < '0' || v[0] > '9')
			return http_refuse(cfd, rq, "400 Bad Request", "bad Content-Length\n");
		memcpy(num, v, vl);
		num[vl] = '\0';
		errno = 0;
		clen = strtoull(num, &e, 10);
		if (errno || *e)
			return http_refuse(cfd, rq, "400 Bad Request", "bad Content-Length\n");
	}
	if (clen > body_max) {
		char msg[96];
		snprintf(msg, sizeof(msg), "body too large: %llu bytes, at most %zu\n", clen, body_max);
		return http_refuse(cfd, rq, "413 Content Too Large", msg);
	}
	if (extra > clen)
		extra = (size_t)clen;   /* bytes after the body (a pipelined request): ignored, one request a connection */
	char *body = buf + VG_HTTP_HEAD_MAX;
	memmove(body, rest, extra);
	got = extra;
	while (got < clen) {
		ssize_t n = http_recv(cfd, body + got, (size_t)clen - got, &deadline);
		if (n <= 0) {
			vg_http_req_free(rq);
			return -1;
		}
		got += (size_t)n;
	}
	body[got] = '\0';
	if (clen) {
		rq->body = body;
		rq->bodylen = got;
	}
	return 0;
}

static volatile sig_atomic_t http_stop;

static void http_on_signal(int sig)
{
	http_stop = sig;
}

void vg_http_stop_on_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = http_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

bool vg_http_stopping(void)
{
	return http_stop != 0;
}
