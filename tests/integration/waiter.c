/* A long-running CUDA process for `vramguard dump` tests: initialises CUDA (or not, with "nocuda"), allocates,
 * says "ready" and sleeps until the file argv[1] exists (or argv[3] seconds pass, 20 by default; argv[2]: "cuda" or
 * "nocuda"). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

int main(int argc, char **argv)
{
	const char *stop = argc > 1 ? argv[1] : "/nonexistent";
	if (!(argc > 2 && !strcmp(argv[2], "nocuda"))) {
		CUdeviceptr p;
		cuInit(0);
		cuMemAlloc_v2(&p, 64 << 20);
	}
	printf("ready\n");
	fflush(stdout);
	int ticks = argc > 3 ? atoi(argv[3]) * 20 : 400;
	for (int i = 0; i < ticks && access(stop, F_OK) != 0; i++)
		usleep(50 * 1000);
	return 0;
}
