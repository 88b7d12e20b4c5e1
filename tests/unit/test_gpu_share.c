/* The per-GPU activity file of the compute share (accounting/gpu_share.c): processes (here: open file descriptions,
 * which is what its locks tell apart) see each other's activity; a slot counts only while its owner's lock is held;
 * a hostile file (a symlink, a directory, truncated, full of garbage) is refused or read safely. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accounting/gpu_share.h"
#include "tests/unit/unit.h"

#define UUID "GPU-5e3c9a1b-7f2d-4c6e-9a0b-1d2e3f405162"

static char dir[64], path[256], why[600];

static void test_two(void)
{
	struct vg_gpu_share a, b;
	CHECK(vg_gpu_share_join(&a, dir, UUID, why, sizeof(why)) == 0);
	CHECK(vg_gpu_share_join(&b, dir, UUID, why, sizeof(why)) == 0);
	CHECK(a.slot != b.slot);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0666);     /* every user's processes meet there */
	CHECK(vg_gpu_share_count(&b) == 1);
	vg_gpu_share_set(&a, true);
	CHECK(vg_gpu_share_count(&b) == 2);     /* at once, without waiting for b's next check (once a second) */
	vg_gpu_share_check(&b);
	CHECK(vg_gpu_share_count(&b) == 2);
	vg_gpu_share_set(&a, false);
	CHECK(vg_gpu_share_count(&b) == 1);
	vg_gpu_share_set(&a, true);
	vg_gpu_share_leave(&a);                  /* says idle, and its lock goes */
	vg_gpu_share_check(&b);
	CHECK(vg_gpu_share_count(&b) == 1);
	vg_gpu_share_leave(&b);
}

/* A slot that says "active" with nobody's lock on it (its process died, or someone wrote it) does not count; nor
 * does garbage after the slots, or a file cut short. */
static void test_garbage(void)
{
	struct vg_gpu_share a;
	CHECK(vg_gpu_share_join(&a, dir, UUID, why, sizeof(why)) == 0);
	int fd = open(path, O_RDWR);
	uint32_t on = 1;
	for (int i = 0; i < VG_GPU_SHARE_SLOTS; i++)
		CHECK(pwrite(fd, &on, sizeof(on), 64 + i * 8) == sizeof(on));
	vg_gpu_share_check(&a);
	CHECK(vg_gpu_share_count(&a) == 1);
	CHECK(ftruncate(fd, 10) == 0);
	vg_gpu_share_set(&a, true);
	CHECK(vg_gpu_share_count(&a) == 1);
	close(fd);
	vg_gpu_share_leave(&a);
	CHECK(unlink(path) == 0);
}

/* The members of one region count each other when their slots name the region and say they want the GPU; a slot
 * of another region, one that does not want the GPU, one whose process left, do not count. */
static void test_tag(void)
{
	struct vg_gpu_share a, b, c;
	const uint32_t T = 0x1234567, U = 0x7654321;
	CHECK(vg_gpu_share_join(&a, dir, UUID, why, sizeof(why)) == 0);
	CHECK(vg_gpu_share_join(&b, dir, UUID, why, sizeof(why)) == 0);
	CHECK(vg_gpu_share_join(&c, dir, UUID, why, sizeof(why)) == 0);
	vg_gpu_share_check(&a);
	CHECK(vg_gpu_share_count_tag(&a, T) == 1);
	vg_gpu_share_set_tag(&b, T, true);
	CHECK(vg_gpu_share_count_tag(&a, T) == 2);
	CHECK(vg_gpu_share_count_tag(&a, T | VG_GPU_SHARE_WANTS) == 2);  /* the tag's top bit is not the tag's */
	CHECK(vg_gpu_share_count_tag(&a, 0) == 1);                       /* no region: alone */
	CHECK(vg_gpu_share_count_tag(&a, U) == 1);
	vg_gpu_share_set_tag(&c, U, true);
	CHECK(vg_gpu_share_count_tag(&a, T) == 2);
	vg_gpu_share_set_tag(&c, T, true);
	CHECK(vg_gpu_share_count_tag(&a, T) == 3);
	vg_gpu_share_set_tag(&c, T, false);                              /* idle: no longer counted */
	CHECK(vg_gpu_share_count_tag(&a, T) == 2);
	CHECK(vg_gpu_share_count(&a) == 1);                              /* "active" is the other word */
	vg_gpu_share_set_tag(&a, T, true);                               /* our own slot: never counted twice */
	CHECK(vg_gpu_share_count_tag(&a, T) == 2);
	vg_gpu_share_leave(&b);                                          /* its lock goes */
	vg_gpu_share_check(&a);
	CHECK(vg_gpu_share_count_tag(&a, T) == 1);
	vg_gpu_share_leave(&c);
	vg_gpu_share_leave(&a);
	CHECK(unlink(path) == 0);
}

/* Garbage in the words that name regions: a slot without a lock never counts, so a file written full of our tag
 * counts only the processes that are there; a live slot's garbage can only raise the count (a smaller share for
 * us), up to the slots there are; a file cut short counts nobody else. Never below 1. */
static void test_tag_garbage(void)
{
	struct vg_gpu_share a, b;
	const uint32_t T = 0x1234567;
	CHECK(vg_gpu_share_join(&a, dir, UUID, why, sizeof(why)) == 0);
	CHECK(vg_gpu_share_join(&b, dir, UUID, why, sizeof(why)) == 0);
	int fd = open(path, O_RDWR);
	uint32_t w = T | VG_GPU_SHARE_WANTS;
	for (int i = 0; i < VG_GPU_SHARE_SLOTS; i++)
		CHECK(pwrite(fd, &w, sizeof(w), 64 + i * 8 + 4) == sizeof(w));
	vg_gpu_share_check(&a);
	CHECK(vg_gpu_share_count_tag(&a, T) == 2);                       /* b's slot only: it holds its lock */
	uint32_t junk = 0xffffffffu;
	CHECK(pwrite(fd, &junk, sizeof(junk), 64 + b.slot * 8 + 4) == sizeof(junk));
	CHECK(vg_gpu_share_count_tag(&a, T) == 1);
	CHECK(vg_gpu_share_count_tag(&a, 0x7fffffffu) == 2);             /* junk is a region's tag, wanting */
	CHECK(ftruncate(fd, 70) == 0);
	CHECK(vg_gpu_share_count_tag(&a, T) == 1);
	CHECK(ftruncate(fd, 0) == 0);
	vg_gpu_share_set_tag(&a, T, true);
	CHECK(vg_gpu_share_count_tag(&a, T) == 1);
	close(fd);
	vg_gpu_share_leave(&b);
	vg_gpu_share_leave(&a);
	CHECK(unlink(path) == 0);
}

/* Each of the file's 64 slots taken: the 65th process is told so, in one line. */
static void test_full(void)
{
	static struct vg_gpu_share g[VG_GPU_SHARE_SLOTS + 1];
	int joined = 0;
	for (int i = 0; i < VG_GPU_SHARE_SLOTS; i++)
		joined += vg_gpu_share_join(&g[i], dir, UUID, why, sizeof(why)) == 0;
	CHECK(joined == VG_GPU_SHARE_SLOTS);
	CHECK(vg_gpu_share_join(&g[VG_GPU_SHARE_SLOTS], dir, UUID, why, sizeof(why)) == -EBUSY);
	CHECK_CONTAINS(why, "all 64 slots taken");
	CHECK(vg_gpu_share_count(&g[VG_GPU_SHARE_SLOTS]) == 1);     /* not joined: alone, as far as it knows */
	for (int i = 0; i < VG_GPU_SHARE_SLOTS; i++)
		vg_gpu_share_leave(&g[i]);
	CHECK(unlink(path) == 0);
}

/* Names are paths: a UUID keeps only [A-Za-z0-9-]; a symlink or a directory in the file's place is refused. */
static void test_hostile(void)
{
	struct vg_gpu_share a;
	char target[256];
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	CHECK(symlink(target, path) == 0);
	CHECK(vg_gpu_share_join(&a, dir, UUID, why, sizeof(why)) < 0);
	CHECK(access(target, F_OK) != 0);       /* nothing made through the link */
	CHECK(unlink(path) == 0);
	CHECK(mkdir(path, 0700) == 0);
	CHECK(vg_gpu_share_join(&a, dir, UUID, why, sizeof(why)) < 0);
	CHECK(rmdir(path) == 0);
	CHECK(vg_gpu_share_join(&a, dir, "../../etc/GPU-x", why, sizeof(why)) == 0);
	char clean[256];
	snprintf(clean, sizeof(clean), "%s/" VG_GPU_SHARE_PREFIX "etcGPU-x", dir);
	CHECK(access(clean, F_OK) == 0);
	vg_gpu_share_leave(&a);
	CHECK(unlink(clean) == 0);
	CHECK(vg_gpu_share_join(&a, dir, "///", why, sizeof(why)) == -EINVAL);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/vg-gpushare.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/" VG_GPU_SHARE_PREFIX UUID, dir);
	test_two();
	test_garbage();
	test_tag();
	test_tag_garbage();
	test_full();
	test_hostile();
	rmdir(dir);
	return UNIT_DONE();
}
