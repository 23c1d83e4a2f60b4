-- random.lua — wrk script for tests/bench/bench_peers.sh (memory soak).
--
-- Every request is a plain GET of a path drawn uniformly at random from the
-- file named by BENCH_PATHS_FILE (one path per line, e.g.
-- /bench/soak/4M/k-00012). Each wrk thread reads the file once in init() and
-- seeds its own generator (time, thread number), so threads draw different
-- sequences. No response() callback: defining one makes wrk hand every body
-- to Lua, which would slow the client, not the server.
--
-- done() prints the same machine-readable line as rotate.lua:
--   BENCHRESULT requests=N bytes=N duration_us=N p50_us=N p99_us=N
--     mean_us=N max_us=N err_connect=N err_read=N err_write=N err_status=N
--     err_timeout=N

local paths_file = os.getenv("BENCH_PATHS_FILE")
local paths = {}
local npaths = 0
local thread_no = 0

function setup(thread)
	thread:set("thread_no", thread_no)
	thread_no = thread_no + 1
end

function init(args)
	local f = assert(io.open(paths_file or "", "r"),
	    "BENCH_PATHS_FILE is not a readable file")
	for line in f:lines() do
		if line ~= "" then
			npaths = npaths + 1
			paths[npaths] = line
		end
	end
	f:close()
	assert(npaths > 0, "BENCH_PATHS_FILE has no paths")
	math.randomseed(os.time() * 1000 + (tonumber(thread_no) or 0) * 7919)
end

function request()
	return wrk.format("GET", paths[math.random(npaths)])
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
