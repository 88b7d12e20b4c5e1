/* What every command of `vramguard` shares: the subcommands' entry points and usage texts, and the helpers for
 * messages, options and the regions' directory. An ordinary program: these may print and the caller exits. */
#ifndef VG_CLI_H
#define VG_CLI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#define VG_CLI_DIR_MAX 256
#define VG_CLI_WHY_MAX 640

extern const char vg_usage_top[];
extern const char vg_usage_limit[];
extern const char vg_usage_region[];
extern const char vg_usage_exporter[];
extern const char vg_usage_autoscale[];

/* The commands on regions (cli/top.c, cli/limit.c, cli/region.c): argv[0] is "top" / "limit" / "region". Exit
 * status 0 done, 1 error, 2 usage. */
int vg_cli_top(int argc, char **argv);
int vg_cli_limit(int argc, char **argv);
int vg_cli_region(int argc, char **argv);
/* `vramguard exporter` (cli/exporter.c): the regions as Prometheus metrics. */
int vg_cli_exporter(int argc, char **argv);
/* `vramguard autoscale` (cli/autoscale.c): raise limits on Alertmanager's alerts, within a ceiling. */
int vg_cli_autoscale(int argc, char **argv);

/* "vramguard: error: ..." on stderr, one line; returns code (the exit status). */
int vg_cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for a usage error: the line, then usage; returns 2. */
int vg_cli_usage(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int vg_cli_vusage(const char *usage, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Text a user gave, as a message quotes it: vg_quote into one of 8 rotating buffers (one message may quote several
 * things), so that a line stays short whatever the argument. */
const char *vg_cli_q(const char *s);
/* getopt_long (opterr 0, optstring starting with ':') returned '?' or ':' for cmd: say which option and what is
 * wrong with it, then usage. Returns 2, the exit status of a usage error. */
int vg_cli_bad_option(const char *cmd, char **argv, int c, const char *usage);
/* A negative number among the operands ("dump -1", "limit set -1G"), which getopt would take for an option: the
 * first argument before "--" that starts with '-' and a digit and is not the value of one of the options in valued
 * (NULL-terminated spellings that take a separate value, e.g. "--pid", "-p"). NULL if there is none. */
const char *vg_cli_negative(int argc, char **argv, const char *const *valued);
/* A number of seconds given to an option ("10", "0.5"): the whole string a decimal number, into *out. The caller
 * checks the range it allows. */
bool vg_cli_seconds(const char *s, double *out);
/* Seconds on the monotonic clock, for intervals and deadlines. */
double vg_cli_now(void);

/* The directory: opt (--dir) if given, else VRAMGUARD_SHM_DIR, else /dev/shm. 0, or -EINVAL with the message. */
int vg_cli_dir(const char *opt, char *out, size_t len, char *err, size_t errlen);
/* VRAMGUARD_SHM_DIR (dir in its place when not NULL) and VRAMGUARD_SHARED as the library's loader reads them
 * (trimmed, checked, defaulted as the jobs read them), so that the command looks where the jobs look. NULL with the
 * message in err if it refuses them. */
struct vg_config;
const struct vg_config *vg_cli_env(const char *dir, char *err, size_t errlen);

#endif
