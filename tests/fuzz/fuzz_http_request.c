/*
 * fuzz_http_request.c — the request line, headers and body as the gateway
 * parses them: the real server (http/http_server.h), started once in this
 * process the way src/main.c composes the daemon (loop, file origin, the
 * memory cache in front, server: fuzz_server.h), with
 *
 *   --upstream file://ROOT --anonymous --client-key AK:SK
 *   --listen 127.0.0.1:PORT --threads 1 --log-level error
 *
 * where ROOT is a fresh directory holding the bucket "bkt" with the
 * objects "a.txt" and "dir/b.bin", and PORT a free port. Each input is
 * written raw to a new TCP connection, which is then shut for writing and
 * read until the server closes it or sends nothing for FUZZ_READ_IDLE_MS.
 * An input that can change the bucket (it holds "PUT", "POST" or
 * "DELETE") is followed by a reset of ROOT to those two objects and of
 * the cache, so every input meets the same state.
 *
 * MHD 0.9.75 (epoll, edge-triggered) can miss an end of input that
 * arrives together with a request's last bytes, and then keeps the
 * connection until a deadline: so the shutdown waits up to FIRST_BYTE_MS
 * for the answer to begin, and arrives on its own.
 *
 * What is checked is what the sanitizers see, the server's threads
 * included. Nothing here depends on how the server parses: it only
 * drives it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memmem */
#endif
#include "fuzz.h"
#include "fuzz_server.h"

#define INPUT_MAX     16384
#define FIRST_BYTE_MS 10

static const char *const args[] = { "--anonymous", "--client-key", "AK:SK",
    "--threads", "1", "--log-level", "error", NULL };

static const fuzz_file_t files[] = {
	{ "bkt/a.txt", "hello, world\n", 13 },
	{ "bkt/dir/b.bin", NULL, 1000 },
};

static const fuzz_server_opts_t server = {
	.name = "fuzz_http_request",
	.args = args,
	.files = files,
	.nfiles = sizeof(files) / sizeof(*files),
	.bucket = "bkt",
	.jobs = false,
};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_server_start(&server);
	return 0;
}

static bool
writes(const uint8_t *data, size_t size)
{
	return memmem(data, size, "PUT", 3) != NULL ||
	    memmem(data, size, "POST", 4) != NULL ||
	    memmem(data, size, "DELETE", 6) != NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_MAX)
		return 0;
	fuzz_server_start(&server);
	(void)fuzz_server_exchange(data, size, FIRST_BYTE_MS, NULL, 0);
	if (writes(data, size))
		fuzz_server_reset();
	return 0;
}
