/*
 * stats_table.h — every global bucketcache counter, one line each:
 *
 *   BC_STAT(name, COUNTER|GAUGE, "help")
 *
 * name    the C identifier (BC_STATS_INC(name)), the JSON key in
 *         "counters", and the Prometheus metric bucketcache_<name>
 *         (counters get the suffix _total). Prometheus wants base units:
 *         a name ending in _us or _ms (microseconds, milliseconds, as the
 *         JSON keeps them) is rendered as ..._seconds, its value divided
 *         accordingly; this holds for every table below too
 * COUNTER only goes up; GAUGE goes up and down (BC_STATS_DEC)
 * help    one line for # HELP
 *
 * This table expands into the counter array, the JSON and the Prometheus
 * text (stats.c); add a line here to add a counter. Families with labels
 * (requests by S3 operation, the upstream latency histogram) are fixed
 * in stats.c.
 */
#ifdef BC_STAT
BC_STAT(requests,           COUNTER, "Client requests answered.")
BC_STAT(bytes_in,           COUNTER, "Request body bytes received from clients.")
BC_STAT(bytes_out,          COUNTER, "Response body bytes sent to clients.")
BC_STAT(auth_failures,      COUNTER, "Client requests refused for bad or missing signatures or disallowed buckets.")
BC_STAT(auth_cached,        COUNTER, "Presigned requests accepted from the verdict cache: the same URL and signed headers verified before, within their validity.")
BC_STAT(upstream_requests,  COUNTER, "Requests sent to the upstream bucket store.")
BC_STAT(upstream_errors,    COUNTER, "Upstream requests that failed in transport (connect, timeout, reset).")
BC_STAT(upstream_retries,   COUNTER, "Upstream requests retried.")
BC_STAT(upstream_timeouts,  COUNTER, "Upstream requests that failed for want of an answer in time (upstream-ttfb-timeout, upstream-deadline, connect or stall timeout).")
BC_STAT(upstream_bytes_in,  COUNTER, "Bytes received from the upstream.")
BC_STAT(upstream_bytes_out, COUNTER, "Bytes sent to the upstream.")
BC_STAT(upstream_file_reads, COUNTER, "Object files the file:// origin opened to answer a GET or HEAD (reads of the directory).")
BC_STAT(creds_refreshes,    COUNTER, "Upstream credentials fetched again (web identity, ECS, IMDS) and put in use.")
BC_STAT(creds_refresh_failures, COUNTER, "Refreshes of the upstream credentials that failed (the current pair stays in use until it expires; retried with backoff).")
BC_STAT(creds_expired_requests, COUNTER, "Upstream requests not sent because the upstream credentials had expired and no refresh had succeeded (the client gets 503 UpstreamCredentialsExpired).")
BC_STAT(hints_malformed,    COUNTER, "x-bucketcache-* hint headers ignored as malformed.")
BC_STAT(hints_refused,      COUNTER, "x-bucketcache-job hints not used because the job belongs to another client key (the request counts for the client's own job instead).")
BC_STAT(access_log_lines,   COUNTER, "Lines written to the access log (--access-log json).")
BC_STAT(access_log_dropped, COUNTER, "Access log lines lost: the write failed or the line could not be built.")
BC_STAT(connections,        GAUGE,   "Client requests in flight.")
BC_STAT(draining,           GAUGE,   "1 from a stop signal until the process exits: new connections are refused, /_bucketcache/ready answers 503, responses in flight finish (drain-timeout).")
BC_STAT(drain_refused,      COUNTER, "Requests that came on open connections during the drain and were answered 503 ServiceUnavailable.")
BC_STAT(cache_hits,          COUNTER, "Object reads served wholly from the cache.")
BC_STAT(cache_misses,        COUNTER, "Object reads served wholly from the upstream.")
BC_STAT(cache_partial_hits,  COUNTER, "Object reads served partly from the cache.")
BC_STAT(cache_bytes_memory,  COUNTER, "Object bytes sent to clients from the memory tier.")
BC_STAT(cache_bytes_upstream, COUNTER, "Object bytes sent to clients that were fetched for them.")
BC_STAT(cache_coalesced_waits, COUNTER, "Requests that waited on a fetch another request started (single-flight).")
BC_STAT(cache_fills,         COUNTER, "Chunk and metadata fetches the cache sent upstream.")
BC_STAT(cache_fill_failures, COUNTER, "Cache fetches that failed (transport, changed object, upstream error).")
BC_STAT(prefetch_issued,     COUNTER, "Fills started with no client waiting (prefetches: read-ahead, hints, plans).")
BC_STAT(prefetch_bytes,      COUNTER, "Bytes prefetches brought into the cache.")
BC_STAT(prefetch_used,       COUNTER, "Prefetched chunks a client then read.")
BC_STAT(prefetch_wasted,     COUNTER, "Prefetched chunks dropped (evicted or invalidated) before any client read them.")
BC_STAT(prefetch_rejected,   COUNTER, "Prefetched chunks the memory tier's policy did not admit (dropped at once, so also wasted).")
BC_STAT(prefetch_declined,   COUNTER, "Prefetches not started: the memory tier's policy would not keep the chunk, or only unread prefetched chunks could make room.")
BC_STAT(prefetch_late,       COUNTER, "Client reads that found their chunk's prefetch still in flight (and waited on it).")
BC_STAT(prefetch_unread_bytes, GAUGE, "Bytes of prefetched chunks no client has read yet (the prefetch byte budget counts them).")
BC_STAT(chunk_pool_bytes,   GAUGE,   "Bytes of freed chunk mappings kept for the next chunks (at most an eighth of the memory bound, and 16 MiB; resident, outside every cache bound): recycled pages cost no page faults.")
BC_STAT(chunk_pool_reused,  COUNTER, "Chunk data mappings taken from that pool instead of made fresh.")
BC_STAT(cache_revalidations, COUNTER, "Metadata revalidations sent upstream after meta-ttl.")
BC_STAT(cache_transit_fills,  COUNTER, "Chunk fills that memory had no room for (its chunks all in use) run for the lower tiers only, outside the memory bound (at most half of mem-size, or 8 chunks, at once).")
BC_STAT(cache_fill_no_room,  COUNTER, "First fills (object size not known when they started) whose chunk, once the headers gave its size, found no room beyond what they had reserved: nothing kept, their readers read around the cache.")
BC_STAT(cache_passthrough,   COUNTER, "Object reads streamed from the upstream uncached: memory was full of chunks in use.")
BC_STAT(cache_stale_served,  COUNTER, "Requests answered from metadata past meta-ttl while it was revalidated (meta-stale).")
BC_STAT(cache_meta_lower_hits, COUNTER, "Object metadata found in a lower tier (disk) instead of asked of the upstream.")
BC_STAT(cache_meta_lower_misses, COUNTER, "Lower-tier metadata look-ups that found none: the upstream was asked.")
BC_STAT(cache_meta_lower_corrupt, COUNTER, "Object metadata from a lower tier refused as damaged (or of another format): the upstream was asked.")
BC_STAT(cache_meta_lower_puts, COUNTER, "Object metadata learned or revalidated upstream and queued for the lower tiers.")
BC_STAT(cache_bytes_disk,    COUNTER, "Object bytes sent to clients from chunks a lower tier (disk) brought for them.")
BC_STAT(cache_disk_sendfile,  COUNTER, "Object responses sent from a disk tier's file with sendfile (a range within one chunk memory lacked).")
BC_STAT(cache_disk_promotions, COUNTER, "Chunks sent from a disk tier's file that were also brought into memory (while memory has room for them without evicting).")
BC_STAT(cache_tier_mismatches, COUNTER, "Chunks a lower tier (disk) had under the right name but of another length than the chunk size in force gives (kept under another --chunk-size): not used, fetched again.")
BC_STAT(cache_invalidations, COUNTER, "Objects dropped by writes through the gateway or the admin call.")
BC_STAT(cache_evictions,     COUNTER, "Chunks evicted from the memory tier.")
BC_STAT(cache_objects,       GAUGE,   "Objects whose metadata the cache holds.")
BC_STAT(cache_bytes_held,    GAUGE,   "Bytes the memory tier holds, overhead and metadata included.")
BC_STAT(cache_bytes_limit,   GAUGE,   "The memory tier's bound in force (mem-size; with --mem-size auto, what scale/ set).")
BC_STAT(scale_target_bytes,  GAUGE,   "With --mem-size auto: the memory the jobs need (sum over active datasets of D*(1-B/R) plus prefetch windows, within mem-min and mem-max); fixed: mem-size.")
BC_STAT(scale_origin_bandwidth_bytes_per_second, GAUGE, "The origin's measured bandwidth B, the estimate --mem-size auto sizes by: bytes per second of chunk fills while any was in flight (0: not measured yet).")
BC_STAT(scale_origin_latency_us, GAUGE, "The origin's measured latency: mean time from a chunk fill's request to its answer's headers (JSON: microseconds; Prometheus: seconds).")
BC_STAT(warm_started,        COUNTER, "Warm-ups started (POST /_bucketcache/v1/warm).")
BC_STAT(warm_running,        GAUGE,   "Warm-ups running now.")
BC_STAT(warm_list_pages,     COUNTER, "ListObjectsV2 pages warm-ups asked the origin for.")
BC_STAT(warm_objects,        COUNTER, "Objects warm-ups brought into their tier (some chunk fetched or copied down).")
BC_STAT(warm_objects_failed, COUNTER, "Objects warm-ups could not bring (a fill failed, or the object kept changing).")
BC_STAT(warm_bytes,          COUNTER, "Chunk bytes warm-ups' fills brought (from a lower tier or the origin).")
BC_STAT(list_cache_hits,     COUNTER, "ListObjects(V2) requests answered from the list cache.")
BC_STAT(list_cache_misses,   COUNTER, "Cacheable ListObjects(V2) requests the list cache lacked: sent upstream (a 200 answer is then kept).")
BC_STAT(list_cache_bypass,   COUNTER, "ListObjects(V2) requests under the list cache's prefixes it could not take (another parameter or header, a request body).")
BC_STAT(list_cache_stores,   COUNTER, "Listings the list cache kept.")
BC_STAT(list_cache_invalidations, COUNTER, "Cached listings dropped by writes through the gateway or the admin invalidation.")
BC_STAT(list_cache_evictions, COUNTER, "Cached listings dropped to stay within list-cache-size, or expired (list-ttl).")
BC_STAT(list_cache_bytes,    GAUGE,   "Bytes the list cache holds (bodies, headers and overhead).")
BC_STAT(list_cache_entries,  GAUGE,   "Listings the list cache holds.")
#endif

/*
 * Per-bucket counters, one line each: BC_BSTAT(name, "help"). Kept for the
 * first BC_STATS_MAX_BUCKETS buckets seen; later ones add to "_other".
 * JSON: "buckets": {"b": {"requests": n, ...}}; Prometheus:
 * bucketcache_bucket_<name>_total{bucket="b"}.
 */
#ifdef BC_BSTAT
BC_BSTAT(requests,       "Client requests for the bucket.")
BC_BSTAT(cache_hits,     "Object reads of the bucket served wholly from the cache.")
BC_BSTAT(cache_misses,   "Object reads of the bucket served wholly from the upstream.")
BC_BSTAT(cache_partial_hits, "Object reads of the bucket served partly from the cache.")
BC_BSTAT(cache_bytes_memory, "Object bytes of the bucket sent from the memory tier.")
BC_BSTAT(cache_bytes_upstream, "Object bytes of the bucket sent after fetching them.")
BC_BSTAT(cache_coalesced_waits, "Reads of the bucket that waited on another request's fetch.")
BC_BSTAT(cache_invalidations, "Objects of the bucket dropped by writes or the admin call.")
#endif

/*
 * Per-tier values, one line each: BC_TSTAT(name, COUNTER|GAUGE, "help"),
 * for every tier of the cache's chain (memory first, then disk, ...),
 * read from the tiers when /stats or /metrics is rendered (stats.h,
 * bc_stats_set_tiers). The counters are the tiers' own (tier.h,
 * BC_TIER_STATS: each of its names must be here); values a tier does
 * not have read 0. JSON: "tiers": {"memory": {"up": 1, ...}, ...};
 * Prometheus: bucketcache_tier_<name>_total{tier="memory"} for counters,
 * bucketcache_tier_<name>{tier="memory"} for gauges.
 */
#ifdef BC_TSTAT
BC_TSTAT(up,             GAUGE,   "1 while the tier is up; 0 while it is down (skipped, retried with backoff).")
BC_TSTAT(hits,           COUNTER, "Look-ups and gets that found the chunk in the tier.")
BC_TSTAT(misses,         COUNTER, "Look-ups and gets that did not.")
BC_TSTAT(bytes_read,     COUNTER, "Chunk bytes the tier's hits returned.")
BC_TSTAT(usage_bytes,    GAUGE,   "Bytes the tier holds (memory: chunks and metadata, overhead included; disk: file sizes in 4 KiB blocks).")
BC_TSTAT(capacity_bytes, GAUGE,   "The tier's bound in force (mem-size; disk: disk-size, or less while its filesystem has no room for it).")
BC_TSTAT(configured_bytes, GAUGE, "The tier's configured bound (mem-size, disk-size), which capacity_bytes is capped below while a disk tier's filesystem is short of space.")
BC_TSTAT(chunks,         GAUGE,   "Chunks the tier holds (redis: the chunks this gateway wrote and still accounts; Redis may hold more).")
BC_TSTAT(writes,         COUNTER, "Chunks the tier accepted (puts that stored a chunk).")
BC_TSTAT(bytes_written,  COUNTER, "Bytes of the chunks the tier accepted, as its usage counts them.")
BC_TSTAT(rejects,        COUNTER, "Puts the tier refused: not admitted by its policy, or too big.")
BC_TSTAT(write_failures, COUNTER, "Puts that failed (disk: ENOSPC, EIO; memory); a lower tier that fails is marked down.")
BC_TSTAT(deletes,        COUNTER, "Chunks dropped by deletes, invalidations and replacements.")
BC_TSTAT(evictions,      COUNTER, "Chunks evicted to make room.")
BC_TSTAT(corrupt,        COUNTER, "Chunks found damaged on read (bad checksum, torn file), dropped and fetched again.")
BC_TSTAT(errors,         COUNTER, "Gets that failed (not misses).")
BC_TSTAT(skips,          COUNTER, "Requests not sent to the tier because it was down.")
BC_TSTAT(queue_drops,    COUNTER, "Queued puts and deletes dropped because the queue was full.")
BC_TSTAT(downs,          COUNTER, "Times the tier went down.")
BC_TSTAT(queued,         GAUGE,   "Puts and deletes queued for the lower tiers and not yet run (the chain's one queue; 0 for memory).")
BC_TSTAT(metas,          GAUGE,   "Object metadata entries the tier holds (disk).")
BC_TSTAT(writing,        GAUGE,   "File writes and unlinks accepted and not yet done (disk).")
BC_TSTAT(scanning,       GAUGE,   "1 while the start-up scan rebuilds the index; hits are served meanwhile (disk).")
BC_TSTAT(scan_files,     GAUGE,   "Files the start-up scan indexed (disk).")
BC_TSTAT(scan_removed,   GAUGE,   "Stale temporary and damaged files the start-up scan removed (disk).")
BC_TSTAT(scan_ms,        GAUGE,   "How long the start-up scan took (JSON: milliseconds; Prometheus: seconds); 0 while it runs (disk).")
#endif

/*
 * Per-job counters, one line each: BC_JSTAT(name, COUNTER|GAUGE, "help"),
 * for the BC_STATS_MAX_JOBS jobs most recently active (a job is the
 * x-bucketcache-job hint, else the client's access key, else
 * "anonymous"). Counters are added to (bc_stats_job_add); gauges are the
 * jobs registry's plan position, mirrored (bc_stats_job_set). JSON:
 * "jobs": {"j": {"requests": n, ..., "rate_bytes_per_second": r}};
 * Prometheus: bucketcache_job_<name>_total{bc_job="j"} for counters,
 * bucketcache_job_<name>{bc_job="j"} for gauges (the label is not "job",
 * which Prometheus sets on every series to its scrape job's name); the
 * smoothed rate is the JSON's only: Prometheus computes
 * rate(bucketcache_job_bytes_total[1m]) itself.
 */
#ifdef BC_JSTAT
BC_JSTAT(requests,       COUNTER, "Object reads (GET/HEAD through the cache) of the job.")
BC_JSTAT(bytes,          COUNTER, "Object bytes sent to the job.")
BC_JSTAT(cache_hits,     COUNTER, "Object reads of the job served wholly from the cache.")
BC_JSTAT(cache_misses,   COUNTER, "Object reads of the job served wholly from the origin.")
BC_JSTAT(cache_partial_hits, COUNTER, "Object reads of the job served partly from the cache.")
BC_JSTAT(wait_us,        COUNTER, "Time the job's reads waited for fills, metadata or chunks, summed over its concurrent reads (JSON: microseconds; Prometheus: seconds).")
BC_JSTAT(prefetch_issued, COUNTER, "Prefetches started for the job (its plan, its -next hints, read-ahead of its reads).")
BC_JSTAT(prefetch_bytes, COUNTER, "Bytes prefetches for the job brought into the cache.")
BC_JSTAT(prefetch_used,  COUNTER, "Chunks prefetched for the job that a client then read.")
BC_JSTAT(prefetch_wasted, COUNTER, "Chunks prefetched for the job dropped (evicted, invalidated, not admitted) before any client read them.")
BC_JSTAT(prefetch_late,  COUNTER, "Client reads that found a chunk prefetched for the job still in flight (and waited on it).")
BC_JSTAT(epoch,          GAUGE,   "The epoch of the job's current plan (see plan_keys).")
BC_JSTAT(cursor,         GAUGE,   "The job's position in its current plan: keys read in order so far.")
BC_JSTAT(plan_keys,      GAUGE,   "Keys in the job's current plan (0: no plan, or the job ended).")
#endif
