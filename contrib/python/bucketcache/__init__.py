"""bucketcache — tell a bucketcache gateway what a training job reads next.

  HintedSampler   wraps a PyTorch sampler; PUTs each epoch's key order (and
                  the next epoch's, when the sampler is seeded) as the job's
                  plan; next_keys() gives the lookahead, also from DataLoader
                  worker processes
  install_hints   a boto3 event hook adding x-bucketcache-job, -next and
                  -epoch to GetObject before the request is signed
  PlanClient      the plan endpoint: PUT /_bucketcache/v1/jobs/JOB/plan

Nothing here ever breaks training: a gateway that is down, slow or answers
an error is logged once (logger "bucketcache") and training goes on.
Standard library, torch and botocore/boto3 only.
"""

from .plan import PlanClient
from .sampler import HintedSampler
from .hooks import install_hints, uninstall_hints, next_header_value

__all__ = ["HintedSampler", "PlanClient", "install_hints", "uninstall_hints",
           "next_header_value"]
