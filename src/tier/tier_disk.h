/*
 * tier_disk.h — the disk tier: chunks and object metadata kept in files
 * under one directory (opts.dir), surviving restarts (docs/design.md, "Disk
 * tier"; the format is in tier_disk_file.c).
 *
 * A non-SYNC tier (tier.h): get() and meta_get() read on the loop's work
 * pool and call back on the loop thread; put(), meta_put(), del() and
 * del_object() change the in-memory index at once and leave the file work
 * (write to a temp name and rename; unlink) to the work pool, so they
 * never wait on the disk. A put chunk is served from the chunk itself
 * (the tier holds a reference) until its file is written. Every op is
 * thread-safe. Capacity counts file sizes rounded up to 4 KiB blocks,
 * metadata files included; the policy (opts.policy, NULL: lru) orders
 * chunks and metadata together.
 *
 * open() returns at once: a scan on threads of its own rebuilds the index
 * from the files while the tier serves, in two phases: the chunk files'
 * names and sizes (gets, usage and eviction work from then on), then
 * their headers (objects for del_object, policy keys) and the metadata
 * files. Until it ends, a get() or meta_get() for something not indexed
 * yet reads the file its key names directly. Damaged files
 * (torn, bad checksum, a header that does not name the file) are removed,
 * counted in stats.corrupt, and answer as misses.
 *
 * The capacity in force is min(the configured one: opts.capacity, or
 * set_capacity's; what DIR's filesystem can give the tier: its files plus
 * the space free, less a reserve left to others, see tier_disk_space.c),
 * read at the end of the scan, every few seconds and after an ENOSPC; the
 * tier evicts down to it by its policy and grows back as space frees up.
 * capacity() is that bound; info.configured the configured one. A write
 * that fails counts stats.write_failures and marks the tier down
 * (bc_tier_mark_down; the chain skips it until a retry answers), except
 * an ENOSPC the free space explains while the tier holds files it can
 * evict: the lower cap takes care of that one.
 *
 * One process uses a directory at a time (an flock on DIR/lock).
 */
#ifndef BC_TIER_DISK_H
#define BC_TIER_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tier/tier.h"

extern const bc_tier_ops_t bc_tier_disk;

/*
 * Opens the disk tier over o->dir for o->capacity bytes, calling back on
 * o->loop (required). Returns 0 and *out at once (the scan goes on in the
 * background), or a negative code with a one-line reason in err (errlen
 * bytes; may be NULL): BC_EINVAL (no dir or loop; dir not a directory),
 * BC_ENOENT (dir missing), BC_EACCES (dir not writable, read-only),
 * BC_EAGAIN (another process holds the directory), BC_ENOMEM or another
 * -errno. bc_tier_disk.open(o, out) is this without the message.
 */
int bc_tier_disk_open(const bc_tier_opts_t *o, bc_tier_t **out, char *err,
    size_t errlen);

/* What the disk tier holds and does now; t must come from bc_tier_disk. */
typedef struct bc_tier_disk_info_s {
	bool     scanning;      /* the start-up scan still runs */
	bool     indexed;       /* its first phase ended: every chunk file
	                         * found is in the index */
	uint64_t scan_files;    /* chunk files indexed, metadata files read */
	uint64_t scan_removed;  /* stale temp files and damaged files it removed */
	uint64_t index_ns;      /* how long the first phase took; 0 before */
	uint64_t scan_ns;       /* how long the scan took; 0 while it runs */
	uint64_t chunks;        /* chunk entries in the index */
	uint64_t metas;         /* metadata entries in the index */
	uint64_t usage;         /* bytes on disk (4 KiB blocks), as capacity counts */
	uint64_t capacity;      /* in force: min(configured, the filesystem's) */
	uint64_t configured;    /* opts.capacity, or set_capacity's */
	uint64_t writing;       /* writes and unlinks accepted, not yet done */
} bc_tier_disk_info_t;

void bc_tier_disk_info(bc_tier_t *t, bc_tier_disk_info_t *out);
/* Reads DIR's free space now and applies the cap (evicting down to it),
 * as the tier does every few seconds on its own. Any thread but the
 * loop's. Returns 0; BC_EAGAIN while the start-up scan runs (nothing
 * applied); or -errno of fstatvfs. */
int  bc_tier_disk_check_space(bc_tier_t *t);
/* Returns once the start-up scan ended (at once when it has). */
void bc_tier_disk_wait_scan(bc_tier_t *t);
/* Returns once every write and unlink accepted so far is done (files
 * renamed into place or removed). Any thread; the loop must be running. */
void bc_tier_disk_flush(bc_tier_t *t);

#endif
