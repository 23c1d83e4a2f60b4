/*
 * scale_mem.h — how much memory --mem-size auto may take at most when
 * --mem-max is not given: the memory limit of the process's cgroup less
 * a headroom (a third of it, at least 256 MiB: the gateway's own buffers,
 * transit fills and metadata live outside the cache bound), or a quarter
 * of RAM when no cgroup limits it.
 */
#ifndef BC_SCALE_MEM_H
#define BC_SCALE_MEM_H

#include <stdint.h>

#define BC_SCALE_HEADROOM_MIN ((uint64_t)256 << 20)

/*
 * The smallest memory limit on the cgroup path of this process and its
 * ancestors, under root (normally "/sys/fs/cgroup"), read from proc_cgroup
 * (normally "/proc/self/cgroup"): cgroup v2's memory.max, or v1's
 * memory/.../memory.limit_in_bytes. 0: no limit found ("max", or a v1
 * value of 2^60 or more).
 */
uint64_t bc_scale_cgroup_limit(const char *root, const char *proc_cgroup);
/* MemTotal from meminfo (normally "/proc/meminfo"), bytes; 0: unknown. */
uint64_t bc_scale_ram(const char *meminfo);
/* The default --mem-max from a cgroup limit (0: none) and RAM; *source
 * is "cgroup" or "ram". 0 when neither is known. */
uint64_t bc_scale_default_max(uint64_t cgroup_limit, uint64_t ram,
    const char **source);

#endif
