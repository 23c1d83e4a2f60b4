/*
 * stats_process.c — the process_* figures of /metrics (stats.h,
 * bc_stats_proc_read), as Prometheus client libraries read them on
 * Linux: /proc/self/stat for CPU time, memory and the start (in clock
 * ticks after /proc/stat's btime), /proc/self/fd for the open
 * descriptors, RLIMIT_NOFILE for their limit. Stateless; any thread.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "stats/stats.h"
#include "util/util_error.h"
#include "util/util_num.h"

#define STAT_MAX 4096   /* bytes of /proc/self/stat read (about 300) */

int
bc_stats_proc_parse_stat(const char *text, long ticks, long page,
    double btime, bc_stats_proc_t *p)
{
	unsigned long long v[22];   /* fields 3 .. 24 (1-based, man 5 proc) */
	const char *s = strrchr(text, ')');
	unsigned n = 0;
	uint64_t x = 0;
	ssize_t k;
	bool neg;

	if (s == NULL || ticks <= 0 || page <= 0)
		return BC_EINVAL;
	s++;
	while (n < 22) {
		while (*s == ' ')
			s++;
		if (*s == '\0' || *s == '\n')
			return BC_EINVAL;
		if (n == 0) {              /* field 3: the state, a letter */
			v[n++] = (unsigned char)*s++;
			if (*s != ' ')
				return BC_EINVAL;
			continue;
		}
		/* signed fields (priority, nice, cutime...) read as their
		 * two's complement: only unsigned ones are used */
		neg = *s == '-';
		s += neg;
		k = bc_u64_prefix(s, strlen(s), &x);
		if (k <= 0 || (s[k] != ' ' && s[k] != '\n' && s[k] != '\0'))
			return BC_EINVAL;
		v[n++] = neg ? 0 - x : x;
		s += k;
	}
	/* utime 14, stime 15, starttime 22, vsize 23, rss 24 */
	p->cpu_seconds = (double)(v[14 - 3] + v[15 - 3]) / (double)ticks;
	p->start_time = btime + (double)v[22 - 3] / (double)ticks;
	p->vsize_bytes = v[23 - 3];
	p->rss_bytes = v[24 - 3] * (unsigned long long)page;
	return 0;
}

/* /proc/stat's "btime N" (seconds since the epoch), or -1. */
static double
boot_time(void)
{
	char line[256];
	double bt = -1;
	FILE *f = fopen("/proc/stat", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "btime ", 6) == 0) {
			bt = strtod(line + 6, NULL);
			break;
		}
	}
	fclose(f);
	return bt;
}

unsigned
bc_stats_proc_read(bc_stats_proc_t *p)
{
	char text[STAT_MAX];
	unsigned have = 0;
	struct rlimit rl;
	struct dirent *de;
	size_t len;
	double bt;
	DIR *d;
	FILE *f;

	memset(p, 0, sizeof(*p));
	f = fopen("/proc/self/stat", "re");
	if (f != NULL) {
		len = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
		text[len] = '\0';
		bt = boot_time();
		if (bc_stats_proc_parse_stat(text, sysconf(_SC_CLK_TCK),
		    sysconf(_SC_PAGESIZE), bt < 0 ? 0 : bt, p) == 0) {
			have |= BC_STATS_PROC_STAT;
			if (bt >= 0)
				have |= BC_STATS_PROC_START;
		}
	}
	d = opendir("/proc/self/fd");
	if (d != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				p->open_fds++;
		closedir(d);
		if (p->open_fds > 0)
			p->open_fds--;   /* the directory's own descriptor */
		have |= BC_STATS_PROC_FDS;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		p->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX :
		    (uint64_t)rl.rlim_cur;
		have |= BC_STATS_PROC_MAXFDS;
	}
	return have;
}
