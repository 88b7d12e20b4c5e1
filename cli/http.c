/* The command's HTTP/1.1 server (cli/http.h): listening, and one poll(2) loop serving every connection at once, each
 * non-blocking with its own buffer and deadlines. The request reader is cli/http_req.c; the reasons for a loop of our
 * own are in docs/http.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
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
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, VG_HTTP_BACKLOG) != 0) {
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
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	mode_t old = umask(077);        /* created 0600: only this user (and root) may connect */
	int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (fd < 0 || rc != 0 || chmod(path, 0600) != 0 || listen(fd, VG_HTTP_BACKLOG) != 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", vg_cli_q(path), strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fprintf(stderr, "vramguard: %s: listening on unix:%s (mode 0600)\n", who, path);
	return fd;
}

/* ---- the loop ---- */

struct vg_http_out {
	char *data;
	size_t len, sent;
	bool failed;                    /* out of memory making it: the connection is closed unanswered */
};

void vg_http_reply(struct vg_http_out *out, const char *status, const char *type, const char *extra,
		   const char *body, size_t len)
{
	char head[512];
	int n = snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
			 "Connection: close\r\n\r\n", status, type, len, extra ? extra : "");
	size_t hl = (size_t)n < sizeof(head) ? (size_t)n : sizeof(head) - 1;
	free(out->data);
	out->data = malloc(hl + len);
	out->len = out->sent = 0;
	out->failed = !out->data;
	if (out->failed)
		return;
	memcpy(out->data, head, hl);
	if (len)
		memcpy(out->data + hl, body, len);
	out->len = hl + len;
}

/* A connection: reading its request until `deadline`, then (out.data set) writing its answer until a new one. */
struct http_conn {
	int fd;
	double since, deadline;         /* monotonic seconds */
	struct vg_http_in in;
	struct vg_http_out out;
};

struct http_loop {
	const struct vg_http_handler *handler;
	struct http_conn conn[VG_HTTP_CONNS_MAX];
	int n;
	double accept_after;            /* accept(2) failed for want of descriptors: not before this */
};

static const char http_plain[] = "text/plain; charset=utf-8";

/* Closed for good. reset: a connection past its deadline with its answer unsent is reset (SO_LINGER 0), so that
 * the kernel does not go on holding and sending what the client never read. */
static void http_drop(struct http_loop *L, int i, bool reset)
{
	struct http_conn *c = &L->conn[i];
	if (reset) {
		struct linger lg = { 1, 0 };
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(c->fd);
	vg_http_in_free(&c->in);
	free(c->out.data);
	L->conn[i] = L->conn[--L->n];
}

/* Write what the socket takes now: true while more is left. */
static bool http_write(struct http_conn *c)
{
	while (c->out.sent < c->out.len) {
		ssize_t w = send(c->fd, c->out.data + c->out.sent, c->out.len - c->out.sent, MSG_NOSIGNAL);
		if (w > 0) {
			c->out.sent += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		c->out.sent = c->out.len;       /* the client is gone: nothing more to write */
	}
	return false;
}

/* Read what came: false when the connection is done with (closed by the client, answered whole, or no memory). */
static bool http_read(struct http_loop *L, struct http_conn *c, double now)
{
	size_t room;
	char *at = vg_http_in_room(&c->in, &room);
	if (!at)
		return false;
	ssize_t n = recv(c->fd, at, room, 0);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return true;
	if (n <= 0)
		return false;   /* closed before its request was whole, or an error: nothing to answer */
	switch (vg_http_in_feed(&c->in, (size_t)n)) {
	case VG_HTTP_MORE:
		return true;
	case VG_HTTP_REFUSED:
		vg_http_reply(&c->out, c->in.status, http_plain, NULL, c->in.why, strlen(c->in.why));
		if (L->handler->refused)
			L->handler->refused(L->handler->ctx, c->in.status);
		break;
	case VG_HTTP_DONE:
		L->handler->serve(L->handler->ctx, &c->in.rq, &c->out);
		if (!c->out.data && !c->out.failed)
			vg_http_reply(&c->out, "500 Internal Server Error", http_plain, NULL, "no answer\n", 10);
		break;
	}
	if (c->out.failed)
		return false;
	vg_http_in_free(&c->in);
	c->deadline = now + VG_HTTP_TIMEOUT_S;  /* the answer's own time, from now: the handler's is not the client's */
	return http_write(c);
}

/* The connection that gives way to a newcomer when VG_HTTP_CONNS_MAX are open: the oldest one still sending its
 * request (a client that idles or trickles gives way to one that asks). -1 when every one is being answered. */
static int http_oldest_reading(const struct http_loop *L)
{
	int old = -1;
	for (int i = 0; i < L->n; i++)
		if (!L->conn[i].out.data && (old < 0 || L->conn[i].since < L->conn[old].since))
			old = i;
	return old;
}

/* The connections waiting: accept them, past VG_HTTP_CONNS_MAX each in the place of http_oldest_reading's; when
 * every one is being answered, the newcomers stay in the backlog until one is done (the loop does not poll the
 * listening socket meanwhile). */
static void http_accept(struct http_loop *L, int lfd, double now)
{
	for (int k = 0; k < VG_HTTP_CONNS_MAX; k++) {
		int old = L->n == VG_HTTP_CONNS_MAX ? http_oldest_reading(L) : -1;
		if (L->n == VG_HTTP_CONNS_MAX && old < 0)
			return;
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			/* Out of descriptors (or memory): the socket stays readable, so wait a little rather than spin. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				L->accept_after = now + 0.1;
			return;         /* EAGAIN: no one left; ECONNABORTED and the like: gone before we took it */
		}
		if (old >= 0)
			http_drop(L, old, false);
		struct http_conn *c = &L->conn[L->n++];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->since = now;
		c->deadline = now + VG_HTTP_TIMEOUT_S;
		c->in.body_max = L->handler->body_max;
	}
}

void vg_http_serve(int lfd, const struct vg_http_handler *h)
{
	static struct http_loop L;      /* a connection table of VG_HTTP_CONNS_MAX: not on the stack */
	struct pollfd pfd[VG_HTTP_CONNS_MAX + 1];
	sigset_t stop, old;
	memset(&L, 0, sizeof(L));
	L.handler = h;
	/* SIGINT and SIGTERM are taken only while the loop waits (ppoll), so one cannot slip in between the check of
	 * vg_http_stopping and the wait and leave the loop asleep. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &old);
	while (!vg_http_stopping()) {
		int wait_ms = h->tick ? h->tick(h->ctx) : -1;
		double now = vg_cli_now(), next = -1;
		for (int i = L.n - 1; i >= 0; i--) {
			if (now >= L.conn[i].deadline)
				http_drop(&L, i, L.conn[i].out.data != NULL);   /* too slow: its request or its answer */
			else if (next < 0 || L.conn[i].deadline < next)
				next = L.conn[i].deadline;
		}
		bool listening = lfd >= 0 && now >= L.accept_after &&
				 (L.n < VG_HTTP_CONNS_MAX || http_oldest_reading(&L) >= 0);
		if (lfd >= 0 && now < L.accept_after && (next < 0 || L.accept_after < next))
			next = L.accept_after;
		if (next >= 0) {
			int ms = (int)((next - now) * 1000) + 1;        /* rounded up: woken at or after it, not just before */
			if (wait_ms < 0 || ms < wait_ms)
				wait_ms = ms;
		}
		int np = 0;
		if (listening)
			pfd[np++] = (struct pollfd){ lfd, POLLIN, 0 };
		for (int i = 0; i < L.n; i++)
			pfd[np++] = (struct pollfd){ L.conn[i].fd, L.conn[i].out.data ? POLLOUT : POLLIN, 0 };
		struct timespec ts = { wait_ms / 1000, (long)(wait_ms % 1000) * 1000000 };
		int n = ppoll(pfd, (nfds_t)np, wait_ms < 0 ? NULL : &ts, &old);
		if (n <= 0)
			continue;       /* a timer, a deadline, or a signal (EINTR): the top of the loop sees to each */
		now = vg_cli_now();
		/* The connections first, then the newcomers: one accepted in this round is read in the next before any
		 * later newcomer may take its place. Walked from the end, as http_drop moves the last one into i. */
		int base = listening ? 1 : 0;
		for (int i = L.n - 1; i >= 0; i--) {
			struct http_conn *c = &L.conn[i];
			if (!pfd[base + i].revents)
				continue;
			bool more = c->out.data ? http_write(c) : http_read(&L, c, now);
			if (!more)
				http_drop(&L, i, false);
		}
		if (listening && (pfd[0].revents & POLLIN))
			http_accept(&L, lfd, now);
	}
	while (L.n)
		http_drop(&L, L.n - 1, false);
	sigprocmask(SIG_SETMASK, &old, NULL);
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
