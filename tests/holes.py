"""Compaction, the oracle of the hole tests: a batch whose rows have holes (0s between 1s of the
mask: tool outputs inside a response) against the same rows compacted (holes removed, the trained
tokens moved left in order, right-padded to the same width T).

`Pair` draws both from one generator: the real values of every trained token are shared, and the
positions that are not trained (holes, padding) hold different garbage in each batch, so a
function that read them would be caught. `back` scatters a compacted (B, T) result to the
columns of the hole batch (0 at its holes and padding); `same` compares two results.

Tolerance. A per-token result (a gradient that depends on its own token and on integer counts)
is compared bitwise. A sum over tokens adds the same terms in another order, or with zeros in
other places (NumPy's pairwise summation groups by position), so a loss, and a gradient that
goes through a row sum (GSPO's sequence ratio, the preference losses' `s` and `n`), is compared
to `RTOL = 1e-12` relative with an absolute floor of `RTOL`: a sum of n terms reordered moves
by at most about n ulp of the sum of their magnitudes, far below that for the batches drawn here
(n <= 45 terms; log-ratios within +-1.5 per token, so an exp of a sum stays relative to ~n ulp).
"""

import numpy as np

RTOL = 1e-12
GARBAGE = (-1e6, -37.5, 0.0, 2.5, 1e6)  # finite values at untrained positions (any may appear)


class Pair:
    """A (B, T) mask with holes and its compacted twin, from ``rng`` (every row a random 0/1
    pattern, so empty rows, full rows, leading 0s and holes all occur; no empty row with
    ``nonempty``)."""

    def __init__(self, rng, B, T, p=0.6, nonempty=False):
        self.rng = rng
        self.mask = (rng.random((B, T)) < p).astype(np.float64)  # (B, T) holes anywhere
        if nonempty:  # one trained token at least in each row (ORPO needs it)
            self.mask[np.arange(B), rng.integers(0, T, B)] = 1.0
        self.cols = [np.flatnonzero(m) for m in self.mask]  # trained columns of each row
        n = self.mask.sum(axis=1).astype(np.int64)  # (B,) trained tokens
        self.packed = (np.arange(T)[None, :] < n[:, None]).astype(np.float64)  # (B, T) right-padded
        self.B, self.T = B, T

    def arrays(self, real):
        """(hole batch, compacted batch) of a (B, T) array of real values: each trained token's
        value is ``real`` at its column; the untrained positions get independent garbage."""
        h = self._garbage()
        c = self._garbage()
        for b, cols in enumerate(self.cols):
            h[b, cols] = real[b, cols]
            c[b, : cols.size] = real[b, cols]
        return h, c

    def ints(self, real, high):
        """As `arrays` for integer ids in [0, high) (garbage ids in range)."""
        h = self.rng.integers(0, high, (self.B, self.T))
        c = self.rng.integers(0, high, (self.B, self.T))
        for b, cols in enumerate(self.cols):
            h[b, cols] = real[b, cols]
            c[b, : cols.size] = real[b, cols]
        return h, c

    def back(self, x):
        """A compacted (B, T) result scattered to the hole batch's columns, 0 elsewhere."""
        out = np.zeros((self.B, self.T))
        for b, cols in enumerate(self.cols):
            out[b, cols] = x[b, : cols.size]
        return out

    def _garbage(self):
        return self.rng.choice(GARBAGE, size=(self.B, self.T))


def close(a, b):
    """True iff a and b (floats or arrays) agree to RTOL relative, RTOL absolute."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= RTOL * (1.0 + np.abs(b))))


def same_token_grad(pair, g_holes, g_packed, exact):
    """The hole batch's per-token gradient is the compacted one scattered back: bitwise if
    ``exact``, else to RTOL, and exactly 0 at every untrained position either way."""
    want = pair.back(g_packed)
    assert (g_holes[pair.mask == 0] == 0).all(), "gradient at a hole or padding"
    if exact:
        assert np.array_equal(g_holes, want), np.abs(g_holes - want).max()
    else:
        assert close(g_holes, want), np.abs(g_holes - want).max()
