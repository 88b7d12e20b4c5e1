/* With -DVG_FUZZ_REPLAY, included at the end of a target that defined VG_FUZZ_NAME: a plain main() that runs the
 * target's LLVMFuzzerTestOneInput over files, so a gcc build replays the corpus and the regressions on every
 * `make test` without clang or libFuzzer. */
#include <dirent.h>
#include <sys/stat.h>

static int vg_fuzz_replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "FAIL cannot read %s\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	buf = malloc((size_t)n ? (size_t)n : 1); /* exact size, as libFuzzer passes it */
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "FAIL cannot read %s\n", path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	vg_fuzz_current = path;
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

/* A file, or every file of a directory (sorted, dotfiles skipped). Returns the count, or -1. */
static int vg_fuzz_replay_path(const char *path, int *failed)
{
	struct dirent **names;
	struct stat st;
	int n, i, count = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "FAIL %s: no such file or directory\n", path);
		(*failed)++;
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (vg_fuzz_replay_file(path) != 0)
			(*failed)++;
		return 1;
	}
	n = scandir(path, &names, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "FAIL cannot list %s\n", path);
		(*failed)++;
		return 0;
	}
	for (i = 0; i < n; i++) {
		char full[4096];
		if (names[i]->d_name[0] != '.') {
			snprintf(full, sizeof(full), "%s/%s", path, names[i]->d_name);
			if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
				if (vg_fuzz_replay_file(full) != 0)
					(*failed)++;
				count++;
			}
		}
		free(names[i]);
	}
	free(names);
	return count;
}

/* usage: fuzz_NAME_replay [FILE|DIR...]; without arguments tests/fuzz/corpus/NAME and tests/fuzz/regressions/NAME
 * (from the repository root). The last line is "N passed, N failed", as the unit tests print. */
int main(int argc, char **argv)
{
	int i, count = 0, failed = 0;

	if (argc > 1) {
		for (i = 1; i < argc; i++)
			count += vg_fuzz_replay_path(argv[i], &failed);
	} else {
		count += vg_fuzz_replay_path("tests/fuzz/corpus/" VG_FUZZ_NAME, &failed);
		struct stat st;
		if (stat("tests/fuzz/regressions/" VG_FUZZ_NAME, &st) == 0)
			count += vg_fuzz_replay_path("tests/fuzz/regressions/" VG_FUZZ_NAME, &failed);
	}
	if (count == 0 && !failed) {
		fprintf(stderr, "FAIL no inputs\n");
		failed = 1;
	}
	printf("%d passed, %d failed\n", count - (failed > count ? count : failed), failed);
	return failed ? 1 : 0;
}
