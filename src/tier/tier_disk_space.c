/*
 * tier_disk_space.c — the disk tier's free-space cap (tier_disk_int.h):
 * the tier's capacity is min(its configured size, what DIR's filesystem
 * can give it), so a filesystem smaller than --disk-size, or one others
 * fill, makes the tier evict by its policy instead of failing writes.
 *
 * What the filesystem gives: the bytes of the tier's files (usage, less
 * the writes still in flight, whose bytes are not all on disk yet) plus
 * the bytes free to unprivileged users (f_bavail), less a reserve left to
 * others (bc_disk_reserve). Bytes the tier holds that usage does not
 * count (directories, temp files being written, files evicted but not
 * yet unlinked or still open for sendfile) make the reading smaller,
 * never larger: the error is on the safe side and goes at the next one.
 * The tier's own writes do not move the cap (usage rises as free space
 * falls); others' do, so it is read on a timer (BC_DISK_SPACE_PERIOD_MS,
 * the statvfs on the work pool, never on the loop thread), at the end of
 * the start-up scan (the first moment usage counts every file), and when
 * a write fails with ENOSPC.
 *
 * Locks: the statvfs runs without any; fs_cap, capacity and the eviction
 * change under t->lock (bc_disk_do_apply_capacity: the one eviction path
 * set_capacity uses too). The drop below the configured size is logged
 * once (warning, both numbers), the recovery once (info).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/statvfs.h>

#include "tier/tier_disk_int.h"
#include "util/util_error.h"
#include "util/util_log.h"

#define MiB (1024u * 1024u)

uint64_t bc_disk_space_period_ms = BC_DISK_SPACE_PERIOD_MS;

/*
 * 1% of the filesystem, at least 64 MiB, but never more than a sixteenth
 * of it: a big filesystem keeps a 1% margin, a mid-sized one (under
 * 6.4 GiB) 64 MiB, and a small one (under 1 GiB: a test's tmpfs, a small
 * volume) stays mostly usable (an 8 MiB tmpfs keeps 512 KiB).
 */
uint64_t
bc_disk_reserve(uint64_t total)
{
	uint64_t floor = total / 16 < 64 * (uint64_t)MiB ? total / 16 :
	    64 * (uint64_t)MiB;
	uint64_t pct = total / 100;

	return pct > floor ? pct : floor;
}

static double
mib(uint64_t bytes)
{
	return (double)bytes / MiB;
}

int
bc_disk_space_check(bc_disk_t *t, bc_disk_space_t *sp)
{
	bc_disk_unlinks_t u = { 0 };
	struct statvfs    sv;
	uint64_t          frsize, avail, reserve, on_disk, cap, configured;
	int               log = 0;

	if (fstatvfs(t->dirfd, &sv) < 0)
		return -errno;
	frsize = sv.f_frsize != 0 ? sv.f_frsize : sv.f_bsize;
	avail = (uint64_t)sv.f_bavail * frsize;
	reserve = bc_disk_reserve((uint64_t)sv.f_blocks * frsize);
	if (sp != NULL) {
		sp->avail = avail;
		sp->reserve = reserve;
		sp->inodes_out = sv.f_files > 0 && sv.f_favail == 0;
	}
	pthread_mutex_lock(&t->lock);
	if (!t->indexed || t->scan_live > 0) {
		pthread_mutex_unlock(&t->lock);
		return BC_EAGAIN;
	}
	on_disk = t->usage - t->unwritten;
	t->fs_cap = on_disk + avail > reserve ? on_disk + avail - reserve : 0;
	(void)bc_disk_do_apply_capacity(t, &u);
	cap = t->capacity;
	configured = t->configured;
	if (cap < configured && !t->capped)
		log = 1;
	else if (cap >= configured && t->capped)
		log = 2;
	if (log != 0)
		t->capped = log == 1;
	pthread_mutex_unlock(&t->lock);
	bc_disk_unlink_later(t, &u);
	if (log == 1)
		BC_WARN("tier %s: the filesystem of %s has room for %.1f MiB "
		    "(%.1f MiB kept free for others), less than the "
		    "configured %.1f MiB: capacity capped", t->base.name,
		    t->dir, mib(cap), mib(reserve), mib(configured));
	else if (log == 2)
		BC_INFO("tier %s: the filesystem of %s has room for the "
		    "configured %.1f MiB again", t->base.name, t->dir,
		    mib(configured));
	return 0;
}

bool
bc_disk_space_enospc(bc_disk_t *t, const bc_disk_write_t *w)
{
	bc_disk_space_t sp;
	uint64_t        on_disk;

	if (bc_disk_space_check(t, &sp) < 0 || sp.inodes_out ||
	    sp.avail >= sp.reserve + w->size)
		return false;
	pthread_mutex_lock(&t->lock);
	on_disk = t->usage - t->unwritten;
	pthread_mutex_unlock(&t->lock);
	return on_disk > 0;
}

/* ---- the periodic check ------------------------------------------------ */

static void
space_work(void *arg)
{
	bc_disk_t *t = arg;

	(void)bc_disk_space_check(t, NULL);
	pthread_mutex_lock(&t->lock);
	t->space_queued = false;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
}

/* Loop thread: one check at a time goes to the pool. */
static void
space_tick(bc_loop_t *l, void *arg)
{
	bc_disk_t *t = arg;
	bool       queued;

	pthread_mutex_lock(&t->lock);
	queued = t->space_queued;
	t->space_queued = true;
	pthread_mutex_unlock(&t->lock);
	if (queued || bc_loop_work(l, space_work, NULL, t) == 0)
		return;
	pthread_mutex_lock(&t->lock);
	t->space_queued = false;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->lock);
}

void
bc_disk_space_start(bc_disk_t *t)
{
	t->space_timer = bc_loop_timer_new(t->loop, bc_disk_space_period_ms,
	    space_tick, t);
}

void
bc_disk_space_stop(bc_disk_t *t)
{
	bc_loop_timer_free(t->space_timer);
	t->space_timer = NULL;
	pthread_mutex_lock(&t->lock);
	while (t->space_queued)
		pthread_cond_wait(&t->cv, &t->lock);
	pthread_mutex_unlock(&t->lock);
}
