/*
 * s3_error.h — the S3 errors bucketcache raises, from one table
 * (s3_errors.tbl), and their XML bodies.
 *
 * Pure, thread-safe. BC_S3E_NONE (0) means "no error"; every other value
 * indexes the table.
 */
#ifndef BC_S3_ERROR_H
#define BC_S3_ERROR_H

#include "util/util_buf.h"

typedef enum bc_s3err_e {
	BC_S3E_NONE = 0,
#define BC_S3ERR(code, status, msg) BC_S3E_##code,
#include "s3/s3_errors.tbl"
#undef BC_S3ERR
	BC_S3E__COUNT
} bc_s3err_t;

const char *bc_s3err_code(bc_s3err_t e);     /* "NoSuchKey" */
int         bc_s3err_status(bc_s3err_t e);   /* 404 */
const char *bc_s3err_message(bc_s3err_t e);

/* Appends S3's <Error> document: Code, Message (msg or the table's),
 * Resource (when not NULL) and RequestId. */
int bc_s3err_xml(bc_buf_t *out, bc_s3err_t e, const char *msg,
    const char *resource, const char *request_id);

#endif
