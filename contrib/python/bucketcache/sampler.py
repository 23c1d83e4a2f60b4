"""HintedSampler: a PyTorch sampler that tells the gateway its order.

Each epoch it materialises the wrapped sampler's order (iterating it once,
exactly as a DataLoader would, so the wrapped sampler's RNG advances as
usual), PUTs it as the job's plan for that epoch and, when the next
epoch's order can be known without touching the wrapped sampler's state,
PUTs that too (epoch n+1). The next order is known for:
  - a sampler with a torch.Generator in .generator (RandomSampler,
    SubsetRandomSampler, WeightedRandomSampler seeded with a generator):
    a shallow copy iterated with a clone of the generator's state;
  - a DistributedSampler (or any sampler with set_epoch/epoch/seed): a
    shallow copy at epoch+1 (call set_epoch every epoch, as PyTorch asks;
    one that is never called repeats its order, which is then predicted);
  - a SequentialSampler, and any sampler with a next_epoch_order() method.
An unseeded RandomSampler draws its seed from torch's global RNG when it
is iterated, which other code also draws from: its next order is not
known and only the current one is posted.

The indices are yielded unchanged. The current and next orders and the
position live in shared memory (torch shared tensors made at construction,
before a DataLoader forks or spawns its workers), so next_keys() answers in
worker processes too. Plans are sent from a background thread (see
plan.PlanPoster); __iter__ waits at most put_wait seconds for the current
epoch's PUT before yielding. Only the process that created the sampler
sends plans: copies (pickled to workers) never do.
"""

import copy
import logging
import warnings

import torch
from torch.utils.data import Sampler, SequentialSampler

from .plan import PlanClient, PlanPoster

log = logging.getLogger("bucketcache")

# meta slots
_EPOCH, _POS, _CUR_LEN, _NEXT_LEN = range(4)


class HintedSampler(Sampler):
    """sampler: any iterable of indices into keys (a Sampler).
    keys: sequence, keys[i] is the object key of dataset item i.
    endpoint, bucket, job: where plans go (see plan.PlanClient); session,
    admin_token, region, timeout, gzip_min are passed to it.
    lookahead: the default n of next_keys(). start_epoch: the first
    epoch's number (set_epoch() changes it). put_wait: seconds __iter__
    waits for the current plan's PUT (0: never waits)."""

    def __init__(self, sampler, keys, endpoint, bucket, job, lookahead=64,
                 session=None, admin_token=None, region=None, timeout=5.0,
                 gzip_min=64 * 1024, start_epoch=0, put_wait=1.0):
        super().__init__(None)
        self.sampler = sampler
        self.keys = keys
        self.bucket = bucket
        self.job = job
        self.lookahead = lookahead
        self.put_wait = put_wait
        self._epoch = int(start_epoch)
        self._last_wrapped_epoch = None
        self._epoch_set = False
        self._iters = 0
        self._index = None
        n = len(keys)
        try:
            cap = max(len(sampler), 1)
        except TypeError:
            cap = max(n, 1)
        self._dtype = torch.int32 if max(n, cap) < 2 ** 31 else torch.int64
        self._order = torch.zeros((2, cap), dtype=self._dtype).share_memory_()
        self._where = torch.zeros(max(n, 1), dtype=torch.int64).share_memory_()
        self._meta = torch.zeros(4, dtype=torch.int64).share_memory_()
        self._meta[_EPOCH] = self._epoch
        self._poster = PlanPoster(PlanClient(endpoint, bucket, job, admin_token=admin_token,
                                             session=session, region=region,
                                             timeout=timeout, gzip_min=gzip_min))

    # ---- the sampler -------------------------------------------------------

    def __len__(self):
        return len(self.sampler)

    def set_epoch(self, epoch):
        """Sets the next epoch's number, and the wrapped sampler's when it
        has set_epoch (DistributedSampler)."""
        self._epoch = int(epoch)
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)
        self._epoch_set = True

    def __iter__(self):
        wrapped_epoch = getattr(self.sampler, "epoch", None)
        moved = wrapped_epoch is not None and wrapped_epoch != self._last_wrapped_epoch
        if moved and not self._epoch_set:
            self._epoch = int(wrapped_epoch)
        repeats = (wrapped_epoch is not None and self._iters > 0 and not moved
                   and not self._epoch_set)
        self._last_wrapped_epoch = wrapped_epoch
        self._epoch_set = False
        self._iters += 1
        epoch = self._epoch
        self._epoch += 1
        order = [int(i) for i in self.sampler]
        nxt = None
        try:
            nxt = self._peek_next(repeats)
        except Exception as e:
            log.debug("bucketcache: cannot know the next epoch's order: %s", e)
        self._publish(epoch, order, nxt)
        done = self._post(epoch, order)
        if nxt is not None:
            self._post(epoch + 1, nxt)
        if done is not None and self.put_wait > 0:
            done.wait(self.put_wait)
        pos = self._meta
        for i, idx in enumerate(order):
            pos[_POS] = i + 1
            yield idx

    def _peek_next(self, repeats):
        s = self.sampler
        if hasattr(s, "next_epoch_order"):
            return [int(i) for i in s.next_epoch_order()]
        if hasattr(s, "set_epoch") and hasattr(s, "epoch") and hasattr(s, "seed"):
            c = copy.copy(s)
            if not repeats:
                c.set_epoch(s.epoch + 1)
            return [int(i) for i in c]
        gen = getattr(s, "generator", None)
        if isinstance(gen, torch.Generator):
            g = torch.Generator(device=gen.device)
            g.set_state(gen.get_state())
            c = copy.copy(s)
            c.generator = g
            return [int(i) for i in c]
        if isinstance(s, SequentialSampler):
            return list(range(len(s)))
        return None

    # ---- shared state --------------------------------------------------------

    def _publish(self, epoch, order, nxt):
        cap = self._order.shape[1]
        cur = order[:cap]
        m = self._meta
        m[_CUR_LEN] = 0
        m[_NEXT_LEN] = 0
        m[_POS] = 0
        m[_EPOCH] = epoch
        if cur:
            t = torch.tensor(cur, dtype=self._dtype)
            self._order[0, :len(cur)] = t
            n = len(cur)
            self._where.fill_(n)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "scatter_reduce() is in beta"
                self._where.scatter_reduce_(0, t.to(torch.int64),
                                            torch.arange(n, dtype=torch.int64),
                                            reduce="amin")
        m[_CUR_LEN] = len(cur)
        if nxt:
            nn = nxt[:cap]
            self._order[1, :len(nn)] = torch.tensor(nn, dtype=self._dtype)
            m[_NEXT_LEN] = len(nn)

    def _post(self, epoch, order):
        if self._poster is None:
            return None
        try:
            return self._poster.submit(epoch, [self.keys[i] for i in order])
        except Exception as e:
            log.debug("bucketcache: plan for epoch %d not queued: %s", epoch, e)
            return None

    # ---- lookahead -------------------------------------------------------------

    @property
    def epoch(self):
        """The epoch being (or last) iterated, as posted in plans."""
        return int(self._meta[_EPOCH])

    @property
    def position(self):
        """How many indices this epoch's iterator has yielded."""
        return int(self._meta[_POS])

    def next_keys(self, n=None, after=None):
        """The next n keys (default: lookahead) the job reads: those after
        key `after` in the current order when it is there (a worker passes
        the key it is reading), else after the sampler's position; running
        on into the next epoch's order when it is known. Never raises."""
        n = self.lookahead if n is None else n
        try:
            return self._next_keys(n, after)
        except Exception as e:
            log.debug("bucketcache: next_keys: %s", e)
            return []

    def _next_keys(self, n, after):
        m = self._meta.tolist()
        cur, nxt = m[_CUR_LEN], m[_NEXT_LEN]
        p = m[_POS]
        if after is not None:
            i = self._index_of(after)
            if i is not None:
                w = int(self._where[i])
                if w < cur:
                    p = w + 1
        if n <= 0:
            return []
        idx = self._order[0, p:cur][:n].tolist()
        if len(idx) < n and nxt:
            idx += self._order[1, :nxt][:n - len(idx)].tolist()
        return [self.keys[i] for i in idx]

    def _index_of(self, key):
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self.keys)}
        return self._index.get(key)

    # ---- plans -----------------------------------------------------------------

    @property
    def plan_stats(self):
        """plans_put, plans_failed, last_error, last_status (this process)."""
        return dict(self._poster.stats) if self._poster is not None else {}

    def flush(self, timeout=None):
        """Waits until the queued plan PUTs are done; True if they are."""
        return self._poster.flush(timeout) if self._poster is not None else True

    def __getstate__(self):
        d = self.__dict__.copy()
        d["_poster"] = None
        d["_index"] = None
        return d
