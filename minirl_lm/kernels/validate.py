"""The validators of the public kernel entries: njit passes over (B, T) and the array checks.

The jitted cores trust their inputs: an id out of range reads outside the table, a shape
mismatch can crash the interpreter. The public entries (`kernels/__init__.py`) check, in O(B T)
(or O(N K)) work beside the O(B T V) of the kernel: types, dtypes, shapes, C-contiguity, 0/1
masks, ids in range at the real positions, finite weights; then they check the result (a NaN or
+inf logit, or an all -inf row, gives a NaN that reaches the gathered entry of every output row,
so an O(B T) look at those entries finds it).
"""

import numpy as np
from numba import njit


@njit(cache=True)
def _all_finite(x):
    """True iff every entry of the 1-D array x is finite (no fastmath: NaN must stay NaN)."""
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


@njit(cache=True)
def _bad_mask(mask):
    """Number of mask entries that are neither 0.0 nor 1.0 (one pass, O(B T))."""
    n = 0
    for b in range(mask.shape[0]):
        for t in range(mask.shape[1]):
            x = mask[b, t]
            n += not (x == 0.0 or x == 1.0)
    return n


@njit(cache=True)
def _bad_id(ids, mask, high):
    """Flat position b * T + t of the first id outside [0, high) at a real position
    (mask != 0), or -1 if none (O(B T))."""
    for b in range(ids.shape[0]):
        for t in range(ids.shape[1]):
            if mask[b, t] != 0.0 and (ids[b, t] < 0 or ids[b, t] >= high):
                return b * ids.shape[1] + t
    return -1


@njit(cache=True)
def _bad_value(x, mask):
    """True iff a real position (mask != 0) of x (B, T) is NaN or +-inf (O(B T))."""
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            if mask[b, t] != 0.0 and not np.isfinite(x[b, t]):
                return True
    return False


@njit(cache=True)
def _nan_at(x, mask):
    """True iff a real position (mask != 0) of x (B, T) is NaN (O(B T))."""
    for b in range(x.shape[0]):
        for t in range(x.shape[1]):
            if mask[b, t] != 0.0 and x[b, t] != x[b, t]:
                return True
    return False


@njit(cache=True)
def _nan_row(out, tokens, mask):
    """True iff a real row of out (B, T, V) has a NaN or +inf at its own token (O(B T))."""
    for b in range(out.shape[0]):
        for t in range(out.shape[1]):
            if mask[b, t] != 0.0:
                g = out[b, t, tokens[b, t]]
                if g != g or g == np.inf:
                    return True
    return False


def _array(x, name, ndim, dtypes):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array of dtype "
                        f"{' or '.join(np.dtype(d).name for d in dtypes)}, got {type(x).__name__}")
    if x.dtype not in [np.dtype(d) for d in dtypes]:
        raise TypeError(f"{name}: expected dtype {' or '.join(np.dtype(d).name for d in dtypes)}"
                        f" (convert with np.ascontiguousarray(x, dtype=...)), got {x.dtype}")
    if x.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, "
                         f"got shape {x.shape}")
    if 0 in x.shape:
        raise ValueError(f"{name}: expected every axis of length >= 1, got shape {x.shape}")
    if not x.flags.c_contiguous:
        raise ValueError(f"{name}: expected a C-contiguous array (np.ascontiguousarray), "
                         f"got strides {x.strides}")
    return x


def _batch(tokens, mask, shape, tokens_name="tokens"):
    """Check mask (B, T) float64 0/1 and tokens (B, T) int64 against ``shape``; returns the
    mask (0 at padding, 1 at the real positions)."""
    _array(mask, "mask", 2, (np.float64,))
    if mask.shape != shape:
        raise ValueError(f"mask: expected shape {shape}, got {mask.shape}")
    if _bad_mask(mask):
        raise ValueError("mask: expected only 0.0 and 1.0")
    _array(tokens, tokens_name, 2, (np.int64,))
    if tokens.shape != shape:
        raise ValueError(f"{tokens_name}: expected shape {shape} (that of mask), got {tokens.shape}")
    return mask


def _ids(x, real, name, high):
    at = _bad_id(x, real, high)
    if at != -1:
        raise ValueError(f"{name}: expected ids in [0, {high}) at the real positions, got "
                         f"{x.flat[at]} at {np.unravel_index(at, x.shape)}")


def _weights(w, real, shape):
    _array(w, "w", 2, (np.float64,))
    if w.shape != shape:
        raise ValueError(f"w: expected shape {shape} (that of mask), got {w.shape}")
    if _bad_value(w, real):
        raise ValueError("w: expected finite weights at the real positions, got NaN or inf")


def _dense_args(logits, tokens, mask):
    _array(logits, "logits", 3, (np.float64, np.float32))
    B, T, V = logits.shape
    real = _batch(tokens, mask, (B, T))
    _ids(tokens, real, "tokens", V)
    return real


def _no_nan_rows(logp, real, name):
    """Raise naming ``name`` if a real position's log-prob is NaN (a -inf one is a gathered
    -inf logit, documented; +inf cannot come from a row with a finite entry)."""
    if _nan_at(logp, real):
        raise ValueError(f"{name}: expected rows with a finite entry and no NaN or +inf at the "
                         f"real positions, got a row whose result is NaN")


def _out_check(out, logits):
    if not isinstance(out, np.ndarray) or out.dtype != logits.dtype or out.shape != logits.shape:
        raise ValueError(f"out: expected a {logits.dtype} array of shape {logits.shape}, got "
                         f"{getattr(out, 'dtype', type(out).__name__)} of shape "
                         f"{getattr(out, 'shape', None)}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out: expected a writeable C-contiguous array")
    if np.shares_memory(out, logits):
        raise ValueError("out: expected an array not sharing memory with logits")


def _dense_backward_checked(core, logits, tokens, mask, w, out):
    real = _dense_args(logits, tokens, mask)
    _weights(w, real, mask.shape)
    if out is None:
        out = np.empty_like(logits)                 # (B, T, V)
    else:
        _out_check(out, logits)
    core(logits, tokens, mask, w, out)
    if _nan_row(out, tokens, real):
        raise ValueError("logits: expected rows with a finite entry and no NaN or +inf at the "
                         "real positions, got a row whose result is NaN")
    return out


def _tabular_args(theta, states, tokens, mask):
    _array(theta, "theta", 2, (np.float64,))
    S, V = theta.shape
    _array(states, "states", 2, (np.int64,))
    real = _batch(tokens, mask, states.shape)
    _ids(states, real, "states", S)
    _ids(tokens, real, "tokens", V)
    return real


def _tabular_fwd(core, theta, states, tokens, mask):
    real = _tabular_args(theta, states, tokens, mask)
    logp, seq = core(theta, states, tokens, mask)
    _no_nan_rows(logp, real, "theta")
    return logp, seq


def _tabular_bwd(core, theta, states, tokens, mask, w):
    real = _tabular_args(theta, states, tokens, mask)
    _weights(w, real, mask.shape)
    dtheta = core(theta, states, tokens, mask, w)
    g = dtheta[states, tokens]                                    # (B, T) each token's own entry
    if _bad_value(g, real):
        with np.errstate(over="ignore"):
            name = "w" if not np.isfinite(np.abs(w[real != 0]).sum()) else "theta"
        raise ValueError(f"{name}: expected {'weights whose sums are finite' if name == 'w' else 'rows with a finite entry and no NaN or +inf'}, "
                         f"got a non-finite gradient")
    return dtheta


def _group_checked(core, r, *args):
    _array(r, "r", 2, (np.float64,))
    out = core(r, *args)
    if not _all_finite(out.reshape(-1)):
        raise ValueError("r: expected finite rewards whose group deviations are finite, got a "
                         "non-finite advantage")
    return out
