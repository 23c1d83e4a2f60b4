/*
 * conformance_disk.c — the disk tier under the tier conformance suite
 * (tier_conformance.h): tests/unit/tier/test_tier_conformance_disk. Each
 * tier gets a fresh temp directory, removed after close. The tier is used
 * at once, while its start-up scan may still run.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "tier/tier_disk.h"
#include "tier_conformance.h"

#define MAX_OPEN 4

static struct {
	bc_tier_t *t;
	char       dir[64];
} open_dirs[MAX_OPEN];

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static bc_tier_t *
disk_open(uint64_t capacity, const bc_policy_ops_t *pol, bc_loop_t *loop)
{
	bc_tier_opts_t o = { .capacity = capacity, .policy = pol,
	    .loop = loop };
	bc_tier_t     *t = NULL;
	char           err[256] = "";
	int            i;

	for (i = 0; i < MAX_OPEN && open_dirs[i].t != NULL; i++)
		;
	cr_assert_lt(i, MAX_OPEN);
	snprintf(open_dirs[i].dir, sizeof(open_dirs[i].dir),
	    "/tmp/bc_conf_disk.XXXXXX");
	cr_assert_not_null(mkdtemp(open_dirs[i].dir));
	o.dir = open_dirs[i].dir;
	cr_assert_eq(bc_tier_disk_open(&o, &t, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_not_null(t);
	open_dirs[i].t = t;
	return t;
}

static void
disk_close(bc_tier_t *t)
{
	for (int i = 0; i < MAX_OPEN; i++) {
		if (open_dirs[i].t != t)
			continue;
		bc_tier_disk.close(t);
		nftw(open_dirs[i].dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		open_dirs[i].t = NULL;
		return;
	}
	cr_assert_fail("closing a tier this file did not open");
}

const bc_conformance_t bc_conformance = {
	.ops = &bc_tier_disk,
	.open = disk_open,
	.close = disk_close,
};
