/* Fuzz target for the command's HTTP request reader (cli/http_req.c: vg_http_in_room, vg_http_in_feed,
 * vg_http_header), driven as the server's loop drives it, bytes as they come. Input: the first byte is how many
 * bytes each read brings (1 to 255; 0: as many as the reader has room for), the second picks the largest body
 * taken (% 3: 0 as the exporter, 1 MiB as the receiver, 64 bytes), the rest is what the client sends.
 * Properties: the reader asks for bytes while it says MORE and never takes more than the headers' bound and the
 * body's; it reads the same request whether the bytes come at once, in the input's pieces or one at a time; a whole
 * request has a method and a target (no space, no query), headers without a NUL, the body the client sent after
 * them (Content-Length bytes, NUL-terminated, within the bound) and no Transfer-Encoding; a refusal is one of
 * 400/411/413/431 with a one-line reason; a header's value is trimmed, one line, cut to the buffer given. */
#include "cli/http_req.h"
#include "tests/fuzz/fuzz.h"

#include <ctype.h>

#define VG_FUZZ_NAME "http"

/* Feed n bytes of d, chunk at a time (0: all the reader takes): the reader's answer; in is left to the caller. */
static enum vg_http_read feed(const uint8_t *d, size_t n, size_t chunk, size_t body_max, struct vg_http_in *in)
{
	enum vg_http_read r = VG_HTTP_MORE;
	size_t at = 0;

	memset(in, 0, sizeof(*in));
	in->body_max = body_max;
	while (r == VG_HTTP_MORE && at < n) {
		size_t room, k;
		char *dst = vg_http_in_room(in, &room);
		VG_FUZZ_CHECK(dst != NULL);
		VG_FUZZ_CHECK(room > 0);                /* not whole: it wants more */
		k = n - at < room ? n - at : room;
		if (chunk && k > chunk)
			k = chunk;
		memcpy(dst, d + at, k);
		at += k;
		r = vg_http_in_feed(in, k);
		VG_FUZZ_CHECK(in->got <= VG_HTTP_HEAD_MAX + body_max);
		VG_FUZZ_CHECK(in->got < in->cap && in->buf[in->got] == '\0');
	}
	if (r == VG_HTTP_MORE)
		VG_FUZZ_CHECK(at == n);                 /* it took everything sent and still waits */
	return r;
}

static void check_line(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap), i;

	VG_FUZZ_CHECK(n > 0 && n < cap && s[n - 1] == '\n');
	for (i = 0; i + 1 < n; i++)
		VG_FUZZ_CHECK((unsigned char)s[i] >= 0x20 && s[i] != 0x7f);
}

static void check_header(const struct vg_http_req *rq, const char *name)
{
	char small[8], big[VG_HTTP_HEAD_MAX + 1];
	bool a = vg_http_header(rq, name, small, sizeof(small)), b = vg_http_header(rq, name, big, sizeof(big));

	VG_FUZZ_CHECK(a == b);
	if (!b)
		return;
	size_t n = strlen(big);
	VG_FUZZ_CHECK(strlen(small) == (n < sizeof(small) ? n : sizeof(small) - 1));
	VG_FUZZ_CHECK(strncmp(small, big, strlen(small)) == 0);
	VG_FUZZ_CHECK(!strchr(big, '\n'));
	if (n) {
		VG_FUZZ_CHECK(big[0] != ' ' && big[0] != '\t');
		VG_FUZZ_CHECK(big[n - 1] != ' ' && big[n - 1] != '\t' && big[n - 1] != '\r');
	}
}

static void check_done(const struct vg_http_in *in, const uint8_t *d, size_t body_max)
{
	const struct vg_http_req *rq = &in->rq;
	size_t i, ml = strnlen(rq->method, sizeof(rq->method)), tl = strnlen(rq->target, sizeof(rq->target));
	char cl[32];

	VG_FUZZ_CHECK(ml > 0 && ml < sizeof(rq->method));
	VG_FUZZ_CHECK(tl < sizeof(rq->target));
	for (i = 0; i < ml; i++)
		VG_FUZZ_CHECK(!isspace((unsigned char)rq->method[i]));
	for (i = 0; i < tl; i++)
		VG_FUZZ_CHECK(!isspace((unsigned char)rq->target[i]) && rq->target[i] != '?');
	/* The headers: what was sent, up to the last header line's LF, without a NUL. */
	VG_FUZZ_CHECK(rq->head == in->buf && in->hl > 0 && in->hl <= VG_HTTP_HEAD_MAX);
	size_t h = strlen(rq->head);
	VG_FUZZ_CHECK(h < in->hl && memcmp(rq->head, d, h) == 0 && h > 0 && rq->head[h - 1] == '\n');
	/* The body: the Content-Length bytes that followed. */
	VG_FUZZ_CHECK(rq->bodylen <= body_max && rq->bodylen == in->clen);
	VG_FUZZ_CHECK(rq->bodylen ? rq->body == in->buf + in->hl : rq->body == NULL);
	if (rq->body) {
		VG_FUZZ_CHECK(memcmp(rq->body, d + in->hl, rq->bodylen) == 0);
		VG_FUZZ_CHECK(rq->body[rq->bodylen] == '\0');
	}
	if (vg_http_header(rq, "Content-Length", cl, sizeof(cl)))
		VG_FUZZ_CHECK(strtoull(cl, NULL, 10) == rq->bodylen);
	else
		VG_FUZZ_CHECK(rq->bodylen == 0);
	VG_FUZZ_CHECK(!vg_http_header(rq, "Transfer-Encoding", cl, sizeof(cl)));
	check_header(rq, "Accept");
	check_header(rq, "Authorization");
	check_header(rq, "host");
}

static void check_refused(const struct vg_http_in *in)
{
	static const char *const ok[] = { "400 Bad Request", "411 Length Required", "413 Content Too Large",
					  "431 Request Header Fields Too Large" };
	size_t k;

	for (k = 0; k < sizeof(ok) / sizeof(ok[0]); k++)
		if (in->status == ok[k] || (in->status && strcmp(in->status, ok[k]) == 0))
			break;
	VG_FUZZ_CHECK(k < sizeof(ok) / sizeof(ok[0]));
	check_line(in->why, sizeof(in->why));
}

/* The same request read two ways: the same answer. */
static void check_same(enum vg_http_read ra, const struct vg_http_in *a, enum vg_http_read rb,
		       const struct vg_http_in *b)
{
	VG_FUZZ_CHECK(ra == rb);
	if (ra == VG_HTTP_REFUSED) {
		VG_FUZZ_CHECK(strcmp(a->status, b->status) == 0 && strcmp(a->why, b->why) == 0);
	} else if (ra == VG_HTTP_DONE) {
		VG_FUZZ_CHECK(strcmp(a->rq.method, b->rq.method) == 0 && strcmp(a->rq.target, b->rq.target) == 0);
		VG_FUZZ_CHECK(strcmp(a->rq.head, b->rq.head) == 0 && a->rq.bodylen == b->rq.bodylen);
		VG_FUZZ_CHECK(!a->rq.bodylen || memcmp(a->rq.body, b->rq.body, a->rq.bodylen) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t maxes[] = { 0, 1 << 20, 64 };
	struct vg_http_in whole, pieces, bytes;
	enum vg_http_read rw, rp, rb;

	if (size < 2)
		return 0;
	size_t chunk = data[0], body_max = maxes[data[1] % 3];
	const uint8_t *d = data + 2;
	size_t n = size - 2;
	rw = feed(d, n, 0, body_max, &whole);
	rp = feed(d, n, chunk, body_max, &pieces);
	rb = feed(d, n, 1, body_max, &bytes);
	if (rw == VG_HTTP_DONE)
		check_done(&whole, d, body_max);
	else if (rw == VG_HTTP_REFUSED)
		check_refused(&whole);
	check_same(rw, &whole, rp, &pieces);
	check_same(rw, &whole, rb, &bytes);
	vg_http_in_free(&whole);
	vg_http_in_free(&pieces);
	vg_http_in_free(&bytes);
	return 0;
}

#ifdef VG_FUZZ_REPLAY
#include "tests/fuzz/replay.h"
#endif
