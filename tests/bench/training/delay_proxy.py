#!/usr/bin/python3
"""
delay_proxy.py -- an HTTP/1.1 reverse proxy to one upstream that waits a
fixed delay before forwarding each request (bench_training.sh's "upstream
20 ms away"), and optionally caps the bandwidth of what it sends back
(bench_scale.sh's and test_scale.sh's origin of B bytes/s).

The delay is per request, not per byte: once a request's head has been read
the proxy sleeps --delay-ms, then forwards it to --upstream and streams the
answer back as it comes (no buffering of bodies). It models a far S3
endpoint's first-byte latency.

--rate BYTES_PER_SECOND (a number with an optional K, M or G suffix: KiB,
MiB, GiB; 0, the default, is unlimited: bandwidth is then what the loopback
gives) caps the response BODY bytes sent to clients, over all connections
together: one token bucket, filled at --rate and holding at most --burst
bytes (default 8K), that every piece of a response body (what one read
from the upstream returned, at most 64 KiB) takes from before it is
written. A piece that finds too few tokens takes them anyway (the bucket
goes into debt) and is written once the debt is paid back, so waiting
pieces go out in the order they came and the bytes sent in any span of T
seconds are at most --burst + rate * T (two concurrent 48 MiB downloads
through --rate 2M, 6M, 32M: 2.00, 6.00, 31.9 MiB/s in total). The burst is
kept small because a link has none: with 64 KiB, every 256 KiB answer after
an idle moment would arrive a third faster than the rate, and a gateway
measuring the origin's bandwidth from its fills would see that. Response
heads, request bodies and the control endpoint are not throttled, so the
time to a response's head stays the delay (plus the upstream's own).

  * asyncio, one task per client connection: many concurrent connections;
  * keep-alive on both sides: each client connection gets its own upstream
    connection, opened when first needed and reused for the connection's
    next requests; an upstream connection that is closed under us before it
    answered anything is reopened once (GET/HEAD only);
  * bodies in both directions are streamed: Content-Length, chunked
    (passed through as is), or until EOF (then the client connection is
    closed after the answer);
  * bounded parsing: a request or response head over 64 KiB or with more
    than 200 header lines ends the connection (431 / 502);
  * hop-by-hop headers (Connection, Keep-Alive, Proxy-Connection) are not
    forwarded; everything else, Host and Authorization included, is.

Counters (the ground truth of what crossed the "WAN", per system and epoch,
from snapshots): requests, by method and status class, response body bytes
and response head bytes sent to clients, request bytes, upstream
connections opened, reconnects, errors; connections open now and at most;
the settings (delay_ms, rate_bytes_per_second: 0 unlimited, burst_bytes)
and throttle_wait_seconds (the sum over body pieces of the time each
waited for tokens).
Control endpoint, never forwarded, never delayed, not counted:

  GET /_delayproxy/stats     JSON counters

Usage: delay_proxy.py --upstream http://127.0.0.1:PORT [--listen 127.0.0.1]
       [--port 0] [--port-file FILE] [--delay-ms 20] [--rate 0]
       [--burst 8K]
With --port 0 (the default) it binds a free port and writes it to
--port-file (written once listening). SIGTERM/SIGINT end it.
"""
import argparse
import asyncio
import json
import os
import re
import signal
import sys
import time
import urllib.parse

MAX_HEAD = 64 * 1024
MAX_HEADERS = 200
IO_CHUNK = 64 * 1024
HOP = {b'connection', b'keep-alive', b'proxy-connection'}


class TokenBucket:
    """One bucket shared by every connection (all on the event loop's
    thread: no lock). take(n) returns at once while the bucket holds n
    tokens, else after the debt it leaves is paid back at `rate`."""

    def __init__(self, rate, burst, stats):
        self.rate = float(rate)
        self.burst = float(burst)
        self.tokens = float(burst)
        self.last = time.monotonic()
        self.stats = stats

    async def take(self, n):
        now = time.monotonic()
        self.tokens = min(self.burst,
                          self.tokens + (now - self.last) * self.rate)
        self.last = now
        self.tokens -= n
        if self.tokens < 0:
            wait = -self.tokens / self.rate
            self.stats.throttle_wait += wait
            await asyncio.sleep(wait)


class Stats:
    def __init__(self):
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
        self.rate = 0
        self.burst = 0
        self.throttle_wait = 0.0

    def snapshot(self):
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
            'rate_bytes_per_second': self.rate,
            'burst_bytes': self.burst,
            'throttle_wait_seconds': round(self.throttle_wait, 6),
        }


class HeadError(Exception):
    """A head that is too big, malformed, or cut off."""


async def read_head(reader):
    """Reads one HTTP head; returns (first_line, [(name, value)], raw_len),
    or None on a clean EOF before any byte."""
    try:
        raw = await reader.readuntil(b'\r\n\r\n')
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise HeadError('cut off head')
    except asyncio.LimitOverrunError:
        raise HeadError('head too large')
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


# The copy functions call count(nbytes) for every piece of body they pass
# on (never "x += await ...": the read of x would happen before the await,
# and concurrent connections' updates would be lost), and, when given a
# gate (the response side under --rate), await gate(nbytes) before writing
# each piece.

async def copy_length(reader, writer, n, count, gate=None):
    """Copies exactly n bytes; raises on EOF."""
    left = n
    while left > 0:
        data = await reader.read(min(left, IO_CHUNK))
        if not data:
            raise ConnectionError('body cut off')
        if gate is not None:
            await gate(len(data))
        writer.write(data)
        count(len(data))
        left -= len(data)
        await writer.drain()


async def copy_chunked(reader, writer, count, gate=None):
    """Passes a chunked body through as is, counting the payload bytes."""
    while True:
        line = await reader.readuntil(b'\r\n')
        if len(line) > 1024:
            raise HeadError('chunk line too long')
        size_s = line.split(b';', 1)[0].strip()
        try:
            size = int(size_s, 16)
        except ValueError:
            raise HeadError('bad chunk size')
        if size < 0:
            raise HeadError('bad chunk size')
        writer.write(line)
        if size == 0:
            # trailers, then the empty line
            n = 0
            while True:
                t = await reader.readuntil(b'\r\n')
                writer.write(t)
                n += 1
                if t == b'\r\n':
                    break
                if n > MAX_HEADERS:
                    raise HeadError('too many trailers')
            await writer.drain()
            return
        await copy_length(reader, writer, size, count, gate)
        crlf = await reader.readexactly(2)
        if crlf != b'\r\n':
            raise HeadError('bad chunk end')
        writer.write(crlf)


async def copy_eof(reader, writer, count, gate=None):
    while True:
        data = await reader.read(IO_CHUNK)
        if not data:
            return
        if gate is not None:
            await gate(len(data))
        writer.write(data)
        count(len(data))
        await writer.drain()


class Proxy:
    def __init__(self, up_host, up_port, delay, stats, bucket=None):
        self.up_host = up_host
        self.up_port = up_port
        self.delay = delay
        self.stats = stats
        # the response side's gate (None: unthrottled)
        self.gate = bucket.take if bucket is not None else None

    def count_req(self, n):
        self.stats.req_bytes += n

    def count_resp(self, n):
        self.stats.resp_body_bytes += n

    async def connect_upstream(self):
        r, w = await asyncio.open_connection(self.up_host, self.up_port,
                                             limit=MAX_HEAD)
        self.stats.upstream_connects += 1
        return r, w

    async def handle(self, creader, cwriter):
        st = self.stats
        st.conns_open += 1
        st.conns_total += 1
        st.conns_max = max(st.conns_max, st.conns_open)
        cs = {'up': None}
        try:
            go = True
            while go:
                go = await self.one(creader, cwriter, cs)
        except (HeadError, ConnectionError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError, OSError) as e:
            st.errors += 1
            if st.errors <= 20:
                print('delay_proxy: %s: %s' % (type(e).__name__, e),
                      file=sys.stderr)
        finally:
            st.conns_open -= 1
            cwriter.close()
            if cs['up'] is not None:
                cs['up'][1].close()

    async def one(self, creader, cwriter, cs):
        """Serves one request on a client connection whose upstream
        connection is cs['up'] ((reader, writer) or None; replaced here as
        it is opened and closed). Returns False when the client connection
        is to be closed (EOF, or Connection: close), else True."""
        st = self.stats
        try:
            head = await read_head(creader)
        except HeadError:
            cwriter.write(b'HTTP/1.1 431 Request Header Fields Too Large\r\n'
                          b'Content-Length: 0\r\nConnection: close\r\n\r\n')
            await cwriter.drain()
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
            return await self.control(cwriter, target, client_close)

        kind, n = body_kind(hdrs)
        await asyncio.sleep(self.delay)

        st.requests += 1
        m = method.decode('latin-1')
        st.by_method[m] = st.by_method.get(m, 0) + 1
        out = [b'%s %s HTTP/1.1' % (method, target)]
        out += [b'%s: %s' % (k, v) for k, v in hdrs if k.lower() not in HOP]
        req_head = b'\r\n'.join(out) + b'\r\n\r\n'
        st.req_bytes += len(req_head)

        # send the head, and get the answer's head; a reused upstream
        # connection that was closed under us is reopened once
        retry_ok = cs['up'] is not None and kind == 'none' and method in (b'GET', b'HEAD')
        while True:
            if cs['up'] is None:
                cs['up'] = await self.connect_upstream()
            ur, uw = cs['up']
            try:
                uw.write(req_head)
                if kind == 'length':
                    await copy_length(creader, uw, n, self.count_req)
                elif kind == 'chunked':
                    await copy_chunked(creader, uw, self.count_req)
                await uw.drain()
                rhead = await read_head(ur)
                while rhead is not None and rhead[0][9:10] == b'1' and \
                        rhead[0][9:12] != b'101':
                    rhead = await read_head(ur)     # 1xx interim: skip
                if rhead is None:
                    raise ConnectionError('upstream closed the connection')
                break
            except (ConnectionError, asyncio.IncompleteReadError, HeadError,
                    OSError) as e:
                uw.close()
                cs['up'] = None
                if retry_ok and not isinstance(e, HeadError):
                    retry_ok = False
                    st.reconnects += 1
                    continue
                cwriter.write(b'HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n'
                              b'Connection: close\r\n\r\n')
                await cwriter.drain()
                st.by_status['5xx'] = st.by_status.get('5xx', 0) + 1
                raise ConnectionError('upstream: %s' % e)

        rfirst, rhdrs, _ = rhead
        rparts = rfirst.split(b' ', 2)
        if len(rparts) < 2 or not rparts[1].isdigit() or len(rparts[1]) != 3:
            raise HeadError('bad upstream status line')
        status = int(rparts[1])
        cls = '%dxx' % (status // 100)
        st.by_status[cls] = st.by_status.get(cls, 0) + 1
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
        cwriter.write(rhead_bytes)
        st.resp_head_bytes += len(rhead_bytes)
        g = self.gate
        if rkind == 'length':
            await copy_length(ur, cwriter, rn, self.count_resp, g)
        elif rkind == 'chunked':
            await copy_chunked(ur, cwriter, self.count_resp, g)
        elif rkind == 'eof':
            await copy_eof(ur, cwriter, self.count_resp, g)
            up_close = True
        await cwriter.drain()
        if up_close:
            uw.close()
            cs['up'] = None
        return not close

    async def control(self, cwriter, target, client_close):
        path = urllib.parse.urlsplit(target.decode('latin-1')).path
        if path == '/_delayproxy/stats':
            body = json.dumps(self.stats.snapshot(), sort_keys=True).encode() + b'\n'
            status = b'200 OK'
        else:
            body = b'not found\n'
            status = b'404 Not Found'
        cwriter.write(b'HTTP/1.1 %s\r\nContent-Type: application/json\r\n'
                      b'Content-Length: %d\r\n%s\r\n' % (
                          status, len(body),
                          b'Connection: close\r\n' if client_close else b''))
        cwriter.write(body)
        await cwriter.drain()
        return not client_close


async def amain(a):
    u = urllib.parse.urlsplit(a.upstream)
    if u.scheme != 'http' or not u.hostname:
        sys.exit('delay_proxy.py: --upstream must be http://HOST[:PORT]')
    stats = Stats()
    stats.delay_ms = a.delay_ms
    stats.rate = a.rate
    stats.burst = a.burst if a.rate > 0 else 0
    bucket = TokenBucket(a.rate, a.burst, stats) if a.rate > 0 else None
    proxy = Proxy(u.hostname, u.port or 80, a.delay_ms / 1000.0, stats,
                  bucket)

    async def handler(r, w):
        await proxy.handle(r, w)

    server = await asyncio.start_server(handler, a.listen, a.port,
                                        limit=MAX_HEAD, backlog=1024,
                                        reuse_address=True)
    port = server.sockets[0].getsockname()[1]
    if a.port_file:
        tmp = a.port_file + '.tmp'
        with open(tmp, 'w') as f:
            f.write('%d\n' % port)
        os.replace(tmp, a.port_file)
    print('delay_proxy: listening on %s:%d, upstream %s, delay %g ms, '
          'rate %s' % (a.listen, port, a.upstream, a.delay_ms,
                       '%d B/s, burst %d B' % (a.rate, a.burst) if a.rate
                       else 'unlimited'), file=sys.stderr)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    async with server:
        await stop.wait()
    print('delay_proxy: stopping; %s' % json.dumps(stats.snapshot()),
          file=sys.stderr)


def size_arg(s):
    """A byte count: a number with an optional K, M or G (powers of 1024)."""
    m = re.fullmatch(r'\s*([0-9]+(?:\.[0-9]*)?)\s*([KkMmGg]?)\s*', s)
    if not m:
        raise argparse.ArgumentTypeError(
            'not a size (a number with an optional K, M or G): %r' % s)
    mult = {'': 1, 'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def main():
    ap = argparse.ArgumentParser(description='per-request delay proxy')
    ap.add_argument('--upstream', required=True)
    ap.add_argument('--listen', default='127.0.0.1')
    ap.add_argument('--port', type=int, default=0)
    ap.add_argument('--port-file')
    ap.add_argument('--delay-ms', type=float, default=20.0)
    ap.add_argument('--rate', type=size_arg, default=0,
                    help='response body bytes per second over all '
                    'connections (K, M, G: KiB, MiB, GiB; 0: unlimited)')
    ap.add_argument('--burst', type=size_arg, default=8 * 1024,
                    help='the token bucket\'s size under --rate (8K)')
    a = ap.parse_args()
    if a.delay_ms < 0 or a.delay_ms > 60000:
        sys.exit('delay_proxy.py: --delay-ms must be 0..60000')
    if a.burst < 1:
        sys.exit('delay_proxy.py: --burst must be at least 1 byte')
    asyncio.run(amain(a))


if __name__ == '__main__':
    main()
