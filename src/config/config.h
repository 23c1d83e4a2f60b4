/*
 * config.h — bucketcache's configuration: one table of options
 * (config_table.h) turned into a struct from defaults, a config file, the
 * environment and command-line flags.
 *
 * Only config/ parses; every other module reads the finished, immutable
 * bc_config_t. Errors go into a caller buffer as one line that names the
 * option, file line or value at fault.
 */
#ifndef BC_CONFIG_H
#define BC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config/config_creds.h"
#include "config/config_redis.h"

typedef struct bc_strlist_s {
	char  **v;
	size_t  n;
} bc_strlist_t;

/* A client key pair and the buckets/prefixes it may use. */
typedef struct bc_client_key_s {
	char   *access_key;
	char   *secret_key;
	char  **allow;      /* "bucket" or "bucket/prefix"; NULL: all */
	size_t  nallow;
} bc_client_key_t;

/* --listen's ADDRESS:PORT, parsed (bc_config_listen_parse): the one
 * reading of it, which the server binds and the probe asks. */
typedef struct bc_listen_addr_s {
	/* the socket address to bind; ss_family AF_UNSPEC when the host is
	 * a name (not an IP address, nor localhost or a wildcard) */
	struct sockaddr_storage ss;
	uint16_t port;
	/* the host a client on this machine reaches it at, as a URL writes
	 * it: a wildcard or localhost as loopback, IPv6 in brackets */
	char     url_host[258];
} bc_listen_addr_t;

#define BC_OPT_T_STR   char *
#define BC_OPT_T_BOOL  bool
#define BC_OPT_T_UINT  unsigned
#define BC_OPT_T_SIZE  uint64_t
#define BC_OPT_T_MEMSIZE uint64_t
#define BC_OPT_T_MS    uint64_t
#define BC_OPT_T_LEVEL int
#define BC_OPT_T_LIST  bc_strlist_t

/* mem-size's "auto" as parsed, before bc_config_finish() */
#define BC_MEM_AUTO UINT64_MAX

typedef struct bc_config_s {
#define BC_OPT(field, name, type, def, help) BC_OPT_T_##type field;
#include "config/config_table.h"
#undef BC_OPT
	/* derived by bc_config_finish() */
	bc_config_creds_t creds;         /* where upstream credentials come
					    from (creds.source), and the
					    settings of a fetched source */
	char            *access_key;     /* upstream credentials of a static
					    source (env, profile); NULL for
					    the others */
	char            *secret_key;
	char            *session_token;  /* NULL when none */
	bc_client_key_t *keys;           /* parsed client_keys, or the
					    upstream pair when none given */
	size_t           nkeys;
	bool             upstream_is_file;
	/* --mem-size auto: mem_size then starts at mem_min, and scale/
	 * moves it */
	bool             mem_auto;
	char            *upstream_dir;   /* file:// root, absolute */
	/* --redis, parsed: the server, or the cluster's seeds (several
	 * only with db 0); NULL and 0 without a Redis tier */
	bc_redis_addr_t *redis_addrs;
	size_t           nredis_addrs;
	bool             help;           /* --help was given */
	bool             version;        /* --version was given */
	bc_listen_addr_t listen_addr;    /* --listen, parsed */
	char             probe[16];      /* --probe[=NAME]: the admin
					    path to ask the gateway at
					    listen for (main.c); "": none */
} bc_config_t;

/* Parses s, --listen's "HOST:PORT" or "[IPV6]:PORT" (HOST "", "*" or
 * 0.0.0.0: every address; [] or [::]: every IPv6 one; a name other than
 * localhost is kept for the URL only), into *out: 0, or BC_EINVAL with
 * why in err. bc_config_finish() checks --listen more strictly (a name's
 * characters; no wildcard forms) and fills c->listen_addr with it. */
int  bc_config_listen_parse(const char *s, bc_listen_addr_t *out, char *err,
    size_t errlen);

/* Fills defaults. Returns 0 or BC_ENOMEM. */
int  bc_config_init(bc_config_t *c);
void bc_config_fini(bc_config_t *c);

/*
 * Loads, in order: the file named by --config (found in argv or env
 * first), then BUCKETCACHE_* environment variables (env: NULL-terminated
 * "NAME=value" array, usually environ), then argv flags (--name value,
 * --name=value; a BOOL flag alone means yes). Returns 0, or -1 with one
 * line in err naming the bad option, "FILE:LINE" or value.
 */
int  bc_config_load(bc_config_t *c, int argc, char **argv, char **env,
    char *err, size_t errlen);

/* Applies len bytes of text (need not be NUL-terminated) as the contents
 * of a config file: the parser --config uses, with name in place of the
 * file's path in err. A LIST it sets replaces what c held. For tests and
 * the fuzzer. Returns 0, or -1 with err set. */
int  bc_config_load_text(bc_config_t *c, const char *text, size_t len,
    const char *name, char *err, size_t errlen);

/* Validates and derives: upstream URL form, addressing, client keys,
 * the Redis tier's URLs (redis_addrs) and options, and where upstream
 * credentials come from (--credentials; auto: the first of
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN from env,
 * web identity, the profile in AWS_SHARED_CREDENTIALS_FILE or
 * ~/.aws/credentials, ECS container credentials, the instance metadata
 * service; an explicit --profile goes straight to the profile). Static
 * sources fill access_key/secret_key/session_token; the fetched ones
 * (web identity, ECS, IMDS) only creds, and need --client-key or
 * --anonymous (clients cannot sign with keys that rotate). An http(s)
 * upstream without a source is an error; file:// looks no further than
 * the profile, and without credentials clients must be anonymous or use
 * --client-key. Returns 0 or -1 with err set. */
int  bc_config_finish(bc_config_t *c, char **env, char *err, size_t errlen);

/* Writes --help, generated from the table, to fp. */
void bc_config_usage(void *fp, const char *argv0);

/* Secret for access_key from c->keys, or NULL (bc_s3_secret_fn shape). */
const char *bc_config_secret(void *c, const char *access_key);
/* The key entry for access_key, or NULL. */
const bc_client_key_t *bc_config_key(const bc_config_t *c,
    const char *access_key);
/* true when k may read and write key (or list below it, key being the
 * listing's prefix) in bucket: an allow-list entry for the whole bucket,
 * or one whose prefix key starts with. A key without a list may do all;
 * k NULL, bucket "" or key NULL may do nothing. */
bool bc_config_key_allows(const bc_client_key_t *k, const char *bucket,
    const char *key);
/* true when the keys of bucket starting with prefix (an object's key, or
 * a listing's prefix) lie under an --immutable entry: "bucket", or
 * "bucket/p" with prefix starting with p. */
bool bc_config_immutable(const bc_config_t *c, const char *bucket,
    const char *prefix);
/* true when k has all of bucket (what bucket configuration needs). */
bool bc_config_key_has_bucket(const bc_client_key_t *k, const char *bucket);
/* true when k has any part of bucket. */
bool bc_config_key_in_bucket(const bc_client_key_t *k, const char *bucket);

#endif
