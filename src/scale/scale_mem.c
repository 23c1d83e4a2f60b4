/*
 * scale_mem.c — the default --mem-max (scale_mem.h): cgroup v2 and v1
 * limits along the process's cgroup path, /proc/meminfo.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util_num.h"
#include "scale/scale_mem.h"

#define LINE_MAX_LEN 4096
#define NO_LIMIT     ((uint64_t)1 << 60)

/* The number in file (a limit), or 0 for none ("max", missing, huge). */
static uint64_t
read_limit(const char *file)
{
	char buf[64];
	FILE *fp = fopen(file, "r");
	uint64_t v = 0;

	if (fp == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), fp) == NULL ||
	    bc_u64_prefix(buf, strlen(buf), &v) <= 0 || v >= NO_LIMIT)
		v = 0;
	fclose(fp);
	return v;
}

static uint64_t
lower(uint64_t a, uint64_t b)
{
	return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

/* The smallest limit of file name in dir and its ancestors up to dir's
 * first part under root. path is modified. */
static uint64_t
walk_up(const char *root, const char *sub, char *path, const char *name)
{
	char file[LINE_MAX_LEN + 256];
	uint64_t best = 0;

	for (;;) {
		snprintf(file, sizeof(file), "%s%s%s/%s", root, sub, path,
		    name);
		best = lower(best, read_limit(file));
		char *slash = strrchr(path, '/');
		if (slash == NULL)
			break;
		*slash = '\0';
		if (path[0] == '\0')
			break;
	}
	snprintf(file, sizeof(file), "%s%s/%s", root, sub, name);
	return lower(best, read_limit(file));
}

uint64_t
bc_scale_cgroup_limit(const char *root, const char *proc_cgroup)
{
	char line[LINE_MAX_LEN];
	FILE *fp = fopen(proc_cgroup, "r");
	uint64_t best = 0;

	if (fp == NULL)
		return 0;
	while (fgets(line, sizeof(line), fp) != NULL) {
		char *a = strchr(line, ':'), *b, *nl;

		if (a == NULL || (b = strchr(a + 1, ':')) == NULL)
			continue;
		nl = strchr(b, '\n');
		if (nl != NULL)
			*nl = '\0';
		if (strncmp(line, "0::", 3) == 0)   /* v2 */
			best = lower(best, walk_up(root, "", b + 1,
			    "memory.max"));
		else if (b - a - 1 >= 6 && strstr(a + 1, "memory") != NULL &&
		    strstr(a + 1, "memory") < b)   /* v1 */
			best = lower(best, walk_up(root, "/memory", b + 1,
			    "memory.limit_in_bytes"));
	}
	fclose(fp);
	return best;
}

uint64_t
bc_scale_ram(const char *meminfo)
{
	char line[256];
	FILE *fp = fopen(meminfo, "r");
	uint64_t kb = 0;

	if (fp == NULL)
		return 0;
	while (fgets(line, sizeof(line), fp) != NULL) {
		const char *p = line + 9;

		if (strncmp(line, "MemTotal:", 9) != 0)
			continue;
		p += strspn(p, " \t");
		if (bc_parse_u64_prefix(p, strlen(p), 10, UINT64_MAX / 1024,
		    &kb) <= 0)
			kb = 0;
		break;
	}
	fclose(fp);
	return kb * 1024;
}

uint64_t
bc_scale_default_max(uint64_t cgroup_limit, uint64_t ram, const char **source)
{
	uint64_t head;

	if (cgroup_limit > 0 && (ram == 0 || cgroup_limit < ram)) {
		*source = "cgroup";
		head = cgroup_limit / 3;
		if (head < BC_SCALE_HEADROOM_MIN)
			head = BC_SCALE_HEADROOM_MIN;
		return cgroup_limit > 2 * head ? cgroup_limit - head :
		    cgroup_limit / 2;
	}
	*source = "ram";
	return ram / 4;
}
