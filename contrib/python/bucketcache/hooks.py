"""A boto3 event hook that adds bucketcache's hint headers to GetObject.

install_hints(s3_client, job, sampler=None, n_next=8) registers two
handlers on the client's events:
  before-parameter-build.s3.GetObject  notes the request's Bucket and Key
                                       in its context;
  before-sign.s3.GetObject             adds x-bucketcache-job and, with a
                                       sampler, x-bucketcache-epoch and
                                       x-bucketcache-next.
before-sign runs before the signer (and for unsigned clients too), so the
headers are covered by a SigV4 signature like any other header and the
gateway, which verifies signed headers, sees what was signed. A header is
replaced, never repeated, when botocore signs a request again (retries).

x-bucketcache-next holds the keys the sampler says come after the one
being read (sampler.next_keys(n_next, after=key)), URL-encoded (',' and
non-ASCII escaped), comma-separated, at most 1,000 keys and 64 KiB; it is
sent only for the sampler's bucket. A failing hook is logged once and the
request goes out without hints.
"""

import logging
import urllib.parse

log = logging.getLogger("bucketcache")

MAX_NEXT_KEYS = 1000
MAX_HEADER_BYTES = 64 * 1024

H_JOB = "x-bucketcache-job"
H_NEXT = "x-bucketcache-next"
H_EPOCH = "x-bucketcache-epoch"

_ID_PARAMS = "bucketcache-hints-params"
_ID_SIGN = "bucketcache-hints-sign"
_CTX = "bucketcache_hint"


def next_header_value(keys, max_keys=MAX_NEXT_KEYS, max_bytes=MAX_HEADER_BYTES):
    """The x-bucketcache-next value for keys: URL-encoded keys joined by
    ',', cut to at most max_keys keys and max_bytes bytes (whole keys)."""
    out, size = [], 0
    for k in keys:
        if len(out) >= max_keys:
            break
        e = urllib.parse.quote(k, safe="/")
        add = len(e) + (1 if out else 0)
        if size + add > max_bytes:
            break
        out.append(e)
        size += add
    return ",".join(out)


def hint_headers(job, next_keys=None, epoch=None):
    """The hint headers as a dict, for clients that take extra headers but
    are not boto3 (fsspec's HTTPFileSystem client_kwargs, requests, curl -H):
    x-bucketcache-job: job, x-bucketcache-epoch when epoch is not None, and
    x-bucketcache-next from next_keys (bounded as next_header_value). Hint
    headers a client signs with SigV4 must be signed headers: boto3 users
    take install_hints instead."""
    if not job or any(c in job for c in "\r\n"):
        raise ValueError("job must be a non-empty single-line string")
    h = {H_JOB: job}
    if epoch is not None:
        h[H_EPOCH] = str(int(epoch))
    if next_keys:
        v = next_header_value(next_keys)
        if v:
            h[H_NEXT] = v
    return h


def _set(headers, name, value):
    if name in headers:
        del headers[name]
    headers[name] = value


class _Hints:
    def __init__(self, job, sampler, n_next):
        self.job = job
        self.sampler = sampler
        self.n_next = n_next
        self.warned = False

    def on_params(self, params, context, **kwargs):
        context[_CTX] = (params.get("Bucket"), params.get("Key"))

    def on_sign(self, request, **kwargs):
        try:
            self._add(request)
        except Exception as e:
            if not self.warned:
                self.warned = True
                log.warning("bucketcache: hint headers not added (%s); reads go on "
                            "without them", e)

    def _add(self, request):
        h = request.headers
        _set(h, H_JOB, self.job)
        s = self.sampler
        if s is None:
            return
        _set(h, H_EPOCH, str(s.epoch))
        bucket, key = request.context.get(_CTX, (None, None))
        if self.n_next <= 0 or bucket != getattr(s, "bucket", bucket):
            return
        v = next_header_value(s.next_keys(self.n_next, after=key))
        if v:
            _set(h, H_NEXT, v)
        elif H_NEXT in h:
            del h[H_NEXT]


def install_hints(s3_client, job, sampler=None, n_next=8):
    """Makes s3_client's GetObject requests carry x-bucketcache-job: job
    and, with sampler (a HintedSampler, or anything with bucket, epoch and
    next_keys(n, after=key)), x-bucketcache-epoch and the next n_next keys
    in x-bucketcache-next. Installing again replaces the previous hook."""
    if not job or any(c in job for c in "\r\n"):
        raise ValueError("job must be a non-empty single-line string")
    n_next = min(int(n_next), MAX_NEXT_KEYS)
    uninstall_hints(s3_client)
    hints = _Hints(job, sampler, n_next)
    ev = s3_client.meta.events
    ev.register("before-parameter-build.s3.GetObject", hints.on_params,
                unique_id=_ID_PARAMS)
    ev.register("before-sign.s3.GetObject", hints.on_sign, unique_id=_ID_SIGN)
    return hints


def uninstall_hints(s3_client):
    """Removes install_hints' handlers from s3_client (none: no-op)."""
    ev = s3_client.meta.events
    ev.unregister("before-parameter-build.s3.GetObject", unique_id=_ID_PARAMS)
    ev.unregister("before-sign.s3.GetObject", unique_id=_ID_SIGN)
