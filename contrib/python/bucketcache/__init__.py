"""bucketcache — tell a bucketcache gateway what a training job reads next.

  HintedSampler   wraps a PyTorch sampler; PUTs each epoch's key order (and
                  the next epoch's, when the sampler is seeded) as the job's
                  plan; next_keys() gives the lookahead, also from DataLoader
                  worker processes (needs torch)
  install_hints   a boto3 event hook adding x-bucketcache-job, -next and
                  -epoch to GetObject before the request is signed
  hint_headers    the same headers as a dict, for clients that take extra
                  headers but are not boto3 (fsspec's HTTP filesystem,
                  requests, curl)
  PlanClient      the plan endpoint: PUT /_bucketcache/v1/jobs/JOB/plan
  access_key_job  the job name the gateway gives reads that carry no
                  x-bucketcache-job header: their access key

Importing the package needs only the standard library: torch is imported
when HintedSampler is first used, botocore when a plan is signed.
Nothing here ever breaks training: a gateway that is down, slow or answers
an error is logged once (logger "bucketcache") and training goes on.
"""

from .hooks import hint_headers, install_hints, next_header_value, uninstall_hints
from .plan import PlanClient, PlanError, access_key_job

__version__ = "0.1.0"

__all__ = ["HintedSampler", "PlanClient", "PlanError", "access_key_job",
           "hint_headers", "install_hints", "uninstall_hints",
           "next_header_value", "__version__"]


def __getattr__(name):
    # PEP 562: HintedSampler (and the sampler module) import torch, so they
    # load on first use, not with the package.
    if name == "HintedSampler":
        try:
            from .sampler import HintedSampler
        except ImportError as e:
            raise ImportError(
                "bucketcache.HintedSampler needs PyTorch (%s); on Debian: "
                "apt-get install python3-torch" % e, name=e.name) from e
        globals()["HintedSampler"] = HintedSampler
        return HintedSampler
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def __dir__():
    return sorted(set(globals()) | {"HintedSampler"})
