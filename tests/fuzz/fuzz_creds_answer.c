/*
 * fuzz_creds_answer.c — the credential services' answers
 * (creds/creds_parse.h): the input is given, whole, to the ECS/IMDS JSON
 * reader, the STS AssumeRoleWithWebIdentity XML reader and the IMDS role
 * list reader, as a hostile service would send it.
 *
 * Checks what the header promises: a pair that parses has an access key,
 * a secret and (when any) a token of printable ASCII without blanks, an
 * expiration; a failure returns no pair and says why in err; a role is
 * 1-128 bytes of its alphabet.
 */
#include <ctype.h>

#include "fuzz.h"
#include "creds/creds_parse.h"

static bool
plain(const char *s)
{
	if (s == NULL || *s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (*s <= ' ' || *s >= 0x7f)
			return false;
	return true;
}

static void
check(int rv, bc_creds_snap_t *s, const char *err)
{
	if (rv == 0) {
		FUZZ_CHECK(s != NULL);
		FUZZ_CHECK(plain(s->access_key));
		FUZZ_CHECK(plain(s->secret_key));
		FUZZ_CHECK(s->session_token == NULL ||
		    plain(s->session_token));
		FUZZ_CHECK(s->expiration_ms != 0);
		FUZZ_CHECK(atomic_load(&s->refs) == 1);
		bc_creds_snap_unref(s);
	} else {
		FUZZ_CHECK(rv < 0);
		FUZZ_CHECK(s == NULL);
		FUZZ_CHECK(err[0] != '\0');
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes: a read past it is ASan's to see */
	char *buf = malloc(size > 0 ? size : 1);
	char err[512], role[BC_CREDS_MAX_ROLE + 1];
	bc_creds_snap_t *s;
	int rv;

	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	err[0] = '\0';
	s = NULL;
	rv = bc_creds_parse_json(buf, size, &s, err, sizeof(err));
	check(rv, s, err);
	err[0] = '\0';
	s = NULL;
	rv = bc_creds_parse_sts(buf, size, &s, err, sizeof(err));
	check(rv, s, err);
	err[0] = '\0';
	rv = bc_creds_parse_role(buf, size, role, sizeof(role), err,
	    sizeof(err));
	if (rv == 0) {
		size_t n = strlen(role);

		FUZZ_CHECK(n >= 1 && n <= BC_CREDS_MAX_ROLE);
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(isalnum((unsigned char)role[i]) ||
			    strchr("_+=,.@-", role[i]) != NULL);
	} else {
		FUZZ_CHECK(err[0] != '\0');
	}
	free(buf);
	return 0;
}
