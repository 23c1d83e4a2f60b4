/*
 * config_redis.h — a --redis URL, redis://[[user]:pass@]host[:port][/db],
 * parsed into the address the Redis tier connects to.
 *
 *   redis://cache:6379            host cache, port 6379, database 0
 *   redis://:s3cret@10.0.0.5/2    AUTH s3cret, then SELECT 2
 *   redis://bc:s%40cret@[::1]:7000  ACL user bc, password "s@cret"
 *
 * The port defaults to 6379 and the database to 0. The user and password
 * are percent-decoded (%XX; a decoded NUL is refused); they end at the
 * last '@', so a raw '@', '/' or ':' in a password works too. A user
 * needs a password (Redis ACL AUTH takes both). rediss:// is refused:
 * Debian 12's hiredis (0.14) has no TLS. No query, fragment or path past
 * the database.
 *
 * Pure and bounded (BC_REDIS_URL_MAX); thread-safe. Error messages are one
 * line that shows the URL with everything before its last '@' replaced by
 * "***@", so neither user nor password ever appears in them.
 */
#ifndef BC_CONFIG_REDIS_H
#define BC_CONFIG_REDIS_H

#include <stddef.h>
#include <stdint.h>

#define BC_REDIS_DEFAULT_PORT 6379
#define BC_REDIS_URL_MAX      2048   /* bytes of one URL */
#define BC_REDIS_HOST_MAX     255    /* bytes of a host name or address */
#define BC_REDIS_DB_MAX       2147483647u  /* what SELECT takes (an int) */

/* One Redis server (or a cluster's seed); the strings are owned. */
typedef struct bc_redis_addr_s {
	char     *host;   /* a name, IPv4 or IPv6 (without brackets) */
	uint16_t  port;
	char     *user;   /* ACL user; NULL: none (AUTH with pass alone) */
	char     *pass;   /* NULL: no AUTH */
	unsigned  db;     /* SELECT; 0 needs none */
} bc_redis_addr_t;

/*
 * Parses url into *a (zeroed here first). Returns 0; BC_EINVAL with one
 * line in err (no option name in front: the caller adds "--redis: "),
 * *a then holding nothing; BC_ENOMEM. bc_config_redis_fini(a) in either
 * case is safe.
 */
int  bc_config_redis_parse(const char *url, bc_redis_addr_t *a, char *err,
    size_t errlen);
/* Frees a's strings and zeroes it; NULL is a no-op. */
void bc_config_redis_fini(bc_redis_addr_t *a);

#endif
