"""The package as installed: importing it needs neither torch nor boto3
(HintedSampler loads torch on first use and says how to get it when it is
missing); hint_headers, access_key_job, and unsigned plan PUTs work with
the standard library alone."""

import os
import subprocess
import sys
import unittest

import bucketcache
from bucketcache import PlanClient, access_key_job, hint_headers
from deps import HAVE_BOTO3
from recorder import Recorder

# torch and botocore hidden: a None in sys.modules makes their import fail
HIDE_TORCH = "import sys; sys.modules['torch'] = None; sys.modules['botocore'] = None\n"


def run_py(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", HIDE_TORCH + code], env=env,
                          capture_output=True, text=True, timeout=60)


class TestImport(unittest.TestCase):
    def test_import_without_torch(self):
        p = run_py("import bucketcache\n"
                   "assert sys.modules.get('torch') is None\n"
                   "print(bucketcache.__version__, sorted(bucketcache.__all__))\n")
        self.assertEqual(0, p.returncode, p.stderr)
        self.assertIn(bucketcache.__version__, p.stdout)
        self.assertIn("HintedSampler", p.stdout)

    def test_hinted_sampler_without_torch_says_why(self):
        p = run_py("import bucketcache\n"
                   "try:\n"
                   "    bucketcache.HintedSampler\n"
                   "except ImportError as e:\n"
                   "    print('ImportError:', e)\n"
                   "else:\n"
                   "    print('no error')\n")
        self.assertEqual(0, p.returncode, p.stderr)
        self.assertIn("ImportError:", p.stdout)
        self.assertIn("python3-torch", p.stdout)

    def test_from_import_without_torch(self):
        p = run_py("from bucketcache import install_hints, PlanClient, hint_headers\n"
                   "print('ok')\n")
        self.assertEqual(0, p.returncode, p.stderr)
        self.assertEqual("ok", p.stdout.strip())

    def test_unknown_attribute(self):
        with self.assertRaises(AttributeError):
            bucketcache.NoSuchThing  # noqa: B018


class TestHintHeaders(unittest.TestCase):
    def test_job_epoch_next(self):
        h = hint_headers("job-1", ["a/b c.bin", "x,y"], epoch=3)
        self.assertEqual({"x-bucketcache-job": "job-1", "x-bucketcache-epoch": "3",
                          "x-bucketcache-next": "a/b%20c.bin,x%2Cy"}, h)

    def test_job_only(self):
        self.assertEqual({"x-bucketcache-job": "j"}, hint_headers("j"))

    def test_bad_job(self):
        for bad in ("", "a\nb", "a\rb"):
            with self.assertRaises(ValueError):
                hint_headers(bad)


class TestAccessKeyJob(unittest.TestCase):
    def test_key(self):
        self.assertEqual("JOBKEY1", access_key_job(access_key="JOBKEY1"))

    def test_unsigned(self):
        self.assertEqual("anonymous", access_key_job())

    @unittest.skipUnless(HAVE_BOTO3, "needs boto3 (python3-boto3)")
    def test_session(self):
        import boto3
        s = boto3.Session(aws_access_key_id="AKJOB", aws_secret_access_key="sk",
                          region_name="us-east-1")
        self.assertEqual("AKJOB", access_key_job(s))


class TestUnsignedPlan(unittest.TestCase):
    def test_put_with_the_standard_library(self):
        rec = Recorder().start()
        try:
            c = PlanClient(rec.url, "ds", "job-1")
            self.assertEqual(200, c.put(0, ["k1", "k2"]))
            (r,) = rec.of("PUT")
            self.assertEqual("/_bucketcache/v1/jobs/job-1/plan", r.path)
            self.assertEqual(["k1", "k2"], r.lines())
            self.assertNotIn("authorization", r.headers)
        finally:
            rec.stop()


if __name__ == "__main__":
    unittest.main()
