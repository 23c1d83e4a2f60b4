/*
 * fuzz_xml.c — the XML bodies (s3/s3_xml.h): the same input parsed as a
 * DeleteObjects <Delete> (bc_s3_xml_parse_delete, and
 * bc_s3_xml_filter_delete with a key filter), a CompleteMultipartUpload
 * body, an upstream <DeleteResult> to add per-key errors to, a listing
 * page (<ListBucketResult>, what warm-ups read), and as XML character
 * data.
 *
 * Checks what the header promises: counts and limits of a parse that
 * succeeds, part numbers in range and ascending, ETags shorter than
 * BC_S3_ETAG_LEN, decoded text never longer than its source; the filter
 * refuses every body the parser refuses (and may refuse more markup),
 * and of one it takes refuses exactly the keys its filter refuses; and
 * what it forwards names exactly the keys it kept,
 * both as an XML parser would count the <Object> and <Key> start tags and
 * as the scanner reads it back (what goes upstream is what was checked).
 */
#include "fuzz.h"
#include "s3/s3_xml.h"
#include "util/util_buf.h"

#define INPUT_MAX (64 * 1024)

/* The filter: keeps keys whose bytes add up to an even number. */
static bool
keep(void *arg, const char *key)
{
	unsigned sum = 0;

	(void)arg;
	for (const unsigned char *p = (const unsigned char *)key; *p != '\0';
	    p++)
		sum += *p;
	return sum % 2 == 0;
}

/* Start tags "<name" followed by '>', '/' or a blank in b. */
static size_t
start_tags(const bc_buf_t *b, const char *name)
{
	size_t n = 0, nl = strlen(name);
	const char *p = bc_buf_str(b), *end = p + b->len;

	for (;;) {
		p = memchr(p, '<', (size_t)(end - p));
		if (p == NULL)
			break;
		p++;
		if ((size_t)(end - p) > nl && memcmp(p, name, nl) == 0 &&
		    strchr(">/ \t\r\n", p[nl]) != NULL && p[nl] != '\0')
			n++;
	}
	return n;
}

static void
free_keys(char **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

static void
check_delete(const char *xml, size_t len)
{
	char **keys, **refused, **again;
	size_t n, nref, nkept, nagain, r = 0, k = 0;
	bc_buf_t out = BC_BUF_INIT, res = BC_BUF_INIT;
	bool quiet, quiet2;
	bc_s3err_t e, ef, ea;

	e = bc_s3_xml_parse_delete(xml, len, &keys, &n, &quiet);
	ef = bc_s3_xml_filter_delete(xml, len, keep, NULL, &out, &refused,
	    &nref, &nkept);
	/* the filter refuses what the parser refuses, and may refuse more
	 * markup (MalformedXML), never accept more */
	FUZZ_CHECK(ef == e || (e == BC_S3E_NONE &&
	    ef == BC_S3E_MalformedXML));
	if (ef != BC_S3E_NONE)
		FUZZ_CHECK(refused == NULL && nref == 0 && nkept == 0);
	if (e != BC_S3E_NONE)
		FUZZ_CHECK(keys == NULL && n == 0);
	if (ef != BC_S3E_NONE)
		goto out;
	FUZZ_CHECK(n >= 1 && n <= BC_S3_DELETE_MAX_KEYS);
	FUZZ_CHECK(nref + nkept == n);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(keys[i] != NULL && strlen(keys[i]) <= len);
		if (keep(NULL, keys[i])) {
			k++;
			continue;
		}
		FUZZ_CHECK(r < nref && strcmp(refused[r], keys[i]) == 0);
		r++;
	}
	FUZZ_CHECK(r == nref && k == nkept);
	/*
	 * What is forwarded (when a key is kept; else nothing is) names
	 * exactly the kept keys: as start tags an XML parser sees ("<Key"
	 * and "<Object" with blanks or attributes too, which this scanner
	 * skips), and read back by the scanner, in order. A body that no
	 * longer parses fails closed.
	 */
	if (nkept > 0) {
		FUZZ_CHECK(start_tags(&out, "Object") == nkept);
		FUZZ_CHECK(start_tags(&out, "Key") == nkept);
		ea = bc_s3_xml_parse_delete(bc_buf_str(&out), out.len, &again,
		    &nagain, &quiet2);
		if (ea == BC_S3E_NONE) {
			FUZZ_CHECK(nagain == nkept);
			for (size_t i = 0, j = 0; i < n; i++)
				if (keep(NULL, keys[i]))
					FUZZ_CHECK(strcmp(again[j++], keys[i]) ==
					    0);
			free_keys(again, nagain);
		}
	}
	FUZZ_CHECK(bc_s3_xml_delete_result_errors(xml, len, keys, n,
	    BC_S3E_AccessDenied, &res) == 0);
	FUZZ_CHECK(res.len >= len);
out:
	free_keys(keys, n);
	free_keys(refused, nref);
	bc_buf_fini(&out);
	bc_buf_fini(&res);
}

static void
check_complete(const char *xml, size_t len)
{
	bc_s3_part_t *parts;
	size_t n;
	bc_s3err_t e;

	e = bc_s3_xml_parse_complete(xml, len, &parts, &n);
	if (e != BC_S3E_NONE) {
		FUZZ_CHECK(parts == NULL && n == 0);
		return;
	}
	FUZZ_CHECK(n >= 1 && n <= BC_S3_MAX_PARTS);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(parts[i].number >= 1 &&
		    parts[i].number <= BC_S3_MAX_PARTS);
		FUZZ_CHECK(i == 0 || parts[i].number > parts[i - 1].number);
		FUZZ_CHECK(strlen(parts[i].etag) < BC_S3_ETAG_LEN);
	}
	free(parts);
}

/* As a listing page an origin answered (a warm-up reads them): within
 * its bounds, every key non-empty and no longer than the input. */
static void
check_list(const char *xml, size_t len)
{
	bc_s3_list_t l;

	if (bc_s3_xml_parse_list(xml, len, &l) != BC_S3E_NONE) {
		FUZZ_CHECK(l.n == 0 && l.v == NULL && l.next == NULL);
		return;
	}
	FUZZ_CHECK(l.n <= BC_S3_LIST_MAX_KEYS);
	for (size_t i = 0; i < l.n; i++)
		FUZZ_CHECK(l.v[i].key[0] != '\0' &&
		    strlen(l.v[i].key) <= len);
	FUZZ_CHECK(l.next == NULL || strlen(l.next) <= BC_S3_LIST_TOKEN_MAX);
	bc_s3_xml_list_fini(&l);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *xml = (const char *)data;
	char *text;

	if (size > INPUT_MAX)
		return 0;
	check_delete(xml, size);
	check_complete(xml, size);
	check_list(xml, size);
	text = bc_s3_xml_text(xml, size);
	if (text != NULL)
		FUZZ_CHECK(strlen(text) <= size);
	free(text);
	return 0;
}
