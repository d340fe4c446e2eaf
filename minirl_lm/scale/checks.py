"""The boundary of the real-vocabulary part: the bundles of `scale/bigvocab.py` (hidden
states, the head, the chunk size, and what a user's `loss_fn` returns). Built on
`core/checks.py`; NumPy only."""

import numbers

import numpy as np

from minirl_lm.core.checks import (
    _NOT_GIVEN,
    _asarray,
    _float,
    callable_check,
    cells,
    float_array,
    int_array,
    int_scalar,
)


# -- log-probs from hidden states (minirl_lm/scale/bigvocab.py)
def _float_matrix(x, name, dtype=None):
    """A 2-D float32/float64 NumPy array (no list form, no silent cast), finite, and max|x|:
    read with max and min, so no (N, d) temporary."""
    if not isinstance(x, np.ndarray) or x.dtype not in (np.float32, np.float64):
        got = f"{x.dtype} array" if isinstance(x, np.ndarray) else type(x).__name__
        raise TypeError(f"{name}: expected a float32 or float64 numpy array, got {got}")
    if dtype is not None and x.dtype != dtype:
        raise TypeError(
            f"{name}: expected the dtype of h ({dtype}), got {x.dtype} (no silent cast: convert one of them)"
        )
    if x.ndim != 2:
        raise ValueError(f"{name}: expected 2 dimensions, got shape {x.shape}")
    hi, lo = (float(x.max()), float(x.min())) if x.size else (0.0, 0.0)  # no temporary
    if not (np.isfinite(hi) and np.isfinite(lo)):
        raise ValueError(f"{name}: expected finite values, got {int((~np.isfinite(x)).sum())} NaN or inf entries")
    return np.ascontiguousarray(x), max(hi, -lo)


def chunked_args(h, W, tokens, mask, chunk, loss_fn=_NOT_GIVEN):
    """chunked_logp's (and with loss_fn, chunked_loss_grad's) arguments: returns (h, W, tokens
    (N,) int64, real (R,) positions of the real tokens, chunk); every logit provably finite."""
    if loss_fn is not _NOT_GIVEN:
        callable_check(loss_fn, "loss_fn", 2, "loss_fn(logp, rows) -> (loss, dloss_dlogp)")
    h, h_max = _float_matrix(h, "h")
    W, W_max = _float_matrix(W, "W", h.dtype)
    N, d = h.shape
    if W.shape[0] < 1 or W.shape[1] != d:
        raise ValueError(f"W: expected shape (V, {d}) with V >= 1 (d from h), got {W.shape}")
    tokens = int_array(tokens, "tokens", ndim=1, shape=(N,), low=0, high=W.shape[0])
    if mask is None:
        real = np.arange(N)
    else:
        m = float_array(mask, "mask", shape=(N,))  # real, finite, (N,)
        if not ((m == 0) | (m == 1)).all():
            raise ValueError(f"mask: expected only 0 and 1, got {float(m[(m != 0) & (m != 1)][0])!r}")
        real = np.flatnonzero(m)
    chunk = int_scalar(chunk, "chunk", low=1)
    cells(min(chunk, real.size) * W.shape[0], "chunk", "a (chunk, V) buffer")
    bound = d * h_max * W_max  # >= every |logit|
    if bound > np.finfo(h.dtype).max / 2:
        raise ValueError(
            f"h: expected d * max|h| * max|W| <= {np.finfo(h.dtype).max / 2:.3g} "
            f"so that no logit can overflow {h.dtype}, got {bound:.3g}"
        )
    return h, W, tokens, real, chunk


def loss_fn_result(out, rows):
    """What a chunk's loss_fn returned, checked: (loss float, dloss_dlogp (R,) float64, C order).
    A loss that is not a real number (None, a string, a bool, an array of any shape but ()) is a
    TypeError, a gradient that is not a real (R,) array a TypeError or ValueError, NaN or inf a
    ValueError; each names loss_fn."""
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(f"loss_fn: expected it to return (loss, dloss_dlogp), got {type(out).__name__}")
    part, g = out
    part = part[()] if isinstance(part, np.ndarray) and part.ndim == 0 else part
    ga = None if isinstance(g, (str, bytes)) else _asarray(g, "loss_fn")
    if (
        isinstance(part, (bool, np.bool_))
        or not isinstance(part, numbers.Real)
        or ga is None
        or ga.dtype.kind not in "fiu"
    ):
        raise TypeError(
            f"loss_fn: expected a real loss and a real (R,) dloss_dlogp, got "
            f"{type(part).__name__} and {type(g).__name__}"
        )
    part, g = _float(part, "loss_fn", "a finite loss"), ga.astype(np.float64, copy=False)
    if g.shape != rows.shape:
        raise ValueError(f"loss_fn: expected dloss_dlogp of shape {rows.shape} (the chunk's logp), got {g.shape}")
    if not np.isfinite(g).all():
        raise ValueError(
            f"loss_fn: expected a finite loss and dloss_dlogp, got loss {part} and "
            f"{int((~np.isfinite(g)).sum())} non-finite gradient entries"
        )
    return part, np.ascontiguousarray(g)
