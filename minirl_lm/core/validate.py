"""The boundary of the log-prob primitive, the tabular policy and the kernels' NumPy twins:
one bundle call per public function of `core/logprob.py` and `core/policy.py` (and the
exact-array checks the kernel entries use). Built on `core/checks.py`; NumPy only."""

import numpy as np

from minirl_lm.core.checks import _describe, finite_result, float_array, int_array, mask_array, same_shape


def exact_array(x, name, ndim, dtypes):
    """Raise unless ``x`` is a non-empty C-contiguous ndarray of ``ndim`` dimensions and one of
    ``dtypes`` (no conversion: a kernel reads the memory as it is); returns ``x``. A few
    attribute reads on the good path: the messages are composed only when one is raised."""
    if not isinstance(x, np.ndarray) or x.dtype not in dtypes:
        want = " or ".join(np.dtype(d).name for d in dtypes)
        if not isinstance(x, np.ndarray):
            raise TypeError(f"{name}: expected a numpy array of dtype {want}, got {type(x).__name__}")
        raise TypeError(
            f"{name}: expected dtype {want} (convert with np.ascontiguousarray(x, dtype=...)), got {x.dtype}"
        )
    if x.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, got shape {x.shape}")
    if 0 in x.shape:
        raise ValueError(f"{name}: expected every axis of length >= 1, got shape {x.shape}")
    if not x.flags.c_contiguous:
        raise ValueError(f"{name}: expected a C-contiguous array (np.ascontiguousarray), got strides {x.strides}")
    return x


def flag(x, name):
    """Return ``x`` if it is a bool (Python or NumPy), else a TypeError naming ``name``."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a bool (True or False), got {_describe(x)}")
    return bool(x)


def policy_batch(states, tokens, mask, S, V):
    """The (B, T) batch of a tabular policy with S states and V tokens: int ids in [0, S) and
    [0, V) at every position (padding too), the same shape, and a 0/1 mask (holes allowed: each
    token is gathered on its own); returned as C-contiguous int64, int64, float64 (the kernels
    read them by pointer)."""
    states = int_array(states, "states", ndim=2, low=0, high=S)
    tokens = int_array(tokens, "tokens", ndim=2, low=0, high=V)
    same_shape("states", states, "tokens", tokens)
    mask = mask_array(mask, "mask", shape=states.shape)
    return (np.ascontiguousarray(states), np.ascontiguousarray(tokens), np.ascontiguousarray(mask))


_NO_DLOGP = object()


def logit_rows(z, name="logits"):
    """Raise unless the checked float array ``z`` has a last axis of V >= 1 entries and a finite
    entry in every row (a row of -inf only has no softmax)."""
    if z.ndim < 1 or z.shape[-1] == 0:
        raise ValueError(f"{name}: expected a last axis of V >= 1 entries, got shape {z.shape}")
    dead = ~np.isfinite(z).any(axis=-1)
    if dead.any():
        idx = tuple(int(i) for i in np.argwhere(dead)[0])
        raise ValueError(
            f"{name}: expected a finite entry in every row (-inf everywhere has no "
            f"softmax), got {int(dead.sum())} all -inf rows, the first at {idx}"
        )
    return z


def logits_any(logits):
    """Logits (..., V) of any shape, non-empty, -inf allowed, a finite entry in every row."""
    z = float_array(logits, "logits", allow_neginf=True)
    if z.size == 0:
        raise ValueError(f"logits: expected a non-empty array, got shape {z.shape}")
    return logit_rows(z)


def logits_batch(logits, tokens, mask, dlogp=_NO_DLOGP):
    """(logits (B, T, V), tokens (B, T) ids in [0, V), a 0/1 mask (B, T), holes allowed), and with
    ``dlogp`` also the upstream gradient (B, T), finite."""
    logits = logit_rows(float_array(logits, "logits", ndim=3, allow_neginf=True))
    B, T, V = logits.shape
    tokens = int_array(tokens, "tokens", ndim=2, shape=(B, T), low=0, high=V)
    mask = mask_array(mask, "mask", shape=(B, T))
    if dlogp is _NO_DLOGP:
        return logits, tokens, mask
    dlogp = float_array(dlogp, "dlogp", ndim=2)
    same_shape("tokens", tokens, "dlogp", dlogp)
    return logits, tokens, mask, dlogp


def values_mask(x, mask):
    """(x (B, T) float, -inf allowed; a 0/1 mask of its shape, holes allowed)."""
    x = float_array(x, "x", ndim=2, allow_neginf=True)
    return x, mask_array(mask, "mask", shape=x.shape)


def theta_table(theta, name="theta"):
    """A logit table `(S, V)`, `S, V >= 1`, float64, entries finite or `-inf` (an impossible
    token), every row with a finite entry (the policy's softmax needs one)."""
    theta = float_array(theta, name, ndim=2, allow_neginf=True)
    if theta.shape[0] < 1 or theta.shape[1] < 1:
        raise ValueError(f"{name}: expected shape (S, V) with S, V >= 1, got {theta.shape}")
    dead = ~np.isfinite(theta).any(axis=1)
    if dead.any():
        raise ValueError(
            f"{name}: expected at least one finite logit per row, row {int(np.argmax(dead))} is all -inf"
        )
    return theta


# ---- which argument an overflow names, when several enter one expression

# the longest draw a sampler allocates: an int64 array of it is addressable (np.empty(2**63)
# fails inside NumPy with "Maximum allowed dimension exceeded")
MAX_DRAWS = np.iinfo(np.intp).max // 8


def largest(**named):
    """The name of the argument of largest magnitude (the first on a tie): the one that drove an
    overflow of an expression they all enter."""
    best, size = None, -1.0
    for name, value in named.items():
        m = float(np.max(np.abs(value), initial=0.0))
        if best is None or m > size:
            best, size = name, m
    return best


def culprit(*stages):
    """The name of the first `(name, value)` stage whose value is not all finite (a number, an
    array or a tuple of them); the last argument, a bare name, when every stage is."""
    *pairs, last = stages
    for name, value in pairs:
        if not all(np.isfinite(np.asarray(v, dtype=np.float64)).all() for v in _leaves(value)):
            return name
    return last


def finite_stages(*stages):
    """`finite_result` on each `(value, name, what)` stage in turn (the order the values were
    computed in, so the first to overflow is named); returns the last stage's value."""
    for value, name, what in stages:
        finite_result(value, name, what)
    return stages[-1][0]


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves(v)]
    return [value]
