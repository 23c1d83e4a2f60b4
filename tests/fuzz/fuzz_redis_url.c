/*
 * fuzz_redis_url.c — the --redis URL parser (config/config_redis.h).
 *
 * Input: the URL (an inner NUL ends it, as for any C caller). Checks the
 * parser's promises: it accepts or refuses (BC_EINVAL, one line in err,
 * nothing left in the address); what it accepts has a host (a name of
 * host characters, or an IPv6 address), a port, a password whenever it
 * has a user, and a database SELECT takes; and the URL written back from
 * those fields, user and password percent-encoded, parses to the same.
 */
#include <ctype.h>

#include "fuzz.h"
#include "config/config_redis.h"
#include "util/util_buf.h"
#include "util/util_error.h"

static void
put_encoded(bc_buf_t *b, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isalnum(ch) || strchr("-._~", ch) != NULL)
			FUZZ_CHECK(bc_buf_putc(b, (char)ch) == 0);
		else
			FUZZ_CHECK(bc_buf_printf(b, "%%%02X", ch) == 0);
	}
}

static bool
same(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	    (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void
check_round_trip(const bc_redis_addr_t *a)
{
	bc_buf_t b = BC_BUF_INIT;
	bc_redis_addr_t again;
	char err[256];

	FUZZ_CHECK(bc_buf_puts(&b, "redis://") == 0);
	if (a->pass != NULL) {
		if (a->user != NULL)
			put_encoded(&b, a->user);
		FUZZ_CHECK(bc_buf_putc(&b, ':') == 0);
		put_encoded(&b, a->pass);
		FUZZ_CHECK(bc_buf_putc(&b, '@') == 0);
	}
	FUZZ_CHECK(bc_buf_printf(&b, strchr(a->host, ':') != NULL ?
	    "[%s]:%u/%u" : "%s:%u/%u", a->host, a->port, a->db) == 0);
	if (b.len <= BC_REDIS_URL_MAX) {
		FUZZ_CHECK(bc_config_redis_parse(b.data, &again, err,
		    sizeof(err)) == 0);
		FUZZ_CHECK(strcmp(again.host, a->host) == 0);
		FUZZ_CHECK(again.port == a->port && again.db == a->db);
		FUZZ_CHECK(same(again.user, a->user));
		FUZZ_CHECK(same(again.pass, a->pass));
		bc_config_redis_fini(&again);
	}
	bc_buf_fini(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *url, err[256];
	bc_redis_addr_t a;
	size_t hlen;
	int rv;

	if (size > 2 * BC_REDIS_URL_MAX)
		return 0;
	url = fuzz_strndup(data, size);
	err[0] = '\0';
	rv = bc_config_redis_parse(url, &a, err, sizeof(err));
	FUZZ_CHECK(rv == 0 || rv == BC_EINVAL);
	if (rv < 0) {
		FUZZ_CHECK(err[0] != '\0' && strchr(err, '\n') == NULL);
		FUZZ_CHECK(a.host == NULL && a.user == NULL && a.pass == NULL);
		free(url);
		return 0;
	}
	hlen = strlen(a.host);
	FUZZ_CHECK(hlen >= 1 && hlen <= BC_REDIS_HOST_MAX);
	if (strchr(a.host, ':') == NULL) {
		for (size_t i = 0; i < hlen; i++)
			FUZZ_CHECK(isalnum((unsigned char)a.host[i]) ||
			    strchr(".-_", a.host[i]) != NULL);
	}
	FUZZ_CHECK(a.port >= 1);
	FUZZ_CHECK(a.db <= BC_REDIS_DB_MAX);
	FUZZ_CHECK(a.user == NULL || a.pass != NULL);
	FUZZ_CHECK(a.user == NULL || a.user[0] != '\0');
	FUZZ_CHECK(a.pass == NULL || a.pass[0] != '\0');
	check_round_trip(&a);
	bc_config_redis_fini(&a);
	free(url);
	return 0;
}
