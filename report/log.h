/* One-line messages to stderr through write(2): fixed buffer, no stdio, safe on any thread. */
#ifndef VG_LOG_H
#define VG_LOG_H

#include "config/config.h"

extern int vg_log_level;        /* enum vg_log_level; warn until the config is read */

/* "vramguard: <level>: <message>\n" if level <= vg_log_level. */
void vg_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "vramguard: <message>\n" with no level word (denials), if level <= vg_log_level. */
void vg_log_plain(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Write a whole buffer to fd, retrying on EINTR and short writes; past RLIMIT_FSIZE it fails with -EFBIG instead of
 * raising SIGXFSZ (config/fsguard.h). Returns 0 or -errno. */
int vg_write_all(int fd, const char *buf, size_t len);

#endif
