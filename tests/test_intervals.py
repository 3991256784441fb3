"""opgraph.intervals.innermost_segments: the innermost event at every instant of a thread,
checked against a stack sweep written out here on random nested input (numpy's way) and
overlapping input (its own sweep's)."""

from __future__ import annotations

import numpy as np

from opgraph.intervals import innermost_segments

LO, HI = -(2**62), 2**62


def _sweep(ts: np.ndarray, en: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reference: events by start (longer first), a stack of open events, an event that
    outlives the one it starts in cut at that one's end."""
    order = np.lexsort((-(en - ts), ts))
    s_l, e_l, o_l, stack, cur = [], [], [], [], LO
    for s, e, p in zip(ts[order].tolist() + [HI], en[order].tolist() + [HI], order.tolist() + [-1]):
        while stack and stack[-1][0] <= s:
            te, tp = stack.pop()
            if te > cur:
                s_l.append(cur), e_l.append(te), o_l.append(tp)
                cur = te
        if s > cur:
            s_l.append(cur), e_l.append(s), o_l.append(stack[-1][1] if stack else -1)
            cur = s
        if stack and e > stack[-1][0]:
            e = stack[-1][0]
        stack.append((e, p))
    return np.array(s_l, np.int64), np.array(e_l, np.int64), np.array(o_l, np.int64)


def _owner_at(seg: tuple[np.ndarray, np.ndarray, np.ndarray], t: np.ndarray) -> np.ndarray:
    s, _e, o = seg
    return o[np.searchsorted(s, t, side="right") - 1]


def _nested(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``n`` intervals that nest (children inside parents, touching siblings, repeats)."""
    st: list[int] = []
    en: list[int] = []

    def grow(lo: int, hi: int, depth: int) -> None:
        t = lo
        while t < hi and len(st) < n:
            a = int(rng.integers(t, hi + 1))
            b = int(rng.integers(a, hi + 1))
            st.append(a)
            en.append(b)
            if rng.random() < 0.2:    # the same interval twice
                st.append(a)
                en.append(b)
            if depth < 4 and b > a:
                grow(a, b, depth + 1)
            t = b if rng.random() < 0.7 else a
    grow(0, 100, 0)
    p = rng.permutation(len(st))
    return np.array(st, np.int64)[p], np.array(en, np.int64)[p]


def test_innermost_segments_match_the_stack_sweep() -> None:
    rng = np.random.default_rng(3)
    probe = np.arange(-2, 130)
    for trial in range(1500):
        n = int(rng.integers(0, 30))
        if trial % 3 == 0:   # any overlaps, empty intervals included
            ts = rng.integers(0, 50, n).astype(np.int64)
            en = ts + rng.integers(0, 20, n)
        else:
            ts, en = _nested(rng, n)
        got = innermost_segments(ts, en)
        assert np.array_equal(_owner_at(got, probe), _owner_at(_sweep(ts, en), probe)), (trial, ts, en)
        s, e, _ = got
        assert s[0] == LO and e[-1] == HI and np.array_equal(s[1:], e[:-1]) and (e > s).all()


def test_innermost_segments_by_hand() -> None:
    # A [0, 10) holds B [2, 5); C [4, 8) overlaps B partially (clock skew): cut at B's end
    s, e, o = innermost_segments(np.array([0, 2, 4]), np.array([10, 5, 8]))
    assert list(zip(s.tolist(), e.tolist(), o.tolist())) == [(LO, 0, -1), (0, 2, 0), (2, 4, 1), (4, 5, 2),
                                                              (5, 10, 0), (10, HI, -1)]
    # nested: the same answer with C inside B
    s, e, o = innermost_segments(np.array([0, 2, 4]), np.array([10, 5, 5]))
    assert list(zip(s.tolist(), e.tolist(), o.tolist())) == [(LO, 0, -1), (0, 2, 0), (2, 4, 1), (4, 5, 2),
                                                              (5, 10, 0), (10, HI, -1)]
    s, e, o = innermost_segments(np.empty(0, np.int64), np.empty(0, np.int64))
    assert (s.tolist(), e.tolist(), o.tolist()) == ([LO], [HI], [-1])
