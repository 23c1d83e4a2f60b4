/*
 * util_assert.h — invariants, always checked (varnish's AN/AZ/CHECK):
 * a broken one is a bug, not an error to return, so it aborts naming the
 * file, line and expression, in every build (NDEBUG does not turn them
 * off). Use them where a contract forbids a state — a refcount below
 * zero, a NULL the caller promised away, an enum value no switch knows —
 * and return codes for what the world can do (a bad request, a full disk).
 */
#ifndef BC_UTIL_ASSERT_H
#define BC_UTIL_ASSERT_H

/* Logs "file:line: func: assertion 'expr' failed" to stderr and aborts. */
_Noreturn void bc_assert_fail(const char *file, int line, const char *func,
    const char *expr);

#define BC_CHECK(e) \
	((e) ? (void)0 : bc_assert_fail(__FILE__, __LINE__, __func__, #e))
/* x is non-zero / non-NULL. */
#define BC_AN(x)    BC_CHECK((x) != 0)
/* x is zero / NULL (a call that must succeed returns 0: BC_AZ(f())). */
#define BC_AZ(x)    BC_CHECK((x) == 0)
/* A place control never reaches (a switch's impossible default). */
#define BC_NEVER(why) bc_assert_fail(__FILE__, __LINE__, __func__, why)

#endif
