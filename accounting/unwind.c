/* Stack capture for call sites. libgcc's _Unwind_Backtrace interprets the DWARF CFI of every frame on every
 * capture (~0.2 us a frame). On x86-64 we walk the stack ourselves with a cache that maps a return address to its
 * frame's recipe (CFA = rsp or rbp + offset, return address at CFA-8, rbp kept or saved at CFA-8k), read once from
 * the same FDE libgcc would use and interpreted the way libgcc does (unwind-dw2.c). A frame the recipe cannot
 * express (signal frames, CFA by expression, ...) sends the whole capture to libgcc, so the result is always
 * libgcc's. dlclose empties the cache (vg_unwind_dlclose_*). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unwind.h>

#include "accounting/unwind.h"

#define VG_UW_SKIP_MAX 32       /* leading frames skipped at most before the walk gives up */
#define VG_UW_BT_MAX 64         /* glibc backtrace() fallback: frames kept */
#define VG_UW_BT_OWN 8          /* ... plus ours, dropped */

/* libgcc_s is loaded by glibc in every process that can unwind; we look it up rather than link it. */
static _Unwind_Reason_Code (*vg_uw_backtrace)(_Unwind_Trace_Fn, void *);
static _Unwind_Ptr (*vg_uw_getip)(struct _Unwind_Context *);

/* This thread's counters, for tests (32 bits: they only need to count a test's captures; little static TLS). */
static __thread struct {
	uint32_t fast, fallback, misses;
} vg_uw_tstats __attribute__((tls_model("initial-exec")));

/* ---- libgcc ---- */

struct vg_uw_state {
	void **buf;
	int n, max, skipping;
	uintptr_t lo, hi;
};

static _Unwind_Reason_Code vg_uw_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct vg_uw_state *u = arg;
	uintptr_t ip = (uintptr_t)vg_uw_getip(ctx);
	if (ip == 0)
		return _URC_END_OF_STACK;
	if (u->skipping) {
		if (ip >= u->lo && ip < u->hi)
			return _URC_NO_REASON;
		u->skipping = 0;
	}
	u->buf[u->n++] = (void *)ip;
	return u->n >= u->max ? _URC_END_OF_STACK : _URC_NO_REASON;
}

int vg_unwind_libgcc(void **buf, int max, uintptr_t skip_lo, uintptr_t skip_hi)
{
	if (max <= 0)
		return 0;
	if (vg_uw_backtrace && vg_uw_getip) {
		struct vg_uw_state u = { buf, 0, max, skip_hi > skip_lo, skip_lo, skip_hi };
		vg_uw_backtrace(vg_uw_frame, &u);
		return u.n;
	}
	/* No libgcc_s: glibc's backtrace(), then drop our frames. */
	void *tmp[VG_UW_BT_MAX + VG_UW_BT_OWN];
	if (max > VG_UW_BT_MAX)
		max = VG_UW_BT_MAX;
	int n = backtrace(tmp, max + VG_UW_BT_OWN);
	int skip = 0;
	while (skip < n && (uintptr_t)tmp[skip] >= skip_lo && (uintptr_t)tmp[skip] < skip_hi)
		skip++;
	n -= skip;
	if (n > max)
		n = max;
	memcpy(buf, tmp + skip, (size_t)(n > 0 ? n : 0) * sizeof(void *));
	return n;
}

#if defined(__x86_64__)

/* libgcc's FDE lookup (the one its unwinder calls), and its bases for the pointer encodings. */
struct vg_eh_bases {
	void *tbase, *dbase, *func;
};
static const uint8_t *(*vg_uw_find_fde)(void *pc, struct vg_eh_bases *bases);

/* ---- the cache ----
 * One 64-bit word per entry, so that a racing writer never leaves a torn one (readers check the address bits):
 *   bits 0-46   the return address described (user-space addresses are below 2^47); 0: empty slot
 *   bit  47     CFA register: 0 rsp, 1 rbp
 *   bits 48-58  CFA offset / 8, 1..2047; 0 marks a special entry
 *   bits 59-63  k: rbp is kept (0) or was saved at CFA - 8k (2..31)
 * The caller's rsp is the CFA and its return address is at CFA - 8. Special entries: k 0 = opaque (libgcc must
 * unwind this stack), k 1 = outermost (return address undefined: the stack ends after this frame). Only code
 * unmapped and replaced can make an entry wrong (dlclose, below); an opaque one is harmless even then. */
#define VG_UW_ADDR_MASK ((UINT64_C(1) << 47) - 1)
#define VG_UW_CFA_RBP (UINT64_C(1) << 47)
#define VG_UW_OFF_SHIFT 48
#define VG_UW_OFF_MAX 2047
#define VG_UW_K_SHIFT 59
#define VG_UW_K_MAX 31
#define VG_UW_OPAQUE UINT64_C(0)
#define VG_UW_OUTERMOST (UINT64_C(1) << VG_UW_K_SHIFT)

/* 4096 buckets of 4 slots, a bucket within one cache line. Full bucket: the new entry replaces one. */
#define VG_UW_BUCKET_BITS 12
#define VG_UW_WAYS 4
static _Atomic uint64_t vg_uw_cache[VG_UW_WAYS << VG_UW_BUCKET_BITS] __attribute__((aligned(64)));
static _Atomic uint64_t vg_uw_gen;      /* +1 at the start of every dlclose */
static _Atomic int vg_uw_closing;       /* dlcloses in progress */
static _Atomic int vg_uw_used;          /* some entry was ever written: dlclose has something to clear */
static _Atomic uint64_t vg_uw_flushes;

static inline _Atomic uint64_t *vg_uw_bucket(uintptr_t ip)
{
	return &vg_uw_cache[((ip * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - VG_UW_BUCKET_BITS)) * VG_UW_WAYS];
}

static inline uint64_t vg_uw_lookup(uintptr_t ip)
{
	_Atomic uint64_t *b = vg_uw_bucket(ip);
	for (int i = 0; i < VG_UW_WAYS; i++) {
		uint64_t e = atomic_load_explicit(&b[i], memory_order_relaxed);
		if ((e & VG_UW_ADDR_MASK) == ip)
			return e;
	}
	return 0;
}

/* gen: vg_uw_gen when this capture began. A dlclose that began since may already have emptied the cache, and the
 * recipe may describe code it unmapped: then take the entry back out. (All seq_cst: either the dlclose's clearing
 * comes after our store, or our reload of gen sees its increment.) */
static void vg_uw_insert(uintptr_t ip, uint64_t e, uint64_t gen)
{
	_Atomic uint64_t *b = vg_uw_bucket(ip);
	int way = (int)((ip ^ (ip >> 9)) & (VG_UW_WAYS - 1));
	for (int i = 0; i < VG_UW_WAYS; i++) {
		uint64_t old = atomic_load_explicit(&b[i], memory_order_relaxed);
		if (old == 0 || (old & VG_UW_ADDR_MASK) == ip) {
			way = i;
			break;
		}
	}
	if (!atomic_load_explicit(&vg_uw_used, memory_order_relaxed))
		atomic_store(&vg_uw_used, 1);
	atomic_store(&b[way], e);
	if (atomic_load(&vg_uw_gen) != gen)
		atomic_compare_exchange_strong(&b[way], &e, 0);
}

void vg_unwind_dlclose_begin(void)
{
	atomic_fetch_add(&vg_uw_closing, 1);
	atomic_fetch_add(&vg_uw_gen, 1);
}

void vg_unwind_dlclose_end(void)
{
	if (atomic_load(&vg_uw_used)) {
		for (size_t i = 0; i < sizeof(vg_uw_cache) / sizeof(vg_uw_cache[0]); i++)
			atomic_store(&vg_uw_cache[i], 0);
		atomic_fetch_add_explicit(&vg_uw_flushes, 1, memory_order_relaxed);
	}
	atomic_fetch_sub(&vg_uw_closing, 1);
}

/* In a forked child: a dlclose another thread had in progress never finishes here. Forget what it may have
 * unmapped, and let the child's captures use the cache again. */
void vg_unwind_atfork_child(void)
{
	if (atomic_load(&vg_uw_closing) != 0) {
		atomic_store(&vg_uw_closing, 1);
		vg_unwind_dlclose_end();
	}
}

/* ---- reading the CFI (bounds-checked; any doubt makes the frame opaque) ---- */

struct vg_rd {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t vg_rd_fixed(struct vg_rd *r, int n)
{
	uint64_t v = 0;
	if (r->bad || r->end - r->p < n) {
		r->bad = true;
		return 0;
	}
	for (int i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

/* LEB128: 7 bits a byte, low first; signed values sign-extend from the last byte's bit 6. */
static uint64_t vg_rd_leb(struct vg_rd *r, bool sign)
{
	uint64_t v = 0;
	for (int shift = 0; !r->bad; shift += 7) {
		if (r->p >= r->end || shift > 63) {
			r->bad = true;
			break;
		}
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if (sign && shift + 7 < 64 && (b & 0x40))
				v |= ~UINT64_C(0) << (shift + 7);
			return v;
		}
	}
	return 0;
}

static uint64_t vg_rd_uleb(struct vg_rd *r)
{
	return vg_rd_leb(r, false);
}

static int64_t vg_rd_sleb(struct vg_rd *r)
{
	return (int64_t)vg_rd_leb(r, true);
}

/* A pointer in DW_EH_PE encoding enc (libgcc's read_encoded_value). Indirect, aligned and omitted values are not
 * expected where we read one (DW_CFA_set_loc, the LSDA we skip): the frame is then opaque. */
static uintptr_t vg_rd_encoded(struct vg_rd *r, uint8_t enc, const struct vg_eh_bases *b)
{
	const uint8_t *at = r->p;
	uint64_t v;
	if (enc == 0xff || (enc & 0x80) || (enc & 0x70) == 0x50) {
		r->bad = true;
		return 0;
	}
	switch (enc & 0x0f) {
	case 0x00: v = vg_rd_fixed(r, 8); break;                        /* absptr */
	case 0x01: v = vg_rd_uleb(r); break;                            /* uleb128 */
	case 0x02: v = vg_rd_fixed(r, 2); break;                        /* udata2 */
	case 0x03: v = vg_rd_fixed(r, 4); break;                        /* udata4 */
	case 0x04: v = vg_rd_fixed(r, 8); break;                        /* udata8 */
	case 0x09: v = (uint64_t)vg_rd_sleb(r); break;                  /* sleb128 */
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)vg_rd_fixed(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)vg_rd_fixed(r, 4); break;
	case 0x0c: v = vg_rd_fixed(r, 8); break;                        /* sdata8 */
	default: r->bad = true; return 0;
	}
	if (v == 0)
		return 0;
	switch (enc & 0x70) {
	case 0x00: return v;
	case 0x10: return v + (uintptr_t)at;                            /* pcrel */
	case 0x20: return v + (uintptr_t)b->tbase;                      /* textrel */
	case 0x30: return v + (uintptr_t)b->dbase;                      /* datarel */
	case 0x40: return v + (uintptr_t)b->func;                       /* funcrel */
	default: r->bad = true; return 0;
	}
}

/* The rules we follow: rbp (DWARF 6), rsp (7), the return address (16). Others cannot change the recipe. */
enum { VG_R_UNSAVED, VG_R_UNDEFINED, VG_R_OFFSET, VG_R_OTHER };
enum { VG_C_UNSET, VG_C_REG, VG_C_EXPR };
struct vg_rules {
	uint8_t cfa_how;
	uint64_t cfa_reg;
	int64_t cfa_off;
	uint8_t how[3];
	int64_t off[3];
};

#define VG_UW_STATES 8          /* DW_CFA_remember_state depth */
struct vg_fs {
	struct vg_rules r, saved[VG_UW_STATES];
	int nsaved;
	uintptr_t loc;
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;
	const struct vg_eh_bases *bases;
};

static int vg_col(uint64_t reg)
{
	return reg == 6 ? 0 : reg == 7 ? 1 : reg == 16 ? 2 : -1;
}

static void vg_set(struct vg_fs *fs, uint64_t reg, uint8_t how, int64_t off)
{
	int c = vg_col(reg);
	if (c >= 0) {
		fs->r.how[c] = how;
		fs->r.off[c] = off;
	}
}

/* An opcode that moves the location, defines the CFA or saves and restores the state (remember/restore_state),
 * or a no-op: 1 done, 0 not one of these, -1 the program cannot be followed. */
static int vg_cfa_op_frame(struct vg_fs *fs, struct vg_rd *r, uint8_t op)
{
	uint64_t u;

	switch (op) {
	case 0x00:                                              /* nop */
		return 1;
	case 0x01:                                              /* set_loc */
		fs->loc = vg_rd_encoded(r, fs->fde_enc, fs->bases);
		return 1;
	case 0x02:                                              /* advance_loc1, 2, 4 */
		fs->loc += vg_rd_fixed(r, 1) * fs->code_align;
		return 1;
	case 0x03:
		fs->loc += vg_rd_fixed(r, 2) * fs->code_align;
		return 1;
	case 0x04:
		fs->loc += vg_rd_fixed(r, 4) * fs->code_align;
		return 1;
	case 0x0a:                                              /* remember_state */
		if (fs->nsaved == VG_UW_STATES)
			return -1;
		fs->saved[fs->nsaved++] = fs->r;
		return 1;
	case 0x0b:                                              /* restore_state */
		if (fs->nsaved == 0)
			return -1;
		fs->r = fs->saved[--fs->nsaved];
		return 1;
	case 0x0c:                                              /* def_cfa */
		fs->r.cfa_reg = vg_rd_uleb(r);
		fs->r.cfa_off = (int64_t)vg_rd_uleb(r);
		fs->r.cfa_how = VG_C_REG;
		return 1;
	case 0x0d:                                              /* def_cfa_register */
		fs->r.cfa_reg = vg_rd_uleb(r);
		fs->r.cfa_how = VG_C_REG;
		return 1;
	case 0x0e:                                              /* def_cfa_offset (how unchanged, as libgcc) */
		fs->r.cfa_off = (int64_t)vg_rd_uleb(r);
		return 1;
	case 0x0f:                                              /* def_cfa_expression */
		fs->r.cfa_how = VG_C_EXPR;
		u = vg_rd_uleb(r);
		if (u > (uint64_t)(r->end - r->p))
			return -1;
		r->p += u;
		return 1;
	case 0x12:                                              /* def_cfa_sf */
		fs->r.cfa_reg = vg_rd_uleb(r);
		fs->r.cfa_off = vg_rd_sleb(r) * fs->data_align;
		fs->r.cfa_how = VG_C_REG;
		return 1;
	case 0x13:                                              /* def_cfa_offset_sf */
		fs->r.cfa_off = vg_rd_sleb(r) * fs->data_align;
		return 1;
	case 0x2e:                                              /* GNU_args_size */
		(void)vg_rd_uleb(r);
		return 1;
	}
	return 0;
}

/* An opcode that sets a register's rule: 1 done, 0 not one of these, -1 the program cannot be followed. */
static int vg_cfa_op_reg(struct vg_fs *fs, struct vg_rd *r, uint8_t op)
{
	uint64_t reg, u;

	switch (op) {
	case 0x05:                                              /* offset_extended */
		reg = vg_rd_uleb(r);
		u = vg_rd_uleb(r);
		vg_set(fs, reg, VG_R_OFFSET, (int64_t)u * fs->data_align);
		return 1;
	case 0x06:                                              /* restore_extended */
	case 0x08:                                              /* same_value */
		vg_set(fs, vg_rd_uleb(r), VG_R_UNSAVED, 0);
		return 1;
	case 0x07:                                              /* undefined */
		vg_set(fs, vg_rd_uleb(r), VG_R_UNDEFINED, 0);
		return 1;
	case 0x09:                                              /* register */
	case 0x14:                                              /* val_offset */
		reg = vg_rd_uleb(r);
		(void)vg_rd_uleb(r);
		vg_set(fs, reg, VG_R_OTHER, 0);
		return 1;
	case 0x10:                                              /* expression */
	case 0x16:                                              /* val_expression */
		reg = vg_rd_uleb(r);
		u = vg_rd_uleb(r);
		if (r->bad || u > (uint64_t)(r->end - r->p))
			return -1;
		r->p += u;
		vg_set(fs, reg, VG_R_OTHER, 0);
		return 1;
	case 0x11:                                              /* offset_extended_sf */
		reg = vg_rd_uleb(r);
		vg_set(fs, reg, VG_R_OFFSET, vg_rd_sleb(r) * fs->data_align);
		return 1;
	case 0x15:                                              /* val_offset_sf */
		reg = vg_rd_uleb(r);
		(void)vg_rd_sleb(r);
		vg_set(fs, reg, VG_R_OTHER, 0);
		return 1;
	case 0x2f:                                              /* GNU_negative_offset_extended */
		reg = vg_rd_uleb(r);
		u = vg_rd_uleb(r);
		vg_set(fs, reg, VG_R_OFFSET, -((int64_t)u * fs->data_align));
		return 1;
	}
	return 0;
}

/* One CFA program, executed while the location is below ra: the row libgcc uses for a caller frame (ra - 1). */
static bool vg_cfa_run(struct vg_fs *fs, const uint8_t *p, const uint8_t *end, uintptr_t ra)
{
	struct vg_rd r = { p, end, false };
	fs->nsaved = 0;         /* no remember/restore across the CIE and FDE programs */
	while (r.p < r.end && fs->loc < ra && !r.bad) {
		uint8_t op = *r.p++;
		switch (op >> 6) {
		case 1:                                                 /* DW_CFA_advance_loc */
			fs->loc += (op & 0x3f) * fs->code_align;
			continue;
		case 2:                                                 /* DW_CFA_offset */
			vg_set(fs, op & 0x3f, VG_R_OFFSET, (int64_t)vg_rd_uleb(&r) * fs->data_align);
			continue;
		case 3:                                                 /* DW_CFA_restore: libgcc makes it "unsaved" */
			vg_set(fs, op & 0x3f, VG_R_UNSAVED, 0);
			continue;
		}
		int done = vg_cfa_op_frame(fs, &r, op);
		if (done == 0)
			done = vg_cfa_op_reg(fs, &r, op);
		if (done <= 0)
			return false;   /* window_save, vendor extensions, unknown; or a program we cannot follow */
	}
	return !r.bad;
}

/* A CIE, as far as the recipe needs it: its instructions, and what its augmentation says about the FDE's. */
struct vg_cie {
	const uint8_t *insn, *end;
	uint8_t lsda_enc;       /* 0xff: none */
	bool saw_z;             /* "z": the FDE has an augmentation length */
};

/* The CIE of fde (its length already checked): header, alignment factors into fs, return column 16, augmentation
 * (fs->fde_enc among it). false if anything is not what libgcc would follow on x86-64. */
static bool vg_uw_cie(const uint8_t *fde, struct vg_fs *fs, struct vg_cie *c)
{
	/* FDE: length (no 64-bit DWARF in .eh_frame for libgcc), CIE pointer relative to itself (signed, as libgcc). */
	uint32_t len, cie_len;
	memcpy(&len, fde, 4);
	int32_t cie_delta;
	memcpy(&cie_delta, fde + 4, 4);
	if (cie_delta == 0 || len < 8)
		return false;
	const uint8_t *cie = (const uint8_t *)((uintptr_t)fde + 4 - (uintptr_t)(intptr_t)cie_delta);
	memcpy(&cie_len, cie, 4);
	if (cie_len == 0 || cie_len == 0xffffffffu || cie_len > (1u << 24))
		return false;
	struct vg_rd r = { cie + 4, cie + 4 + cie_len, false };

	/* CIE: id 0, version, augmentation, [v4: address and segment size], alignment factors, return column. */
	if (vg_rd_fixed(&r, 4) != 0)
		return false;
	uint8_t version = (uint8_t)vg_rd_fixed(&r, 1);
	if (r.bad || (version != 1 && version != 3 && version != 4))
		return false;
	const char *aug = (const char *)r.p;
	const uint8_t *nul = memchr(r.p, 0, (size_t)(r.end - r.p));
	if (!nul)
		return false;
	r.p = nul + 1;
	if (version == 4 && (vg_rd_fixed(&r, 1) != 8 || vg_rd_fixed(&r, 1) != 0))
		return false;
	fs->code_align = vg_rd_uleb(&r);
	fs->data_align = vg_rd_sleb(&r);
	uint64_t ra_col = version == 1 ? vg_rd_fixed(&r, 1) : vg_rd_uleb(&r);
	if (r.bad || ra_col != 16)
		return false;

	/* Augmentation: "z" then L (LSDA encoding), R (FDE pointer encoding), P (personality), S (signal frame:
	 * the next frame's address is not a return address; libgcc's business), B (aarch64 only). */
	c->lsda_enc = 0xff;
	c->insn = NULL;
	c->saw_z = false;
	if (*aug == 'z') {
		uint64_t n = vg_rd_uleb(&r);
		if (r.bad || n > (uint64_t)(r.end - r.p))
			return false;
		c->insn = r.p + n;
		c->saw_z = true;
		aug++;
	}
	for (; *aug && !r.bad; aug++) {
		if (*aug == 'L') {
			c->lsda_enc = (uint8_t)vg_rd_fixed(&r, 1);
		} else if (*aug == 'R') {
			fs->fde_enc = (uint8_t)vg_rd_fixed(&r, 1);
		} else if (*aug == 'P') {
			uint8_t penc = (uint8_t)vg_rd_fixed(&r, 1);
			(void)vg_rd_encoded(&r, penc & 0x7f, fs->bases);        /* skipped, never dereferenced */
		} else if (*aug != 'B') {
			return false;                                   /* 'S', "eh", unknown */
		}
	}
	if (r.bad)
		return false;
	if (!c->insn)
		c->insn = r.p;
	c->end = r.end;
	return true;
}

/* The FDE's instructions: past its initial location and range (libgcc: 2 x size_of_encoded_value) and its
 * augmentation data. NULL if they cannot be found. */
static const uint8_t *vg_uw_fde_insn(const uint8_t *fde, const uint8_t *fde_end, const struct vg_fs *fs,
				     const struct vg_cie *c)
{
	struct vg_rd f = { fde + 8, fde_end, false };
	int psize;
	switch (fs->fde_enc & 0x07) {
	case 0x00: psize = 8; break;
	case 0x02: psize = 2; break;
	case 0x03: psize = 4; break;
	case 0x04: psize = 8; break;
	default: return NULL;
	}
	(void)vg_rd_fixed(&f, psize);
	(void)vg_rd_fixed(&f, psize);
	const uint8_t *fde_insn;
	if (c->saw_z) {
		uint64_t n = vg_rd_uleb(&f);
		if (f.bad || n > (uint64_t)(f.end - f.p))
			return NULL;
		fde_insn = f.p + n;
	} else {
		if (c->lsda_enc != 0xff)
			(void)vg_rd_encoded(&f, c->lsda_enc & 0x7f, fs->bases);
		fde_insn = f.p;
	}
	return f.bad ? NULL : fde_insn;
}

/* The row, as a recipe: the CFA from rsp or rbp plus a multiple of 8, the return address just below it, rbp saved
 * at most VG_UW_K_MAX slots below it or not at all. */
static uint64_t vg_uw_row_recipe(const struct vg_rules *x)
{
	if (x->cfa_how != VG_C_REG || (x->cfa_reg != 7 && x->cfa_reg != 6))
		return VG_UW_OPAQUE;
	if (x->how[2] == VG_R_UNDEFINED)
		return VG_UW_OUTERMOST;
	if (x->how[2] != VG_R_OFFSET || x->off[2] != -8)
		return VG_UW_OPAQUE;
	if (x->how[1] != VG_R_UNSAVED && x->how[1] != VG_R_UNDEFINED)
		return VG_UW_OPAQUE;            /* a rule for rsp: the caller's rsp is not the CFA */
	if (x->cfa_off < 8 || x->cfa_off % 8 || x->cfa_off / 8 > VG_UW_OFF_MAX)
		return VG_UW_OPAQUE;
	uint64_t k = 0;
	if (x->how[0] == VG_R_OFFSET) {
		if (x->off[0] >= 0 || x->off[0] % 8 || -x->off[0] / 8 < 2 || -x->off[0] / 8 > VG_UW_K_MAX)
			return VG_UW_OPAQUE;
		k = (uint64_t)(-x->off[0] / 8);
	} else if (x->how[0] != VG_R_UNSAVED && x->how[0] != VG_R_UNDEFINED) {
		return VG_UW_OPAQUE;
	}
	return (x->cfa_reg == 6 ? VG_UW_CFA_RBP : 0) | ((uint64_t)(x->cfa_off / 8) << VG_UW_OFF_SHIFT) |
	       (k << VG_UW_K_SHIFT);
}

/* The recipe bits (without the address) for the frame whose return address is ra, from its FDE: its CIE's and its
 * own programs run up to ra, and the row they leave. */
static uint64_t vg_uw_recipe(const uint8_t *fde, const struct vg_eh_bases *bases, uintptr_t ra)
{
	struct vg_fs fs;
	memset(&fs, 0, sizeof(fs));
	fs.bases = bases;
	fs.loc = (uintptr_t)bases->func;

	uint32_t len;
	memcpy(&len, fde, 4);
	if (len == 0 || len == 0xffffffffu || len > (1u << 24))
		return VG_UW_OPAQUE;
	const uint8_t *fde_end = fde + 4 + len, *fde_insn;
	struct vg_cie c;
	if (!vg_uw_cie(fde, &fs, &c) || !(fde_insn = vg_uw_fde_insn(fde, fde_end, &fs, &c)))
		return VG_UW_OPAQUE;
	if (!vg_cfa_run(&fs, c.insn, c.end, ra) || !vg_cfa_run(&fs, fde_insn, fde_end, ra))
		return VG_UW_OPAQUE;
	return vg_uw_row_recipe(&fs.r);
}

/* Is pc inside a loaded ELF object? FDEs registered at run time (__register_frame: JIT code) can be withdrawn and
 * their code freed without a dlclose; such frames are described afresh on every capture, never cached. */
static int vg_uw_elf_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t pc = *(uintptr_t *)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && pc >= s && pc < s + ph->p_memsz)
			return 1;
	}
	return 0;
}

/* A miss: read the recipe for return address ip from the CFI, and cache it unless it may go stale unseen. */
static __attribute__((noinline, cold)) uint64_t vg_uw_miss(uintptr_t ip, uint64_t gen)
{
	struct vg_eh_bases bases = { NULL, NULL, NULL };
	uintptr_t pc = ip - 1;
	vg_uw_tstats.misses++;
	const uint8_t *fde = vg_uw_find_fde((void *)pc, &bases);
	if (!fde || !dl_iterate_phdr(vg_uw_elf_cb, &pc))
		return ip | VG_UW_OPAQUE;       /* not cached: code may appear here later */
	uint64_t e = ip | vg_uw_recipe(fde, &bases, ip);
	vg_uw_insert(ip, e, gen);
	return e;
}

/* The registers of the walk's own frame just after the call: its return address, rsp and rbp. */
struct vg_uw_regs {
	uintptr_t ip, sp, bp;
};
void vg_uw_getregs(struct vg_uw_regs *r);
__asm__(".text\n"
	".p2align 4\n"
	".globl vg_uw_getregs\n"
	".hidden vg_uw_getregs\n"
	".type vg_uw_getregs, @function\n"
	"vg_uw_getregs:\n"
	".cfi_startproc\n"
	"\tmovq (%rsp), %rax\n"
	"\tmovq %rax, (%rdi)\n"
	"\tleaq 8(%rsp), %rax\n"
	"\tmovq %rax, 8(%rdi)\n"
	"\tmovq %rbp, 16(%rdi)\n"
	"\tret\n"
	".cfi_endproc\n"
	".size vg_uw_getregs, .-vg_uw_getregs\n");

/* A stack slot. An asm load: the slots belong to other frames (callers', and the return addresses written by
 * call instructions), which no sanitizer should check. */
static inline uintptr_t vg_uw_peek(uintptr_t addr)
{
	uintptr_t v;
	__asm__ volatile("movq (%1), %0" : "=r"(v) : "r"(addr));
	return v;
}

/* This thread's last walk, frame by frame: a loop allocating from one place walks the same frames again, and
 * between two of its allocations the driver's own work (tens of microseconds) evicts the shared cache's lines, so
 * reading the recipes from 4 lines of this thread's memo instead of up to 32 random lines of the cache saves the
 * misses. 32 steps: the default depth of 16 frames plus vramguard's own (about 8), which the walk steps through
 * before it records. Valid only for the generation it was made in (a dlclose since invalidates it). */
#define VG_UW_MEMO 32
static __thread struct {
	uint64_t gen;
	uint64_t e[VG_UW_MEMO];
} vg_uw_memo __attribute__((tls_model("initial-exec")));

static __attribute__((noinline)) int vg_uw_walk(void **buf, int max, uintptr_t lo, uintptr_t hi, uint64_t gen)
{
	if (vg_uw_memo.gen != gen + 1) {        /* +1: a zeroed memo is never valid */
		memset(vg_uw_memo.e, 0, sizeof(vg_uw_memo.e));
		vg_uw_memo.gen = gen + 1;
	}
	struct vg_uw_regs regs;
	vg_uw_getregs(&regs);
	uintptr_t ip = regs.ip, sp = regs.sp, bp = regs.bp;
	int n = 0, skipping = hi > lo;
	for (int steps = 0; steps < max + VG_UW_SKIP_MAX; steps++) {
		if (ip == 0)
			return n;
		if (ip > VG_UW_ADDR_MASK)
			return -1;
		uint64_t e;
		if (steps < VG_UW_MEMO && (vg_uw_memo.e[steps] & VG_UW_ADDR_MASK) == ip) {
			e = vg_uw_memo.e[steps];
		} else {
			e = vg_uw_lookup(ip);
			if (__builtin_expect(e == 0, 0))
				e = vg_uw_miss(ip, gen);
			if (steps < VG_UW_MEMO && atomic_load_explicit(&vg_uw_gen, memory_order_relaxed) == gen)
				vg_uw_memo.e[steps] = e;
		}
		uint64_t off8 = (e >> VG_UW_OFF_SHIFT) & VG_UW_OFF_MAX, k = e >> VG_UW_K_SHIFT;
		if (off8 == 0 && k != 1)
			return -1;              /* opaque */
		if (!skipping || ip < lo || ip >= hi) {
			skipping = 0;
			buf[n++] = (void *)ip;
			if (n >= max)
				return n;
		}
		if (off8 == 0)
			return n;               /* outermost */
		uintptr_t cfa = ((e & VG_UW_CFA_RBP) ? bp : sp) + off8 * 8;
		if (cfa <= sp || cfa > VG_UW_ADDR_MASK || (cfa & 7) || cfa - 8 * k < sp)
			return -1;              /* not a frame above this one: let libgcc judge */
		if (k)
			bp = vg_uw_peek(cfa - 8 * k);
		ip = vg_uw_peek(cfa - 8);
		sp = cfa;
	}
	return -1;
}

int vg_unwind_fast(void **buf, int max, uintptr_t skip_lo, uintptr_t skip_hi)
{
	if (max <= 0 || !vg_uw_find_fde)
		return -1;
	uint64_t gen = atomic_load(&vg_uw_gen);
	if (atomic_load(&vg_uw_closing) != 0)
		return -1;
	int n = vg_uw_walk(buf, max, skip_lo, skip_hi, gen);
	if (n >= 0)
		vg_uw_tstats.fast++;
	return n;
}

#else /* !__x86_64__: libgcc only */

int vg_unwind_fast(void **buf, int max, uintptr_t skip_lo, uintptr_t skip_hi)
{
	(void)buf, (void)max, (void)skip_lo, (void)skip_hi;
	return -1;
}

void vg_unwind_dlclose_begin(void)
{
}

void vg_unwind_dlclose_end(void)
{
}

void vg_unwind_atfork_child(void)
{
}

#endif

int vg_unwind_capture(void **buf, int max, uintptr_t skip_lo, uintptr_t skip_hi)
{
	if (max <= 0)
		return 0;
	int n = vg_unwind_fast(buf, max, skip_lo, skip_hi);
	if (n >= 0)
		return n;
	vg_uw_tstats.fallback++;
	return vg_unwind_libgcc(buf, max, skip_lo, skip_hi);
}

void vg_unwind_init(void)
{
	if (vg_uw_backtrace)
		return;
	/* The first backtrace() loads libgcc's unwinder: do it now, not inside the first allocation. */
	void *warm[2];
	(void)backtrace(warm, 2);
	void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!gcc)
		gcc = dlopen("libgcc_s.so.1", RTLD_NOW);
	if (!gcc)
		return;
	vg_uw_getip = (_Unwind_Ptr (*)(struct _Unwind_Context *))dlsym(gcc, "_Unwind_GetIP");
	vg_uw_backtrace = (_Unwind_Reason_Code (*)(_Unwind_Trace_Fn, void *))dlsym(gcc, "_Unwind_Backtrace");
#if defined(__x86_64__)
	/* _Unwind_Find_FDE (GCC_3.0): the FDE libgcc itself would use. The fast path runs only where libgcc can take
	 * over the captures it cannot answer. */
	if (vg_uw_getip && vg_uw_backtrace)
		vg_uw_find_fde = (const uint8_t *(*)(void *, struct vg_eh_bases *))dlsym(gcc, "_Unwind_Find_FDE");
#endif
}

void vg_unwind_stats(struct vg_unwind_stats *st)
{
	st->fast = vg_uw_tstats.fast;
	st->fallback = vg_uw_tstats.fallback;
	st->misses = vg_uw_tstats.misses;
#if defined(__x86_64__)
	st->flushes = atomic_load_explicit(&vg_uw_flushes, memory_order_relaxed);
#else
	st->flushes = 0;
#endif
}
