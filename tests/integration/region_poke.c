/* What a hostile or broken process can do to a region file it may write, for tests/sections/hostile.sh. Uses
 * only the layout in accounting/region.h (no region code), through its own mapping:
 *
 *   region_poke lock PATH RELEASE      take the region's lock (prints "locked") and hold it until the file RELEASE
 *                                      exists (at most 60 s), then let go ("released"): a member stopped inside
 *                                      the lock, as a debugger or SIGSTOP would leave it
 *   region_poke used PATH DEV BYTES    overwrite region device DEV's usage total (a region poisoned by a bug)
 *
 * Exit status 0, or 1 with a message. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accounting/region.h"

static struct vg_region_hdr *map_region(const char *path, size_t *size)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(struct vg_region_hdr)) {
		fprintf(stderr, "region_poke: %s: %s\n", path, fd < 0 ? strerror(errno) : "not a region");
		exit(1);
	}
	*size = (size_t)st.st_size;
	void *m = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		fprintf(stderr, "region_poke: mmap %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return m;
}

int main(int argc, char **argv)
{
	size_t size;
	if (argc == 4 && !strcmp(argv[1], "lock")) {
		struct vg_region_hdr *h = map_region(argv[2], &size);
		int rc = pthread_mutex_lock(&h->lock);
		if (rc == EOWNERDEAD)
			pthread_mutex_consistent(&h->lock);
		else if (rc) {
			fprintf(stderr, "region_poke: lock: %s\n", strerror(rc));
			return 1;
		}
		printf("locked\n");
		fflush(stdout);
		for (int i = 0; i < 6000 && access(argv[3], F_OK) != 0; i++)
			usleep(10000);
		pthread_mutex_unlock(&h->lock);
		printf("released\n");
		fflush(stdout);
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "used")) {
		struct vg_region_hdr *h = map_region(argv[2], &size);
		int d = atoi(argv[3]);
		if (d < 0 || d >= VG_REGION_DEVS)
			return 1;
		atomic_store(&h->dev[d].used, strtoull(argv[4], NULL, 10));
		return 0;
	}
	fprintf(stderr, "usage: region_poke lock PATH RELEASE | used PATH DEV BYTES\n");
	return 1;
}
