/*
 * fuzz_config.c — the config file parser (config/config.h,
 * bc_config_load_text: what --config FILE reads) and, on the same lines,
 * the command-line parser: each line becomes one argument "--LINE".
 * Whatever loads is then validated by bc_config_finish (upstream URL,
 * listen address, client keys and their allow lists) with upstream
 * credentials in the environment, and looked up.
 *
 * Never touches a file: "--config" arguments are dropped, the environment
 * names no credentials file and no HOME, and a file:// upstream is only
 * resolved (realpath, stat). Checks: a finished config has every STR
 * option set, and each client key is found again with its secret.
 */
#include "fuzz.h"
#include "config/config.h"

#define INPUT_MAX 8192
#define MAX_ARGS  64

static char *env[] = { (char *)"AWS_ACCESS_KEY_ID=AKENV",
    (char *)"AWS_SECRET_ACCESS_KEY=SKENV", NULL };

static void
finish_and_look_up(bc_config_t *c)
{
	char err[512];

	if (bc_config_finish(c, env, err, sizeof(err)) < 0) {
		FUZZ_CHECK(err[0] != '\0');
		return;
	}
	FUZZ_CHECK(c->listen != NULL && c->upstream != NULL &&
	    c->region != NULL && c->domain != NULL);
	FUZZ_CHECK(c->upstream_is_file == (c->upstream_dir != NULL));
	for (size_t i = 0; i < c->nkeys; i++) {
		const bc_client_key_t *k = &c->keys[i];

		FUZZ_CHECK(bc_config_key(c, k->access_key) == k);
		FUZZ_CHECK(bc_config_secret(c, k->access_key) == k->secret_key);
		(void)bc_config_key_allows(k, "bkt", "");
		(void)bc_config_key_allows(k, "bkt", "allowed/x");
		(void)bc_config_key_allows(k, "", "x");
		for (size_t j = 0; j < k->nallow; j++)
			(void)bc_config_key_allows(k, k->allow[j], "k");
	}
	FUZZ_CHECK(bc_config_secret(c, "no such key") == NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[MAX_ARGS + 2], *text, *line, *next, err[512];
	int argc = 1;
	bc_config_t c;

	if (size > INPUT_MAX)
		return 0;
	/* the file */
	FUZZ_CHECK(bc_config_init(&c) == 0);
	if (bc_config_load_text(&c, (const char *)data, size, "fuzz.conf",
	    err, sizeof(err)) == 0)
		finish_and_look_up(&c);
	else
		FUZZ_CHECK(err[0] != '\0');
	bc_config_fini(&c);

	/* the same lines as flags */
	text = fuzz_strndup(data, size);
	argv[0] = (char *)"bucketcache";
	for (line = text; line != NULL && argc <= MAX_ARGS; line = next) {
		size_t n;

		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		if (strncmp(line, "config", 6) == 0)
			continue;
		n = strlen(line);
		argv[argc] = malloc(n + 3);
		FUZZ_CHECK(argv[argc] != NULL);
		memcpy(argv[argc], "--", 2);
		memcpy(argv[argc] + 2, line, n + 1);
		argc++;
	}
	argv[argc] = NULL;
	FUZZ_CHECK(bc_config_init(&c) == 0);
	if (bc_config_load(&c, argc, argv, env, err, sizeof(err)) == 0)
		finish_and_look_up(&c);
	bc_config_fini(&c);
	for (int i = 1; i < argc; i++)
		free(argv[i]);
	free(text);
	return 0;
}
