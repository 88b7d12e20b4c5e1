/* The `vramguard` command's own commands, one file each: run (cli/run.c), report and diff (cli/report_cmd.c), dump
 * (cli/dump.c), check (cli/check.c), cdi (cli/cdi.c); main and help in cli/vramguard.c. top, limit and region are declared in cli/cli.h. */
#ifndef VG_CLI_COMMANDS_H
#define VG_CLI_COMMANDS_H

#include <stddef.h>

/* The commands: argv[0] is the command's name. They return the exit status, or exit through the two below. */
int vg_cli_run(int argc, char **argv);
int vg_cli_report(int argc, char **argv);
int vg_cli_diff(int argc, char **argv);
int vg_cli_dump(int argc, char **argv);
int vg_cli_check(int argc, char **argv);
int vg_cli_cdi(int argc, char **argv);

/* Usage texts. run's is built from the options table's flag column, once. */
const char *vg_usage_run(void);
extern const char vg_usage_report[];
extern const char vg_usage_diff[];
extern const char vg_usage_dump[];
extern const char vg_usage_check[];
extern const char vg_usage_cdi[];

/* Print the usage of cmd (NULL: every command) on stdout; returns 0. An unknown cmd is a usage error (exit 2). */
int vg_cli_help(const char *cmd);

/* vg_cli_fail and vg_cli_usage (cli/cli.h), then exit with their status: for the commands that stop at the first
 * error. */
void vg_cli_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
void vg_cli_usage_exit(const char *usage, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* The library next to this command: bin/../lib/libvramguard.so and the like. 0, or -1 if not found. */
int vg_cli_find_library(char *out, size_t len);
/* getenv, for vg_config_load: the command reads its environment as an ordinary process would. */
const char *vg_cli_env_get(const char *name);

#endif
