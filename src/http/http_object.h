/*
 * http_object.h — the states of an object request (http_object.c: GET
 * and HEAD through the cache), named in one enum from one table
 * (http_object_steps.h), and what can be asked of them. Pure: any thread.
 */
#ifndef BC_HTTP_OBJECT_H
#define BC_HTTP_OBJECT_H

#include <stdbool.h>

typedef enum bc_objreq_state_e {
#define BC_OBJREQ_STEP(U, l, kind, doc) BC_OBJREQ_##U,
#include "http/http_object_steps.h"
#undef BC_OBJREQ_STEP
	BC_OBJREQ__COUNT
} bc_objreq_state_t;

/* How a state is left (http_object_steps.h, KIND). */
typedef enum bc_objreq_kind_e {
	BC_OBJREQ_RUN,    /* its step runs and returns the next state */
	BC_OBJREQ_WAIT,   /* suspended; its step takes the wake */
	BC_OBJREQ_END,    /* parked for good; no step */
} bc_objreq_kind_t;

/* The state's name ("meta", "wait_file", ...), or "?" for a value
 * outside the enum. Static storage. */
const char *bc_objreq_state_name(bc_objreq_state_t s);
/* Its kind; BC_OBJREQ_END for a value outside the enum. */
bc_objreq_kind_t bc_objreq_state_kind(bc_objreq_state_t s);
/* Whether a request in state s has queued the object's answer (its read
 * is told as a read event when it ends): DELIVERED, READ_WAIT, PASS,
 * CUT. */
bool bc_objreq_state_answered(bc_objreq_state_t s);

#endif
