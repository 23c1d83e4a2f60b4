/*
 * policy.c — the table of eviction/admission policies by name (see
 * policy.h). A new policy adds one line to policies[].
 */
#include <string.h>

#include "policy/policy.h"

static const bc_policy_ops_t *const policies[] = {
	&bc_policy_lru,
	&bc_policy_pin,
	&bc_policy_cost,
	&bc_policy_planned,
	&bc_policy_auto,
};

const bc_policy_ops_t *
bc_policy_find(const char *name)
{
	if (name == NULL)
		return NULL;
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (strcmp(policies[i]->name, name) == 0)
			return policies[i];
	return NULL;
}

const char *
bc_policy_names(void)
{
	return "lru, pin, cost, planned, auto";   /* keep in step with policies[] */
}
