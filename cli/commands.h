/* The `vramguard` command's list that drives code: one row per command (VG_COMMANDS) and one row per flag of each
 * (VG_<COMMAND>_FLAGS), as interposer/hooks.h is the interposer's and config/options.h config's. From these rows
 * come main's dispatch (cli/vramguard.c), `vramguard help` and every command's usage text, getopt_long's option
 * array and optstring, the error for an unknown command (cli/cli.c), and the man page's SYNOPSIS and each command's
 * option list (scripts/gen-man.c, checked current by `make test`). Only macros and constants: the man page
 * generator includes this header without the command's code, and cli/cli.c includes it from below every command.
 *
 * X(name, function, summary, usage, flags, about, notes)
 *   name      the command, as typed (an identifier: `#name` is the string)
 *   function  int function(int argc, char **argv), argv[0] the command's name: the exit status (0 done, 1 error,
 *             2 usage); an error is said with vg_cli_fail (cli/cli.h) and returned, never exit()ed
 *   summary   one line for `vramguard help`'s list
 *   usage     VG_USAGE("FORM", ...): the command's forms after "vramguard " (its "usage:" lines, the man page's
 *             SYNOPSIS); a '\n' in one continues it under its first operand. Upper case: what the user gives
 *   flags     the command's flag rows, VG_<COMMAND>_FLAGS or VG_NO_FLAGS
 *   about     what the usage says before the flags; notes: after them ("" for none, else starting "\n")
 *
 * A flag row: X(id, long, short, kind, help)
 *   id        VG_OPT_<id> is the flag's index among its command's rows (the value cli/cli.h's vg_cli_getopt returns)
 *   short     its letter, or 0 for none; -h and --help are every command's and are not rows
 *   kind      VG_NOARG; VG_ARG("METAVAR"): one value; VG_ARGS("METAVAR"): a value, repeatable
 *   help      one line after the flag in the usage, and its text in the man page; a '\n' goes on under the help
 *             column. The man page writes METAVAR in lower-case italics.
 * `run`'s flags are the options table's flag column (config/options.h): VG_OPTION_FLAGS stands for them. */
#ifndef VG_CLI_COMMANDS_H
#define VG_CLI_COMMANDS_H

#include <stdbool.h>

#include "cli/view_schema.h"

#define VG_USAGE(...) __VA_ARGS__
#define VG_NOARG false, NULL
#define VG_ARG(metavar) false, metavar
#define VG_ARGS(metavar) true, metavar
#define VG_NO_FLAGS(X)
/* A row that stands for every row of the options table with a flag (config/options.h's VG_FLAG), each setting its
 * variable: `run`'s. */
#define VG_OPTION_FLAGS(X) X(OPTIONS, NULL, 0, VG_ARG(NULL), NULL)

/* Facts that both a command and its help text state. */
#define VG_CLI_DIR_HELP "where regions live (default VRAMGUARD_SHM_DIR, else /dev/shm)"
#define VG_EXPORTER_LISTEN_DEFAULT "127.0.0.1:9847"
#define VG_AS_LISTEN_DEFAULT "127.0.0.1:9848"
#define VG_CDI_KIND "vramguard.dev/quota"
#define VG_CDI_VERSION "0.5.0"  /* the newest podman 4.3 reads; containerd 1.7 and CRI-O 1.27 read it too */
#define VG_CDI_FILE "vramguard.dev-quota.yaml"
#define VG_CDI_LIB_IN "/usr/lib/vramguard/libvramguard.so"    /* where containers see the library */

/* ---- run ---- */
#define VG_RUN_FLAGS(X) VG_OPTION_FLAGS(X)
#define VG_RUN_ABOUT                                                                                                  \
	"Validate the configuration, add libvramguard.so in front of LD_PRELOAD and exec COMMAND. Exit status,\n"    \
	"standard streams and signals are COMMAND's own. Options override the environment:\n"
#define VG_RUN_NOTES                                                                                                  \
	"\n"                                                                                                          \
	"An invalid value is rejected before COMMAND starts, with the library's message (exit status 2).\n"           \
	"If COMMAND cannot be run the exit status is 127 (not found) or 126 (not executable).\n"

/* ---- report and diff ---- */
#define VG_REPORT_FLAGS(X)                                                                                            \
	X(REPORT_HTML, "html", 'H', VG_NOARG,                                                                         \
	  "a self-contained HTML page: timelines, icicle graph, sortable tables (--format html)")                    \
	X(REPORT_FORMAT, "format", 'f', VG_ARG("FORMAT"),                                                             \
	  "text (default), html, folded (collapsed stacks of live bytes: flamegraph.pl,\ninferno, speedscope) or "    \
	  "speedscope (speedscope's JSON file format)")                                                               \
	X(REPORT_OUTPUT, "output", 'o', VG_ARG("FILE"), "write there instead of stdout ('-': stdout)")                \
	X(REPORT_LINES, "lines", 'l', VG_NOARG,                                                                       \
	  "add source lines (file:line, inlined callers) to the text form's native frames, from\nthe debug "          \
	  "information of the builds that ran, found by the report's build IDs: the\nmodule's file, "                \
	  "/usr/lib/debug/.build-id/, then --debug-dir (needs elfutils' libdw1)")                                    \
	X(REPORT_DEBUG_DIR, "debug-dir", 0, VG_ARGS("DIR"),                                                           \
	  "also look in DIR: DIR/.build-id/xx/rest.debug, DIR/NAME.debug or DIR/NAME\n(repeatable, up to 8; "         \
	  "implies --lines). Only regular files are read")                                                            \
	X(REPORT_LINES_TIMEOUT, "lines-timeout", 0, VG_ARG("SECONDS"),                                                \
	  "time for all the lines (default 10; implies --lines): the frames left then get\nnone, and one line says so")
#define VG_REPORT_ABOUT                                                                                               \
	"Print a JSON report (VRAMGUARD_REPORT_FORMAT=json) as the text report the library would have written, or\n" \
	"as a page or an export (docs/report-format.md, *The HTML report and the exports*).\n"

#define VG_DIFF_FLAGS(X)                                                                                              \
	X(DIFF_ROWS, "rows", 'n', VG_ARG("N"), "rows per section (default 20)")                                      \
	X(DIFF_ALL, "all", 'a', VG_NOARG, "also list call sites that did not change")                                 \
	X(DIFF_EXIT_CODE, "exit-code", 'e', VG_NOARG,                                                                 \
	  "exit 1 if live memory grew on any device or call site (for scripts)")                                      \
	X(DIFF_HTML, "html", 'H', VG_NOARG,                                                                           \
	  "a self-contained HTML page instead: timelines between the reports, an icicle graph of\nwhat grew, "        \
	  "sortable tables")                                                                                          \
	X(DIFF_OUTPUT, "output", 'o', VG_ARG("FILE"), "write there instead of stdout ('-': stdout)")     \
	X(DIFF_LINES, "lines", 'l', VG_NOARG,                                                                         \
	  "source lines for the text's native frames, as `vramguard report --lines`\n(see its help)")                 \
	X(DIFF_DEBUG_DIR, "debug-dir", 0, VG_ARGS("DIR"), "where else to find debug files (repeatable; implies --lines)") \
	X(DIFF_LINES_TIMEOUT, "lines-timeout", 0, VG_ARG("SECONDS"),                                                  \
	  "time for all the lines (default 10; implies --lines)")
#define VG_DIFF_ABOUT                                                                                                 \
	"Compare two reports, per device and per call site: what grew, what is new, what shrank or is gone, largest\n" \
	"change first. Reports of one process are matched by call-site id; of different processes by call stack\n"    \
	"(native frames and, where the thread ran Python code, its Python frames).\n"

/* ---- dump, check ---- */
#define VG_DUMP_FLAGS(X) X(DUMP_WAIT, "wait", 'w', VG_ARG("SECONDS"), "how long to wait for the report (default 10)")
#define VG_DUMP_ABOUT                                                                                                 \
	"Send a running process its report signal (VRAMGUARD_SIGNAL, default SIGUSR1) and print the path of the\n"   \
	"report it writes. The process must run under vramguard with VRAMGUARD_REPORT set to a file template;\n"      \
	"the signal is not sent if the process does not catch it (it would terminate the process).\n"

#define VG_CHECK_ABOUT                                                                                                \
	"Print the effective configuration from the environment, the library that 'run' would load, whether\n"       \
	"libcuda.so.1 and NVML are found, the driver version, and each visible device with its memory and quota.\n"  \
	"No CUDA context is created. Exit status 2 if the configuration is invalid.\n"

/* ---- top ---- */
#define VG_TOP_FLAGS(X)                                                                                               \
	X(TOP_ONCE, "once", '1', VG_NOARG, "print one snapshot and exit")                                             \
	X(TOP_JSON, "json", 'j', VG_NOARG,                                                                            \
	  "JSON (schema " VG_VIEW_TOP_SCHEMA ", see docs/report-format.md): one snapshot, or with\n--interval one "    \
	  "document per line every interval")                                                                         \
	X(TOP_INTERVAL, "interval", 'n', VG_ARG("SECONDS"), "time between snapshots (default 1; 0.1 to 86400)")       \
	X(TOP_SHARED, "shared", 's', VG_ARGS("NAME|PATH"),                                                            \
	  "also look at this shared region (repeatable; the one VRAMGUARD_SHARED names is\nalways included)")         \
	X(TOP_DIR, "dir", 'd', VG_ARG("DIR"), VG_CLI_DIR_HELP)
#define VG_TOP_ABOUT                                                                                                  \
	"Show every process running under vramguard on this machine: per GPU the memory it has in use, its peak,\n"  \
	"its quota (the tighter of its own and its shared region's budget), allocations denied, its last report and\n" \
	"its shared region; then totals per GPU with the shared regions' budgets. Processes are found through the\n"  \
	"files in VRAMGUARD_SHM_DIR (default /dev/shm): shared regions, and the control segment of every other\n"     \
	"process. The view refreshes until q or Ctrl-C; when standard output is not a terminal, a snapshot is\n"      \
	"printed every interval.\n"
#define VG_TOP_NOTES                                                                                                  \
	"\n"                                                                                                          \
	"The share of a process that died without leaving (SIGKILL), in any PID namespace, is reclaimed where the\n"  \
	"region is writable, its control segment removed, and a region that all its members have left removed\n"     \
	"(not one made with 'vramguard region create'); elsewhere it is shown as (exited) and left out of the totals.\n" \
	"A member of another PID namespace that holds no liveness lock cannot be checked: it is shown as\n"           \
	"(unverifiable) and counted ('vramguard region evict' frees it). Region files that cannot be opened (another\n" \
	"user's; root sees every user's) are counted on one line; a region file that every user can write is shown\n" \
	"read-only.\n"

/* ---- limit ---- */
#define VG_LIMIT_FLAGS(X)                                                                                             \
	X(LIMIT_SHARED, "shared", 's', VG_ARGS("NAME|PATH"),                                                          \
	  "set: the shared region's budget per GPU, for all its processes; a key N: means\nthe GPU whose ORDINAL "    \
	  "'limit show' lists as N; show: also this region (repeatable)")                                                  \
	X(LIMIT_PID, "pid", 'p', VG_ARG("PID"),                                                                       \
	  "set: that process's own quota (found through its control segment or its slot in\na shared region; with "   \
	  "--shared, only there); show: only that process")                                                           \
	X(LIMIT_COMPUTE, "compute", 'c', VG_ARG("PCT"),                                                               \
	  "set: a compute share, as VRAMGUARD_COMPUTE_LIMIT (40%, 0:30%,1:70%, GPU-<uuid>:40%,\nunlimited): with "    \
	  "--pid that process's own; with --shared alone the region's, which its\nmembers that use a GPU at the same " \
	  "time divide")                                                                                              \
	X(LIMIT_JSON, "json", 'j', VG_NOARG, "show: JSON (schema " VG_VIEW_LIMITS_SCHEMA ", see docs/report-format.md)") \
	X(LIMIT_DIR, "dir", 'd', VG_ARG("DIR"), VG_CLI_DIR_HELP)
#define VG_LIMIT_ABOUT                                                                                                \
	"Change a limit while jobs run, or show the limits in force. SPEC is written as NVIDIA_GPU_MEMORY_LIMITS:\n"  \
	"4096 (MiB), 4G, 50%, unlimited, 0:4G,1:2G, GPU-<uuid>:4G. --compute PCT changes the compute share (a\n"      \
	"share of the GPU's time, docs/compute.md) with SPEC or without it.\n"
#define VG_LIMIT_NOTES                                                                                                \
	"\n"                                                                                                          \
	"Processes apply a new limit at their next allocation and a new compute share within a second (also one\n"    \
	"started with no compute limit); until then 'limit show' lists it as pending (REQUESTED). A limit below\n"    \
	"what is in use is accepted: new allocations are denied until usage drops under it. With --shared, a SPEC\n"  \
	"of keys only (0:4G) changes those GPUs and keeps the region's default for GPUs registered later; members\n"  \
	"whose budget came from NVIDIA_GPU_MEMORY_LIMITS alone (no VRAMGUARD_SHARED_LIMITS) move their own quota\n"   \
	"with it. A region may be changed by its owner, its group when the file is group-writable, and root;\n"       \
	"never when every user can write the file. Exit status 1 if the region or process is not found or may not\n"  \
	"be changed, 2 for a usage error or an invalid SPEC or PCT.\n"

/* ---- exporter, autoscale ---- */
#define VG_EXPORTER_FLAGS(X)                                                                                          \
	X(EXPORTER_LISTEN, "listen", 'l', VG_ARG("ADDR:PORT"),                                                        \
	  "where to serve (default " VG_EXPORTER_LISTEN_DEFAULT "; [::1]:PORT for IPv6, port 0: any free\nport, "     \
	  "said on stderr)")                                                                                          \
	X(EXPORTER_TEXTFILE, "textfile", 't', VG_ARG("PATH"),                                                         \
	  "write the metrics to PATH (temporary file and rename, in PATH's directory) for\nnode_exporter's textfile " \
	  "collector: once, or every --interval; no server unless\n--listen is given too")                            \
	X(EXPORTER_INTERVAL, "interval", 'n', VG_ARG("SECONDS"), "rewrite the textfile this often (0.1 to 86400)")    \
	X(EXPORTER_ONCE, "once", '1', VG_NOARG,                                                                       \
	  "print the metrics once on stdout (or write the textfile once) and exit")                                   \
	X(EXPORTER_DIR, "dir", 'd', VG_ARG("DIR"), VG_CLI_DIR_HELP)
#define VG_EXPORTER_ABOUT                                                                                             \
	"Serve the processes under vramguard on this machine (what 'vramguard top' shows) as Prometheus metrics:\n"   \
	"GET /metrics, text format 0.0.4, or OpenMetrics 1.0.0 when the scraper's Accept header asks for it. Every\n" \
	"scrape reads copies of the regions in VRAMGUARD_SHM_DIR and takes no lock a job waits for; the metrics are\n" \
	"listed in docs/metrics.md.\n"

/* Also the names of --config's file (all but config itself); repeatable ones add to the command line's. */
#define VG_AUTOSCALE_FLAGS(X)                                                                                         \
	X(AS_CEILING, "ceiling", 'c', VG_ARGS("SIZE"),                                                                \
	  "never raise above SIZE (4096 = MiB, 8G); region:NAME=SIZE or pid:PID=SIZE for one\ntarget (repeatable; "   \
	  "a target without a ceiling is never raised)")                                                              \
	X(AS_STEP, "step", 's', VG_ARG("SIZE|N%"),                                                                    \
	  "how much one alert adds: a size (2G) or a percentage of the limit (default 25%)")                         \
	X(AS_COOLDOWN, "cooldown", 'k', VG_ARG("DURATION"),                                                           \
	  "at most one raise per target (region or process, and GPU) this often: 300, 30s,\n5m, 1h (default 5m; 0: " \
	  "every alert)")                                                                                             \
	X(AS_ALERT, "alert", 'a', VG_ARGS("NAME"),                                                                    \
	  "act only on alerts of this alertname (repeatable; default every alert)")                                   \
	X(AS_DRY_RUN, "dry-run", 'n', VG_NOARG, "decide and log, change nothing")                                     \
	X(AS_LISTEN, "listen", 'l', VG_ARG("ADDR:PORT"),                                                              \
	  "where to listen (default " VG_AS_LISTEN_DEFAULT "); a non-loopback address only with\n--allow-remote")     \
	X(AS_ALLOW_REMOTE, "allow-remote", 0, VG_NOARG,                                                               \
	  "let --listen take a non-loopback address (the token then travels in clear\nunless a proxy adds TLS)")      \
	X(AS_SOCKET, "socket", 'u', VG_ARG("PATH"), "listen on a Unix socket instead (mode 0600)")                   \
	X(AS_TOKEN_FILE, "token-file", 't', VG_ARG("PATH"),                                                           \
	  "the bearer token Alertmanager sends (http_config: authorization: credentials_file);\nrequired with "       \
	  "--listen, the file readable by its owner only")                                                            \
	X(AS_DIR, "dir", 'd', VG_ARG("DIR"), VG_CLI_DIR_HELP)                                                         \
	X(AS_SHRINK_AFTER, "shrink-after", 0, VG_ARG("DURATION"),                                                     \
	  "when an alert resolves, lower what this receiver raised back to the limit it\nhad before, this long after " \
	  "(unless it fires again; not while the target uses\nmore than that; a limit changed since by hand is left " \
	  "alone)")                                                                                                   \
	X(AS_CONFIG, "config", 0, VG_ARG("FILE"),                                                                     \
	  "the options from FILE, 'name = value' lines (names as the long options', '#'\ncomments); the command "     \
	  "line's replace its single ones, add to repeatable ones")
#define VG_AUTOSCALE_ABOUT                                                                                            \
	"Receive Alertmanager's webhook (POST /, payload version 4) and, for each firing alert whose labels name a\n" \
	"vramguard region (region) or process (pid, with the exporter's command, region and gpu labels), raise that\n" \
	"region's budget or process's quota on that GPU, as 'vramguard limit set' would (the same checks and\n"       \
	"ownership rules), while the job runs. Resolved alerts change nothing, unless --shrink-after. Every\n"        \
	"decision is one line on stderr and counted in vramguard_autoscale_actions_total{result} at GET /metrics.\n"  \
	"See docs/autoscale.md.\n"

/* ---- region, cdi ---- */
#define VG_REGION_FLAGS(X)                                                                                            \
	X(REGION_LIMIT, "limit", 'l', VG_ARG("SPEC"),                                                                 \
	  "create: its budget, written as NVIDIA_GPU_MEMORY_LIMITS: 8G, 0:4G,1:2G, 50%;\nnone (the default): usage " \
	  "only")                                                                                                     \
	X(REGION_MODE, "mode", 'm', VG_ARG("0600|0660"),                                                              \
	  "create: 0660 lets the file's group join (they set\nVRAMGUARD_SHARED_MODE=0660 too)")                       \
	X(REGION_SLOTS, "slots", 'n', VG_ARG("N"),                                                                    \
	  "create: how many processes it holds at once (default 1024, at most 16384;\n~1.2 KiB each)")                \
	X(REGION_FORCE, "force", 'f', VG_NOARG, "rm: a region with live members; evict: a member known alive")        \
	X(REGION_SLOT, "slot", 's', VG_ARG("N"),                                                                      \
	  "evict: the member in slot N (the slot 'top --json' lists), when two record PID")                           \
	X(REGION_DIR, "dir", 'd', VG_ARG("DIR"), VG_CLI_DIR_HELP)
#define VG_REGION_ABOUT                                                                                               \
	"A shared region (VRAMGUARD_SHARED) is made by the first job that names it, takes that job's budget, and is\n" \
	"removed when its last member exits; if every member has died without leaving, the next job to join starts\n" \
	"it over with its own budget.\n"                                                                              \
	"  create   make a persistent region before the jobs start: it keeps its budget (--limit) while jobs come\n"  \
	"           and go, until 'region rm'\n"                                                                      \
	"  rm       remove a region; one with live members only with --force (they go on counting in the removed\n"  \
	"           file while new jobs make a new one)\n"                                                            \
	"  reset    reclaim exited members and rebuild the totals from the live ones (peak = in use, denials 0)\n"    \
	"  evict    free the share of process PID (as 'vramguard top' lists it, or a live one's PID here): a member\n" \
	"           shown as unverifiable, or one you know is gone; a member known alive only with --force (it joins\n" \
	"           again at its next allocation, and what it held before is no longer counted). Two members that\n"  \
	"           record PID (two containers' PID 1) are refused: --slot N picks one\n"
#define VG_REGION_NOTES                                                                                               \
	"\nExit status 1 if the region or process is not found or may not be changed, 2 for a usage error.\n"

#define VG_CDI_FLAGS(X)                                                                                               \
	X(CDI_LIMIT, "limit", 'l', VG_ARGS("SPEC"),                                                                   \
	  "a device: NVIDIA_GPU_MEMORY_LIMITS=SPEC (4G, 8192, 50%, 0:4G,1:2G), named after SPEC\nwith ',' as '_' "    \
	  "and '%' as 'pct' (4G, 50pct, 0:4G_1:2G)")                                                                  \
	X(CDI_SHARED, "shared", 's', VG_ARG("NAME"), "every device also sets VRAMGUARD_SHARED=NAME (a shared region)") \
	X(CDI_OUTPUT, "output", 'o', VG_ARG("DIR"),                                                                   \
	  "write DIR/" VG_CDI_FILE " (atomically; DIR is made if missing), e.g.\n/etc/cdi or /var/run/cdi; "         \
	  "default: the spec on standard output")                                                                     \
	X(CDI_LIB, "lib", 0, VG_ARG("PATH"), "the library on the host (default: the one next to this command)")
#define VG_CDI_ABOUT                                                                                                  \
	"Write a Container Device Interface spec (kind " VG_CDI_KIND ", cdiVersion " VG_CDI_VERSION "), one device per\n" \
	"SPEC, so that 'podman run --device " VG_CDI_KIND "=4G IMAGE' runs IMAGE under a 4 GiB quota: the device\n"   \
	"mounts the library read-only at " VG_CDI_LIB_IN " and sets LD_PRELOAD and\n"                                 \
	"NVIDIA_GPU_MEMORY_LIMITS (an image's own LD_PRELOAD is replaced: docs/cdi.md).\n"
#define VG_CDI_NOTES "\nA bad SPEC is rejected with the library's message before anything is written (exit status 2).\n"

#define VG_HELP_ABOUT                                                                                                 \
	"Print the usage of COMMAND, or without one the list of commands ('vramguard --help'). The manual page\n"     \
	"vramguard(1) has the details.\n"

/* After `vramguard help`'s list of commands. */
#define VG_COMMANDS_ABOUT                                                                                             \
	"vramguard enforces per-process GPU memory quotas and reports leaks for CUDA jobs (PyTorch, JAX, CuPy,\n"      \
	"TensorFlow, CUDA C). The quota comes from NVIDIA_GPU_MEMORY_LIMITS (e.g. 4096 = 4096 MiB, 4G, 50%,\n"        \
	"0:4G,1:2G); see 'vramguard help run', 'vramguard help COMMAND' and the man page vramguard(1).\n"

/* The commands, in the order `vramguard help` lists them. */
#define VG_COMMANDS(X)                                                                                                \
	X(run, vg_cli_run, "run a job under vramguard", VG_USAGE("run [options] -- COMMAND [ARGS...]"), VG_RUN_FLAGS, \
	  VG_RUN_ABOUT, VG_RUN_NOTES)                                                                                 \
	X(report, vg_cli_report,                                                                                      \
	  "print a JSON report as text, as a page (--html) or an export (--format folded|speedscope)",                \
	  VG_USAGE("report [--html | --format FORMAT] [-o FILE] [--lines [--debug-dir DIR]...\n"                     \
		   "[--lines-timeout SECONDS]] FILE.json"),                                                           \
	  VG_REPORT_FLAGS, VG_REPORT_ABOUT, "")                                                                       \
	X(diff, vg_cli_diff, "what grew between two reports (--html, --lines)",                                       \
	  VG_USAGE("diff [--rows N] [--all] [--exit-code] [--html [-o FILE]] [--lines [--debug-dir DIR]...\n"         \
		   "[--lines-timeout SECONDS]] OLD.json NEW.json"),                                                   \
	  VG_DIFF_FLAGS, VG_DIFF_ABOUT, "")                                                                           \
	X(dump, vg_cli_dump, "ask a running job for a report", VG_USAGE("dump PID [--wait SECONDS]"), VG_DUMP_FLAGS,  \
	  VG_DUMP_ABOUT, "")                                                                                          \
	X(check, vg_cli_check, "configuration, driver, devices and quotas", VG_USAGE("check"), VG_NO_FLAGS,           \
	  VG_CHECK_ABOUT, "")                                                                                         \
	X(top, vg_cli_top, "processes under vramguard: VRAM in use, quotas",                                          \
	  VG_USAGE("top [--once] [--json] [--interval SECONDS] [--shared NAME|PATH]... [--dir DIR]"), VG_TOP_FLAGS,   \
	  VG_TOP_ABOUT, VG_TOP_NOTES)                                                                                 \
	X(limit, vg_cli_limit, "change a region's budget or a process's quota while it runs; show the limits in force", \
	  VG_USAGE("limit set [SPEC] [--compute PCT] (--shared NAME|PATH | --pid PID) [--dir DIR]",                   \
		   "limit show [--shared NAME|PATH]... [--pid PID] [--json] [--dir DIR]"),                            \
	  VG_LIMIT_FLAGS, VG_LIMIT_ABOUT, VG_LIMIT_NOTES)                                                             \
	X(exporter, vg_cli_exporter,                                                                                  \
	  "Prometheus metrics of the processes under vramguard (default " VG_EXPORTER_LISTEN_DEFAULT ")",             \
	  VG_USAGE("exporter [--listen ADDR:PORT] [--textfile PATH [--interval SECONDS]] [--once] [--dir DIR]"),      \
	  VG_EXPORTER_FLAGS, VG_EXPORTER_ABOUT, "")                                                                   \
	X(autoscale, vg_cli_autoscale, "raise limits on Alertmanager's alerts, within a ceiling",                     \
	  VG_USAGE("autoscale --ceiling SIZE|region:NAME=SIZE|pid:PID=SIZE... [--step SIZE|N%]\n"                     \
		   "[--listen ADDR:PORT [--allow-remote] | --socket PATH] [--token-file PATH]\n"                      \
		   "[--cooldown DURATION] [--alert NAME]... [--dry-run] [--shrink-after DURATION]\n"                  \
		   "[--dir DIR] [--config FILE]"),                                                                    \
	  VG_AUTOSCALE_FLAGS, VG_AUTOSCALE_ABOUT, "")                                                                 \
	X(region, vg_cli_region,                                                                                      \
	  "a shared region's life: make one that outlives its jobs, remove, reset it, evict a member",   \
	  VG_USAGE("region create NAME|PATH [--limit SPEC] [--mode 0600|0660] [--slots N] [--dir DIR]",               \
		   "region rm NAME|PATH [--force] [--dir DIR]", "region reset NAME|PATH [--dir DIR]",                 \
		   "region evict NAME|PATH PID [--slot N] [--force] [--dir DIR]"),                                    \
	  VG_REGION_FLAGS, VG_REGION_ABOUT, VG_REGION_NOTES)                                                          \
	X(cdi, vg_cli_cdi, "a CDI spec: --device " VG_CDI_KIND "=SIZE",                                               \
	  VG_USAGE("cdi --limit SPEC [--limit SPEC]... [--shared NAME] [--output DIR] [--lib PATH]"), VG_CDI_FLAGS,   \
	  VG_CDI_ABOUT, VG_CDI_NOTES)                                                                                 \
	X(help, vg_cli_help_command, "the usage of a command, or this list", VG_USAGE("help [COMMAND]"), VG_NO_FLAGS, \
	  VG_HELP_ABOUT, "")

/* Each command's VG_OPT_<id>: its flags' indices, 0 up. */
#define VG_CLI_FLAG_ENUM(id, lng, shrt, kind, help) VG_OPT_##id,
#define VG_CLI_CMD_ENUM(name, fn, summary, usage, flags, about, notes)                                                \
	enum { flags(VG_CLI_FLAG_ENUM) VG_OPT_END_##name };
VG_COMMANDS(VG_CLI_CMD_ENUM)
#undef VG_CLI_CMD_ENUM

/* The commands (argv[0] is the command's name; each returns its exit status). */
#define VG_CLI_CMD_DECLARE(name, fn, summary, usage, flags, about, notes) int fn(int argc, char **argv);
VG_COMMANDS(VG_CLI_CMD_DECLARE)
#undef VG_CLI_CMD_DECLARE

#endif
