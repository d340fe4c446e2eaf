"""Shared cases of the kernel tests (tests/kernels/): random batches and the norm-wise error.

Equality of a kernel and its NumPy twin is relative error <= 1e-12 measured norm-wise,
max |kernel - twin| / max |twin| (1e-6 for float32 logits, against the twin run on the same
numbers in float64); -inf entries must match exactly.
"""

import numpy as np

RTOL = 1e-12
RTOL32 = 1e-6


def rel_err(a, b):
    """max |a - b| / max |b| over the entries where b is finite (-inf must match exactly)."""
    a, b = np.asarray(a), np.asarray(b)
    assert np.array_equal(np.isneginf(a), np.isneginf(b))
    fin = np.isfinite(b)
    scale = max(np.abs(b[fin]).max(initial=0.0), 1e-300)
    return np.abs(a[fin] - b[fin]).max(initial=0.0) / scale


def case(seed, B=5, T=7, V=33, S=6, shift=0.0, neginf=False):
    """(theta (S, V), logits (B, T, V), states, tokens, mask, w (B, T)): a right-padded batch
    whose first row is full; with ``neginf`` some impossible tokens, never a whole row."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((S, V)) * 3 + shift  # (S, V)
    logits = rng.standard_normal((B, T, V)) * 3 + shift  # (B, T, V)
    if neginf:
        theta[rng.random((S, V)) < 0.3] = -np.inf
        theta[:, 0] = shift
        logits[rng.random((B, T, V)) < 0.3] = -np.inf
        logits[:, :, 0] = shift
    states = rng.integers(0, S, (B, T))  # (B, T)
    tokens = rng.integers(0, V, (B, T))  # (B, T)
    lengths = rng.integers(0, T + 1, B)
    lengths[0] = T
    mask = (np.arange(T) < lengths[:, None]).astype(float)  # (B, T)
    w = rng.standard_normal((B, T))  # (B, T)
    return theta, logits, states, tokens, mask, w


CASES = [
    dict(seed=0),
    dict(seed=1, V=1),
    dict(seed=2, V=1024, S=3),
    dict(seed=3, shift=1e4),
    dict(seed=4, neginf=True),
    dict(seed=5, B=1, T=1, V=2, S=1),
    dict(seed=6, V=17, T=40),
]
