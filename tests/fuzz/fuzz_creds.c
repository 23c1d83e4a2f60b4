/*
 * fuzz_creds.c — the AWS shared credentials file parser
 * (config/config_creds.h), which reads only from a path: the input is
 * written to a file in a directory of this process's own (under /dev/shm
 * when there is one) and read for the profiles "default", "prod" and
 * "profile named".
 *
 * Checks what the header promises: a profile that loads has both keys,
 * trimmed; a failure leaves the earlier credentials as they were and
 * says why in err.
 */
#include <unistd.h>

#include "fuzz.h"
#include "config/config_creds.h"

#define INPUT_MAX 8192

static char dir[64], path[96];

static void
cleanup(void)
{
	if (path[0] != '\0')
		unlink(path);
	if (dir[0] != '\0')
		rmdir(dir);
}

static void
setup(void)
{
	if (dir[0] != '\0')
		return;
	snprintf(dir, sizeof(dir), "%s/bc-fuzz-creds-XXXXXX",
	    access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	FUZZ_CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/credentials", dir);
	atexit(cleanup);
}

static bool
trimmed(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && s[0] != ' ' && s[0] != '\t' && s[n - 1] != ' ' &&
	    s[n - 1] != '\t' && s[n - 1] != '\n' && s[n - 1] != '\r';
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const profiles[] = { "default", "prod",
	    "profile named" };
	FILE *fp;

	if (size > INPUT_MAX)
		return 0;
	setup();
	fp = fopen(path, "w");
	FUZZ_CHECK(fp != NULL);
	FUZZ_CHECK(fwrite(data, 1, size, fp) == size);
	FUZZ_CHECK(fclose(fp) == 0);
	for (size_t i = 0; i < sizeof(profiles) / sizeof(*profiles); i++) {
		bc_config_keypair_t cr = { NULL, NULL, NULL };
		char err[512] = "";
		int rv;

		cr.access_key = fuzz_strndup("OLDAK", 5);
		cr.secret_key = fuzz_strndup("OLDSK", 5);
		rv = bc_config_creds_load_file(path, profiles[i], &cr, err,
		    sizeof(err));
		if (rv == 0) {
			FUZZ_CHECK(cr.access_key != NULL &&
			    cr.secret_key != NULL);
			FUZZ_CHECK(trimmed(cr.access_key));
			FUZZ_CHECK(trimmed(cr.secret_key));
		} else {
			FUZZ_CHECK(err[0] != '\0');
			FUZZ_CHECK(strcmp(cr.access_key, "OLDAK") == 0);
			FUZZ_CHECK(strcmp(cr.secret_key, "OLDSK") == 0);
			FUZZ_CHECK(cr.session_token == NULL);
		}
		bc_config_keypair_fini(&cr);
	}
	return 0;
}
