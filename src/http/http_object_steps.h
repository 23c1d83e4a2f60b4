/*
 * http_object_steps.h — the states of an object request (GET and HEAD
 * through the cache, http_object.c), one line each:
 *
 *   BC_OBJREQ_STEP(NAME, name, KIND, "what it does")
 *
 * NAME    the enum constant BC_OBJREQ_NAME (http_object.h)
 * name    the state's name (bc_objreq_state_name) and its step function,
 *         step_name in http_object.c
 * KIND    RUN: its step runs and returns the next state at once;
 *         WAIT: suspended (the step that entered it called bc_http_wait),
 *         its step takes the wake's outcome when the request resumes;
 *         END: parked for good, no step (the answer is queued, or the
 *         error in q->err is the server's to send)
 *
 * The order is the usual order of a request; the transitions are in
 * http_object.c's head comment and docs/design.md ("The object request").
 * Add a line here to add a state.
 */
#ifdef BC_OBJREQ_STEP
BC_OBJREQ_STEP(META,        meta,        RUN,  "ask the cache for the object's metadata")
BC_OBJREQ_STEP(WAIT_META,   wait_meta,   WAIT, "suspended on the fetch that learns the metadata")
BC_OBJREQ_STEP(RESTART,     restart,     RUN,  "the object changed: look it up afresh")
BC_OBJREQ_STEP(COND,        cond,        RUN,  "conditionals and Range: 304, 416, or the span")
BC_OBJREQ_STEP(LOOKUP,      lookup,      RUN,  "ask the cache how the range goes out: memory, a file, a wait, a stream")
BC_OBJREQ_STEP(WAIT_LOOKUP, wait_lookup, WAIT, "suspended on the disk tier's file or the one chunk's fill")
BC_OBJREQ_STEP(STREAM,      stream,      RUN,  "a streamed answer: the reader takes the chunks in order")
BC_OBJREQ_STEP(DELIVER,     deliver,     RUN,  "headers and hit counters; queue the answer")
BC_OBJREQ_STEP(DELIVERED,   delivered,   END,  "the object's answer is queued; the reader sends it")
BC_OBJREQ_STEP(READ_WAIT,   read_wait,   WAIT, "the reader suspended on a chunk or a filling chunk's bytes")
BC_OBJREQ_STEP(PASS,        pass,        END,  "the reader sends the rest from the upstream, uncached")
BC_OBJREQ_STEP(CUT,         cut,         END,  "the reader cut the answer off")
BC_OBJREQ_STEP(SENT,        sent,        END,  "answered without the object: 304, 416, the upstream's error")
BC_OBJREQ_STEP(ERROR,       error,       END,  "failed before answering: the server sends q->err")
#endif
