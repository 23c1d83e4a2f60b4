"""Which optional libraries this Python has: the tests that need torch or
boto3 are skipped without them (the package itself needs neither)."""

import importlib.util


def _have(name):
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:   # ValueError when sys.modules holds None for it
        return False


HAVE_TORCH = _have("torch")
HAVE_BOTO3 = _have("boto3") and _have("botocore")
