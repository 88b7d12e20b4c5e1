/* check.h: assertion and figure helpers shared by the suite's CUDA programs. Every assertion prints one line,
 * "ok ..." or "BAD ...", and never stops the program, so one broken step still lets the rest report. main returns
 * finish(): 0 when nothing was BAD. run.sh quotes the BAD lines and the final "figures: ..." line. */
#ifndef VG_GPU_CHECK_H
#define VG_GPU_CHECK_H
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static int vg_bad;
static char vg_figures[4096];

static double mib(unsigned long long bytes) { return (double)bytes / (double)MiB; }

static void check(int ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs(ok ? "ok " : "BAD ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	va_end(ap);
	if (!ok)
		vg_bad++;
}

/* A number worth quoting in run.sh's one-line result. */
static void figure(const char *fmt, ...)
{
	size_t n = strlen(vg_figures);
	va_list ap;
	if (n && n + 2 < sizeof vg_figures)
		n += (size_t)snprintf(vg_figures + n, sizeof vg_figures - n, "; ");
	va_start(ap, fmt);
	if (n < sizeof vg_figures)
		vsnprintf(vg_figures + n, sizeof vg_figures - n, fmt, ap);
	va_end(ap);
}

static int finish(void)
{
	printf("figures: %s\n", vg_figures);
	fflush(stdout);
	return vg_bad ? 1 : 0;
}
#endif
