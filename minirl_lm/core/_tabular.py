"""The NumPy path of `TabularPolicy`: what it runs when Numba cannot be imported.

The same names and contracts as the Numba kernels it stands in for (`minirl_lm/kernels/tabular.py`
and the one-pass checks of `minirl_lm/kernels/validate.py`), tested equal to them to rounding
(`tests/core/test_policy.py`). It is what a standalone copy of `policy.py` holds. Like the kernels,
the log-probs and the backward compute one log-softmax per visited state (work `S_visited V + B T`,
no `(B, T, V)` array) and read nothing at the padding; a bad visited row gives NaN, silently (no
NumPy warning), for the policy's guards to name.
"""

import numpy as np

from minirl_lm.core.ops import log_softmax

# the names of the kernels this file stands in for (policy.py binds them by name)
__all__ = [
    "_tabular_logp",
    "_tabular_backward",
    "policy_batch_fast",
    "weights_fast",
    "_dead_row",
    "_abs_sum",
    "_dtheta_fault",
]


def _visited(theta, states, tokens, mask):
    """The real positions (B, T) bool, the visited rows (S_visited,), each real token's row among
    them and its token id (M,), and the log-softmax of the visited rows (S_visited, V)."""
    real = mask != 0.0  # (B, T)
    visited, row = np.unique(states[real], return_inverse=True)  # (S_visited,), (M,)
    with np.errstate(invalid="ignore", over="ignore"):  # a NaN or +inf row: NaN, named later
        lp = log_softmax(theta[visited])  # (S_visited, V) eq. (log_softmax)
    return real, visited, row, tokens[real], lp


def _tabular_logp(theta, states, tokens, mask):
    """logp (B, T), 0.0 at padding, and seq_logp (B,) of the table theta (S, V) at states (B, T)."""
    real, _, row, y, lp = _visited(theta, states, tokens, mask)
    logp = np.zeros(mask.shape)  # (B, T)
    logp[real] = lp[row, y]  # gather log pi(y_t | s_t)
    return logp, logp.sum(axis=1)  # eq. (factorization)


def _tabular_backward(theta, states, tokens, mask, w):
    """dtheta (S, V): the scatter of w[b, t] (onehot(y_bt) - pi(. | s_bt)) into row s_bt, summed
    per visited state (eq. (per_state_backward)); unvisited rows are 0."""
    real, visited, row, y, lp = _visited(theta, states, tokens, mask)
    g = w[real]  # (M,)
    Sv, V = lp.shape
    with np.errstate(invalid="ignore", over="ignore"):  # both sums in the order of the tokens
        onehot = np.bincount(row * V + y, weights=g, minlength=Sv * V).reshape(Sv, V)  # (S_visited, V)
        c = np.bincount(row, weights=g, minlength=Sv)  # (S_visited,) c[s] = sum of w
        d = onehot - c[:, None] * np.exp(lp)  # (S_visited, V)  onehot part - c[s] pi(. | s)
    dtheta = np.zeros(theta.shape)  # (S, V)
    dtheta[visited] = d
    return dtheta


# ---- the policy's checks: without Numba, no one-pass fast path


def policy_batch_fast(states, tokens, mask, S, V):
    """False: the policy's relation `_in_table` reads the batch's values with NumPy."""
    return False


def weights_fast(w, shape):
    """False: the policy reads `dlogp` with `boundary.TOKENS` (a checked copy)."""
    return False


def _dead_row(theta, ids):
    """An id of ids (M,) whose row of theta (S, V) holds a NaN or +inf or no finite entry (the
    smallest such id), or -1."""
    rows = np.unique(ids)  # (S_visited,)
    t = theta[rows]  # (S_visited, V)
    bad = np.isnan(t).any(axis=1) | (t == np.inf).any(axis=1) | ~(t > -np.inf).any(axis=1)
    return int(rows[np.argmax(bad)]) if bad.any() else -1


def _abs_sum(w, mask):
    """sum of |w| over the real positions of w (B, T)."""
    with np.errstate(over="ignore"):
        return float(np.abs(w[mask != 0.0]).sum())


def _dtheta_fault(dtheta, states, tokens, mask, wsum):
    """True iff dtheta (S, V) holds a NaN or +-inf (every entry is read)."""
    return not np.isfinite(dtheta).all()
