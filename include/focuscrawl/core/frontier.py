"""A priority frontier of candidates keyed by string: an indexed binary max-heap.

Seed 000 (*Real-time focused extraction of social media users*) section II-B (Algorithm 1, ``users_ranking``) and
section II's complexity discussion: the user ranking is updated every time a listing
shows new evidence and its top user is taken whenever an extractor is free, so both
operations must stay O(log n) as the candidates grow into the millions.

Unlike ``heapq`` with lazy deletion, a changed score moves the one entry in place, so
the heap never holds stale copies and its size is the number of live candidates.

Memory: a candidate costs one ``dict`` entry (key -> slot id) plus a few machine words
in ``array`` columns, not a Python object per node: measured (``bench/ranking_bench.py``,
key strings excluded) 116 bytes per candidate at 1M and 98 at 10M, against 167-268 for
``heapq`` + dict with lazy deletion, which also grows with every score change. The price is
pure-Python sifting: updates ~0.4-0.8x and pops ~1.6x the latency of the C ``heapq``.
Slot ids of popped or removed keys are recycled; at most 2**31 live keys.

Ties: among equal scores the candidate inserted first comes out first (a key's
sequence number is set when it enters the frontier and kept across score changes), so
runs are deterministic whatever the hash seed. A caller that knows a better arrival order
than its own call order passes ``order`` on insertion (a stream chooser: the position of the
user's first post in the log, the same for every consumer and after a restart).
"""

from __future__ import annotations

import heapq
import math
from array import array
from typing import Iterable, Iterator

import numpy as np


class _Frontier:
    """What both frontiers do alike, over their ``_slot`` (key -> slot of each live key), ``update``
    and ``remove``: size, membership, a batch of updates, removal if present, the tie-break sequence."""

    __slots__ = ()

    def __len__(self) -> int:
        return len(self._slot)

    def __bool__(self) -> bool:
        return bool(self._slot)

    def __contains__(self, key: object) -> bool:
        return key in self._slot

    def update_many(self, items: Iterable[tuple[str, float]]) -> None:
        """``update`` for each ``(key, score)``; convenient for a batch of pushed scores."""
        for key, score in items:
            self.update(key, score)

    def discard(self, key: str) -> None:
        """Remove ``key`` if present."""
        if key in self._slot:
            self.remove(key)

    def _sequence(self, order: int | None) -> int:
        """A new key's place among equal scores: ``order`` if given, else the next insertion sequence."""
        seq = self._next_seq
        self._next_seq = seq + 1
        return seq if order is None else int(order)


class PriorityFrontier(_Frontier):
    """Indexed binary max-heap: ``update``/``pop``/``remove`` in O(log n), ``peek``/``in`` in O(1).

    >>> f = PriorityFrontier()
    >>> f.update("alice", 0.2); f.update("bob", 0.9); f.update("alice", 1.5)
    >>> f.pop()
    ('alice', 1.5)
    >>> len(f), "bob" in f
    (1, True)
    """

    __slots__ = ("_slot", "_keys", "_seq", "_pos", "_heap_score", "_heap_slot", "_free", "_next_seq")

    def __init__(self, items: Iterable[tuple[str, float]] = ()) -> None:
        self._slot: dict[str, int] = {}        # key -> slot id
        self._keys: list[str | None] = []      # slot id -> key (None when free)
        self._seq = array("q")                 # slot id -> insertion sequence (tie-break)
        self._pos = array("i")                 # slot id -> index in the heap
        self._heap_score = array("d")          # heap order: score
        self._heap_slot = array("i")           # heap order: slot id
        self._free = array("i")                # recycled slot ids
        self._next_seq = 0
        for key, score in items:
            self.update(key, score)

    # -- queries ---------------------------------------------------------------------------

    def score_of(self, key: str) -> float:
        """The current score of ``key`` (``KeyError`` if it is not in the frontier)."""
        return self._heap_score[self._pos[self._slot[key]]]

    def peek(self) -> tuple[str, float]:
        """The top ``(key, score)`` without removing it (``IndexError`` when empty)."""
        if not self._heap_slot:
            raise IndexError("peek from an empty PriorityFrontier")
        return self._keys[self._heap_slot[0]], self._heap_score[0]  # type: ignore[return-value]

    def top(self, k: int) -> list[tuple[str, float]]:
        """The ``k`` best ``(key, score)`` in pop order, without removing them: O(k log k).

        A best-first walk of the heap tree (a node's children are the only new candidates
        once it is taken), used by choosers that look beyond the single best candidate.
        """
        hs, hk, seq, keys = self._heap_score, self._heap_slot, self._seq, self._keys
        n = len(hk)
        out: list[tuple[str, float]] = []
        if n == 0 or k <= 0:
            return out
        todo = [(-hs[0], seq[hk[0]], 0)]
        while todo and len(out) < k:
            _, _, i = heapq.heappop(todo)
            out.append((keys[hk[i]], hs[i]))  # type: ignore[arg-type]
            for child in (2 * i + 1, 2 * i + 2):
                if child < n:
                    heapq.heappush(todo, (-hs[child], seq[hk[child]], child))
        return out

    def items(self) -> Iterator[tuple[str, float]]:
        """``(key, score)`` of every candidate, in heap (not sorted) order."""
        keys, scores = self._keys, self._heap_score
        for i, slot in enumerate(self._heap_slot):
            yield keys[slot], scores[i]  # type: ignore[misc]

    # -- changes ---------------------------------------------------------------------------

    def update(self, key: str, score: float, order: int | None = None) -> None:
        """Insert ``key`` with ``score``, or change its score if present.

        ``order`` (insertion only, a signed 64-bit int): the key's place among equal scores,
        lower first, instead of the insertion sequence.
        """
        score = float(score)
        if math.isnan(score):
            raise ValueError(f"score of {key!r} is NaN; a frontier needs comparable scores")
        slot = self._slot.get(key)
        if slot is None:
            self._insert(key, score, order)
            return
        i = self._pos[slot]
        old = self._heap_score[i]
        self._heap_score[i] = score
        if score > old:
            self._sift_up(i)
        elif score < old:
            self._sift_down(i)

    def pop(self) -> tuple[str, float]:
        """Remove and return the top ``(key, score)`` (``IndexError`` when empty)."""
        if not self._heap_slot:
            raise IndexError("pop from an empty PriorityFrontier")
        slot = self._heap_slot[0]
        key, score = self._keys[slot], self._heap_score[0]
        self._delete_at(0)
        self._release(key, slot)  # type: ignore[arg-type]
        return key, score  # type: ignore[return-value]

    def remove(self, key: str) -> float:
        """Remove ``key`` and return its score (``KeyError`` if absent)."""
        slot = self._slot[key]
        i = self._pos[slot]
        score = self._heap_score[i]
        self._delete_at(i)
        self._release(key, slot)
        return score

    # -- internals -------------------------------------------------------------------------

    def _insert(self, key: str, score: float, order: int | None = None) -> None:
        seq = self._sequence(order)
        i = len(self._heap_slot)
        if self._free:
            slot = self._free.pop()
            self._keys[slot] = key
            self._seq[slot] = seq
            self._pos[slot] = i
        else:
            slot = len(self._keys)
            self._keys.append(key)
            self._seq.append(seq)
            self._pos.append(i)
        self._slot[key] = slot
        self._heap_score.append(score)
        self._heap_slot.append(slot)
        self._sift_up(i)

    def _release(self, key: str, slot: int) -> None:
        del self._slot[key]
        self._keys[slot] = None
        self._free.append(slot)

    def _delete_at(self, i: int) -> None:
        hs, hk = self._heap_score, self._heap_slot
        last_score, last_slot = hs.pop(), hk.pop()
        if i == len(hk):
            return
        hs[i] = last_score
        hk[i] = last_slot
        self._pos[last_slot] = i
        # The moved entry may belong above (higher score, or equal score inserted earlier) or below.
        self._sift_up(i)
        if self._pos[last_slot] == i:
            self._sift_down(i)

    def _sift_up(self, i: int) -> None:
        hs, hk, pos, seq = self._heap_score, self._heap_slot, self._pos, self._seq
        score, slot = hs[i], hk[i]
        my_seq = seq[slot]
        while i > 0:
            parent = (i - 1) >> 1
            ps = hs[parent]
            # Move up past a parent that is strictly lower, or equal but inserted later.
            if ps > score or (ps == score and seq[hk[parent]] < my_seq):
                break
            hs[i] = ps
            ps_slot = hk[parent]
            hk[i] = ps_slot
            pos[ps_slot] = i
            i = parent
        hs[i] = score
        hk[i] = slot
        pos[slot] = i

    def _sift_down(self, i: int) -> None:
        hs, hk, pos, seq = self._heap_score, self._heap_slot, self._pos, self._seq
        n = len(hk)
        score, slot = hs[i], hk[i]
        my_seq = seq[slot]
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            cs = hs[child]
            right = child + 1
            if right < n:
                rs = hs[right]
                if rs > cs or (rs == cs and seq[hk[right]] < seq[hk[child]]):
                    child, cs = right, rs
            if score > cs or (score == cs and my_seq < seq[hk[child]]):
                break
            hs[i] = cs
            c_slot = hk[child]
            hk[i] = c_slot
            pos[c_slot] = i
            i = child
        hs[i] = score
        hk[i] = slot
        pos[slot] = i


_NO_SEQ = 2**63 - 1  # the sequence number of a free slot: it loses every tie


class BlockFrontier(_Frontier):
    """A frontier for many updates and few pops: scores in flat arrays, the best of each block kept.

    Seed 000 (*Real-time focused extraction of social media users*) section II (complexity) and Algorithm 1: the chooser's
    ranking takes an update for every post seen in a listing and a pop only when an extractor is
    free, thousands of updates for each pop. An indexed heap pays O(log n) pure-Python sifting on
    every update (``PriorityFrontier``: ~21k updates/s at 10M candidates). Here an update
    is a dict lookup and an array store in O(1): the slots are cut into blocks of
    ``2**block_bits`` and only each block's best ``(score, slot)`` is kept, so an update touches
    its own block's best at most (raised: it may become the best; the best lowered or removed:
    the block is marked stale). ``pop``/``peek`` re-read the stale blocks and take the best block
    with numpy: O(n / block + block) per pop, some 10-30 us at 10M.

    The same contract as :class:`PriorityFrontier` (``update``/``pop``/``peek``/``top``/
    ``remove``/``discard``/``score_of``/``items``/``in``/``len``, the ``order`` tie-break, NaN
    refused), and the same order: score descending, then insertion sequence ascending.
    ``top(k)`` gathers the blocks whose best is at least the k-th best block's (it scans every
    block when scores are massively tied). Memory: a dict entry and 24 bytes of arrays per slot.

    >>> f = BlockFrontier()
    >>> f.update("alice", 0.2); f.update("bob", 0.9); f.update("alice", 1.5)
    >>> f.pop()
    ('alice', 1.5)
    >>> len(f), "bob" in f
    (1, True)
    """

    __slots__ = ("_slot", "_keys", "_score", "_seq", "_bmax", "_bbest", "_stale", "_free", "_next_seq", "_bits")

    def __init__(self, items: Iterable[tuple[str, float]] = (), block_bits: int = 12) -> None:
        self._bits = block_bits
        self._slot: dict[str, int] = {}        # key -> slot
        self._keys: list[str | None] = []      # slot -> key (None when free)
        self._score = array("d")               # slot -> score (-inf when free)
        self._seq = array("q")                 # slot -> insertion sequence (_NO_SEQ when free)
        self._bmax = array("d")                # block -> its best score (out of date while stale)
        self._bbest = array("q")               # block -> its best slot (-1: empty)
        self._stale: set[int] = set()          # blocks whose best must be re-read
        self._free: list[int] = []             # recycled slots
        self._next_seq = 0
        for key, score in items:
            self.update(key, score)

    # -- queries ---------------------------------------------------------------------------

    def score_of(self, key: str) -> float:
        """The current score of ``key`` (``KeyError`` if it is not in the frontier)."""
        return self._score[self._slot[key]]

    def peek(self) -> tuple[str, float]:
        """The top ``(key, score)`` without removing it (``IndexError`` when empty)."""
        if not self._slot:
            raise IndexError("peek from an empty BlockFrontier")
        slot = self._bbest[self._best_block()]
        return self._keys[slot], self._score[slot]  # type: ignore[return-value]

    def top(self, k: int) -> list[tuple[str, float]]:
        """The ``k`` best ``(key, score)`` in pop order, without removing them."""
        n = len(self._slot)
        if n == 0 or k <= 0:
            return []
        if k == 1:
            return [self.peek()]
        self._refresh()
        scores = np.frombuffer(self._score, dtype=np.float64)
        seqs = np.frombuffer(self._seq, dtype=np.int64)
        bbest = np.frombuffer(self._bbest, dtype=np.int64)
        live = np.flatnonzero(bbest >= 0)
        if len(live) >= k:
            # At least k candidates (the k best blocks' bests) score >= t, so the k best all do,
            # and every candidate scoring >= t lies in a block whose best scores >= t.
            bmax = np.frombuffer(self._bmax, dtype=np.float64)
            t = np.partition(bmax[live], len(live) - k)[len(live) - k]
            size = 1 << self._bits
            blocks = live[bmax[live] >= t]
            idx = (blocks[:, None] * size + np.arange(size)[None, :]).ravel()
            idx = idx[idx < len(scores)]
            idx = idx[scores[idx] >= t]
        else:
            idx = np.arange(len(scores))
            if k < len(idx):
                idx = idx[scores >= np.partition(scores, len(idx) - k)[len(idx) - k]]
        order = idx[np.lexsort((seqs[idx], -scores[idx]))]
        keys = self._keys
        out: list[tuple[str, float]] = []
        for slot in order.tolist():
            key = keys[slot]
            if key is not None:
                out.append((key, self._score[slot]))
                if len(out) == k:
                    break
        return out

    def items(self) -> Iterator[tuple[str, float]]:
        """``(key, score)`` of every candidate, in slot (not sorted) order."""
        scores = self._score
        for slot, key in enumerate(self._keys):
            if key is not None:
                yield key, scores[slot]

    # -- changes ---------------------------------------------------------------------------

    def update(self, key: str, score: float, order: int | None = None) -> None:
        """Insert ``key`` with ``score``, or change its score if present.

        ``order`` (insertion only, a signed 64-bit int below 2**63 - 1): the key's place among
        equal scores, lower first, instead of the insertion sequence.
        """
        score = float(score)
        if score != score:
            raise ValueError(f"score of {key!r} is NaN; a frontier needs comparable scores")
        slot = self._slot.get(key)
        if slot is None:
            self._insert(key, score, order)
            return
        scores = self._score
        old = scores[slot]
        scores[slot] = score
        block = slot >> self._bits
        if block in self._stale:
            return
        best = self._bbest[block]
        if slot == best:
            if score < old:
                self._stale.add(block)
            else:
                self._bmax[block] = score
            return
        top = self._bmax[block]
        if score > top or (score == top and self._seq[slot] < self._seq[best]):
            self._bmax[block] = score
            self._bbest[block] = slot

    def pop(self) -> tuple[str, float]:
        """Remove and return the top ``(key, score)`` (``IndexError`` when empty)."""
        if not self._slot:
            raise IndexError("pop from an empty BlockFrontier")
        block = self._best_block()
        slot = self._bbest[block]
        key, score = self._keys[slot], self._score[slot]
        self._release(key, slot)  # type: ignore[arg-type]
        self._stale.add(block)
        return key, score  # type: ignore[return-value]

    def remove(self, key: str) -> float:
        """Remove ``key`` and return its score (``KeyError`` if absent)."""
        slot = self._slot[key]
        score = self._score[slot]
        block = slot >> self._bits
        if self._bbest[block] == slot:
            self._stale.add(block)
        self._release(key, slot)
        return score

    # -- internals -------------------------------------------------------------------------

    def _insert(self, key: str, score: float, order: int | None) -> None:
        seq = self._sequence(order)
        if self._free:
            slot = self._free.pop()
            self._keys[slot] = key
            self._score[slot] = score
            self._seq[slot] = seq
        else:
            slot = len(self._keys)
            self._keys.append(key)
            self._score.append(score)
            self._seq.append(seq)
            if slot >> self._bits == len(self._bbest):
                self._bmax.append(-math.inf)
                self._bbest.append(-1)
        self._slot[key] = slot
        block = slot >> self._bits
        if block in self._stale:
            return
        best = self._bbest[block]
        top = self._bmax[block]
        if best < 0 or score > top or (score == top and seq < self._seq[best]):
            self._bmax[block] = score
            self._bbest[block] = slot

    def _release(self, key: str, slot: int) -> None:
        del self._slot[key]
        self._keys[slot] = None
        self._score[slot] = -math.inf
        self._seq[slot] = _NO_SEQ
        self._free.append(slot)

    def _refresh(self) -> None:
        """Re-read the best of every stale block."""
        if not self._stale:
            return
        scores = np.frombuffer(self._score, dtype=np.float64)
        seqs = np.frombuffer(self._seq, dtype=np.int64)
        size = 1 << self._bits
        for block in self._stale:
            lo = block * size
            part = scores[lo:lo + size]
            j = int(part.argmax())
            ties = np.flatnonzero(part == part[j])
            if len(ties) > 1:
                j = int(ties[seqs[lo:lo + size][ties].argmin()])
            slot = lo + j
            if self._keys[slot] is None:
                self._bmax[block], self._bbest[block] = -math.inf, -1
            else:
                self._bmax[block], self._bbest[block] = self._score[slot], slot
        self._stale.clear()

    def _best_block(self) -> int:
        """The block holding the top candidate (the frontier is not empty)."""
        self._refresh()
        bmax = np.frombuffer(self._bmax, dtype=np.float64)
        j = int(bmax.argmax())
        ties = np.flatnonzero(bmax == bmax[j])
        if len(ties) > 1:
            best = np.frombuffer(self._bbest, dtype=np.int64)[ties]
            ties, best = ties[best >= 0], best[best >= 0]
            j = int(ties[np.frombuffer(self._seq, dtype=np.int64)[best].argmin()])
        return j
