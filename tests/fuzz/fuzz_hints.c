/*
 * fuzz_hints.c — x-bucketcache-* hint headers (s3/s3_hints.h).
 *
 * Input: header lines "Name: value" (LF-separated, a CR before LF
 * dropped; a line without ':' is skipped). Short names "j", "n", "p",
 * "e" stand for the four hint headers, so the fuzzer reaches them
 * cheaply. Checks the header's promises: every kept key is 1..1024
 * bytes, decodes back the same length as strlen, has no "." or ".."
 * segment; at most 1,000 keys; a kept job id passes bc_s3_hint_job_ok;
 * malformed never exceeds the hint headers given; parsing twice gives
 * the same result.
 */
#include "fuzz.h"
#include "s3/s3_hints.h"

#define INPUT_MAX 140000

static const char *
expand(const char *name)
{
	if (strcmp(name, "j") == 0)
		return BC_S3_HINT_JOB;
	if (strcmp(name, "n") == 0)
		return BC_S3_HINT_NEXT;
	if (strcmp(name, "p") == 0)
		return BC_S3_HINT_PATTERN;
	if (strcmp(name, "e") == 0)
		return BC_S3_HINT_EPOCH;
	return name;
}

static void
check(const bc_s3_hints_t *h, unsigned nhint)
{
	FUZZ_CHECK(h->malformed <= nhint);
	FUZZ_CHECK(h->n_next <= BC_S3_HINT_NEXT_MAX);
	FUZZ_CHECK((h->n_next == 0) == (h->next == NULL));
	for (size_t i = 0; i < h->n_next; i++) {
		size_t n = strlen(h->next[i]);

		FUZZ_CHECK(n >= 1 && n <= BC_S3_MAX_KEY);
		FUZZ_CHECK(bc_s3_hint_key_ok(h->next[i], n));
		FUZZ_CHECK(!bc_s3_key_has_dot_segment(h->next[i]));
	}
	if (h->job[0] != '\0')
		FUZZ_CHECK(bc_s3_hint_job_ok(h->job, strlen(h->job)));
	FUZZ_CHECK(h->pattern <= BC_S3_PATTERN_ONCE);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bc_kvlist_t l = BC_KVLIST_INIT;
	bc_s3_hints_t h, h2;
	char *text, *line, *next;
	unsigned nhint = 0;

	if (size > INPUT_MAX)
		return 0;
	text = fuzz_strndup(data, size);
	for (line = text; line != NULL; line = next) {
		char *colon;
		size_t n;

		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		n = strlen(line);
		if (n > 0 && line[n - 1] == '\r')
			line[--n] = '\0';
		colon = strchr(line, ':');
		if (colon == NULL || l.n == FUZZ_MAX_HEADERS)
			continue;
		*colon++ = '\0';
		colon += strspn(colon, " \t");
		if (bc_s3_hint_header(expand(line)))
			nhint++;
		FUZZ_CHECK(bc_kv_add(&l, expand(line), colon) == 0);
	}
	bc_s3_hints_init(&h);
	bc_s3_hints_init(&h2);
	FUZZ_CHECK(bc_s3_hints_parse(&h, &l) == 0);
	FUZZ_CHECK(bc_s3_hints_parse(&h2, &l) == 0);
	check(&h, nhint);
	FUZZ_CHECK(strcmp(h.job, h2.job) == 0 && h.n_next == h2.n_next &&
	    h.pattern == h2.pattern && h.has_epoch == h2.has_epoch &&
	    h.epoch == h2.epoch && h.malformed == h2.malformed);
	for (size_t i = 0; i < h.n_next; i++)
		FUZZ_CHECK(strcmp(h.next[i], h2.next[i]) == 0);
	bc_s3_hints_fini(&h);
	bc_s3_hints_fini(&h2);
	bc_kv_fini(&l);
	free(text);
	return 0;
}
