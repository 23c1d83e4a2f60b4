/*
 * replay.c — a main() for a fuzz target built without libFuzzer (gcc,
 * make check): feeds it every file of its corpus, each in a buffer of
 * exactly its size, so the committed seeds (and the crashes kept as
 * regression seeds) are checked on every build, plain and under
 * ASan/UBSan.
 *
 *   replay_NAME [FILE|DIR]...
 *
 * Without arguments it reads $BC_SRCDIR/tests/fuzz/corpus/BC_FUZZ_TARGET
 * (BC_SRCDIR defaults to "."). Prints one line per input before running
 * it, so a crash names its input. Exit status 0 when every input ran;
 * 1 when one could not be read or there was none.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef BC_FUZZ_TARGET
#error "BC_FUZZ_TARGET must name the target, e.g. \"fuzz_range\""
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int
run_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *data = NULL;
	struct stat st;
	long n;
	int rv = -1;

	if (fp == NULL || fstat(fileno(fp), &st) != 0) {
		fprintf(stderr, "%s: cannot read\n", path);
		goto out;
	}
	n = (long)st.st_size;
	data = malloc(n > 0 ? (size_t)n : 1);
	if (data == NULL || fread(data, 1, (size_t)n, fp) != (size_t)n) {
		fprintf(stderr, "%s: cannot read\n", path);
		goto out;
	}
	printf("%s (%ld bytes)\n", path, n);
	fflush(stdout);
	LLVMFuzzerTestOneInput(data, (size_t)n);
	rv = 0;
out:
	free(data);
	if (fp != NULL)
		fclose(fp);
	return rv;
}

static int
skip_dots(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Runs path, or every file of it when a directory; adds to *count. */
static int
run_path(const char *path, size_t *count)
{
	struct dirent **list;
	struct stat st;
	char sub[4096];
	int n, rv = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "%s: not found\n", path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return run_file(path);
	}
	n = scandir(path, &list, skip_dots, alphasort);
	if (n < 0) {
		fprintf(stderr, "%s: cannot list\n", path);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", path, list[i]->d_name);
		if (stat(sub, &st) == 0 && S_ISREG(st.st_mode)) {
			(*count)++;
			if (run_file(sub) < 0)
				rv = -1;
		}
		free(list[i]);
	}
	free(list);
	return rv;
}

int
main(int argc, char **argv)
{
	const char *srcdir = getenv("BC_SRCDIR");
	char dir[4096];
	size_t count = 0;
	int rv = 0;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (run_path(argv[i], &count) < 0)
				rv = 1;
	} else {
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s",
		    srcdir != NULL && srcdir[0] != '\0' ? srcdir : ".",
		    BC_FUZZ_TARGET);
		if (run_path(dir, &count) < 0)
			rv = 1;
	}
	if (count == 0) {
		fprintf(stderr, "%s: no input\n", BC_FUZZ_TARGET);
		rv = 1;
	}
	printf("%s: %zu inputs replayed%s\n", BC_FUZZ_TARGET, count,
	    rv == 0 ? "" : ", with errors");
	return rv;
}
