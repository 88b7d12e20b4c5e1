/* What every command of `vramguard` shares (cli/cli.c), below all of them: the command table's rows as data (usage
 * texts, `help`, getopt_long's tables, from cli/commands.h), the helpers for messages, options and the regions'
 * directory, and where the library is. One error convention: a command says what is wrong with vg_cli_fail (or
 * vg_cli_usage) and returns the exit status it gives; nothing here or in a command calls exit(). */
#ifndef VG_CLI_H
#define VG_CLI_H

#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#define VG_CLI_DIR_MAX 256
#define VG_CLI_WHY_MAX 640
#define VG_CLI_FLAGS_MAX 64             /* flags of one command, the options table's included (run) */

/* ---- the command table (cli/commands.h) as data ---- */

/* One flag: a row of its command's VG_<COMMAND>_FLAGS, or (run) of the options table's flag column. */
struct vg_cli_flag {
	const char *name;               /* the long name, without "--" */
	char short_name;                /* 0: none */
	bool repeat;                    /* VG_ARGS: may be given more than once */
	const char *metavar;            /* its value's name (SPEC, DIR); NULL: it takes none */
	const char *help;               /* one line; a '\n' goes on under the help column */
	const char *env;                /* run: the variable it sets (the help says it first); else NULL */
};

struct vg_cli_command {
	const char *name, *summary;
	const char *const *usage;       /* the forms, NULL-terminated */
	const char *about, *notes;
	const struct vg_cli_flag *flags;        /* as written: run's has the options table's row */
	size_t nflags;
};

/* The command named name, or NULL. */
const struct vg_cli_command *vg_cli_command(const char *name);
/* The flags of c as getopt and the usage see them (run's: the options table's flag column): *n of them. */
const struct vg_cli_flag *vg_cli_flags(const struct vg_cli_command *c, size_t *n);
/* The usage text of the command cmd ("usage:" lines, what it does, one line per flag, notes), or with cmd NULL the
 * list of commands: built once from the table, never freed. */
const char *vg_cli_usage_of(const char *cmd);
/* Print the usage of cmd (NULL: the list of commands) on stdout; 0. An unknown cmd: a usage error, 2. */
int vg_cli_help(const char *cmd);
/* The names of the commands, "run, report, ..., help", for a message. */
const char *vg_cli_command_names(void);

/* ---- options: getopt_long driven by a command's flag rows ---- */

enum {
	VG_CLI_OPT_END = -1,            /* no more options (optind: the first operand) */
	VG_CLI_OPT_HELP = -2,           /* -h or --help */
	VG_CLI_OPT_OPERAND = -3,        /* an operand, in order (mode "-"): optarg */
	VG_CLI_OPT_BAD = -4,            /* an unknown option or a missing value: vg_cli_bad_option says which */
};

struct vg_cli_getopt {
	const struct vg_cli_command *cmd;
	const char *what;               /* the command as messages name it ("limit set") */
	const struct vg_cli_flag *flags;
	size_t nflags;
	struct option longs[VG_CLI_FLAGS_MAX + 2];
	char shorts[2 * VG_CLI_FLAGS_MAX + 8];
	int raw, longindex;             /* getopt_long's last answer, and the long option it matched (-1: a short one) */
};

/* Start parsing argv for command cmd (argv[0] its name, optind reset); what names it in messages (NULL: cmd);
 * mode "" (options and operands in any order), "+" (options stop at the first operand: run) or "-" (operands come
 * back in order as VG_CLI_OPT_OPERAND). */
void vg_cli_getopt_init(struct vg_cli_getopt *g, const char *cmd, const char *what, const char *mode);
/* The next option: its row's index (the command's VG_OPT_<id>), optarg its value; or one of VG_CLI_OPT_*. */
int vg_cli_getopt(struct vg_cli_getopt *g, int argc, char **argv);
/* After VG_CLI_OPT_BAD: "CMD: unknown option X" or "CMD: option X needs a value", then the usage, on stderr; 2. */
int vg_cli_bad_option(const struct vg_cli_getopt *g, char **argv);
/* A flag of the command that this form of it does not take (`limit set --json`): said as an unknown one; 2. */
int vg_cli_refuse_option(const struct vg_cli_getopt *g, char **argv);
/* A negative number among the operands ("dump -1", "limit set -1G"), which getopt would take for an option: the
 * first argument before "--" that starts with '-' and a digit and is not the value of a flag of g's command that
 * takes one. NULL if there is none. */
const char *vg_cli_negative(const struct vg_cli_getopt *g, int argc, char **argv);

/* ---- messages ---- */

/* "vramguard: error: ..." on stderr, one line; returns code (the exit status). */
int vg_cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for a usage error: the line, then usage; returns 2. */
int vg_cli_usage(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int vg_cli_vusage(const char *usage, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Text a user gave, as a message quotes it: vg_quote into one of 8 rotating buffers (one message may quote several
 * things), so that a line stays short whatever the argument. */
const char *vg_cli_q(const char *s);

/* ---- values, time, places ---- */

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
/* getenv, for vg_config_load: the command reads its environment as an ordinary process would (secure = 0): it is
 * not meant to be installed setuid, and `run` checks the variables the way the job will read them. */
const char *vg_cli_env_get(const char *name);
/* The library next to this command: bin/../lib/libvramguard.so and the like. 0, or -1 if not found. */
int vg_cli_find_library(char *out, size_t len);

#endif
