/*
 * policy_dataset.c — the name of a chunk's dataset (policy.h,
 * bc_policy_dataset_name): what the share layer divides a tier by and
 * scale/ estimates per. Pure; any thread.
 */
#include "policy/policy.h"

void
bc_policy_dataset_name(const char *bucket, const char *key, unsigned depth,
    char *out, size_t outlen)
{
	size_t n = 0, kl = 0;
	unsigned parts = 0;

	while (key[kl] != '\0' && parts < depth) {
		if (key[kl] == '/')
			parts++;
		kl++;
	}
	while (kl > 0 && key[kl - 1] != '/')
		kl--;   /* only whole parts: a key's last part is no folder */
	for (const char *p = bucket; *p != '\0' && n + 1 < outlen; p++)
		out[n++] = *p;
	if (n + 1 < outlen)
		out[n++] = '/';
	for (size_t i = 0; i < kl && n + 1 < outlen; i++)
		out[n++] = key[i];
	out[n] = '\0';
}
