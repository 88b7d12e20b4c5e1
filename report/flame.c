/* A site's combined stack for the flame-graph views (report/flame.h), and the folded export. */
#include "report/flame.h"

#include <inttypes.h>
#include <string.h>

#include "report/srcline.h"

const char *vg_flame_basename(const char *path, size_t max, size_t *len)
{
	size_t n = strnlen(path, max), i = n;
	while (i > 0 && path[i - 1] != '/')
		i--;
	if (i == n)             /* "dir/": keep it whole */
		i = 0;
	*len = n - i;
	return path + i;
}

/* python3, python3.11, python3.13t, libpython3.11.so.1.0: the interpreter, whose frames the Python ones explain. */
static int vg_flame_is_interpreter(const struct vg_report_frame *f)
{
	size_t n;
	const char *b = vg_flame_basename(f->module, VG_REPORT_FRAME_STR, &n);
	return (n >= 6 && !strncmp(b, "python", 6)) || (n >= 9 && !strncmp(b, "libpython", 9));
}

/* Process and thread start-up as glibc and musl name it (report/flame.h): the frames every stack of a program or
 * thread begins with. */
static const char *const vg_flame_startup_syms[] = {
	"_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main", "libc_start_main_stage2",
	"_dl_start_user", "start_thread", "clone", "clone3", "__clone", "__clone3", "__clone_internal",
};

/* libc itself (glibc's libc.so.6 or libc-2.31.so, musl's libc.musl-*.so.1 or ld-musl-*.so.1), whose start-up
 * functions are static: without debug information they have no name. */
static int vg_flame_is_libc(const struct vg_report_frame *f)
{
	size_t n;
	const char *b = vg_flame_basename(f->module, VG_REPORT_FRAME_STR, &n);
	return (n >= 5 && (!strncmp(b, "libc.", 5) || !strncmp(b, "libc-", 5))) || (n >= 7 && !strncmp(b, "ld-musl", 7));
}

static int vg_flame_is_startup(const struct vg_report_frame *f)
{
	if (!f->symbol[0])
		return f->module[0] && vg_flame_is_libc(f);
	for (size_t i = 0; i < sizeof(vg_flame_startup_syms) / sizeof(vg_flame_startup_syms[0]); i++)
		if (!strncmp(f->symbol, vg_flame_startup_syms[i], VG_REPORT_FRAME_STR))
			return 1;
	return 0;
}

/* How many of s's outermost native frames are start-up frames, at most all but one. */
static size_t vg_flame_startup(const struct vg_report_site *s)
{
	size_t nn = s->frames ? s->nframes : 0, k = 0;
	if (nn > VG_REPORT_MAX_FRAMES)
		nn = VG_REPORT_MAX_FRAMES;
	while (k + 1 < nn && vg_flame_is_startup(&s->frames[nn - 1 - k]))
		k++;
	return k;
}

size_t vg_flame_stack(const struct vg_report *r, const struct vg_report_site *s, struct vg_flame_frame *out)
{
	size_t np = s->python ? s->npython : 0, nn = s->frames ? s->nframes : 0, k = 0, i, keep = nn;

	if (np > VG_REPORT_MAX_PYFRAMES)
		np = VG_REPORT_MAX_PYFRAMES;
	if (nn > VG_REPORT_MAX_FRAMES)
		nn = VG_REPORT_MAX_FRAMES;
	keep = nn;
	if (np)
		for (i = 0; i < nn; i++)
			if (vg_flame_is_interpreter(&s->frames[i])) {
				keep = i;
				break;
			}
	if (keep == nn)         /* every native frame kept: the start-up ones fold into the root */
		keep -= vg_flame_startup(s);
	for (i = np; i-- > 0;)
		out[k++] = (struct vg_flame_frame){ .py = &s->python[i], .native = NULL };
	for (i = keep; i-- > 0;)
		out[k++] = (struct vg_flame_frame){ .py = NULL, .native = &s->frames[i], .r = r };
	if (!k)
		out[k++] = (struct vg_flame_frame){ NULL, NULL, NULL };
	return k;
}

void vg_flame_symbol(struct vg_strbuf *b, const struct vg_report_frame *f)
{
	struct vg_strbuf t = { 0 };
	size_t n;

	vg_report_frame_symbol_text(&t, f);
	if (t.failed || !t.data) {
		b->failed = 1;
		vg_strbuf_free(&t);
		return;
	}
	n = t.len;
	/* "func+0x1c" -> "func": every call from one function is one frame */
	if (f->symbol[0]) {
		size_t i = n;
		while (i > 0 && strchr("0123456789abcdef", t.data[i - 1]))
			i--;
		if (i >= 3 && !strncmp(t.data + i - 3, "+0x", 3) && i < n)
			n = i - 3;
	}
	vg_strbuf_add(b, t.data, n);
	vg_strbuf_free(&t);
}

/* The function the frame's code was compiled into: its symbol, else the debug information's name. */
static void vg_flame_outer(struct vg_strbuf *b, const struct vg_report_frame *f, const struct vg_srcline *sl)
{
	if (!f->symbol[0] && sl->outer[0])
		vg_text_str(b, sl->outer, sizeof(sl->outer));
	else
		vg_flame_symbol(b, f);
}

static void vg_flame_at(struct vg_strbuf *b, const char *file, size_t max, uint32_t line)
{
	vg_strbuf_str(b, " ");
	vg_text_str(b, file[0] ? file : "??", max);
	if (line)
		vg_strbuf_printf(b, ":%" PRIu32, line);
}

/* A native frame with its source line (vg_flame_label's --lines form): 0, or -1 when it has none. */
static int vg_flame_lines(struct vg_strbuf *b, const struct vg_flame_frame *f)
{
	struct vg_srcline sl;
	size_t i, n;
	const char *base;

	if (!f->r || vg_report_srcline(f->r, f->native, &sl) != 0 || !sl.file[0])
		return -1;
	n = sl.ncallers;
	for (i = n; i-- > 0;) {         /* callers[i] called the next one in at its line; the last is the frame's */
		if (i + 1 == n)
			vg_flame_outer(b, f->native, &sl);
		else
			vg_text_str(b, sl.callers[i].function[0] ? sl.callers[i].function : "??",
				    sizeof(sl.callers[i].function));
		vg_flame_at(b, sl.callers[i].file, sizeof(sl.callers[i].file), sl.callers[i].line);
		vg_strbuf_str(b, " > ");
	}
	if (n && sl.function[0])
		vg_text_str(b, sl.function, sizeof(sl.function));
	else
		vg_flame_outer(b, f->native, &sl);
	vg_flame_at(b, sl.file, sizeof(sl.file), sl.line);
	base = vg_flame_basename(f->native->module, VG_REPORT_FRAME_STR, &n);
	vg_strbuf_str(b, " (");
	vg_text_str(b, base, n);
	vg_strbuf_str(b, ")");
	return 0;
}

int vg_flame_label(struct vg_strbuf *b, const struct vg_flame_frame *f)
{
	size_t n;
	const char *base;

	if (f->py) {
		vg_text_str(b, f->py->file[0] ? f->py->file : "?", VG_REPORT_FRAME_STR);
		vg_strbuf_printf(b, ":%" PRIu32 " in ", f->py->line);
		vg_text_str(b, f->py->function[0] ? f->py->function : "?", VG_REPORT_PY_FUNCTION_STR);
	} else if (f->native && vg_flame_lines(b, f) == 0) {
		return 0;
	} else if (f->native && !f->native->symbol[0]) {       /* no name: where it is */
		if (f->native->module[0]) {
			base = vg_flame_basename(f->native->module, VG_REPORT_FRAME_STR, &n);
			vg_text_str(b, base, n);
			vg_strbuf_printf(b, "+0x%" PRIx64, f->native->module_offset);
		} else {
			vg_strbuf_printf(b, "0x%" PRIx64, f->native->address);
		}
		return 1;
	} else if (f->native) {
		vg_flame_symbol(b, f->native);
		vg_strbuf_str(b, " (");
		base = vg_flame_basename(f->native->module, VG_REPORT_FRAME_STR, &n);
		vg_text_str(b, base, n);
		vg_strbuf_str(b, ")");
	} else {
		vg_strbuf_str(b, "(no call site)");
	}
	return 0;
}

int vg_report_render_folded(const struct vg_report *r, struct vg_strbuf *out)
{
	struct vg_flame_frame st[VG_FLAME_MAX];
	size_t i, j, n, from;

	for (i = 0; r->sites && i < r->nsites; i++) {
		const struct vg_report_site *s = &r->sites[i];
		if (!s->live_bytes)
			continue;
		n = vg_flame_stack(r, s, st);
		for (j = 0; j < n; j++) {
			if (j)
				vg_strbuf_add(out, ";", 1);
			from = out->len;
			vg_flame_label(out, &st[j]);
			for (; !out->failed && from < out->len; from++)     /* ';' separates frames */
				if (out->data[from] == ';')
					out->data[from] = ',';
		}
		vg_strbuf_printf(out, " %" PRIu64 "\n", s->live_bytes);
	}
	return vg_strbuf_result(out);
}
