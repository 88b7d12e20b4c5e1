/* The `vramguard` command: a launcher that validates the configuration with the library's own parser and execs the
 * job under the preload (run), tools to read reports (report, diff), to ask a running process for one (dump), to
 * see what the library would do on this machine (check), to watch and change running jobs (top, limit,
 * region), and to put containers under a quota (cdi: a CDI spec). This file holds main and help; each command has its own file (cli/commands.h, cli/cli.h). Unlike the
 * library, this program may exit. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accounting/fault.h"
#include "cli/commands.h"
#include "cli/cli.h"
#include "config/config.h"

void vg_cli_die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "vramguard: error: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(code);
}

void vg_cli_usage_exit(const char *usage, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vg_cli_vusage(usage, fmt, ap);
	va_end(ap);
	exit(rc);
}

/* ---- help ---- */

static const char usage_main[] =
	"usage: vramguard run [options] -- COMMAND [ARGS...]   run a job under vramguard\n"
	"       vramguard report [--lines] FILE.json           print a JSON report as text\n"
	"       vramguard report --html FILE.json -o FILE      ... as a page (--format folded|speedscope: exports)\n"
	"       vramguard diff OLD.json NEW.json               what grew between two reports (--html, --lines)\n"
	"       vramguard dump PID [--wait SECONDS]            ask a running job for a report\n"
	"       vramguard check                                configuration, driver, devices and quotas\n"
	"       vramguard top [--once] [--json]                processes under vramguard: VRAM in use, quotas\n"
	"       vramguard limit set SPEC --shared NAME         change a shared region's budget while it runs\n"
	"       vramguard limit set SPEC --pid PID             change one process's quota while it runs\n"
	"       vramguard limit show [--shared NAME] [--json]  the limits in force\n"
	"       vramguard exporter [--listen ADDR:PORT]        Prometheus metrics of them (default 127.0.0.1:9847)\n"
	"       vramguard autoscale --ceiling SIZE ...         raise limits on Alertmanager's alerts, within a ceiling\n"
	"       vramguard cdi --limit SIZE... [--output DIR]    a CDI spec: --device vramguard.dev/quota=SIZE\n"
	"       vramguard region create|rm|reset|evict NAME    a shared region's life: make one that outlives its\n"
	"                                                      jobs, remove it, rebuild its totals, evict a member\n"
	"       vramguard help [COMMAND] | --help | --version\n"
	"\n"
	"vramguard enforces per-process GPU memory quotas and reports leaks for CUDA jobs (PyTorch, JAX, CuPy,\n"
	"TensorFlow, CUDA C). The quota comes from NVIDIA_GPU_MEMORY_LIMITS (e.g. 4096 = 4096 MiB, 4G, 50%,\n"
	"0:4G,1:2G); see 'vramguard help run' and the man page vramguard(1).\n";

static const char usage_help[] =
	"usage: vramguard help [COMMAND]\n"
	"\n"
	"Print the usage of COMMAND (run, report, diff, dump, check, top, limit, exporter,\n"
	"autoscale, region, cdi), or of every\n"
	"command. The manual page vramguard(1) has the details.\n";

int vg_cli_help(const char *cmd)
{
	if (!cmd)
		fputs(usage_main, stdout);
	else if (!strcmp(cmd, "run"))
		fputs(vg_usage_run(), stdout);
	else if (!strcmp(cmd, "report"))
		fputs(vg_usage_report, stdout);
	else if (!strcmp(cmd, "diff"))
		fputs(vg_usage_diff, stdout);
	else if (!strcmp(cmd, "dump"))
		fputs(vg_usage_dump, stdout);
	else if (!strcmp(cmd, "check"))
		fputs(vg_usage_check, stdout);
	else if (!strcmp(cmd, "top"))
		fputs(vg_usage_top, stdout);
	else if (!strcmp(cmd, "limit"))
		fputs(vg_usage_limit, stdout);
	else if (!strcmp(cmd, "exporter"))
		fputs(vg_usage_exporter, stdout);
	else if (!strcmp(cmd, "autoscale"))
		fputs(vg_usage_autoscale, stdout);
	else if (!strcmp(cmd, "region"))
		fputs(vg_usage_region, stdout);
	else if (!strcmp(cmd, "cdi"))
		fputs(vg_usage_cdi, stdout);
	else if (!strcmp(cmd, "help"))
		fputs(usage_help, stdout);
	else
		vg_cli_die(2, "help: unknown command %s (expected one of run, report, diff, dump, check, top, limit, "
			   "exporter, autoscale, region, cdi, help)", vg_cli_q(cmd));
	return 0;
}

int main(int argc, char **argv)
{
	/* C++ frames in reports are shown demangled when libstdc++'s demangler is at hand; the command may load it. */
	(void)dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
	opterr = 0;     /* the commands say which option is wrong themselves (vg_cli_bad_option), bounded */
	/* A region file truncated by its owner while a command works on it costs that file, not the command
	 * (accounting/fault.h). exec resets it: the job of `run` gets the default action back. */
	vg_fault_install();
	if (argc < 2) {
		fputs(usage_main, stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
		return vg_cli_help(NULL);
	if (!strcmp(cmd, "help")) {
		if (argc > 3)
			vg_cli_usage_exit(usage_help, "help: expected one COMMAND, got %s too", vg_cli_q(argv[3]));
		return vg_cli_help(argc > 2 ? argv[2] : NULL);
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("vramguard %s\n", VG_VERSION);
		return 0;
	}
	argc--;
	argv++;
	if (!strcmp(cmd, "run"))
		return vg_cli_run(argc, argv);
	if (!strcmp(cmd, "report"))
		return vg_cli_report(argc, argv);
	if (!strcmp(cmd, "diff"))
		return vg_cli_diff(argc, argv);
	if (!strcmp(cmd, "dump"))
		return vg_cli_dump(argc, argv);
	if (!strcmp(cmd, "check"))
		return vg_cli_check(argc, argv);
	if (!strcmp(cmd, "top"))
		return vg_cli_top(argc, argv);
	if (!strcmp(cmd, "limit"))
		return vg_cli_limit(argc, argv);
	if (!strcmp(cmd, "region"))
		return vg_cli_region(argc, argv);
	if (!strcmp(cmd, "cdi"))
		return vg_cli_cdi(argc, argv);
	if (!strcmp(cmd, "exporter"))
		return vg_cli_exporter(argc, argv);
	if (!strcmp(cmd, "autoscale"))
		return vg_cli_autoscale(argc, argv);
	fprintf(stderr, "vramguard: error: unknown command %s (see 'vramguard --help')\n%s", vg_cli_q(cmd), usage_main);
	return 2;
}
