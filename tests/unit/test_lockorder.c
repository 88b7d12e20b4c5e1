/* The lock-order check (accounting/lockorder.h), built with VG_LOCK_CHECK as the sanitizer builds are: locks taken in
 * rank order pass; one taken out of order, in a child, writes its one line and aborts. The ranks are listed in
 * docs/LOCKS.md in the header's order. */
#define VG_LOCK_CHECK 1
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "accounting/lockorder.h"
#include "unit.h"

static pthread_mutex_t lo = PTHREAD_MUTEX_INITIALIZER, hi = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t shard[2] = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };

static int held_total(void)
{
	int n = 0;
	for (int r = 0; r < VG_RANK_COUNT; r++)
		n += vg_lock_held[r];
	return n;
}

/* Run fn in a child with stderr captured into out: true if it died of SIGABRT. */
static bool child_aborts(void (*fn)(void), char *out, size_t len)
{
	int p[2];
	out[0] = '\0';
	if (pipe(p) != 0)
		return false;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		fn();
		_exit(0);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t k;
	while (n + 1 < len && (k = read(p[0], out + n, len - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = '\0';
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}

static void wrong_order(void)
{
	vg_lock(&hi, VG_RANK_DEV);
	vg_lock(&lo, VG_RANK_INIT);     /* aborts here */
	vg_unlock(&lo, VG_RANK_INIT);
	vg_unlock(&hi, VG_RANK_DEV);
}

static void same_rank(void)
{
	vg_lock_note_take(VG_RANK_TABLE, false);
	vg_lock_note_take(VG_RANK_TABLE, false);        /* two shards outside vg_table_lock_all: aborts */
}

static void in_order(void)
{
	vg_lock(&lo, VG_RANK_INIT);
	vg_lock(&hi, VG_RANK_DEV);
	vg_lock_note_take(VG_RANK_REGION, false);
	vg_lock_note_drop(VG_RANK_REGION);
	vg_unlock(&hi, VG_RANK_DEV);
	vg_unlock(&lo, VG_RANK_INIT);
}

/* Every rank's name appears in docs/LOCKS.md's table, in rank order. */
static void test_doc_order(void)
{
	FILE *f = fopen("docs/LOCKS.md", "r");
	CHECK(f != NULL);
	if (!f)
		return;
	static char doc[65536];
	size_t n = fread(doc, 1, sizeof(doc) - 1, f);
	fclose(f);
	doc[n] = '\0';
	const char *at = strstr(doc, "## The order");
	CHECK(at != NULL);
	for (int r = VG_RANK_NONE + 1; at && r < VG_RANK_COUNT; r++) {
		char row[80];
		snprintf(row, sizeof(row), "| %d | `%s`", r, vg_lock_names[r]);
		const char *next = strstr(at, row);
		if (!next)
			UNIT_FAIL_("docs/LOCKS.md: no row '%s' after rank %d's", row, r - 1);
		else
			unit_passed++;
		at = next;
	}
}

int main(void)
{
	char out[512];

	/* In order, and back to nothing held. */
	in_order();
	CHECK(held_total() == 0);
	vg_lock(&hi, VG_RANK_DEV);
	CHECK(vg_lock_held[VG_RANK_DEV] == 1);
	vg_unlock(&hi, VG_RANK_DEV);
	vg_lock(&lo, VG_RANK_INIT);     /* a lower rank once the higher one is given back */
	vg_unlock(&lo, VG_RANK_INIT);
	CHECK(held_total() == 0);

	/* Nesting one rank: every shard at fork. */
	vg_lock_nest(&shard[0], VG_RANK_SITES);
	vg_lock_nest(&shard[1], VG_RANK_SITES);
	CHECK(vg_lock_held[VG_RANK_SITES] == 2);
	vg_lock_note_take(VG_RANK_RECORDS, false);      /* above it: fine */
	vg_lock_note_drop(VG_RANK_RECORDS);
	vg_unlock(&shard[1], VG_RANK_SITES);
	vg_unlock(&shard[0], VG_RANK_SITES);
	CHECK(held_total() == 0);

	/* A forked child starts from nothing held. */
	vg_lock_note_take(VG_RANK_DEV, false);
	vg_lock_note_forget();
	CHECK(held_total() == 0);

	/* Out of order: one line, then abort. */
	CHECK(child_aborts(wrong_order, out, sizeof(out)));
	CHECK_STR(out, "vramguard: lock order: taking vg_init_lock while holding vg_dev_lock (docs/LOCKS.md)\n");
	CHECK(child_aborts(same_rank, out, sizeof(out)));
	CHECK_STR(out, "vramguard: lock order: taking table shard while holding table shard (docs/LOCKS.md)\n");
	CHECK(!child_aborts(in_order, out, sizeof(out)));
	CHECK_STR(out, "");

	test_doc_order();
	return UNIT_DONE();
}
