#!/usr/bin/python3
"""
delay_proxy.py -- an HTTP/1.1 reverse proxy to one upstream that waits a
fixed delay before forwarding each request (bench_training.sh's "upstream
20 ms away"), optionally waits again before sending each answer back, and
optionally caps bandwidth per connection and over all connections: the
"S3-shaped" origin of bench_sidecar.sh (--s3), bench_scale.sh's and
test_scale.sh's origin of B bytes/s (--rate).

Latency. Once a request's head has been read the proxy sleeps --delay-ms,
then forwards it to --upstream; once the upstream's answer head is in, it
sleeps --response-delay-ms (default 0) before sending that head on, then
streams the body back as it comes (no buffering of bodies). --delay-ms
alone models a far endpoint's first-byte latency as one wait; the two
together model a link's latency each way (a request reaches the bucket
--delay-ms after it was sent, its first byte comes back
--response-delay-ms later).

Bandwidth.
  --conn-rate R   each client connection at most R bytes/s, each direction:
                  the kernel paces what the proxy sends on the connection
                  (SO_MAX_PACING_RATE on its socket: TCP's own pacing, in
                  packets of up to 64 KiB on loopback, so the first 64 KiB
                  of an answer after an idle moment leave at once; 256 MiB
                  through --conn-rate 32M takes 8.0 s), and the request
                  bodies it forwards on the connection's own upstream
                  connection the same way. Where the kernel refuses the
                  option, a token bucket per connection and direction
                  (burst --conn-burst, 8K) does it (stats:
                  conn_rate_mode). S3 serves one connection at some tens of
                  MB/s and more connections in proportion; a client that
                  wants more bandwidth opens more connections (ranged GETs
                  in parallel), as the AWS CRT and mountpoint-s3 do.
  --rate R        response bodies over all connections together at most R
                  bytes/s: one token bucket, filled at R and holding at most
                  --burst bytes (8K), that every piece of a response body (at
                  most 64 KiB) takes from before it is written. A piece that
                  finds too few tokens takes them anyway (the bucket goes
                  into debt) and is written once the debt is paid back, so
                  waiting pieces go out about in the order they came and
                  the bytes sent in any span of T seconds are at most --burst
                  + R * T (two concurrent 48 MiB downloads through --rate 2M,
                  6M, 32M: 2.00, 6.00, 31.9 MiB/s in total). The burst is
                  small because a link has none: with 64 KiB, every 256 KiB
                  answer after an idle moment would arrive a third faster
                  than the rate, and a gateway measuring the origin's
                  bandwidth from its fills would see that. With --conn-rate,
                  the optional aggregate cap: n busy connections get
                  min(n * conn-rate, rate) together.
  --s3            the S3-shaped origin: --delay-ms 20 --response-delay-ms
                  20 --conn-rate 32M unless those are given (about 40 ms to
                  the first byte, 32 MiB/s per connection, the aggregate
                  growing with connections; no --rate unless given).
R is a number with an optional K, M or G suffix (KiB, MiB, GiB); 0, the
default, is unlimited. Response heads and the control endpoint are never
throttled by --rate, so the time to a response's head is the delays (plus
the upstream's own).

Unthrottled, the proxy is cheap: bodies with a length move socket to pipe to
socket (os.splice; no copy through Python), so 256 MiB cost it about 0.1 CPU
s where copying them through asyncio streams cost 1.6 s; on a 2-core machine
that is the difference between an origin that can feed 200+ MiB/s and one
that caps every system under test at its own speed.

  * one thread per client connection (blocking sockets; splice, sleeps and
    socket calls release the GIL): many concurrent connections;
  * keep-alive on both sides: each client connection gets its own upstream
    connection, opened when first needed and reused for the connection's
    next requests; an upstream connection that is closed under us before it
    answered anything is reopened once (GET/HEAD only);
  * bodies in both directions are streamed: Content-Length (spliced),
    chunked (passed through as is), or until EOF (then the client
    connection is closed after the answer);
  * bounded parsing: a request or response head over 64 KiB or with more
    than 200 header lines ends the connection (431 / 502);
  * hop-by-hop headers (Connection, Keep-Alive, Proxy-Connection) are not
    forwarded; everything else, Host and Authorization included, is.

Counters (the ground truth of what crossed the "WAN", per system and epoch,
from snapshots): requests, by method and status class, response body bytes
and response head bytes sent to clients, request bytes, upstream
connections opened, reconnects, errors; connections open now and at most;
the settings (delay_ms, response_delay_ms, rate_bytes_per_second and
conn_rate_bytes_per_second: 0 unlimited, burst_bytes, conn_burst_bytes,
conn_rate_mode: "pacing", "bucket" or "none"), throttle_wait_seconds (the
sum over response body pieces of the time each waited for the aggregate
bucket's tokens) and conn_throttle_wait_seconds (the same for the
per-connection buckets, when the kernel does not pace); body_busy_seconds,
the time at least one response body was being sent (what a cache measures
its origin's bandwidth over: resp_body_bytes / body_busy_seconds is the
bandwidth delivered, which a loaded machine can hold below --rate).
Control endpoint, never forwarded, never delayed, not counted:

  GET /_delayproxy/stats     JSON counters

Usage: delay_proxy.py --upstream http://127.0.0.1:PORT [--listen 127.0.0.1]
       [--port 0] [--port-file FILE] [--s3] [--delay-ms 20]
       [--response-delay-ms 0] [--conn-rate 0] [--conn-burst 8K]
       [--rate 0] [--burst 8K]
With --port 0 (the default) it binds a free port and writes it to
--port-file (written once listening). SIGTERM/SIGINT end it.
"""
import argparse
import fcntl
import json
import os
import re
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse

MAX_HEAD = 64 * 1024
MAX_HEADERS = 200
IO_CHUNK = 64 * 1024        # a body piece under a token bucket
SPLICE_MAX = 1 << 20        # a body piece otherwise
HOP = {b'connection', b'keep-alive', b'proxy-connection'}
SO_MAX_PACING_RATE = getattr(socket, 'SO_MAX_PACING_RATE', 47)
F_SETPIPE_SZ = 1031


class Stats:
    """Counters shared by every connection's thread (one lock)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.by_method = {}
        self.by_status = {}
        self.resp_body_bytes = 0
        self.resp_head_bytes = 0
        self.req_bytes = 0
        self.upstream_connects = 0
        self.reconnects = 0
        self.errors = 0
        self.conns_open = 0
        self.conns_max = 0
        self.conns_total = 0
        self.started = time.time()
        self.delay_ms = 0.0
        self.response_delay_ms = 0.0
        self.rate = 0
        self.burst = 0
        self.conn_rate = 0
        self.conn_burst = 0
        self.conn_rate_mode = 'none'
        self.throttle_wait = 0.0
        self.conn_throttle_wait = 0.0
        self.bodies = 0           # response bodies being sent now
        self.busy_since = 0.0     # when bodies last went from 0 to 1
        self.body_busy = 0.0      # seconds with bodies > 0, until busy_since

    def add(self, name, n):
        with self.lock:
            setattr(self, name, getattr(self, name) + n)

    def inc_key(self, name, key):
        with self.lock:
            d = getattr(self, name)
            d[key] = d.get(key, 0) + 1

    def body_begin(self):
        with self.lock:
            if self.bodies == 0:
                self.busy_since = time.monotonic()
            self.bodies += 1

    def body_end(self):
        with self.lock:
            self.bodies -= 1
            if self.bodies == 0:
                self.body_busy += time.monotonic() - self.busy_since

    def conn_open(self):
        with self.lock:
            self.conns_open += 1
            self.conns_total += 1
            self.conns_max = max(self.conns_max, self.conns_open)

    def snapshot(self):
        with self.lock:
            return {
                'time': time.time(),
                'uptime_seconds': time.time() - self.started,
                'requests': self.requests,
                'by_method': dict(self.by_method),
                'by_status': dict(self.by_status),
                'resp_body_bytes': self.resp_body_bytes,
                'resp_head_bytes': self.resp_head_bytes,
                'req_bytes': self.req_bytes,
                'upstream_connects': self.upstream_connects,
                'reconnects': self.reconnects,
                'errors': self.errors,
                'conns_open': self.conns_open,
                'conns_max': self.conns_max,
                'conns_total': self.conns_total,
                'delay_ms': self.delay_ms,
                'response_delay_ms': self.response_delay_ms,
                'rate_bytes_per_second': self.rate,
                'burst_bytes': self.burst,
                'conn_rate_bytes_per_second': self.conn_rate,
                'conn_burst_bytes': self.conn_burst,
                'conn_rate_mode': self.conn_rate_mode,
                'throttle_wait_seconds': round(self.throttle_wait, 6),
                'conn_throttle_wait_seconds': round(self.conn_throttle_wait, 6),
                'body_busy_seconds': round(self.body_busy + (
                    time.monotonic() - self.busy_since if self.bodies else 0.0), 6),
            }


class TokenBucket:
    """A bucket of `rate` tokens (bytes) a second holding at most `burst`:
    the aggregate one shared by every connection, or one connection's when
    the kernel does not pace. take(n) returns at once while the bucket
    holds n tokens, else after the debt it leaves is paid back at `rate`
    (it sleeps outside the lock); the wait is added to stats.<wait_attr>."""

    def __init__(self, rate, burst, stats, wait_attr='throttle_wait'):
        self.rate = float(rate)
        self.burst = float(burst)
        self.tokens = float(burst)
        self.last = time.monotonic()
        self.stats = stats
        self.wait_attr = wait_attr
        self.lock = threading.Lock()

    def take(self, n):
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst,
                              self.tokens + (now - self.last) * self.rate)
            self.last = now
            self.tokens -= n
            wait = -self.tokens / self.rate if self.tokens < 0 else 0.0
        if wait > 0:
            self.stats.add(self.wait_attr, wait)
            time.sleep(wait)


def chain(*gates):
    """One gate that calls each of GATES (None ones left out) in turn, or
    None when there are none."""
    gs = [g for g in gates if g is not None]
    if not gs:
        return None
    if len(gs) == 1:
        return gs[0]

    def gate(n):
        for g in gs:
            g(n)
    return gate


def set_pacing(sock, rate):
    """Caps what the kernel sends on SOCK at RATE bytes/s; False when the
    kernel refuses."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE,
                        struct.pack('=I', min(int(rate), 0xffffffff)))
        return True
    except OSError:
        return False


class HeadError(Exception):
    """A head that is too big, malformed, or cut off."""


class Conn:
    """A blocking socket with a read buffer: heads and chunk lines are
    parsed from the buffer; counted bodies drain it first, then are spliced
    from the socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()

    def fill(self):
        d = self.sock.recv(IO_CHUNK)
        if not d:
            return False
        self.buf += d
        return True

    def read_until(self, sep, limit, what):
        """Bytes up to and including SEP; None on a clean EOF before any
        byte; HeadError when over LIMIT or cut off."""
        start = 0
        while True:
            i = self.buf.find(sep, start)
            if i >= 0:
                out = bytes(self.buf[:i + len(sep)])
                del self.buf[:i + len(sep)]
                return out
            if len(self.buf) > limit:
                raise HeadError('%s too large' % what)
            start = max(0, len(self.buf) - len(sep) + 1)
            if not self.fill():
                if not self.buf:
                    return None
                raise HeadError('cut off %s' % what)

    def read_exactly(self, n):
        while len(self.buf) < n:
            if not self.fill():
                raise ConnectionError('cut off')
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def take_buffered(self, n):
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def read_head(conn):
    """Reads one HTTP head; returns (first_line, [(name, value)], raw_len),
    or None on a clean EOF before any byte."""
    raw = conn.read_until(b'\r\n\r\n', MAX_HEAD, 'head')
    if raw is None:
        return None
    lines = raw[:-4].split(b'\r\n')
    if len(lines) - 1 > MAX_HEADERS:
        raise HeadError('too many header lines')
    hdrs = []
    for ln in lines[1:]:
        name, sep, value = ln.partition(b':')
        if not sep or not name or name != name.strip():
            raise HeadError('bad header line')
        hdrs.append((name, value.strip()))
    return lines[0], hdrs, len(raw)


def header(hdrs, name):
    """The last value of header NAME (lowercase bytes), or None."""
    v = None
    for n, val in hdrs:
        if n.lower() == name:
            v = val
    return v


def tokens(hdrs, name):
    out = set()
    for n, val in hdrs:
        if n.lower() == name:
            out.update(t.strip().lower() for t in val.split(b','))
    return out


def body_kind(hdrs):
    """('chunked', None), ('length', N) or ('none', 0) for a request;
    raises HeadError on a bad length."""
    if b'chunked' in tokens(hdrs, b'transfer-encoding'):
        return 'chunked', None
    cl = header(hdrs, b'content-length')
    if cl is not None:
        if not cl.isdigit() or len(cl) > 18:
            raise HeadError('bad content-length')
        return 'length', int(cl)
    return 'none', 0


class Pipe:
    """A connection thread's splice pipe (1 MiB when the kernel allows)."""

    def __init__(self):
        self.r, self.w = os.pipe()
        try:
            fcntl.fcntl(self.w, F_SETPIPE_SZ, SPLICE_MAX)
        except OSError:
            pass

    def close(self):
        os.close(self.r)
        os.close(self.w)


def send_all(sock, data, gate):
    """Sends DATA, IO_CHUNK at a time through GATE when there is one."""
    if gate is None:
        sock.sendall(data)
        return
    for i in range(0, len(data), IO_CHUNK):
        part = data[i:i + IO_CHUNK]
        gate(len(part))
        sock.sendall(part)


# The copy functions call count(nbytes) for every piece of body they pass
# on and, when given a gate (the connection's bucket and the aggregate one,
# chained), call gate(nbytes) before writing each piece.

def copy_length(src, dst, n, count, pipe, gate=None):
    """Copies exactly n bytes from Conn SRC to socket DST: what SRC has
    buffered, then spliced through PIPE; raises on EOF."""
    if src.buf and n > 0:
        data = src.take_buffered(n)
        send_all(dst, data, gate)
        count(len(data))
        n -= len(data)
    step = IO_CHUNK if gate is not None else SPLICE_MAX
    sfd, dfd = src.sock.fileno(), dst.fileno()
    while n > 0:
        got = os.splice(sfd, pipe.w, min(n, step))
        if got == 0:
            raise ConnectionError('body cut off')
        if gate is not None:
            gate(got)
        moved = 0
        while moved < got:
            moved += os.splice(pipe.r, dfd, got - moved)
        count(got)
        n -= got


def copy_chunked(src, dst, count, pipe, gate=None):
    """Passes a chunked body through as is, counting the payload bytes."""
    while True:
        line = src.read_until(b'\r\n', 1024, 'chunk line')
        if line is None:
            raise ConnectionError('body cut off')
        size_s = line.split(b';', 1)[0].strip()
        try:
            size = int(size_s, 16)
        except ValueError:
            raise HeadError('bad chunk size')
        if size < 0:
            raise HeadError('bad chunk size')
        dst.sendall(line)
        if size == 0:
            # trailers, then the empty line
            n = 0
            while True:
                t = src.read_until(b'\r\n', MAX_HEAD, 'trailer')
                if t is None:
                    raise ConnectionError('body cut off')
                dst.sendall(t)
                n += 1
                if t == b'\r\n':
                    break
                if n > MAX_HEADERS:
                    raise HeadError('too many trailers')
            return
        copy_length(src, dst, size, count, pipe, gate)
        crlf = src.read_exactly(2)
        if crlf != b'\r\n':
            raise HeadError('bad chunk end')
        dst.sendall(crlf)


def copy_eof(src, dst, count, pipe, gate=None):
    if src.buf:
        data = src.take_buffered(len(src.buf))
        send_all(dst, data, gate)
        count(len(data))
    step = IO_CHUNK if gate is not None else SPLICE_MAX
    sfd, dfd = src.sock.fileno(), dst.fileno()
    while True:
        got = os.splice(sfd, pipe.w, step)
        if got == 0:
            return
        if gate is not None:
            gate(got)
        moved = 0
        while moved < got:
            moved += os.splice(pipe.r, dfd, got - moved)
        count(got)


class Proxy:
    def __init__(self, up_host, up_port, delay, stats, bucket=None,
                 resp_delay=0.0, conn_rate=0, conn_burst=8192):
        self.up_host = up_host
        self.up_port = up_port
        self.delay = delay
        self.resp_delay = resp_delay
        self.stats = stats
        # the aggregate gate of response bodies (None: unthrottled)
        self.gate = bucket.take if bucket is not None else None
        self.conn_rate = conn_rate
        self.conn_burst = conn_burst

    def count_req(self, n):
        self.stats.add('req_bytes', n)

    def count_resp(self, n):
        self.stats.add('resp_body_bytes', n)

    def connect_upstream(self, cs):
        s = socket.create_connection((self.up_host, self.up_port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.conn_rate > 0 and cs['pacing']:
            set_pacing(s, self.conn_rate)
        self.stats.add('upstream_connects', 1)
        return Conn(s)

    def conn_setup(self, csock):
        """A new client connection's state: its gates (requests,
        responses; None where nothing throttles in user space) and whether
        the kernel paces it."""
        cs = {'up': None, 'pipe': None, 'pacing': False}
        req_gate = resp_gate = None
        if self.conn_rate > 0:
            if set_pacing(csock, self.conn_rate):
                cs['pacing'] = True
                self.stats.conn_rate_mode = 'pacing'
            else:
                self.stats.conn_rate_mode = 'bucket'
                req_gate = TokenBucket(self.conn_rate, self.conn_burst, self.stats,
                                       'conn_throttle_wait').take
                resp_gate = TokenBucket(self.conn_rate, self.conn_burst, self.stats,
                                        'conn_throttle_wait').take
        cs['req_gate'] = req_gate
        cs['resp_gate'] = chain(resp_gate, self.gate)
        return cs

    def handle(self, csock):
        st = self.stats
        st.conn_open()
        csock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client = Conn(csock)
        cs = self.conn_setup(csock)
        try:
            cs['pipe'] = Pipe()
            go = True
            while go:
                go = self.one(client, cs)
        except (HeadError, ConnectionError, OSError) as e:
            st.add('errors', 1)
            if st.errors <= 20:
                print('delay_proxy: %s: %s' % (type(e).__name__, e),
                      file=sys.stderr)
        finally:
            st.add('conns_open', -1)
            client.close()
            if cs['up'] is not None:
                cs['up'].close()
            if cs['pipe'] is not None:
                cs['pipe'].close()

    def one(self, client, cs):
        """Serves one request on a client connection whose upstream
        connection is cs['up'] (a Conn or None; replaced here as it is
        opened and closed). Returns False when the client connection is to
        be closed (EOF, or Connection: close), else True."""
        st = self.stats
        csock = client.sock
        try:
            head = read_head(client)
        except HeadError:
            csock.sendall(b'HTTP/1.1 431 Request Header Fields Too Large\r\n'
                          b'Content-Length: 0\r\nConnection: close\r\n\r\n')
            raise
        if head is None:
            return False
        first, hdrs, hlen = head
        parts = first.split(b' ')
        if len(parts) != 3 or not parts[2].startswith(b'HTTP/1.'):
            raise HeadError('bad request line')
        method, target, version = parts
        conn_tok = tokens(hdrs, b'connection')
        client_close = (b'close' in conn_tok or
                        (version == b'HTTP/1.0' and b'keep-alive' not in conn_tok))

        if target.startswith(b'/_delayproxy/'):
            return self.control(csock, target, client_close)

        kind, n = body_kind(hdrs)
        if self.delay > 0:
            time.sleep(self.delay)

        st.add('requests', 1)
        st.inc_key('by_method', method.decode('latin-1'))
        out = [b'%s %s HTTP/1.1' % (method, target)]
        out += [b'%s: %s' % (k, v) for k, v in hdrs if k.lower() not in HOP]
        req_head = b'\r\n'.join(out) + b'\r\n\r\n'
        st.add('req_bytes', len(req_head))

        # send the head, and get the answer's head; a reused upstream
        # connection that was closed under us is reopened once
        retry_ok = cs['up'] is not None and kind == 'none' and method in (b'GET', b'HEAD')
        while True:
            if cs['up'] is None:
                cs['up'] = self.connect_upstream(cs)
            up = cs['up']
            try:
                up.sock.sendall(req_head)
                if kind == 'length':
                    copy_length(client, up.sock, n, self.count_req, cs['pipe'],
                                cs['req_gate'])
                elif kind == 'chunked':
                    copy_chunked(client, up.sock, self.count_req, cs['pipe'],
                                 cs['req_gate'])
                rhead = read_head(up)
                while rhead is not None and rhead[0][9:10] == b'1' and \
                        rhead[0][9:12] != b'101':
                    rhead = read_head(up)     # 1xx interim: skip
                if rhead is None:
                    raise ConnectionError('upstream closed the connection')
                break
            except (ConnectionError, HeadError, OSError) as e:
                up.close()
                cs['up'] = None
                if retry_ok and not isinstance(e, HeadError):
                    retry_ok = False
                    st.add('reconnects', 1)
                    continue
                csock.sendall(b'HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n'
                              b'Connection: close\r\n\r\n')
                st.inc_key('by_status', '5xx')
                raise ConnectionError('upstream: %s' % e)

        rfirst, rhdrs, _ = rhead
        rparts = rfirst.split(b' ', 2)
        if len(rparts) < 2 or not rparts[1].isdigit() or len(rparts[1]) != 3:
            raise HeadError('bad upstream status line')
        status = int(rparts[1])
        st.inc_key('by_status', '%dxx' % (status // 100))
        up_close = b'close' in tokens(rhdrs, b'connection') or \
            rparts[0] == b'HTTP/1.0'
        if method == b'HEAD' or status in (204, 304) or status < 200:
            rkind, rn = 'none', 0
        else:
            rkind, rn = body_kind(rhdrs)
            if rkind == 'none':
                rkind = 'eof'
        close = client_close or rkind == 'eof'
        rout = [rfirst] + [b'%s: %s' % (k, v) for k, v in rhdrs
                           if k.lower() not in HOP]
        if close:
            rout.append(b'Connection: close')
        rhead_bytes = b'\r\n'.join(rout) + b'\r\n\r\n'
        if self.resp_delay > 0:
            time.sleep(self.resp_delay)
        csock.sendall(rhead_bytes)
        st.add('resp_head_bytes', len(rhead_bytes))
        g = cs['resp_gate']
        st.body_begin()
        try:
            if rkind == 'length':
                copy_length(up, csock, rn, self.count_resp, cs['pipe'], g)
            elif rkind == 'chunked':
                copy_chunked(up, csock, self.count_resp, cs['pipe'], g)
            elif rkind == 'eof':
                copy_eof(up, csock, self.count_resp, cs['pipe'], g)
                up_close = True
        finally:
            st.body_end()
        if up_close:
            up.close()
            cs['up'] = None
        return not close

    def control(self, csock, target, client_close):
        path = urllib.parse.urlsplit(target.decode('latin-1')).path
        if path == '/_delayproxy/stats':
            body = json.dumps(self.stats.snapshot(), sort_keys=True).encode() + b'\n'
            status = b'200 OK'
        else:
            body = b'not found\n'
            status = b'404 Not Found'
        csock.sendall(b'HTTP/1.1 %s\r\nContent-Type: application/json\r\n'
                      b'Content-Length: %d\r\n%s\r\n' % (
                          status, len(body),
                          b'Connection: close\r\n' if client_close else b'') + body)
        return not client_close


class Stop(Exception):
    """SIGTERM or SIGINT."""


def run(a):
    u = urllib.parse.urlsplit(a.upstream)
    if u.scheme != 'http' or not u.hostname:
        sys.exit('delay_proxy.py: --upstream must be http://HOST[:PORT]')
    stats = Stats()
    stats.delay_ms = a.delay_ms
    stats.response_delay_ms = a.response_delay_ms
    stats.rate = a.rate
    stats.burst = a.burst if a.rate > 0 else 0
    stats.conn_rate = a.conn_rate
    stats.conn_burst = a.conn_burst if a.conn_rate > 0 else 0
    bucket = TokenBucket(a.rate, a.burst, stats) if a.rate > 0 else None
    proxy = Proxy(u.hostname, u.port or 80, a.delay_ms / 1000.0, stats,
                  bucket, a.response_delay_ms / 1000.0, a.conn_rate,
                  a.conn_burst)

    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((a.listen, a.port))
    srv.listen(1024)
    port = srv.getsockname()[1]
    if a.port_file:
        tmp = a.port_file + '.tmp'
        with open(tmp, 'w') as f:
            f.write('%d\n' % port)
        os.replace(tmp, a.port_file)
    print('delay_proxy: listening on %s:%d, upstream %s, delay %g ms, '
          'response delay %g ms, per connection %s, rate %s' % (
              a.listen, port, a.upstream, a.delay_ms, a.response_delay_ms,
              '%d B/s' % a.conn_rate if a.conn_rate else 'unlimited',
              '%d B/s, burst %d B' % (a.rate, a.burst) if a.rate
              else 'unlimited'), file=sys.stderr)

    def on_signal(signum, frame):
        raise Stop()
    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, on_signal)
    threading.stack_size(512 * 1024)
    try:
        while True:
            try:
                csock, _ = srv.accept()
            except OSError as e:
                print('delay_proxy: accept: %s' % e, file=sys.stderr)
                time.sleep(0.01)
                continue
            threading.Thread(target=proxy.handle, args=(csock,),
                             daemon=True).start()
    except Stop:
        pass
    print('delay_proxy: stopping; %s' % json.dumps(stats.snapshot()),
          file=sys.stderr)
    sys.stderr.flush()
    # connection threads are daemons: they end with the process
    os._exit(0)


def size_arg(s):
    """A byte count: a number with an optional K, M or G (powers of 1024)."""
    m = re.fullmatch(r'\s*([0-9]+(?:\.[0-9]*)?)\s*([KkMmGg]?)\s*', s)
    if not m:
        raise argparse.ArgumentTypeError(
            'not a size (a number with an optional K, M or G): %r' % s)
    mult = {'': 1, 'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def main():
    ap = argparse.ArgumentParser(description='per-request delay proxy (see the '
                                 'module docstring: head -n 90 %s)' % sys.argv[0])
    ap.add_argument('--upstream', required=True)
    ap.add_argument('--listen', default='127.0.0.1')
    ap.add_argument('--port', type=int, default=0)
    ap.add_argument('--port-file')
    ap.add_argument('--s3', action='store_true',
                    help='the S3-shaped origin: --delay-ms 20 '
                    '--response-delay-ms 20 --conn-rate 32M unless given')
    ap.add_argument('--delay-ms', type=float, default=None,
                    help='wait before forwarding each request, ms (20)')
    ap.add_argument('--response-delay-ms', type=float, default=None,
                    help='wait before sending each answer\'s head back, '
                    'ms (0)')
    ap.add_argument('--conn-rate', type=size_arg, default=None,
                    help='bytes per second of each client connection, each '
                    'direction (K, M, G: KiB, MiB, GiB; 0: unlimited)')
    ap.add_argument('--conn-burst', type=size_arg, default=8 * 1024,
                    help='each connection\'s token buckets\' size under '
                    '--conn-rate when the kernel cannot pace (8K)')
    ap.add_argument('--rate', type=size_arg, default=0,
                    help='response body bytes per second over all '
                    'connections (K, M, G: KiB, MiB, GiB; 0: unlimited)')
    ap.add_argument('--burst', type=size_arg, default=8 * 1024,
                    help='the token bucket\'s size under --rate (8K)')
    a = ap.parse_args()
    preset = {'delay_ms': 20.0, 'response_delay_ms': 20.0,
              'conn_rate': 32 << 20} if a.s3 else {}
    for k, d in (('delay_ms', 20.0), ('response_delay_ms', 0.0),
                 ('conn_rate', 0)):
        if getattr(a, k) is None:
            setattr(a, k, preset.get(k, d))
    for k in ('delay_ms', 'response_delay_ms'):
        if getattr(a, k) < 0 or getattr(a, k) > 60000:
            sys.exit('delay_proxy.py: --%s must be 0..60000' %
                     k.replace('_', '-'))
    if a.burst < 1 or a.conn_burst < 1:
        sys.exit('delay_proxy.py: --burst and --conn-burst must be at least '
                 '1 byte')
    run(a)


if __name__ == '__main__':
    main()
