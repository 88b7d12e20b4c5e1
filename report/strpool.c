/* The string pool of report/strpool.h: the strings in chunks that never move, found again through an open-addressed
 * table of their hashes (linear probing, at most half full). */
#include "report/strpool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VG_STRPOOL_CHUNK ((size_t)64 << 10)     /* a chunk's room for strings; a longer string gets its own */

struct vg_strpool_chunk {
	struct vg_strpool_chunk *next;
	size_t used, cap;
	char data[];
};

struct vg_strpool_slot {
	const char *s;                  /* NULL: empty */
	uint32_t hash;
	uint32_t len;
};

struct vg_strpool {
	struct vg_strpool_chunk *chunks;        /* the newest first: strings go there while it has room */
	struct vg_strpool_slot *slots;
	size_t nslots, n;               /* nslots a power of two, or 0 before the first string */
	size_t bytes, limit;            /* in chunks, NULs included; at most limit */
};

struct vg_strpool *vg_strpool_new(size_t limit)
{
	struct vg_strpool *p = calloc(1, sizeof(struct vg_strpool));
	if (p)
		p->limit = limit;
	return p;
}

void vg_strpool_free(struct vg_strpool *p)
{
	if (!p)
		return;
	while (p->chunks) {
		struct vg_strpool_chunk *c = p->chunks;
		p->chunks = c->next;
		free(c);
	}
	free(p->slots);
	free(p);
}

static uint32_t vg_strpool_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;       /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

/* Twice the slots (or the first 1024), every string placed again. 0 or -1. */
static int vg_strpool_grow(struct vg_strpool *p)
{
	size_t n = p->nslots ? p->nslots * 2 : 1024;
	struct vg_strpool_slot *v = n <= SIZE_MAX / 2 / sizeof(*v) ? calloc(n, sizeof(*v)) : NULL;
	if (!v)
		return -1;
	for (size_t i = 0; i < p->nslots; i++) {
		size_t k = p->slots[i].hash & (n - 1);
		if (!p->slots[i].s)
			continue;
		while (v[k].s)
			k = (k + 1) & (n - 1);
		v[k] = p->slots[i];
	}
	free(p->slots);
	p->slots = v;
	p->nslots = n;
	return 0;
}

/* Room for size bytes in the newest chunk, or a new chunk; NULL when memory is short. */
static char *vg_strpool_room(struct vg_strpool *p, size_t size)
{
	struct vg_strpool_chunk *c = p->chunks;
	if (!c || c->cap - c->used < size) {
		size_t cap = size > VG_STRPOOL_CHUNK ? size : VG_STRPOOL_CHUNK;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		if (p->chunks && size > VG_STRPOOL_CHUNK) {     /* keep filling the newest chunk after a long string */
			c->next = p->chunks->next;
			p->chunks->next = c;
		} else {
			c->next = p->chunks;
			p->chunks = c;
		}
	}
	char *at = c->data + c->used;
	c->used += size;
	return at;
}

const char *vg_strpool_add(struct vg_strpool *p, const char *s, size_t len)
{
	if (!p || len >= UINT32_MAX)
		return NULL;
	uint32_t h = vg_strpool_hash(s, len);
	if (p->n >= p->nslots / 2 && vg_strpool_grow(p) != 0)
		return NULL;
	size_t k = h & (p->nslots - 1);
	for (; p->slots[k].s; k = (k + 1) & (p->nslots - 1))
		if (p->slots[k].hash == h && p->slots[k].len == len && memcmp(p->slots[k].s, s, len) == 0)
			return p->slots[k].s;
	if (len >= p->limit - p->bytes)
		return NULL;
	char *copy = vg_strpool_room(p, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	p->bytes += len + 1;
	p->slots[k] = (struct vg_strpool_slot){ .s = copy, .hash = h, .len = (uint32_t)len };
	p->n++;
	return copy;
}
