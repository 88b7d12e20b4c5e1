/* `vramguard top`: every process under vramguard on this machine, found through the regions in VRAMGUARD_SHM_DIR
 * (the shared regions, and the control segment of every other process), with totals per GPU. This file has the
 * options and the view (one snapshot, one per interval, or a full-screen terminal view); the snapshot and its
 * writers are top_snap.c, top_text.c and top_json.c (cli/top_snap.h, cli/top_text.h, cli/top_json.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/top_json.h"
#include "cli/top_snap.h"
#include "cli/top_text.h"
#include "config/config.h"

/* ---- the loop ---- */

static volatile sig_atomic_t top_stop, top_winch;

static void top_on_signal(int sig)
{
	if (sig == SIGWINCH)
		top_winch = 1;
	else
		top_stop = sig;
}

static struct termios top_saved;
static bool top_raw, top_screen;

static void top_restore(void)
{
	if (top_screen) {
		fputs("\033[?25h\033[?1049l", stdout);      /* cursor back, leave the alternate screen */
		fflush(stdout);
		top_screen = false;
	}
	if (top_raw) {
		tcsetattr(STDIN_FILENO, TCSANOW, &top_saved);
		top_raw = false;
	}
}

/* Write out, cut to the terminal's width and height on a screen (a long command line must not wrap the table). */
static int top_write(const struct vg_strbuf *b, bool screen)
{
	if (b->failed || !b->data)
		return -1;
	if (!screen)
		return fwrite(b->data, 1, b->len, stdout) == b->len && fflush(stdout) == 0 ? 0 : -1;
	struct winsize ws = { 0 };
	size_t cols = 200, rows = 1000;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col) {
		cols = ws.ws_col;
		rows = ws.ws_row ? ws.ws_row : rows;
	}
	fputs("\033[H\033[2J", stdout);
	size_t line = 0;
	for (const char *p = b->data, *end = b->data + b->len; p < end && line + 1 < rows; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		size_t w = 0, n = 0;
		while (p + n < e) {
			if (((unsigned char)p[n] & 0xc0) != 0x80 && ++w > cols)
				break;
			n++;
		}
		fwrite(p, 1, n, stdout);
		fputc('\n', stdout);
		p = nl ? nl + 1 : end;
	}
	return fflush(stdout) == 0 ? 0 : -1;
}

/* The options: -1 to go on, else the exit status (help, or a usage error). */
static int top_parse(int argc, char **argv, struct vg_top_opts *o)
{
	struct vg_cli_getopt g;
	const char *dir = NULL, *usage = vg_cli_usage_of("top");
	int k;
	memset(o, 0, sizeof(*o));
	o->interval = 1;
	o->names = calloc((size_t)argc + 1, sizeof(char *));
	if (!o->names)
		return vg_cli_fail(1, "out of memory");
	vg_cli_getopt_init(&g, "top", NULL, "");
	while ((k = vg_cli_getopt(&g, argc, argv)) != VG_CLI_OPT_END) {
		switch (k) {
		case VG_OPT_TOP_ONCE: o->once = true; break;
		case VG_OPT_TOP_JSON: o->json = true; break;
		case VG_OPT_TOP_INTERVAL: {
			double v;
			if (!vg_cli_seconds(optarg, &v) || !(v >= 0.1 && v <= 86400))
				return vg_cli_usage(usage, "top: invalid --interval %s (expected seconds from 0.1 to 86400, "
						    "e.g. 1 or 0.5)", vg_cli_q(optarg));
			o->interval = v;
			o->interval_set = true;
			break;
		}
		case VG_OPT_TOP_SHARED: o->names[o->nnames++] = optarg; break;
		case VG_OPT_TOP_DIR: dir = optarg; break;
		case VG_CLI_OPT_HELP: return vg_cli_help("top");
		default: return vg_cli_bad_option(&g, argv);
		}
	}
	if (optind < argc)
		return vg_cli_usage(usage, "top: unexpected argument %s", vg_cli_q(argv[optind]));
	char err[VG_CLI_WHY_MAX];
	if (vg_cli_dir(dir, o->dir, sizeof(o->dir), err, sizeof(err)) != 0)
		return vg_cli_fail(2, "%s", err);
	char path[VG_SHARED_PATH_MAX];
	for (size_t i = 0; i < o->nnames; i++)
		if (vg_region_path(o->dir, o->names[i], path, sizeof(path), err, sizeof(err)) != 0)
			return vg_cli_fail(2, "top: invalid --shared %s: %s", vg_cli_q(o->names[i]), err);
	static char env_name[VG_SHARED_PATH_MAX];      /* VRAMGUARD_SHARED, trimmed and checked as the jobs read it */
	const struct vg_config *cfg = vg_cli_env(o->dir, err, sizeof(err));
	if (!cfg)
		return vg_cli_fail(2, "%s", err);
	if (cfg->shared_name[0]) {
		snprintf(env_name, sizeof(env_name), "%s", cfg->shared_name);
		o->names[o->nnames++] = env_name;
	}
	return -1;
}

/* Off a snapshot's interval: Ctrl-C and the like end the loop, a resize redraws (screen), and on a terminal the keys
 * are read one by one, unechoed; the alternate screen holds the view. top_restore undoes it all. */
static void top_terminal(bool once, bool screen, bool keys)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = top_on_signal;     /* no SA_RESTART: poll returns at once */
	sigemptyset(&sa.sa_mask);
	if (!once) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		if (screen)
			sigaction(SIGWINCH, &sa, NULL);
	}
	if (keys && tcgetattr(STDIN_FILENO, &top_saved) == 0) {
		struct termios raw = top_saved;
		raw.c_lflag &= (tcflag_t)~(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0)
			top_raw = true;
	}
	if (screen) {
		fputs("\033[?1049h\033[?25l", stdout);      /* alternate screen, no cursor */
		top_screen = true;
	}
	atexit(top_restore);
}

/* One snapshot, taken and written: -1 to go on, else the exit status (said). */
static int top_frame(const struct vg_top_opts *o, bool once, bool first, bool screen)
{
	struct vg_top_snap *sn = malloc(sizeof(*sn));
	char err[VG_CLI_WHY_MAX];
	if (!sn) {
		top_restore();
		return vg_cli_fail(1, "out of memory");
	}
	if (vg_top_take(sn, o, err, sizeof(err)) != 0) {
		top_restore();
		free(sn);
		return vg_cli_fail(2, "top: %s", err);
	}
	if (sn->scan.no_dir && (once || first)) {
		top_restore();
		int rc = vg_cli_fail(1, "%s", sn->scan.dir_why);
		vg_scan_close(&sn->scan);
		free(sn);
		return rc;
	}
	struct vg_strbuf b = { 0 };
	if (!o->json && !first && !screen)
		vg_strbuf_str(&b, "\n");
	if (o->json)
		vg_top_json(sn, o, &b);
	else
		vg_top_text(sn, o, screen, &b);
	if (o->json && (sn->scan.denied || sn->scan.bad || sn->scan.changed || sn->scan.missing)) {
		struct vg_strbuf n = { 0 };
		vg_scan_notes(&sn->scan, &n, "vramguard: note: ");
		if (n.data)
			fputs(n.data, stderr);
		vg_strbuf_free(&n);
	}
	vg_scan_close(&sn->scan);
	free(sn);
	int wrc = top_write(&b, screen);
	vg_strbuf_free(&b);
	return wrc != 0 ? 1 : -1;
}

/* Wait for the interval, a key (q quits, space refreshes now) or a signal. *keys turns false once stdin is closed. */
static void top_wait(double interval, bool *keys)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int left = (int)(interval * 1000);
	while (!top_stop && !top_winch && left > 0) {
		struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
		int n = poll(*keys ? &p : NULL, *keys ? 1 : 0, left);
		if (n > 0 && (p.revents & POLLIN)) {
			char k[32];
			ssize_t got = read(STDIN_FILENO, k, sizeof(k));
			if (got <= 0 || memchr(k, 'q', (size_t)got) || memchr(k, 'Q', (size_t)got))
				top_stop = SIGTERM;
			else if (memchr(k, ' ', (size_t)got))
				break;          /* space: refresh now */
		} else if (n > 0) {
			*keys = false;          /* stdin closed or in error: stop polling it */
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = (int)(interval * 1000) - (int)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
	}
	top_winch = 0;
}

int vg_cli_top(int argc, char **argv)
{
	struct vg_top_opts o;
	int rc = top_parse(argc, argv, &o);
	if (rc >= 0) {
		free(o.names);
		return rc;
	}
	bool once = o.once || (o.json && !o.interval_set);
	bool screen = !once && !o.json && isatty(STDOUT_FILENO);
	bool keys = screen && isatty(STDIN_FILENO);

	top_terminal(once, screen, keys);
	rc = 0;
	for (bool first = true; !top_stop; first = false) {
		int frc = top_frame(&o, once, first, screen);
		if (frc >= 0) {
			rc = frc;
			break;
		}
		if (once)
			break;
		top_wait(o.interval, &keys);
	}
	top_restore();
	free(o.names);
	return rc;
}
