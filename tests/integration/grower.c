/* A job that wants more memory than it may have, for `vramguard autoscale` tests: allocates argv[2] MiB, says
 * "ready", then asks for argv[3] MiB more every 100 ms until it gets it (saying "denied" at the first refusal and
 * "granted after N denials" when a raised limit lets it through), and waits until the file argv[1] exists (or
 * argv[4] seconds pass, 30 by default). With argv[5], a file: once it exists, the argv[3] MiB granted are freed
 * ("freed"), for --shrink-after, which lowers a limit again only when the usage fits. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda.h>

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	const char *stop = argv[1];
	size_t first = (size_t)atoi(argv[2]) << 20, more = (size_t)atoi(argv[3]) << 20;
	int ticks = (argc > 4 ? atoi(argv[4]) : 30) * 10, denials = 0;
	CUdeviceptr p, q;
	cuInit(0);
	if (cuMemAlloc_v2(&p, first) != CUDA_SUCCESS) {
		printf("the first %d MiB were refused\n", atoi(argv[2]));
		return 1;
	}
	printf("ready: holding %d MiB\n", atoi(argv[2]));
	fflush(stdout);
	bool got = false, freed = false;
	for (int i = 0; i < ticks && access(stop, F_OK) != 0; i++) {
		if (got && !freed && argc > 5 && access(argv[5], F_OK) == 0) {
			freed = cuMemFree_v2(q) == CUDA_SUCCESS;
			printf("%s %d MiB\n", freed ? "freed" : "could not free", atoi(argv[3]));
			fflush(stdout);
			freed = true;
		}
		if (!got) {
			if (cuMemAlloc_v2(&q, more) == CUDA_SUCCESS) {
				printf("granted %d MiB more after %d denials\n", atoi(argv[3]), denials);
				fflush(stdout);
				got = true;
			} else if (denials++ == 0) {
				printf("denied %d MiB more\n", atoi(argv[3]));
				fflush(stdout);
			}
		}
		usleep(100 * 1000);
	}
	return got ? 0 : 3;
}
