/* Logging: format into a fixed stack buffer and write(2) it whole, so messages from threads never interleave
 * mid-line and nothing here allocates. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/fsguard.h"
#include "report/log.h"

int vg_log_level = VG_LOG_WARN;

int vg_write_all(int fd, const char *buf, size_t len)
{
	/* stderr or a report file may be at its size limit: the write fails with EFBIG, and must not kill the job. */
	struct vg_fsguard g;
	int rc = 0;
	vg_fsguard_enter(&g);
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		buf += n;
		len -= (size_t)n;
	}
	vg_fsguard_leave(&g);
	return rc;
}

static void vg_vlog(const char *prefix, const char *fmt, va_list ap)
{
	char buf[1024];
	int saved = errno;
	int n = snprintf(buf, sizeof(buf), "vramguard: %s", prefix);
	if (n < 0)
		n = 0;
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(buf) - 2)
		len = sizeof(buf) - 2;
	buf[len++] = '\n';
	(void)vg_write_all(STDERR_FILENO, buf, len);
	errno = saved;
}

void vg_log(int level, const char *fmt, ...)
{
	static const char *const words[] = { "", "error: ", "warning: ", "info: ", "debug: " };
	if (level > vg_log_level || level <= VG_LOG_OFF)
		return;
	va_list ap;
	va_start(ap, fmt);
	vg_vlog(words[level], fmt, ap);
	va_end(ap);
}

void vg_log_plain(int level, const char *fmt, ...)
{
	if (level > vg_log_level || level <= VG_LOG_OFF)
		return;
	va_list ap;
	va_start(ap, fmt);
	vg_vlog("", fmt, ap);
	va_end(ap);
}
