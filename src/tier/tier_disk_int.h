/*
 * tier_disk_int.h — what the disk tier's files share (not for the rest of
 * bucketcache): the file format (tier_disk_file.c), the index
 * (tier_disk_index.c), the start-up scan (tier_disk_scan.c) and the tier
 * itself (tier_disk.c, with its file jobs in tier_disk_write.c and
 * tier_disk_read.c).
 *
 * Locks: t->lock guards the index and every field marked "lock". A file
 * path is only renamed or unlinked under its stripe lock (t->stripes, by
 * hash), taken before t->lock, never the other way round; the loop thread
 * never takes a stripe lock. Functions named bc_disk_do_* need t->lock.
 *
 * The rule that keeps the index and the files in step: the file of (kind,
 * hash) should exist exactly when the index has an entry for it. A write
 * renames its temp file into place only while its entry still names it
 * (entry->job == the write); an unlink removes a file only while no entry
 * names it. Both decide under the stripe lock, so they cannot interleave
 * for one path.
 */
#ifndef BC_TIER_DISK_INT_H
#define BC_TIER_DISK_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tier/tier_disk.h"
#include "util/util_assert.h"
#include "util/util_htab.h"
#include "util/util_list.h"

/* ---- the file format (tier_disk_file.c) ------------------------------ */

#define BC_DISK_CHUNK      0     /* kinds of file: DIR/c/... */
#define BC_DISK_META       1     /* DIR/o/... */
#define BC_DISK_VERSION    1
#define BC_DISK_HDR_FIXED  32    /* header bytes before the strings */
#define BC_DISK_HDR_MAX    4096  /* a longer header is refused */
#define BC_DISK_BLOCK      4096  /* what usage rounds a file up to */
#define BC_DISK_PATH_MAX   80    /* relative paths, temp names included */
#define BC_DISK_TOKEN_LEN  8     /* hex digits of an instance's token */

/* A header, decoded (strings NUL-terminated, pointing into a buffer) or
 * to encode. */
typedef struct bc_disk_hdr_s {
	uint8_t     kind;
	uint16_t    hdr_len;
	uint64_t    body_len;
	uint32_t    body_crc;
	uint32_t    index;         /* chunks; 0 for metadata */
	const char *bucket, *key;
	const char *etag;          /* chunks; "" for metadata */
} bc_disk_hdr_t;

/* A file read back: its header, body and (kept open for a chunk's
 * sendfile) descriptor. */
typedef struct bc_disk_file_s {
	bc_disk_hdr_t h;
	uint64_t      fsize;
	/* The caller's; NULL: none. A chunk's from bc_chunk_data_alloc()
	 * (body_map), anything else's malloc'd (body_map 0). */
	uint8_t      *body;
	size_t        body_map;
	int           fd;          /* -1, or open on the file: the caller's */
	char          strs[BC_DISK_HDR_MAX];    /* h's strings */
	uint8_t       buf[BC_DISK_HDR_MAX];
} bc_disk_file_t;

/* The header length of a file with these strings. */
size_t   bc_disk_hdr_len(const char *bucket, const char *key,
    const char *etag);
/* A file of size bytes as usage counts it: whole 4 KiB blocks. */
uint64_t bc_disk_blocks(uint64_t size);
/* The name hashes: a chunk's is bc_chunk_key_hash(); an object's (its
 * metadata file) hashes bucket and key the same way. */
uint64_t bc_disk_obj_hash(const char *bucket, const char *key);
/* (kind, hash)'s path relative to DIR: "c/ab/c/<16 hex digits>"; with a
 * token, the temp name "<path>.<token>-<seq>.tmp" instead. buf holds
 * BC_DISK_PATH_MAX bytes. */
void     bc_disk_path(char *buf, uint8_t kind, uint64_t hash,
    const char *token, uint64_t seq);
/* Whether name (a directory entry) is a temp file, and of which token
 * (written to token, BC_DISK_TOKEN_LEN + 1 bytes). */
bool     bc_disk_tmp_name(const char *name, char *token);
/* Parses a file name of 16 hex digits. */
bool     bc_disk_name_hash(const char *name, uint64_t *hash);

/*
 * Writes a file of h (h->hdr_len and body_crc computed here) and body to
 * the temp name tmp (a path from bc_disk_path with a token), making the
 * two directories above it when missing. Returns 0, or -errno (the temp
 * file removed). No fsync: see tier_disk_file.c.
 */
int  bc_disk_write_tmp(int dirfd, const char *tmp, bc_disk_hdr_t *h,
    const void *body, size_t len);
/* Opens path (relative to dirfd) to read, without touching its atime.
 * Returns the descriptor, BC_ENOENT, or another -errno. */
int  bc_disk_open_read(int dirfd, const char *path);
/*
 * Reads the file at path (relative to dirfd) of kind, that should be
 * named by hash, into f: the header always; the body (checked against its
 * crc) when body is true; f->fd left open when keep_fd. Returns 0;
 * BC_ENOENT when there is no such file; BC_EPROTO when it is damaged (bad
 * magic, version or header crc, a size that disagrees with the header, a
 * header naming another hash, a bad body crc); another -errno (BC_EIO) or
 * BC_ENOMEM. On an error f holds nothing to free.
 */
int  bc_disk_read(int dirfd, const char *path, uint8_t kind, uint64_t hash,
    bool body, bool keep_fd, bc_disk_file_t *f);
/* Frees what a successful bc_disk_read left in f (body, fd). */
void bc_disk_file_fini(bc_disk_file_t *f);

/* ---- the index (tier_disk_index.c) ------------------------------------ */

typedef struct bc_disk_s bc_disk_t;
typedef struct bc_disk_obj_s bc_disk_obj_t;
typedef struct bc_disk_write_s bc_disk_write_t;

/* A chunk deleted while the scan runs (t->tombs, by its hash). */
typedef struct bc_disk_tomb_s {
	bc_hnode_t hn;
} bc_disk_tomb_t;

/* One file the index knows: a chunk or an object's metadata. A chunk the
 * scan's first phase indexed is bare (obj NULL, pol.key 0) until its
 * header is read. */
typedef struct bc_disk_entry_s {
	bc_policy_node_t pol;      /* pol.size: bytes on disk */
	bc_hnode_t       hn;       /* chunks: in t->chunks, by hash */
	uint64_t         hash;     /* names the file */
	uint64_t         gen;      /* tells apart entries of one hash */
	bc_disk_obj_t   *obj;      /* NULL: bare */
	bc_list_t        olink;    /* chunks: in obj->chunks */
	bc_disk_write_t *job;      /* its write in flight; NULL: on disk */
	/* The file as its last full check found it (chunks; vsize 0: not
	 * checked since the tier opened): open_file sends a file with the
	 * same inode, size and mtime without reading it again. */
	uint64_t         vino, vsize;
	int64_t          vmtime_ns;
	uint32_t         index;
	uint8_t          kind;
} bc_disk_entry_t;

/* An object with entries: its chunks (any ETag) and metadata. */
struct bc_disk_obj_s {
	bc_hnode_t       hn;       /* in t->objs, by hash */
	uint64_t         hash;     /* bc_disk_obj_hash */
	bc_list_t        chunks;
	bc_disk_entry_t *meta;
	size_t           blen;     /* name: "bucket\0key\0" */
	char             name[];
};

/* A write in flight (tier_disk.c): the chunk or blob being written. */
/* Paths to unlink once the lock is dropped (bc_disk_unlink_later). */
typedef struct bc_disk_unlinks_s {
	size_t n, cap;
	struct bc_disk_victim_s {
		uint8_t  kind;
		uint64_t hash;
	}     *v;
} bc_disk_unlinks_t;

struct bc_disk_write_s {
	bc_disk_t       *t;
	uint8_t          kind;
	uint64_t         hash;
	bc_chunk_t      *c;        /* chunk: a reference until written */
	const void      *body;     /* c->data, or blob (in strs) */
	size_t           len;
	uint64_t         size;     /* its entry's pol.size */
	bc_disk_hdr_t    h;        /* strings in c->id or strs */
	/* the files evicted to make this write's room: the write's job
	 * unlinks them before it writes (on a nearly full filesystem, an
	 * unlink queued apart could run after the write, which then met
	 * ENOSPC) */
	bc_disk_unlinks_t unlink_first;
	char             strs[];
};

/* A del_object made while the scan runs: files of matching objects the
 * scan has not reached yet must go too. */
typedef struct bc_disk_filter_s {
	struct bc_disk_filter_s *next;
	const char *bucket, *key, *prefix;    /* key NULL: prefix */
	char        strs[];
} bc_disk_filter_t;

#define BC_DISK_STRIPES 64

struct bc_disk_s {
	bc_tier_t              base;        /* priv: this */
	bc_loop_t             *loop;
	char                  *dir;
	int                    dirfd;       /* DIR, for *at() calls */
	int                    lockfd;      /* DIR/lock, flock'ed */
	char                   token[BC_DISK_TOKEN_LEN + 1];
	_Atomic uint64_t       seq;         /* temp names */
	pthread_mutex_t        stripes[BC_DISK_STRIPES];
	pthread_mutex_t        lock;
	pthread_cond_t         cv;          /* jobs or the scan ended */
	uint64_t               capacity;    /* lock: min(configured, fs_cap) */
	uint64_t               configured;  /* lock: opts, or set_capacity's */
	uint64_t               fs_cap;      /* lock: what the filesystem gives;
	                                     * UINT64_MAX until measured */
	bool                   capped;      /* lock: logged as capped */
	bool                   space_queued;  /* lock: a check on the pool */
	bc_loop_timer_t       *space_timer;
	uint64_t               usage;       /* lock */
	uint64_t               unwritten;   /* lock: usage of entries whose
	                                     * write is in flight */
	const bc_policy_ops_t *pol_ops;
	bc_policy_t           *pol;         /* lock */
	bc_htab_t              chunks;      /* lock: entries by hash */
	bc_htab_t              objs;        /* lock: objects by hash */
	uint64_t               gen;         /* lock */
	uint64_t               nchunks, nmetas;   /* lock */
	size_t                 writing;     /* lock: write/unlink jobs */
	size_t                 reading;     /* lock: read jobs */
	/* The scan (tier_disk_scan.c). */
	bool                   scanning;    /* lock */
	bool                   indexed;     /* lock: its first phase ended */
	unsigned               scan_p1_left;  /* lock: first-phase units */
	bc_htab_t              tombs;       /* lock: chunks deleted meanwhile
					       (bc_disk_tomb_t) */
	bc_disk_filter_t      *filters;     /* lock */
	_Atomic bool           scan_stop;
	_Atomic unsigned       scan_next;   /* the next top directory */
	unsigned               scan_live;   /* lock: threads still scanning */
	size_t                 nscan;
	pthread_t             *scan_threads;
	uint64_t               scan_start, scan_ns, index_ns;   /* lock */
	_Atomic uint64_t       scan_files, scan_removed;
};

/* t's disk tier state; t must come from bc_tier_disk. */
static inline bc_disk_t *
bc_disk_of(bc_tier_t *t)
{
	BC_CHECK(t->ops == &bc_tier_disk);
	return t->priv;
}

/* Policy contexts for events with none from a caller (the scan, metadata
 * ops): now, for bucket. */
bc_policy_ctx_t bc_disk_ctx(const char *bucket);

bc_disk_entry_t *bc_disk_do_chunk(bc_disk_t *t, uint64_t hash);
bc_disk_obj_t   *bc_disk_do_obj(bc_disk_t *t, uint64_t hash,
    const char *bucket, const char *key);
/* Whether an entry names (kind, hash)'s file. */
bool             bc_disk_do_indexed(bc_disk_t *t, uint8_t kind, uint64_t hash);
/*
 * Adds e (kind, hash, index, pol.size and pol.key set; job as wanted) for
 * the object (bucket, key), made if new: into the table, the object, the
 * usage and the policy (on_insert with ctx). bucket NULL adds a bare
 * chunk (no object). A chunk entry of the same hash or the object's
 * metadata entry must have been removed first. Returns 0 or BC_ENOMEM
 * (e is then not added).
 */
int  bc_disk_do_add(bc_disk_t *t, bc_disk_entry_t *e, const char *bucket,
    const char *key, const bc_policy_ctx_t *ctx);
/* Gives bare chunk e its object (bucket, key), index and policy key (set
 * in place: policy.h allows it once). Returns 0 or BC_ENOMEM (e stays
 * bare). */
int  bc_disk_do_attach(bc_disk_t *t, bc_disk_entry_t *e, const char *bucket,
    const char *key, uint32_t index);
/* Takes e out of the index and the policy and frees it; its file goes
 * through u when u is not NULL (a replacement rewrites the same path). */
void bc_disk_do_remove(bc_disk_t *t, bc_disk_entry_t *e,
    bc_disk_unlinks_t *u);
/* Evicts, in the policy's order, until usage + add fits the capacity.
 * Returns 0, or BC_E2BIG when the policy offers no victim. */
int  bc_disk_do_evict(bc_disk_t *t, uint64_t add, bc_disk_unlinks_t *u);
/* Sets the capacity to min(configured, fs_cap), tells the policy when it
 * changed and evicts down to it (into u). Returns bc_disk_do_evict's. */
int  bc_disk_do_apply_capacity(bc_disk_t *t, bc_disk_unlinks_t *u);
/* Whether the scan was told to drop (bucket, key) (a del_object). */
bool bc_disk_do_filtered(bc_disk_t *t, const char *bucket, const char *key);
/* Records (kind, hash) in u (best-effort: out of memory, the file stays
 * until the next scan finds it). */
void bc_disk_victim(bc_disk_unlinks_t *u, uint8_t kind, uint64_t hash);

/* ---- file jobs (tier_disk_write.c, tier_disk_read.c) ------------------- */

static inline pthread_mutex_t *
bc_disk_stripe(bc_disk_t *t, uint64_t hash)
{
	return &t->stripes[hash % BC_DISK_STRIPES];
}

/* A job counted in *counter (t->writing or t->reading) ended. */
void bc_disk_job_done(bc_disk_t *t, size_t *counter);
/* Removes (kind, hash)'s file unless an entry names it (under its stripe
 * lock). Returns whether it removed one. Not on the loop thread. */
bool bc_disk_unlink_unindexed(bc_disk_t *t, uint8_t kind, uint64_t hash);
/* Hands u's paths to the work pool (bc_disk_unlink_unindexed each) and
 * empties u. */
void bc_disk_unlink_later(bc_disk_t *t, bc_disk_unlinks_t *u);
/* Hands w to the pool; its entry is in the index and t->writing counts
 * it. On failure (the loop stopping) undoes both, frees w (dropping its
 * chunk reference) and returns the error. */
int  bc_disk_write_start(bc_disk_t *t, bc_disk_write_t *w);
/* The ops get and meta_get (tier.h). */
int  bc_disk_get(bc_tier_t *bt, bc_tier_get_t *req, const bc_chunk_key_t *k,
    const bc_policy_ctx_t *ctx, bc_tier_get_cb cb);
int  bc_disk_open_file(bc_tier_t *bt, bc_tier_file_t *req,
    const bc_chunk_key_t *k, const bc_policy_ctx_t *ctx,
    bc_tier_file_cb cb);
int  bc_disk_meta_get(bc_tier_t *bt, bc_tier_meta_get_t *req,
    const char *bucket, const char *key, bc_tier_meta_cb cb);

/* ---- the free-space cap (tier_disk_space.c) ------------------------- */

#define BC_DISK_SPACE_PERIOD_MS 5000   /* how often free space is read */

/* The period tiers opened from now on use (BC_DISK_SPACE_PERIOD_MS; tests
 * change it). */
extern uint64_t bc_disk_space_period_ms;

/* The bytes of a filesystem of total bytes the tier leaves free. */
uint64_t bc_disk_reserve(uint64_t total);
/*
 * Reads the free space of DIR's filesystem and sets fs_cap (and so the
 * capacity, evicting down to it) from it. Does nothing to the bound
 * while the scan's threads run (usage does not yet count every file:
 * the last one calls this as it ends). Any thread but the loop thread.
 * Returns 0, BC_EAGAIN when nothing was set (the scan), or -errno of
 * fstatvfs; with sp, what was read (sp->avail bytes free to us,
 * sp->reserve, sp->inodes_out).
 */
typedef struct bc_disk_space_s {
	uint64_t avail, reserve;
	bool     inodes_out;
} bc_disk_space_t;
int  bc_disk_space_check(bc_disk_t *t, bc_disk_space_t *sp);
/* Starts the periodic check (a loop timer that hands each check to the
 * work pool); without a timer (the loop stopping) there is none. */
void bc_disk_space_start(bc_disk_t *t);
/* Stops it and waits for a check in flight. Not holding t->lock. */
void bc_disk_space_stop(bc_disk_t *t);
/*
 * A write of w failed with ENOSPC: re-reads the free space (setting the
 * cap, so later puts evict down to what the filesystem holds). Returns
 * whether that explains the failure and eviction can help: the
 * filesystem is short of bytes (less than the reserve and w's file free)
 * and the tier holds files it can evict. False (mark the tier down):
 * inodes ran out, bytes are free (a quota, or the scan not indexed yet),
 * or the tier holds nothing.
 */
bool bc_disk_space_enospc(bc_disk_t *t, const bc_disk_write_t *w);

/* ---- the scan (tier_disk_scan.c) -------------------------------------- */

#define BC_DISK_SCAN_THREADS 4   /* partly I/O-bound: more than the cores */

/* Starts the scan threads (t->scanning set). Returns 0 or -errno. */
int  bc_disk_scan_start(bc_disk_t *t);
/* Stops them early (close) and joins them. */
void bc_disk_scan_stop(bc_disk_t *t);
/* For tests: when set, every scan thread calls it as it starts phase 1
 * (sizes) and phase 2 (headers), so a test can hold the scan there. */
extern void (*bc_disk_scan_gate)(bc_disk_t *t, int phase);

#endif
