/*
 * config_table.h — every bucketcache option, one line each:
 *
 *   BC_OPT(field, "name", TYPE, "default", "help")
 *
 * field   the bc_config_t member
 * name    the flag (--name), the config-file key ("name value") and, upper-
 *         cased with '-' as '_', the environment variable BUCKETCACHE_NAME
 * TYPE    STR, BOOL ("yes/no/true/false/1/0"; a bare flag means yes),
 *         UINT (decimal), SIZE (bytes; K, M, G, T suffixes are powers of
 *         1024), MEMSIZE (a SIZE or "auto": BC_MEM_AUTO), MS (duration; ms, s, m, h suffixes; bare number = seconds),
 *         LEVEL (error|warn|info|debug), LIST (repeatable; each use adds)
 * default as text, parsed like user input ("" for none)
 *
 * Precedence, low to high: defaults, config file, environment, flags.
 * This table expands into the struct, the defaults, the parsers and
 * --help (config.c); nothing else lists options.
 */
BC_OPT(config_file,   "config",        STR,   "",
    "read options from FILE ('name value' lines, # comments); installs put it at /etc/bucketcache/bucketcache.conf")
BC_OPT(listen,        "listen",        STR,   "127.0.0.1:8080",
    "address:port to serve S3 on")
BC_OPT(upstream,      "upstream",      STR,   "file://./buckets",
    "the real bucket store: http(s)://host[:port] or file:///DIR")
BC_OPT(region,        "region",        STR,   "us-east-1",
    "region used to sign upstream requests and to verify clients")
BC_OPT(domain,        "domain",        STR,   "",
    "enables virtual-hosted addressing: Host BUCKET.DOMAIN")
BC_OPT(upstream_addressing, "upstream-addressing", STR, "path",
    "how buckets are addressed upstream: path or virtual")
BC_OPT(credentials,   "credentials",   STR,   "auto",
    "where upstream credentials come from: auto (the chain: env, web-identity, profile, ecs, imds), env, web-identity, profile, ecs, imds or none (upstream requests go unsigned)")
BC_OPT(profile,       "profile",       STR,   "",
    "~/.aws/credentials profile for upstream credentials (default: AWS_PROFILE or 'default')")
BC_OPT(client_keys,   "client-key",    LIST,  "",
    "ACCESS:SECRET[:BUCKET[/PREFIX],...] a client key allowed to sign requests (repeatable; default: the upstream key pair, all buckets)")
BC_OPT(anonymous,     "anonymous",     BOOL,  "no",
    "unsigned requests use the upstream key (without it they go upstream unsigned and the upstream decides)")
BC_OPT(admin_token,   "admin-token",   STR,   "",
    "token for admin calls (and stats) from clients that are not local")
BC_OPT(public_stats,  "public-stats",  BOOL,  "no",
    "serve /_bucketcache/stats and /metrics to any client (default: local clients or the admin token)")
BC_OPT(threads,       "threads",       UINT,  "0",
    "HTTP worker threads (0: one per CPU)")
BC_OPT(max_connections, "max-connections", UINT, "4096",
    "client connections served at once")
BC_OPT(header_timeout, "header-timeout", MS,  "10s",
    "a client must send a request's line and headers within this")
BC_OPT(body_timeout,  "body-timeout",  MS,    "30s",
    "an upload must send at least 64 KiB (or finish) in every period this long")
BC_OPT(client_timeout, "client-timeout", MS,  "30s",
    "a client that sends or reads nothing for this long is dropped (also the keep-alive idle limit)")
BC_OPT(drain_timeout, "drain-timeout", MS,   "25s",
    "on SIGTERM or SIGINT: stop accepting, answer /_bucketcache/ready 503 and let responses in flight finish for at most this long, then exit 0 (0: stop at once; a second signal exits at once)")
BC_OPT(connect_timeout, "connect-timeout", MS,  "5s",
    "upstream connect timeout")
BC_OPT(upstream_ttfb_timeout, "upstream-ttfb-timeout", MS, "10s",
    "an upstream attempt whose answer has not begun this long after its request was sent fails (and may be retried)")
BC_OPT(upstream_deadline, "upstream-deadline", MS, "30s",
    "an upstream request, retries included, must have begun its answer within this")
BC_OPT(upstream_timeout, "upstream-timeout", MS, "60s",
    "an upstream transfer that moves no byte for this long fails")
BC_OPT(retries,       "retries",       UINT,  "3",
    "retries of idempotent upstream requests on 500, 503, timeouts")
BC_OPT(log_level,     "log-level",     LEVEL, "info",
    "error, warn, info or debug")
BC_OPT(access_log,    "access-log",    STR,   "off",
    "an access log line per request: off, or json (one JSON object a line: time, remote, method, op, bucket, key, status, bytes, bytes_in, duration, cache, job, request_id)")
BC_OPT(access_log_file, "access-log-file", STR, "",
    "where --access-log writes: a file, appended to (empty: stderr)")
BC_OPT(cache,         "cache",         BOOL,  "yes",
    "cache object reads (GET/HEAD) from the upstream (S3 or file://); no: forward everything")
BC_OPT(chunk_size,    "chunk-size",    SIZE,  "8M",
    "cache unit: objects are fetched and kept in chunks of this size")
BC_OPT(mem_size,      "mem-size",      MEMSIZE, "1G",
    "memory tier bound: bytes actually held by cached chunks and metadata; auto: sized from the jobs' consumption rates, the origin's bandwidth and the datasets' sizes, within mem-min and mem-max")
BC_OPT(mem_min,       "mem-min",       SIZE,  "64M",
    "with --mem-size auto: the least memory bound")
BC_OPT(mem_max,       "mem-max",       SIZE,  "0",
    "with --mem-size auto: the largest memory bound (0: the cgroup's memory.max less a third, at least 256M less; without a cgroup limit a quarter of RAM)")
BC_OPT(idle_release,  "idle-release",  MS,    "5m",
    "with --mem-size auto: a dataset no job read for this long is released (its memory goes back)")
BC_OPT(scale_interval, "scale-interval", MS,  "1s",
    "how often the rates are folded and the auto memory bound recomputed")
BC_OPT(dataset_depth, "dataset-depth", UINT,  "1",
    "key parts that name a dataset: bucket/first/ at 1, bucket/ at 0 (sizes and shares are per dataset)")
BC_OPT(policy,        "policy",        STR,   "auto",
    "the memory tier's eviction policy: lru, pin, cost, planned or auto")
BC_OPT(disk_dir,      "disk-dir",      STR,   "",
    "a directory for the disk tier: chunks and object metadata kept across restarts (needs --disk-size; default: no disk tier)")
BC_OPT(disk_size,     "disk-size",     SIZE,  "0",
    "disk tier bound: bytes of its files on disk, in 4 KiB blocks (needs --disk-dir)")
BC_OPT(redis,         "redis",         LIST,  "",
    "redis://[[user]:pass@]host[:port][/db] of the Redis tier, shared by gateways on several nodes (repeatable: seeds of one Redis Cluster; needs --redis-size; default: no Redis tier)")
BC_OPT(redis_size,    "redis-size",    SIZE,  "0",
    "bytes this gateway may write to Redis, as it accounts them (needs --redis; 0: 15/16 of the server's maxmemory, asked with CONFIG GET at connect; a server that refuses CONFIG or has no maxmemory then gets nothing written)")
BC_OPT(redis_ttl,     "redis-ttl",     MS,    "24h",
    "how long Redis keeps what a gateway wrote (each value's TTL)")
BC_OPT(redis_timeout, "redis-timeout", MS,    "2s",
    "a Redis command not answered within this fails (the tier is then marked down; requests go on from the origin)")
BC_OPT(redis_connect_timeout, "redis-connect-timeout", MS, "1s",
    "Redis connect timeout")
BC_OPT(readahead,     "readahead",     UINT,  "2",
    "chunks fetched ahead of a client reading an object sequentially, at first (0: none); the window doubles while the client waits, up to readahead-max")
BC_OPT(readahead_max, "readahead-max", UINT,  "16",
    "the most chunks a sequential reader's window keeps in flight ahead of it (bounded by prefetch-memory too)")
BC_OPT(prefetch_memory, "prefetch-memory", SIZE, "0",
    "bytes prefetched but not yet read that the prefetcher may hold (0: a quarter of mem-size)")
BC_OPT(prefetch_concurrency, "prefetch-concurrency", UINT, "32",
    "prefetch fills running at once, at most (0: no prefetching from hints and plans)")
BC_OPT(meta_ttl,      "meta-ttl",      MS,    "60s",
    "how long cached object metadata is trusted before it is revalidated")
BC_OPT(meta_stale,    "meta-stale",    MS,    "1h",
    "after meta-ttl, how long metadata is still served while it is revalidated in the background (0: wait)")
BC_OPT(immutable,     "immutable",     LIST,  "",
    "BUCKET or BUCKET/PREFIX whose objects never change in place (repeatable): their cached metadata is trusted until evicted or invalidated (no revalidation after meta-ttl) and their listings are cached (list cache) until invalidated")
BC_OPT(list_ttl,      "list-ttl",      MS,    "0",
    "how long ListObjects(V2) answers are cached (0: not cached, except under --immutable prefixes); writes through the gateway and the admin invalidation drop them")
BC_OPT(list_cache_size, "list-cache-size", SIZE, "32M",
    "the list cache's bound: bytes of cached listings, least recently used dropped first")
BC_OPT(warm_concurrency, "warm-concurrency", UINT, "8",
    "chunk fills each warm-up (POST /_bucketcache/v1/warm) keeps running at once")
