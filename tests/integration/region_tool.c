/* A stand-in for processes under the preload, for the `vramguard top` / `limit` tests: makes shared regions and
 * control segments and holds a slot in one, through accounting/region.h only (no CUDA).
 *
 *   region_tool create PATH NAME SPEC [MODE [persistent]]   make a shared region (SPEC "" for no budget; MODE
 *                                                octal, 0600; persistent: it outlives its members)
 *   region_tool join PATH DEVICE... [OPTION...]  join the shared region at PATH, then wait for SIGTERM (with
 *                                                REGION_TOOL_MODE=0660 in the environment it joins another
 *                                                user's group-shared region, as VRAMGUARD_SHARED_MODE=0660 does)
 *   region_tool plant PATH PID USED [CMD]        write a member by hand, as one in another PID namespace without
 *                                                a liveness lock would look (unverifiable): PID holding USED on
 *                                                the region's first GPU, its command CMD (any bytes: the
 *                                                exporter's escaping test) or "planted"; with
 *                                                REGION_TOOL_PLANT=START:PIDNS in the environment, that start time
 *                                                and PID namespace inode (default 1:1), e.g. two containers' PID 1
 *   region_tool control DIR DEVICE... [OPTION...] make our control segment DIR/vramguard.proc.PID.START, the same
 *                                                (REGION_TOOL_AS=PID:START in the environment: as that process,
 *                                                whose name and slot it takes, e.g. another container's PID 1)
 *   region_tool request PATH PID SPEC            write SPEC into PID's slot as a `limit set --pid` request, unchecked
 *                                                (as a newer command with a syntax this library does not know would)
 *
 * DEVICE is dev=ORDINAL followed by uuid=GPU-... total=SIZE quota=SIZE|none used=SIZE peak=SIZE (sizes as 1G, 512M,
 * 4096B), and alloc=SIZE driver=SIZE: the figures a sampler round published (VRAMGUARD_COUNT=device), which may be
 * older than used= (a round before a free: alloc above used). OPTION: denied=N (allocations refused), report=SECONDS (last report that long ago), hold=1 (leave
 * requests pending, as a process that makes no allocation, until SIGUSR1). Prints "ready PID" once it holds its
 * memory, and "applied SPEC" each time it applies a limit from `vramguard limit set --pid`: it takes the request
 * with vg_region_pending_limit (which marks it applied in the slot) and sets its quota per device, as the
 * interposer does, checking every 20 ms as a process would at its next allocation. On SIGTERM it leaves, as at a
 * normal exit; SIGKILL leaves the slot behind, as a crash would. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accounting/region.h"
#include "config/config.h"

#define MAXDEV 8

struct dev {
	int ord;
	char uuid[VG_REGION_UUID_MAX];
	uint64_t total, quota, used, peak;
	uint64_t alloc, driver;
	bool published;
};

static volatile sig_atomic_t stop, hold;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	hold = 0;
}

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "region_tool: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static uint64_t size_arg(const char *s)
{
	char err[VG_ERR_MAX];
	uint64_t v;
	if (!strcmp(s, "none"))
		return VG_REGION_NONE;
	if (!strcmp(s, "0"))
		return 0;
	if (vg_parse_size(s, 1, &v, err, sizeof(err)) != 0) {
		fprintf(stderr, "region_tool: bad size '%s': %s\n", s, err);
		exit(2);
	}
	return v;
}

/* Who the member is: this process, or REGION_TOOL_AS=PID:START. */
static void member_id(pid_t *pid, uint64_t *start)
{
	const char *as = getenv("REGION_TOOL_AS");
	*pid = getpid();
	*start = vg_proc_start(*pid);
	if (as && strchr(as, ':')) {
		*pid = (pid_t)atoi(as);
		*start = strtoull(strchr(as, ':') + 1, NULL, 10);
	}
}

static int run_member(struct vg_region *r, bool control, int argc, char **argv)
{
	struct dev dev[MAXDEV];
	int ndev = -1;
	uint64_t denied = 0, report_ago = UINT64_MAX;
	char err[512];
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq)
			return die("bad argument '%s'", argv[i]);
		*eq = '\0';
		const char *k = argv[i], *v = eq + 1;
		if (!strcmp(k, "dev")) {
			if (++ndev == MAXDEV)
				return die("too many devices");
			memset(&dev[ndev], 0, sizeof(dev[ndev]));
			dev[ndev].ord = atoi(v);
			dev[ndev].quota = VG_REGION_NONE;
		} else if (!strcmp(k, "denied")) {
			denied = strtoull(v, NULL, 10);
		} else if (!strcmp(k, "report")) {
			report_ago = strtoull(v, NULL, 10);
		} else if (!strcmp(k, "hold")) {
			hold = strcmp(v, "0") != 0;
		} else if (ndev < 0) {
			return die("'%s' before dev=", k);
		} else if (!strcmp(k, "uuid")) {
			snprintf(dev[ndev].uuid, sizeof(dev[ndev].uuid), "%s", v);
		} else if (!strcmp(k, "total")) {
			dev[ndev].total = size_arg(v);
		} else if (!strcmp(k, "quota")) {
			dev[ndev].quota = size_arg(v);
		} else if (!strcmp(k, "used")) {
			dev[ndev].used = size_arg(v);
		} else if (!strcmp(k, "peak")) {
			dev[ndev].peak = size_arg(v);
		} else if (!strcmp(k, "alloc") || !strcmp(k, "driver")) {
			*(!strcmp(k, "alloc") ? &dev[ndev].alloc : &dev[ndev].driver) = size_arg(v);
			dev[ndev].published = true;
		} else {
			return die("unknown key '%s'", k);
		}
	}
	pid_t pid;
	uint64_t start;
	member_id(&pid, &start);
	char cmd[VG_REGION_CMD_MAX];
	snprintf(cmd, sizeof(cmd), "region_tool %s", control ? "control" : "join");
	if (vg_region_join(r, pid, start, cmd, NULL, err, sizeof(err)) != 0)
		return die("join: %s", err);
	for (int i = 0; i <= ndev; i++) {
		struct dev *d = &dev[i];
		if (vg_region_bind(r, d->ord, d->uuid[0] ? d->uuid : NULL, d->total, d->quota) < 0)
			return die("bind failed");
		uint64_t peak = d->peak > d->used ? d->peak : d->used, u = 0, l = 0;
		if (peak && vg_region_reserve(r, d->ord, peak, &u, &l) != 0)
			return die("reserve: over the region's budget");
		if (peak > d->used)
			vg_region_release(r, d->ord, peak - d->used);
		if (d->published)
			vg_region_publish(r, d->ord, 1 + VG_COUNT_DEVICE, d->alloc, d->driver, VG_REGION_NONE);
	}
	for (uint64_t i = 0; i < denied; i++)
		vg_region_note_denied(r);
	if (report_ago != UINT64_MAX) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		vg_region_note_report(r, ((uint64_t)ts.tv_sec - report_ago) * 1000000000u + (uint64_t)ts.tv_nsec);
	}
	printf("ready %d\n", (int)pid);
	fflush(stdout);
	while (!stop) {
		char spec[VG_REGION_SPEC_MAX];
		if (!hold && vg_region_pending_limit(r, spec, sizeof(spec))) {
			struct vg_limits l;
			if (vg_parse_limits("limit", spec, (uint64_t)1 << 20, &l, err, sizeof(err)) == 0) {
				for (int i = 0; i <= ndev; i++) {
					int said = 0;
					uint64_t q = vg_limits_for(&l, dev[i].ord, dev[i].uuid[0] ? dev[i].uuid : NULL,
								   dev[i].total, NULL, &said);
					if (said)
						vg_region_set_quota(r, dev[i].ord, q);
				}
			}
			printf("applied %s\n", spec);
			fflush(stdout);
		}
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	vg_region_leave(r);     /* and removes a control segment, or a region nobody is left in */
	vg_region_close(r);
	return 0;
}

int main(int argc, char **argv)
{
	char err[512];
	struct vg_region r;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	if (argc >= 5 && !strcmp(argv[1], "create")) {
		struct vg_region_make m = { .kind = VG_REGION_SHARED, .mode = argc > 5 ? (unsigned)strtoul(argv[5], NULL, 8)
											: 0600,
					    .name = argv[3], .spec = argv[4] };
		if (argc > 6 && !strcmp(argv[6], "persistent"))
			m.flags = VG_REGION_PERSISTENT;
		bool created;
		if (vg_region_open(&r, argv[2], VG_OPEN_JOIN, VG_REGION_SHARED, &m, &created, err, sizeof(err)) != 0)
			return die("create: %s", err);
		printf("%s\n", created ? "created" : "exists");
		vg_region_close(&r);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "join")) {
		const char *mode = getenv("REGION_TOOL_MODE");
		struct vg_region_make m = { .kind = VG_REGION_SHARED, .mode = mode ? (unsigned)strtoul(mode, NULL, 8) : 0600 };
		/* m only says which mode this member asks for (the trust check); the region exists already. */
		if (vg_region_open(&r, argv[2], VG_OPEN_JOIN, VG_REGION_SHARED, mode ? &m : NULL, NULL, err, sizeof(err)))
			return die("open: %s", err);
		return run_member(&r, false, argc - 3, argv + 3);
	}
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "plant")) {
		if (vg_region_open(&r, argv[2], VG_OPEN_ADMIN, VG_REGION_SHARED, NULL, NULL, err, sizeof(err)) != 0)
			return die("plant: %s", err);
		uint32_t i = 0;
		while (i < r.nslots && atomic_load(&r.h->slot[i].state) != VG_SLOT_FREE)
			i++;
		if (i == r.nslots || !r.h->dev[0].uuid[0])
			return die("plant: no free slot or no GPU registered in %s", argv[2]);
		struct vg_region_slot *s = &r.h->slot[i];
		uint64_t used = size_arg(argv[4]);
		s->pid = atoi(argv[3]);
		s->start = 1;
		s->pidns = 1;           /* no real namespace has inode 1: another namespace, whatever ours is */
		const char *as = getenv("REGION_TOOL_PLANT");
		if (as && strchr(as, ':')) {
			s->start = strtoull(as, NULL, 10);
			s->pidns = strtoull(strchr(as, ':') + 1, NULL, 10);
		}
		s->live_lock = 0;
		snprintf(s->cmd, sizeof(s->cmd), "%s", argc == 6 ? argv[5] : "planted");
		for (int d = 0; d < VG_REGION_DEVS; d++)
			atomic_store(&s->quota[d], VG_REGION_NONE);
		atomic_store(&s->used[0], used);
		atomic_store(&s->peak[0], used);
		atomic_store(&s->bound, 1u);
		atomic_fetch_add(&r.h->dev[0].used, used);
		atomic_store(&s->state, VG_SLOT_ACTIVE);
		atomic_fetch_add(&r.h->joins, 1);
		printf("planted %s in slot %u\n", argv[3], i);
		vg_region_close(&r);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "control")) {
		char path[VG_SHARED_PATH_MAX];
		pid_t pid;
		uint64_t start;
		member_id(&pid, &start);
		if (vg_region_control_path(argv[2], pid, start, path, sizeof(path)) != 0)
			return die("control: %s", "directory name too long");
		const struct vg_region_make m = { .kind = VG_REGION_CONTROL, .mode = 0600, .name = "", .spec = "" };
		if (vg_region_open(&r, path, VG_OPEN_JOIN, VG_REGION_CONTROL, &m, NULL, err, sizeof(err)) != 0)
			return die("control: %s", err);
		return run_member(&r, true, argc - 3, argv + 3);
	}
	if (argc == 5 && !strcmp(argv[1], "request")) {
		if (vg_region_open(&r, argv[2], VG_OPEN_ADMIN, 0, NULL, NULL, err, sizeof(err)) != 0)
			return die("open: %s", err);
		int slot = vg_region_find_pid(&r, (pid_t)atoi(argv[3]));
		if (slot < 0 || strlen(argv[4]) >= VG_REGION_SPEC_MAX)
			return die("request: no slot for pid %s", argv[3]);
		memcpy(r.h->slot[slot].limit_spec, argv[4], strlen(argv[4]) + 1);
		atomic_fetch_add(&r.h->slot[slot].limit_seq, 1);
		vg_region_close(&r);
		return 0;
	}
	fprintf(stderr, "usage: region_tool create PATH NAME SPEC [MODE [persistent]] | join PATH DEVICE... | plant PATH "
		"PID USED [CMD] | control DIR DEVICE... | request PATH PID SPEC\n");
	return 2;
}
