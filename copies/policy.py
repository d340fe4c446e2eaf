# minirl_lm 0.1.0: a self-contained copy of minirl_lm/core/policy.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/core/policy.py -o DIR
# Files named below (tests/, examples/, docs/, scripts/) are files of the minirl_lm repository,
# and a page named below (the page "...") is a page of the minirl_lm documentation site.
#
# MIT License
#
# Copyright (c) 2026 the minirl_lm authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.

"""The tabular softmax policy `pi_theta(y | s) = softmax(theta[s])_y`.

`theta` is a table of logits, one row per state (prefix) of the token MDP and one column per
token: shape `(S, V)`. It is the smallest policy for which every estimator of the chapter is
exact, and its gradient is the one derivative the whole library needs, eq. (logsoftmax_grad):

```text
d log pi(y | s) / d theta[s', v] = 1[s' = s] (1[v = y] - pi(v | s))
```

Backward, eq. (policy_backward). Given `g[b, t] = dloss / dlogp[b, t]` (`dloss_dlogp`) from
any objective, the chain rule sums over real tokens:

```text
dloss / dtheta[s, :] = sum over (b, t) with s_bt = s, mask = 1 of g[b, t] (onehot(y_bt) - pi(. | s))
```

Many tokens share a state (every response of a prompt starts in the prompt's state), so the
kernels compute each visited state's softmax once: with `c[s]` = the sum of `g` over its
tokens, row `s` gets (the scatter of `g` into column `y`) minus `c[s] pi(. | s)`.

Two paths, one result: with Numba installed, the fused kernels of `minirl_lm/kernels/`
(imported by the first call that needs one, so a run that never does, such as the chapter's
toy, never pays Numba's import); without it (and in a standalone copy of this file, which needs
NumPy only), their NumPy twins of `minirl_lm/core/_tabular.py`, equal to the kernels to
rounding (not bit for bit: the kernels have their own `exp`).

Entries of `theta` may be `-inf` (a token of probability zero); NaN and `+inf` are rejected,
and every row needs at least one finite entry. The frozen reference policy `pi_ref` is
`policy.copy()`: an independent table that training leaves alone.

Sampling is inverse-CDF with `rng.random`, the same arithmetic as `rng.choice(V, p=pi(.|s))`:
drawing `K` tokens from one state consumes the generator exactly as `rng.choice(V, K, p=...)`
does, so results match draw for draw.
"""

import functools
import importlib.util
import numbers

import numpy as np


__all__ = ["softmax_table", "log_softmax_table", "TabularPolicy"]


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/_tabular.py
#   The NumPy path of `TabularPolicy`: what it runs when Numba cannot be imported.
# ----------------------------------------------------------------------------------------------


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


def policy_batch_fast(states, tokens, mask, S, V):
    """False: the policy runs its full checks (`core/validate.py`'s `policy_batch`) on every batch."""
    return False


def weights_fast(w, shape):
    """False: the policy checks `dlogp` with `float_array`."""
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


# ----------------------------------------------------------------------------------------------
# part 2: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# ----------------------------------------------------------------------------------------------
# minirl_lm/core/policy.py itself
# ----------------------------------------------------------------------------------------------


# ---- the Numba kernels, imported on first use
#
# Importing Numba takes ~0.3 s, more than a whole run of the chapter's toy (minirl_lm/tasks.py),
# which never calls a kernel. So where Numba is installed, each name above is held by a stand-in
# until one of them is called; that first call imports minirl_lm/kernels/ and binds every
# stand-in to its kernel (to its NumPy twin if the kernels cannot be imported after all). A
# stand-in is a `functools.partial`, not a function of this module: not one of its public names.

_NUMPY_PATH = {
    f.__name__: f
    for f in (
        _abs_sum,
        _dead_row,
        _dtheta_fault,
        _tabular_backward,
        _tabular_logp,
        policy_batch_fast,
        weights_fast,
    )
}


def _bind_kernels():
    """The kernels by name (their NumPy twins if the kernels cannot be imported), each bound in
    place of its stand-in (a name rebound meanwhile, as a test does to pick a path, is left
    alone)."""
    try:  # minirl_lm/kernels/tabular.py and the one-pass checks of validate.py
        tabular = importlib.import_module("..kernels.tabular", __package__)
        checks = importlib.import_module("..kernels.validate", __package__)
        found = {name: getattr(tabular if name.startswith("_tabular") else checks, name) for name in _NUMPY_PATH}
    except ImportError:  # Numba found but not importable: the NumPy path, the same results to rounding
        found = _NUMPY_PATH
    for name, stand_in in _STAND_INS.items():
        if globals()[name] is stand_in:
            globals()[name] = found[name]
    return found


def _first_call(name, *args, **kwargs):
    """What a stand-in runs: bind the kernels, then call the one named ``name``."""
    return _bind_kernels()[name](*args, **kwargs)


def _numba_installed():
    """True iff this module sits in its package (a standalone copy has the NumPy path only) and
    `numba` can be found (without importing it)."""
    if not __package__:
        return False
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):  # blocked: sys.modules["numba"] = None, or a finder refusing it
        return False


_STAND_INS = {name: functools.partial(_first_call, name) for name in _NUMPY_PATH} if _numba_installed() else {}
globals().update(_STAND_INS)


def _softmax(theta):
    """Row-wise softmax of a checked (S, V) logit table (stable; -inf entries give 0)."""
    z = theta - theta.max(axis=1, keepdims=True)  # (S, V), max entry 0
    e = np.exp(z)  # (S, V)
    return e / e.sum(axis=1, keepdims=True)


def softmax_table(theta):
    """Row-wise softmax `pi(. | s)` of a logit table.

    Args:
        theta: `(S, V)` logits; `-inf` entries give probability 0, every row needs a finite
            entry.

    Returns:
        `(S, V)` probabilities, rows summing to 1.
    """
    return _softmax(theta_table(theta))


def log_softmax_table(theta):
    """Row-wise log-softmax `log pi(. | s)` of a logit table.

    Args:
        theta: `(S, V)` logits; `-inf` entries stay `-inf`, every row needs a finite entry.

    Returns:
        `(S, V)` log-probabilities.
    """
    return log_softmax(theta_table(theta))


class TabularPolicy:
    """The policy `pi_theta(y | s) = softmax(theta[s])_y` for a table `theta` of shape `(S, V)`.

    The policy owns `theta` and checks it when it is set: at construction and on every
    assignment `policy.theta = new` (a property: a bad table is refused and the old one kept).
    So `logp`, `backward` and `sample` call the kernels on a table they trust, and check only
    what they touch: the batch, the visited rows (`sample`), and after the kernel the few entries
    where a table edited in place into NaN or +inf would show (`policy.theta[...] = x` and
    `policy.theta -= step` write the array before the setter sees it, or without it).

    Args:
        theta: `(S, V)` logits (copied); entries may be `-inf`, every row needs a finite entry.

    Raises:
        ValueError: `theta` is not 2-D, holds NaN or `+inf`, or has a row of `-inf` only.
    """

    def __init__(self, theta):
        self.theta = theta

    @property
    def theta(self):
        """The `(S, V)` float64 C-contiguous logit table."""
        return self._theta

    @theta.setter
    def theta(self, value):
        if value is getattr(self, "_theta", None):  # `policy.theta -= step`: in place
            theta_table(value)
        else:  # a new table: checked, then an own copy
            value = np.array(theta_table(value), dtype=np.float64, order="C")
        self._theta = value
        self.S, self.V = value.shape

    def copy(self):
        """An independent copy: use it as the frozen reference `pi_ref`.

        Returns:
            A `TabularPolicy` with its own copy of `theta`.
        """
        return TabularPolicy(self.theta)

    def probs(self):
        """The probabilities `pi(. | s)` of every state.

        Returns:
            `(S, V)` probabilities.
        """
        return _softmax(self.theta)

    def log_probs(self):
        """The log-probabilities `log pi(. | s)` of every state.

        Returns:
            `(S, V)` log-probabilities.
        """
        return log_softmax(self.theta)

    # ---- sampling --------------------------------------------------------
    def sample(self, states, rng):
        """One token per entry of `states`, drawn with `rng`.

        Inverse CDF, as `rng.choice` does it: `cdf = cumsum(p) / cdf[-1]`, the token is the
        number of `cdf` entries `<= u`, `u ~ U[0, 1)`. Draws are made in the order of
        `states.ravel()`.

        Args:
            states: int state ids in `[0, S)`, any shape.
            rng: the `np.random.Generator` to draw from.

        Returns:
            int64 token ids, the shape of `states`.
        """
        rng_check(rng, "rng")
        states = int_array(states, "states", low=0, high=self.S)
        if states.size and _dead_row(self.theta, states.ravel()) != -1:
            raise ValueError(
                "theta: expected rows with a finite entry and no NaN (the table was changed after construction)"
            )
        return self._sample(states, rng)

    def _sample(self, states, rng):
        """Trusted core of ``sample`` (int64 ids in range, a Generator): no re-checking."""
        flat = states.ravel()  # (M,)
        u = rng.random(flat.size)  # (M,)
        if flat.size * self.V <= 1 << 22:  # small: a CDF row per draw
            cdf = np.cumsum(_softmax(self.theta[flat]), axis=1)  # (M, V)
            cdf /= cdf[:, -1:]
            out = (cdf <= u[:, None]).sum(axis=1)  # = searchsorted(cdf, u, 'right')
        else:  # large: one CDF per visited state
            visited, row = np.unique(flat, return_inverse=True)
            cdf = np.cumsum(_softmax(self.theta[visited]), axis=1)  # (S_visited, V)
            cdf /= cdf[:, -1:]
            out = np.empty(flat.size, np.int64)
            for i in range(visited.size):
                sel = row == i
                out[sel] = cdf[i].searchsorted(u[sel], side="right")
        return out.reshape(states.shape)

    # ---- forward: token log-probs ---------------------------------------
    def _check_batch(self, states, tokens, mask):
        if policy_batch_fast(states, tokens, mask, self.S, self.V):  # one jitted pass
            return states, tokens, mask
        return policy_batch(states, tokens, mask, self.S, self.V)  # converts, or raises

    def logp(self, states, tokens, mask):
        """Token log-probs and sequence log-probs, eq. (factorization).

        A token whose logit is `-inf` has log-prob `-inf` (only where it is gathered).

        Args:
            states: `(B, T)` int state ids `s_t` in `[0, S)`.
            tokens: `(B, T)` int token ids `y_t` in `[0, V)`.
            mask: `(B, T)` 0/1 float mask, right-padded.

        Returns:
            `(logp, seq_logp)`: `logp` `(B, T)` the token log-probs `log pi(y_t | s_t)`, 0.0 at
            padding; `seq_logp` `(B,)` their masked sums `log pi(y | x)`.
        """
        states, tokens, mask = self._check_batch(states, tokens, mask)
        logp, seq = self._logp(states, tokens, mask)
        if np.isnan(logp).any():  # theta edited into NaN / +inf rows
            raise ValueError(
                "theta: expected rows with a finite entry and no NaN or +inf "
                "(the table was changed after construction), got a NaN log-prob"
            )
        return logp, seq

    def _logp(self, states, tokens, mask):
        """Trusted core of ``logp`` (C-contiguous int64 ids in range, a 0/1 float64 mask)."""
        return _tabular_logp(self.theta, states, tokens, mask)

    # ---- backward: dloss/dlogp -> dloss/dtheta --------------------------
    def backward(self, states, tokens, mask, dlogp):
        """The gradient `dloss/dtheta` from `g = dloss/dlogp`, eq. (policy_backward).

        Padding contributes nothing whatever `dlogp` holds there. A real token of probability
        zero (logit `-inf`) gets the limit of its derivative, `g (1 - 0)`, in its own entry:
        finite, and `-inf` minus a finite step stays `-inf`.

        Args:
            states: `(B, T)` int state ids in `[0, S)`.
            tokens: `(B, T)` int token ids in `[0, V)`.
            mask: `(B, T)` 0/1 float mask, right-padded.
            dlogp: `(B, T)` finite `dloss/dlogp`, as returned by an objective.

        Returns:
            `(S, V)` float64 `dtheta`; rows of unvisited states are 0.

        Raises:
            ValueError: a non-finite `dtheta` (sums of `dlogp` per state overflow), named
                after `dlogp`; or a bad argument.
        """
        states, tokens, mask = self._check_batch(states, tokens, mask)
        w = dlogp if weights_fast(dlogp, states.shape) else float_array(dlogp, "dlogp", shape=states.shape)
        dtheta = self._backward(states, tokens, mask, w)
        if _dtheta_fault(dtheta, states, tokens, mask, _abs_sum(w, mask)):  # O(S + B T), see there
            finite_result(dtheta, "dlogp", "dtheta (sums of dlogp per state)")
        return dtheta

    def _backward(self, states, tokens, mask, w):
        """Trusted core of ``backward`` (C-contiguous int64 ids in range, a 0/1 right-padded
        float64 mask, finite float64 w of the same shape): no re-checking."""
        w = np.ascontiguousarray(w * mask)  # (B, T), zero at padding
        return _tabular_backward(self.theta, states, tokens, mask, w)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/validate.py
#   The boundary of the log-prob primitive, the tabular policy and the kernels' NumPy twins:
# ----------------------------------------------------------------------------------------------


def policy_batch(states, tokens, mask, S, V):
    """The (B, T) batch of a tabular policy with S states and V tokens: int ids in [0, S) and [0,
    V) at every position (padding too), the same shape, and a 0/1 mask (holes allowed: each
    token is gathered on its own); returned as C-contiguous int64, int64, float64 (the kernels
    read them by pointer)."""
    states = int_array(states, "states", ndim=2, low=0, high=S)
    tokens = int_array(tokens, "tokens", ndim=2, low=0, high=V)
    same_shape("states", states, "tokens", tokens)
    mask = mask_array(mask, "mask", shape=states.shape)
    return (np.ascontiguousarray(states), np.ascontiguousarray(tokens), np.ascontiguousarray(mask))


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


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it. ndim: required number of dimensions
    (None: any). shape: required shape; a None entry matches any length. finite: reject NaN
    and +-inf; with ``allow_neginf`` a -inf entry is allowed (log-probabilities of impossible
    tokens), NaN and +inf never are."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(x)}")
    arr = _asarray(x, name)
    if arr.dtype.kind not in "fiub":  # float, int, uint, bool
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(arr)}")
    arr = arr.astype(np.float64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if finite and not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(arr).sum())} NaN entries")
        bad = np.isposinf(arr) if allow_neginf else np.isinf(arr)
        if bad.any():
            what = "+inf" if allow_neginf else "+-inf"
            raise ValueError(f"{name}: expected finite values (no {what}), got {int(bad.sum())} such entries")
    return arr


def int_array(x, name, ndim=None, shape=None, low=None, high=None):
    """Return ``x`` as an int64 array of ids in ``[low, high)`` after checking it."""
    arr = _asarray(x, name)
    if arr.dtype.kind not in "iu":  # signed or unsigned integers
        raise TypeError(f"{name}: expected an integer array of ids, got {_describe(arr)}")
    arr = arr.astype(np.int64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: expected ids >= {low}, got min {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: expected ids < {high}, got max {arr.max()}")
    return arr


def mask_array(x, name, shape=None, prefix=None):
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted)."""
    arr = float_array(x, name, ndim=2, shape=shape)
    nonempty(arr, name)  # B >= 1 responses, T >= 1 positions
    binary = (arr == 0.0) | (arr == 1.0)
    if not binary.all():
        bad = arr[~binary]
        raise ValueError(f"{name}: expected only 0 and 1, got value {float(bad.flat[0])!r}")
    if prefix is None:
        return arr
    rises = arr[:, 1:] > arr[:, :-1]  # (B, T - 1): a 1 after a 0
    if rises.any():
        what, where = prefix
        row = int(np.nonzero(rises.any(axis=1))[0][0])
        raise ValueError(
            f"{name}: expected right padding (1s then 0s in each row) for {what}, "
            f"row {row} is {arr[row].astype(int).tolist()}; a mask with holes (tool outputs) "
            f"is accepted by the token-level objectives; here use {where}"
        )
    return arr


def same_shape(name_a, a, name_b, b):
    """Raise unless arrays ``a`` and ``b`` have the same shape (no broadcasting)."""
    for nm, x in ((name_a, a), (name_b, b)):
        if not isinstance(getattr(x, "shape", None), tuple):
            raise TypeError(f"{nm}: expected an array, got {_describe(x)}")
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {a.shape}, got {b.shape}")


def rng_check(rng, name):
    """Raise unless ``rng`` is a ``np.random.Generator``."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), got {_describe(rng)}"
        )
    return rng


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


def finite_result(value, name, what):
    """Return ``value`` (a number, an array, or a tuple of them, nested) if every entry is
    finite; else raise a ValueError naming ``name``, the argument that drove the overflow."""
    if not (isinstance(name, str) and isinstance(what, str)):
        raise TypeError(f"finite_result: expected name and what as strings, got {name!r}, {what!r}")
    parts = [value]
    while parts:
        v = parts.pop()
        if isinstance(v, (tuple, list)):
            parts.extend(v)
            continue
        if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_, np.ndarray)):
            try:
                v = float(v)  # an exact number (a Fraction) too
            except OverflowError:
                raise ValueError(
                    f"{name}: expected a value for which {what} is finite in "
                    f"float64, got one beyond float64's range"
                ) from None
        a = _asarray(v, name)
        if isinstance(v, (str, bytes)) or a.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected a number or an array of numbers, got {_describe(v)}")
        if not np.isfinite(a.astype(np.float64, copy=False)).all():
            kind = "NaN" if np.isnan(a).any() else "inf"
            raise ValueError(
                f"{name}: expected a value for which {what} is finite in float64, "
                f"got one that makes it {kind} (overflow)"
            )
    return value


def _asarray(x, name):
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:  # ragged nesting, huge ints
        raise TypeError(f"{name}: expected an array, got {_describe(x)} ({e})") from None


def _check_shape(arr, name, ndim, shape):
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, got shape {arr.shape}")
    if shape is not None:
        ok = len(shape) == arr.ndim and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = ", ".join("any" if s is None else str(s) for s in shape)
            want = f"({want},)" if len(shape) == 1 else f"({want})"  # as Python prints a tuple
            raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")
