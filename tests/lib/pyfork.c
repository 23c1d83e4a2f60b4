/*
 * pyfork — runs `python3 ARGS...` in a fork of the tests' Python server
 * (tests/lib/pyfork.py, which states the contract and the wire format),
 * or, when there is none, execs python3 itself.
 *
 *   pyfork - ARGS...        the program on stdin
 *   pyfork -c CODE ARGS...
 *   pyfork SCRIPT ARGS...   (e.g. /usr/bin/aws: aws-cli v2's own script)
 *
 * Env: BC_PYFORK_SOCK, the server's socket (unset, missing or refusing:
 * exec python3); BC_PYFORK_PYTHON, the interpreter (/usr/bin/python3).
 * Any other interpreter option goes to python3 itself.
 *
 * Exit status: the run's. TERM, INT, HUP and QUIT are forwarded to the
 * run; a run that dies without an answer (a signal) ends this with
 * 128 + the signal forwarded, or 1.
 */
#define _GNU_SOURCE   /* sigaction, kill, SCM_RIGHTS under -std=c11 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

static volatile sig_atomic_t run_pid;
static volatile sig_atomic_t forwarded;

static void forward(int sig)
{
	forwarded = sig;
	if (run_pid > 0)
		kill((pid_t)run_pid, sig);
}

static _Noreturn void exec_python(int argc, char **argv)
{
	const char *py = getenv("BC_PYFORK_PYTHON");
	char **args = calloc((size_t)argc + 1, sizeof(*args));

	if (py == NULL || *py == '\0')
		py = "/usr/bin/python3";
	if (args == NULL) {
		perror("pyfork");
		exit(1);
	}
	args[0] = (char *)py;
	for (int i = 1; i < argc; i++)
		args[i] = argv[i];
	execv(py, args);
	fprintf(stderr, "pyfork: cannot run %s: %s\n", py, strerror(errno));
	exit(127);
}

/* The server runs `-`, `-c CODE` and a script path; anything else is an
 * interpreter option for python3. */
static int server_runs(int argc, char **argv)
{
	if (argc < 2)
		return 0;
	if (strcmp(argv[1], "-") == 0)
		return 1;
	if (strcmp(argv[1], "-c") == 0)
		return argc >= 3;
	return argv[1][0] != '-';
}

static int connect_server(void)
{
	const char *path = getenv("BC_PYFORK_SOCK");
	struct sockaddr_un sa;
	int fd;

	if (path == NULL || *path == '\0' || strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* buf grows to hold s and its NUL */
static int put(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s) + 1;

	if (*len + n > *cap) {
		size_t c = (*cap ? *cap * 2 : 4096);
		char *nb;

		while (c < *len + n)
			c *= 2;
		nb = realloc(*buf, c);
		if (nb == NULL)
			return -1;
		*buf = nb;
		*cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	return 0;
}

static int send_request(int fd, int argc, char **argv)
{
	char *buf = NULL, num[32], cwd[4096];
	size_t len = 0, cap = 0;
	int rc = -1;

	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return -1;
	snprintf(num, sizeof(num), "%d", argc - 1);
	if (put(&buf, &len, &cap, cwd) || put(&buf, &len, &cap, num))
		goto out;
	for (int i = 1; i < argc; i++)
		if (put(&buf, &len, &cap, argv[i]))
			goto out;
	for (char **e = environ; *e; e++)
		if (put(&buf, &len, &cap, *e))
			goto out;

	/* the length, with fds 0, 1 and 2 */
	{
		uint8_t hdr[4] = { (uint8_t)len, (uint8_t)(len >> 8),
			(uint8_t)(len >> 16), (uint8_t)(len >> 24) };
		int fds[3] = { 0, 1, 2 };
		union {
			char b[CMSG_SPACE(sizeof(fds))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { hdr, sizeof(hdr) };
		struct msghdr m;
		struct cmsghdr *c;

		memset(&m, 0, sizeof(m));
		memset(&ctl, 0, sizeof(ctl));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = ctl.b;
		m.msg_controllen = sizeof(ctl.b);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(fds));
		memcpy(CMSG_DATA(c), fds, sizeof(fds));
		if (sendmsg(fd, &m, MSG_NOSIGNAL) != (ssize_t)sizeof(hdr))
			goto out;
	}
	for (size_t off = 0; off < len;) {
		ssize_t w = send(fd, buf + off, len - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto out;
		off += (size_t)w;
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

/* 4 bytes, little-endian; -1 at EOF or error */
static int64_t read_u32(int fd)
{
	uint8_t b[4];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t r = read(fd, b + got, sizeof(b) - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return (int64_t)b[0] | (int64_t)b[1] << 8 | (int64_t)b[2] << 16 |
	    (int64_t)b[3] << 24;
}

int main(int argc, char **argv)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };
	struct sigaction sa;
	int64_t pid = 0, status;
	int fd;

	if (!server_runs(argc, argv) || (fd = connect_server()) < 0)
		exec_python(argc, argv);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	if (send_request(fd, argc, argv) != 0 || (pid = read_u32(fd)) <= 0) {
		/* the run never started (nothing of stdin was read): python3 */
		close(fd);
		exec_python(argc, argv);
	}
	run_pid = (sig_atomic_t)pid;
	if (forwarded)
		kill((pid_t)pid, forwarded);
	status = read_u32(fd);
	if (status < 0)
		return forwarded ? 128 + forwarded : 1;
	return (int)status;
}
