/* s3_error.c — S3 error table lookups and <Error> XML (see s3_error.h). */
#include <stddef.h>

#include "s3/s3_error.h"

static const struct {
	const char *code;
	int         status;
	const char *message;
} errors[] = {
	[BC_S3E_NONE] = { "OK", 200, "OK" },
#define BC_S3ERR(c, s, m) [BC_S3E_##c] = { #c, s, m },
#include "s3/s3_errors.tbl"
#undef BC_S3ERR
};

const char *
bc_s3err_code(bc_s3err_t e)
{
	return e < BC_S3E__COUNT ? errors[e].code : "InternalError";
}

int
bc_s3err_status(bc_s3err_t e)
{
	return e < BC_S3E__COUNT ? errors[e].status : 500;
}

const char *
bc_s3err_message(bc_s3err_t e)
{
	return e < BC_S3E__COUNT ? errors[e].message : "Internal error";
}

int
bc_s3err_xml(bc_buf_t *out, bc_s3err_t e, const char *msg,
    const char *resource, const char *request_id)
{
	int rv = 0;

	rv |= bc_buf_puts(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<Error><Code>");
	rv |= bc_buf_put_xml(out, bc_s3err_code(e));
	rv |= bc_buf_puts(out, "</Code><Message>");
	rv |= bc_buf_put_xml(out, msg != NULL ? msg : bc_s3err_message(e));
	rv |= bc_buf_puts(out, "</Message>");
	if (resource != NULL) {
		rv |= bc_buf_puts(out, "<Resource>");
		rv |= bc_buf_put_xml(out, resource);
		rv |= bc_buf_puts(out, "</Resource>");
	}
	if (request_id != NULL) {
		rv |= bc_buf_puts(out, "<RequestId>");
		rv |= bc_buf_put_xml(out, request_id);
		rv |= bc_buf_puts(out, "</RequestId>");
	}
	rv |= bc_buf_puts(out, "</Error>\n");
	return rv < 0 ? rv : 0;
}
