/*
 * fuzz_plan.c — the plan body parser (prefetch/prefetch_plan.h): a
 * builder fed the body in pieces, and bc_plan_parse on the whole.
 *
 * Input: a first byte whose bits 0-2 are a count k of cut points and
 * whose bit 3 asks for an empty feed before each piece; then k
 * little-endian 16-bit values (as many as the input holds), each a cut
 * at that value modulo (body length + 1); then the body. The pieces
 * between the sorted cuts are fed in order (bc_plan_builder_feed), then
 * bc_plan_builder_finish; bc_plan_parse gets the body at once.
 *
 * Checks: feeding stops at the first error, which is one of the header's
 * codes; the split does not change the outcome (the same return code; the
 * same keys in the same order); a built plan has at least one key and at
 * most BC_PLAN_MAX_KEYS, every key passes bc_s3_hint_key_ok and is
 * NUL-terminated at its length, bc_plan_find of key i from 0 is at most
 * i (from i: i itself, for the first FIND_FROM_CHECKS positions; a walk
 * from i costs i steps when a key repeats), after bc_plan_index_hashes
 * the same holds of bc_plan_find_hash, and bc_plan_memory is positive.
 * The builder reports memory at every step.
 */
#include "fuzz.h"
#include "policy/policy.h"
#include "prefetch/prefetch_plan.h"
#include "s3/s3_hints.h"
#include "util/util_error.h"

#define INPUT_MAX        70000
#define MAX_CUTS         7
#define FIND_FROM_CHECKS 256

static bool
known_error(int rv)
{
	return rv == BC_EINVAL || rv == BC_E2BIG || rv == BC_ENOMEM;
}

static void
check_plan(bc_plan_t *p)
{
	uint32_t n = bc_plan_len(p);

	FUZZ_CHECK(n >= 1 && n <= BC_PLAN_MAX_KEYS);
	FUZZ_CHECK(bc_plan_memory(p) > 0);
	FUZZ_CHECK(bc_plan_index_hashes(p, "bkt") == 0);
	for (uint32_t i = 0; i < n; i++) {
		size_t len = 0;
		const char *k = bc_plan_key(p, i, &len);
		uint64_t h = bc_policy_key_hash("bkt", k, 0);

		FUZZ_CHECK(strlen(k) == len);
		FUZZ_CHECK(bc_s3_hint_key_ok(k, len));
		FUZZ_CHECK(bc_plan_find(p, k, len, 0) <= i);
		FUZZ_CHECK(bc_plan_find_hash(p, h, 0) <= i);
		if (i < FIND_FROM_CHECKS) {
			FUZZ_CHECK(bc_plan_find(p, k, len, i) == i);
			FUZZ_CHECK(bc_plan_find_hash(p, h, i) == i);
		}
	}
}

/* Both plans hold the same keys in the same order. */
static void
check_same(const bc_plan_t *a, const bc_plan_t *b)
{
	FUZZ_CHECK(bc_plan_len(a) == bc_plan_len(b));
	for (uint32_t i = 0; i < bc_plan_len(a); i++) {
		size_t la, lb;
		const char *ka = bc_plan_key(a, i, &la);
		const char *kb = bc_plan_key(b, i, &lb);

		FUZZ_CHECK(la == lb && memcmp(ka, kb, la) == 0);
	}
}

static int
cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* Feeds body[0..n) cut at cuts[0..k) (sorted); returns what the builder
 * returned first that was not 0, or finish's outcome (*out). */
static int
build(const uint8_t *body, size_t n, const size_t *cuts, size_t k,
    bool empty_feeds, bc_plan_t **out)
{
	bc_plan_builder_t *b = bc_plan_builder_new();
	char err[256] = "";
	size_t from = 0;
	int rv = 0;

	*out = NULL;
	FUZZ_CHECK(b != NULL);
	for (size_t i = 0; i <= k && rv == 0; i++) {
		size_t to = i < k ? cuts[i] : n;

		if (empty_feeds)
			rv = bc_plan_builder_feed(b, body + from, 0, err,
			    sizeof(err));
		if (rv == 0)
			rv = bc_plan_builder_feed(b, body + from, to - from, err,
			    sizeof(err));
		FUZZ_CHECK(bc_plan_builder_memory(b) > 0);
		from = to;
	}
	if (rv == 0)
		rv = bc_plan_builder_finish(b, out, err, sizeof(err));
	FUZZ_CHECK(rv == 0 || known_error(rv));
	FUZZ_CHECK((rv == 0) == (*out != NULL));
	FUZZ_CHECK(rv == 0 || err[0] != '\0');
	bc_plan_builder_free(b);
	return rv;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cuts[MAX_CUTS], k, n;
	const uint8_t *body;
	bc_plan_t *split = NULL, *whole = NULL;
	char err[256] = "";
	bool empty_feeds;
	int rs, rw;

	if (size < 1 || size > INPUT_MAX)
		return 0;
	k = data[0] & 7;
	empty_feeds = (data[0] & 8) != 0;
	if (k > (size - 1) / 2)
		k = (size - 1) / 2;
	body = data + 1 + 2 * k;
	n = size - 1 - 2 * k;
	for (size_t i = 0; i < k; i++)
		cuts[i] = (size_t)(data[1 + 2 * i] | data[2 + 2 * i] << 8) %
		    (n + 1);
	qsort(cuts, k, sizeof(*cuts), cmp_size);
	rs = build(body, n, cuts, k, empty_feeds, &split);
	rw = bc_plan_parse(body, n, &whole, err, sizeof(err));
	FUZZ_CHECK(rw == 0 || known_error(rw));
	FUZZ_CHECK((rw == 0) == (whole != NULL));
	FUZZ_CHECK(rs == rw);
	if (whole != NULL) {
		check_plan(whole);
		check_same(split, whole);
		bc_plan_ref(whole);
		bc_plan_unref(whole);
	}
	bc_plan_unref(split);
	bc_plan_unref(whole);
	return 0;
}
