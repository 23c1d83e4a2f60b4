"""The gateway's plan endpoint, and a background poster for it.

PlanClient.put() sends one epoch's order:
  PUT {endpoint}/_bucketcache/v1/jobs/{job}/plan?bucket={bucket}&epoch={n}
  body: one key per line, gzip (Content-Encoding: gzip) from gzip_min bytes.
Authentication, first that applies: the admin token
(x-bucketcache-admin-token), SigV4 with the credentials of a boto3/botocore
session (botocore's S3 signer, payload hash signed), else unsigned (the
gateway accepts that from a loopback client).

PlanPoster sends puts from one daemon thread, in submission order, so the
caller (the sampler, in the training loop) never waits on the network
longer than it chooses to. Failures are counted and logged once.
"""

import gzip
import logging
import re
import threading
import urllib.error
import urllib.parse
import urllib.request

log = logging.getLogger("bucketcache")

PLAN_PATH = "/_bucketcache/v1/jobs/%s/plan"


class PlanError(Exception):
    """A plan PUT that did not get a 2xx answer (status 0: no answer)."""

    def __init__(self, status, message):
        super().__init__("HTTP %d: %s" % (status, message) if status else message)
        self.status = status


def plan_body(keys):
    """The plan body for an iterable of keys: one key per line (bytes).
    A key holding a newline cannot be expressed and raises ValueError."""
    out = []
    for k in keys:
        if "\n" in k or "\r" in k:
            raise ValueError("a plan key holds a line break: %r" % k)
        out.append(k)
    return ("\n".join(out) + "\n").encode("utf-8") if out else b""


def _credentials(session):
    if session is None:
        return None, None
    creds = session.get_credentials()
    region = getattr(session, "region_name", None)
    if region is None and hasattr(session, "get_config_variable"):
        region = session.get_config_variable("region")
    if creds is not None:
        creds = creds.get_frozen_credentials()
    return creds, region


def access_key_job(session=None, access_key=None):
    """The job the gateway counts a read toward when it carries no
    x-bucketcache-job header: the access key it was signed with (an
    unsigned read counts toward "anonymous"). Give a loader that cannot add
    headers (s3torchconnector, WebDataset through aws-cli, MosaicML
    streaming) a key of its own (--client-key), and post its plans to the
    job this names. session: a boto3.Session or botocore session whose
    credentials the loader signs with; or access_key itself."""
    if access_key is None and session is not None:
        creds, _ = _credentials(session)
        access_key = creds.access_key if creds is not None else None
    return access_key if access_key else "anonymous"


class PlanClient:
    """PUTs plans for one job and bucket. endpoint: "http://host:port".
    session: a boto3.Session or botocore session whose credentials sign
    the PUT (ignored when admin_token is given). Not thread-safe: one
    caller at a time (PlanPoster's thread)."""

    def __init__(self, endpoint, bucket, job, admin_token=None, session=None,
                 region=None, timeout=5.0, gzip_min=64 * 1024):
        if not job or not bucket:
            raise ValueError("job and bucket must be non-empty")
        self.endpoint = endpoint.rstrip("/")
        self.bucket = bucket
        self.job = job
        self.admin_token = admin_token
        self.timeout = timeout
        self.gzip_min = gzip_min
        self._creds, sregion = _credentials(session)
        self.region = region or sregion or "us-east-1"

    def url(self, epoch):
        q = urllib.parse.urlencode([("bucket", self.bucket), ("epoch", int(epoch))])
        return self.endpoint + PLAN_PATH % urllib.parse.quote(self.job, safe="") + "?" + q

    def request_parts(self, epoch, keys):
        """(url, headers, body) of the PUT for keys (not sent)."""
        body = plan_body(keys)
        headers = {"Content-Type": "text/plain; charset=utf-8"}
        if len(body) >= self.gzip_min:
            body = gzip.compress(body, compresslevel=6, mtime=0)
            headers["Content-Encoding"] = "gzip"
        url = self.url(epoch)
        if self.admin_token:
            headers["x-bucketcache-admin-token"] = self.admin_token
        elif self._creds is not None:
            headers.update(self._sign(url, headers, body))
        return url, headers, body

    def _sign(self, url, headers, body):
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest

        req = AWSRequest(method="PUT", url=url, data=body, headers=dict(headers))
        S3SigV4Auth(self._creds, "s3", self.region).add_auth(req)
        return {k: v for k, v in req.headers.items()}

    def put(self, epoch, keys):
        """Sends epoch's plan; returns the HTTP status (2xx). Raises
        PlanError on any other status, a network error or a timeout."""
        url, headers, body = self.request_parts(epoch, keys)
        req = urllib.request.Request(url, data=body, method="PUT", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                r.read()
                return r.status
        except urllib.error.HTTPError as e:
            try:
                detail = e.read(2000).decode("utf-8", "replace")
            except Exception:
                detail = ""
            m = re.search(r"<Code>([^<]{1,64})</Code>", detail)
            raise PlanError(e.code, "%s%s" % (e.reason, " (%s)" % m.group(1) if m else "")) \
                from None
        except (OSError, ValueError) as e:
            raise PlanError(0, "%s: %s" % (type(e).__name__, e)) from None


class PlanPoster:
    """Sends PlanClient puts from one daemon thread, in order. submit()
    returns a threading.Event set when that put has finished (sent or
    failed). stats: plans_put, plans_failed, last_error, last_status."""

    def __init__(self, client):
        self.client = client
        self.stats = {"plans_put": 0, "plans_failed": 0, "last_error": None,
                      "last_status": None}
        self._cv = threading.Condition()
        self._queue = []
        self._busy = False
        self._thread = None
        self._warned = False

    def submit(self, epoch, keys):
        done = threading.Event()
        with self._cv:
            self._queue.append((epoch, keys, done))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run,
                                                name="bucketcache-plans", daemon=True)
                self._thread.start()
            self._cv.notify_all()
        return done

    def flush(self, timeout=None):
        """Waits until every submitted put has finished; returns whether
        that happened within timeout seconds."""
        with self._cv:
            return self._cv.wait_for(lambda: not self._queue and not self._busy, timeout)

    def _run(self):
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._queue)
                epoch, keys, done = self._queue.pop(0)
                self._busy = True
            try:
                status = self.client.put(epoch, keys)
                self._record(status, None)
            except Exception as e:  # never let the thread die
                self._record(getattr(e, "status", None), e)
            finally:
                done.set()
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()

    def _record(self, status, err):
        with self._cv:
            self.stats["last_status"] = status
            if err is None:
                self.stats["plans_put"] += 1
                return
            self.stats["plans_failed"] += 1
            self.stats["last_error"] = str(err)
            first = not self._warned
            self._warned = True
        if first:
            log.warning("bucketcache: plan PUT for job %s failed (%s); training goes on "
                        "without plans (further failures are logged at debug level)",
                        self.client.job, err)
        else:
            log.debug("bucketcache: plan PUT for job %s failed (%s)", self.client.job, err)
