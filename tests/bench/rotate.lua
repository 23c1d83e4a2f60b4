-- rotate.lua — wrk script for tests/bench/bench_hot_get.sh and
-- tests/bench/bench_peers.sh.
--
-- Every request is a plain GET of one of a list of paths, visited in
-- rotation. The list is either
--   - the lines of the file named by BENCH_PATHS_FILE, when it is set and not
--     empty: one request target per line, "/bucket/key?query" (e.g. a
--     presigned URL's path and query string), or a whole URL
--     "http://host:port/bucket/key?query", whose scheme and authority are
--     dropped: wrk sends the Host of the URL it was given on its command
--     line, so a presigned URL must have been made for that same endpoint;
--     empty lines are skipped;
--   - or BENCH_NKEYS names BENCH_PREFIX..NNN (NNN: zero-padded to
--     BENCH_KEYDIGITS digits).
-- Each wrk thread starts at a different offset so that concurrent threads
-- do not march over the same keys in lock step. No response() callback:
-- defining one makes wrk hand each 128 KiB body to Lua, which would slow
-- the client, not the server. Errors are read from wrk's own counters.
--
-- done() prints one machine-readable line that the shell script parses:
--   BENCHRESULT requests=N bytes=N duration_us=N p50_us=N p99_us=N
--     mean_us=N max_us=N err_connect=N err_read=N err_write=N err_status=N
--     err_timeout=N
-- (latencies in microseconds, from wrk's per-request histogram; err_status
-- counts responses outside 2xx/3xx).

local paths_file = os.getenv("BENCH_PATHS_FILE")
local nkeys = tonumber(os.getenv("BENCH_NKEYS") or "256")
local prefix = os.getenv("BENCH_PREFIX") or "/bench/obj-"
local digits = tonumber(os.getenv("BENCH_KEYDIGITS") or "3")
local headers = {}
local extra = os.getenv("BENCH_HEADER")   -- optional "Name: value"

if extra ~= nil and extra ~= "" then
	local name, value = extra:match("^([^:]+):%s*(.*)$")
	if name ~= nil then
		headers[name] = value
	end
end

-- paths[0 .. nkeys-1]; this chunk runs once in wrk's main state and once
-- in each thread's, so every thread has its own copy.
local paths = {}
if paths_file ~= nil and paths_file ~= "" then
	local f = assert(io.open(paths_file, "r"),
	    "BENCH_PATHS_FILE is not a readable file: " .. paths_file)
	nkeys = 0
	for line in f:lines() do
		line = line:gsub("\r$", "")
		if line ~= "" then
			local target = line:gsub("^[%a][%w+.-]*://[^/]*", "")
			assert(target:sub(1, 1) == "/",
			    "BENCH_PATHS_FILE: not a path or URL: " .. line)
			paths[nkeys] = target
			nkeys = nkeys + 1
		end
	end
	f:close()
	assert(nkeys > 0, "BENCH_PATHS_FILE has no paths: " .. paths_file)
else
	for i = 0, nkeys - 1 do
		paths[i] = string.format("%s%0" .. digits .. "d", prefix, i)
	end
end

local thread_no = 0

function setup(thread)
	thread:set("offset", thread_no * 7919)
	thread_no = thread_no + 1
end

local n = 0

function init(args)
	n = tonumber(offset or 0) or 0
end

function request()
	local p = paths[n % nkeys]
	n = n + 1
	return wrk.format("GET", p, headers)
end

function done(summary, latency, requests)
	local e = summary.errors
	io.write(string.format(
	    "BENCHRESULT requests=%d bytes=%d duration_us=%d p50_us=%d " ..
	    "p99_us=%d mean_us=%d max_us=%d err_connect=%d err_read=%d " ..
	    "err_write=%d err_status=%d err_timeout=%d\n",
	    summary.requests, summary.bytes, summary.duration,
	    latency:percentile(50), latency:percentile(99), latency.mean,
	    latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
