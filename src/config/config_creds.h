/*
 * config_creds.h — where the gateway's upstream credentials come from, as
 * far as options, environment and files tell (nothing is fetched here:
 * src/creds/ does that):
 *
 *   - the sources and their names (--credentials);
 *   - the settings of the sources whose keys are fetched, read from the
 *     AWS SDKs' environment variables: web identity (STS
 *     AssumeRoleWithWebIdentity), ECS/EKS container credentials, the EC2
 *     instance metadata service (IMDSv2);
 *   - one profile of an AWS shared credentials file (~/.aws/credentials):
 *     INI sections "[name]", "key = value" lines, comments starting with
 *     ';' or '#'.
 *
 * Pure and bounded: lines longer than BC_CREDS_MAX_LINE bytes are an
 * error, the file is read once and closed. Thread-safe (no shared state).
 */
#ifndef BC_CONFIG_CREDS_H
#define BC_CONFIG_CREDS_H

#include <stdbool.h>
#include <stddef.h>

/* Where upstream credentials come from, in the chain's order. */
typedef enum bc_creds_source_e {
	BC_CREDS_NONE = 0,       /* none: upstream requests go unsigned */
	BC_CREDS_ENV,            /* AWS_ACCESS_KEY_ID/... (static) */
	BC_CREDS_WEB_IDENTITY,   /* STS AssumeRoleWithWebIdentity (EKS) */
	BC_CREDS_PROFILE,        /* a shared credentials file (static) */
	BC_CREDS_ECS,            /* the container credentials endpoint */
	BC_CREDS_IMDS,           /* the EC2 instance metadata service */
	BC_CREDS_AUTO,           /* --credentials auto: the chain (a wish,
				    never a resolved source) */
} bc_creds_source_t;

/* The --credentials spelling of s: "none", "env", "web-identity",
 * "profile", "ecs", "imds", "auto". */
const char *bc_creds_source_name(bc_creds_source_t s);
/* The source named s (as above), or -1. */
int bc_creds_source_parse(const char *s);
/* true for the sources whose keys are fetched and rotate. */
bool bc_creds_source_fetched(bc_creds_source_t s);

/* Bounds of what the fetched sources accept (also used by src/creds/). */
#define BC_CREDS_MAX_URL      2048
#define BC_CREDS_MAX_ARN      2048
#define BC_CREDS_MAX_TOKEN    16384   /* an authorization token */

/* The settings of a fetched source; every string owned, NULL when not
 * used. */
typedef struct bc_config_creds_s {
	bc_creds_source_t source;
	bool      chained;        /* chosen by auto, not named */
	/* web-identity */
	char     *role_arn;       /* AWS_ROLE_ARN */
	char     *token_file;     /* AWS_WEB_IDENTITY_TOKEN_FILE */
	char     *session_name;   /* AWS_ROLE_SESSION_NAME, or NULL: made up
				     at each call ("bucketcache-TIME") */
	char     *sts_url;        /* AWS_ENDPOINT_URL_STS, or
				     https://sts.REGION.amazonaws.com */
	/* ecs */
	char     *ecs_url;        /* http://169.254.170.2 + the relative
				     URI, or the full URI */
	char     *ecs_token;      /* AWS_CONTAINER_AUTHORIZATION_TOKEN */
	char     *ecs_token_file; /* ..._TOKEN_FILE (read at each call;
				     wins over ecs_token) */
	/* imds */
	char     *imds_url;       /* http://169.254.169.254, the IPv6
				     address, or AWS_EC2_METADATA_SERVICE_
				     ENDPOINT; no trailing '/' */
	unsigned  imds_timeout_ms;   /* per attempt (default 1 s) */
	unsigned  imds_attempts;     /* default 3 */
} bc_config_creds_t;

/*
 * Each reads its source's variables from env (a NULL-terminated
 * "NAME=value" array) into cc (its other members untouched) and sets
 * cc->source. Returns 0; BC_ENOENT when the source's variables are not
 * set (imds: when AWS_EC2_METADATA_DISABLED is true), cc untouched;
 * BC_EINVAL with err naming the variable for a malformed value (a half
 * setting counts: AWS_ROLE_ARN without AWS_WEB_IDENTITY_TOKEN_FILE);
 * BC_ENOMEM.
 *
 * web identity: AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN (arn:...),
 * AWS_ROLE_SESSION_NAME (2-64 of [A-Za-z0-9_+=,.@-]); STS at
 * AWS_ENDPOINT_URL_STS, else the regional endpoint of AWS_REGION, else
 * AWS_DEFAULT_REGION, else region (--region).
 * ecs: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (wins; "/..."), else
 * AWS_CONTAINER_CREDENTIALS_FULL_URI: https, or http to a loopback host or
 * to ECS's and EKS Pod Identity's link-local addresses (169.254.170.2,
 * 169.254.170.23, fd00:ec2::23), as the SDKs allow; with it
 * AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or _TOKEN (no CR or LF).
 * imds: AWS_EC2_METADATA_DISABLED, AWS_EC2_METADATA_SERVICE_ENDPOINT
 * (http(s)://host[:port]), AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE (IPv4
 * or IPv6), AWS_METADATA_SERVICE_TIMEOUT (seconds, 1-60) and
 * AWS_METADATA_SERVICE_NUM_ATTEMPTS (1-10).
 */
int  bc_config_creds_web_identity(bc_config_creds_t *cc, char **env,
    const char *region, char *err, size_t errlen);
int  bc_config_creds_ecs(bc_config_creds_t *cc, char **env, char *err,
    size_t errlen);
int  bc_config_creds_imds(bc_config_creds_t *cc, char **env, char *err,
    size_t errlen);
/* Frees cc's strings and zeroes it (source NONE). NULL is a no-op. */
void bc_config_creds_fini(bc_config_creds_t *cc);

#define BC_CREDS_MAX_LINE 4096

/* One key pair; every member owned by the struct, NULL when absent. */
typedef struct bc_config_keypair_s {
	char *access_key;
	char *secret_key;
	char *session_token;
} bc_config_keypair_t;

/*
 * Reads profile from the credentials file at path into *out (zeroed, or
 * holding earlier credentials, which are replaced on success and left
 * untouched on failure). Keys are matched
 * case-insensitively (aws_access_key_id, aws_secret_access_key,
 * aws_session_token); section names exactly, surrounding blanks ignored.
 * A key repeated in the profile takes its last value.
 * Returns 0; BC_ENOENT when the file or the profile does not exist;
 * BC_EINVAL for a malformed line (too long, no '=', unterminated
 * section) or a profile without both keys; BC_EIO / -errno when the file
 * cannot be read; BC_ENOMEM. err (may be NULL) gets one line naming the
 * file, and the line number for malformed lines. Secrets never appear in
 * err.
 */
int  bc_config_creds_load_file(const char *path, const char *profile,
    bc_config_keypair_t *out, char *err, size_t errlen);

/* Frees the members and zeroes *c. */
void bc_config_keypair_fini(bc_config_keypair_t *c);

#endif
