/*
 * fuzz.h — what the libFuzzer targets under tests/fuzz/ share: the entry
 * points, an invariant check that crashes (so libFuzzer keeps the input),
 * and the text form of a request that fuzz_s3_request, fuzz_sigv4 and
 * fuzz_sigv2 read their input as.
 *
 * Every target is also built with gcc against tests/fuzz/replay.c, which
 * feeds it each file of its corpus (make check); nothing here depends on
 * libFuzzer. Targets are deterministic and free everything they allocate
 * before returning.
 */
#ifndef BC_FUZZ_H
#define BC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3_request.h"
#include "util/util_kv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant of the code under test: when it does not hold, print it
 * and abort, which libFuzzer reports as a crash and keeps the input. */
#define FUZZ_CHECK(cond)                                                 \
	do {                                                             \
		if (!(cond)) {                                           \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", \
			    __FILE__, __LINE__, #cond);                  \
			abort();                                         \
		}                                                        \
	} while (0)

#define FUZZ_MAX_HEADERS 64

/* A NUL-terminated copy of n bytes (an inner NUL ends the string, as it
 * would for any C caller). Aborts when out of memory. */
static inline char *
fuzz_strndup(const void *p, size_t n)
{
	char *s = malloc(n + 1);

	FUZZ_CHECK(s != NULL);
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/*
 * A request in text form:
 *
 *   METHOD TARGET
 *   Name: value
 *   ...
 *
 * lines end in LF (a CR before it is dropped); empty lines are skipped,
 * and so are the blanks after ':'; a line without ':' is a header with an
 * empty value; at most
 * FUZZ_MAX_HEADERS headers, the rest is ignored. Inits r, adds the
 * headers and parses the target with domain (may be NULL). Returns the
 * parse result, or BC_S3E_InvalidRequest when there is no request line.
 * The caller calls bc_s3_req_fini(r) in every case.
 */
static inline bc_s3err_t
fuzz_req_parse(bc_s3_req_t *r, const uint8_t *data, size_t size,
    const char *domain)
{
	char *text = fuzz_strndup(data, size), *line, *next, *sp;
	const char *method = NULL, *target = NULL;
	size_t nh = 0;
	bc_s3err_t e = BC_S3E_InvalidRequest;

	bc_s3_req_init(r);
	for (line = text; line != NULL; line = next) {
		size_t n;

		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		n = strlen(line);
		if (n > 0 && line[n - 1] == '\r')
			line[--n] = '\0';
		if (method == NULL) {
			sp = strchr(line, ' ');
			if (sp == NULL)
				goto out;
			*sp = '\0';
			method = line;
			target = sp + 1;
			continue;
		}
		if (n == 0)
			continue;
		if (nh++ == FUZZ_MAX_HEADERS)
			break;
		sp = strchr(line, ':');
		if (sp != NULL) {
			*sp++ = '\0';
			sp += strspn(sp, " \t");
		}
		FUZZ_CHECK(bc_kv_add(&r->headers, line, sp != NULL ? sp :
		    "") == 0);
	}
	if (method != NULL)
		e = bc_s3_req_parse(r, method, target, domain);
out:
	free(text);
	return e;
}

#endif
