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
import inspect

import numpy as np


# part 1: from minirl_lm/core/_tabular.py ------------------------------------------------------
#   The NumPy path of `TabularPolicy`: what it runs when Numba cannot be imported.


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


# part 2: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# minirl_lm/core/policy.py itself --------------------------------------------------------------


__all__ = ["softmax_table", "log_softmax_table", "TabularPolicy"]


def _batch_mask(x, name, dims):
    """A (B, T) float64 C-contiguous mask returned as it is (its 0/1 values are read by
    `_in_table`'s one pass), else `boundary.MASK` (a checked copy)."""
    if isinstance(x, np.ndarray) and x.dtype == np.float64 and x.flags.c_contiguous and x.shape == _bt(dims):
        return x
    return np.ascontiguousarray(MASK(x, name, dims))


def _upstream(x, name, dims):
    """dloss/dlogp: a finite (B, T) float64 array, as it is when it already is one, else
    `boundary.TOKENS` (a checked copy)."""
    return x if weights_fast(x, _bt(dims)) else np.ascontiguousarray(TOKENS(x, name, dims))


def _bt(dims):
    return (dims.get("B"), dims.get("T"))


def _in_table(self, states, tokens, mask):
    """Ids of the table's rows and columns at every position (padding too), a 0/1 mask (holes
    allowed): one jitted pass with Numba, else NumPy's."""
    if policy_batch_fast(states, tokens, mask, self.S, self.V):
        return None
    for name, ids, high in (("states", states, self.S), ("tokens", tokens, self.V)):
        if ids.min() < 0 or ids.max() >= high:
            bad = ids.min() if ids.min() < 0 else ids.max()
            return f"{name}: expected ids in [0, {high}) (padding too), got {bad}"
    if not ((mask == 0.0) | (mask == 1.0)).all():
        return f"mask: expected only 0 and 1, got value {mask[(mask != 0.0) & (mask != 1.0)][0]!r}"
    return None


def _rows_of_table(self, states):
    """State ids in [0, S)."""
    if states.size and (states.min() < 0 or states.max() >= self.S):
        bad = states.min() if states.min() < 0 else states.max()
        return f"states: expected ids in [0, {self.S}), got {bad}"
    return None


# ---- the Numba kernels, imported on first use
#
# Importing Numba takes ~0.3 s, more than a whole run of the chapter's toy (minirl_lm/tasks.py),
# which never calls a kernel. So where Numba is installed, each name above is held by a stand-in
# until one of them is called; that first call imports minirl_lm/kernels/ and binds every
# stand-in to its kernel (to its NumPy twin if the kernels cannot be imported after all). A
# stand-in is a `functools.partial`, not a function of this module: not one of its public names.

_TWINS = (_abs_sum, _dead_row, _dtheta_fault, _tabular_backward, _tabular_logp, policy_batch_fast, weights_fast)
_NUMPY_PATH = {f.__name__: f for f in _TWINS}


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
    return _softmax(theta)


def log_softmax_table(theta):
    """Row-wise log-softmax `log pi(. | s)` of a logit table.

    Args:
        theta: `(S, V)` logits; `-inf` entries stay `-inf`, every row needs a finite entry.

    Returns:
        `(S, V)` log-probabilities.
    """
    return log_softmax(theta)


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
        self._set(theta)

    @property
    def theta(self):
        """The `(S, V)` float64 C-contiguous logit table."""
        return self._theta

    @theta.setter
    def theta(self, value):
        checked = THETA(value, "theta", {})  # a bad table: refused, the old one kept
        self._set(value if value is self._theta else checked)  # `policy.theta -= step`: in place

    def _set(self, theta):
        self._theta = theta
        self.S, self.V = theta.shape

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
    def logp(self, states, tokens, mask):
        """Token log-probs and sequence log-probs, eq. (factorization).

        A token whose logit is `-inf` has log-prob `-inf` (only where it is gathered).

        Args:
            states: `(B, T)` int state ids `s_t` in `[0, S)`.
            tokens: `(B, T)` int token ids `y_t` in `[0, V)`.
            mask: `(B, T)` 0/1 float mask; holes allowed.

        Returns:
            `(logp, seq_logp)`: `logp` `(B, T)` the token log-probs `log pi(y_t | s_t)`, 0.0 at
            padding; `seq_logp` `(B,)` their masked sums `log pi(y | x)`.
        """
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
            mask: `(B, T)` 0/1 float mask; holes allowed.
            dlogp: `(B, T)` finite `dloss/dlogp`, as returned by an objective.

        Returns:
            `(S, V)` float64 `dtheta`; rows of unvisited states are 0.

        Raises:
            ValueError: a bad argument (named); a non-finite `dtheta` from finite `dlogp` (its
                sums per state overflow), named after the method with the range of `dlogp`.
        """
        dtheta = self._backward(states, tokens, mask, dlogp)
        if _dtheta_fault(dtheta, states, tokens, mask, _abs_sum(dlogp, mask)):  # O(S + B T), see there
            if _dead_row(self.theta, states[mask != 0.0]) != -1:
                raise ValueError(
                    "theta: expected rows with a finite entry and no NaN or +inf at the visited states "
                    "(the table was changed after construction), got a non-finite dtheta"
                )
            finite(
                dtheta,
                "TabularPolicy.backward",
                ["dtheta (sums of dlogp per state)"],
                {"dlogp": dlogp[mask != 0.0]},
            )
        return dtheta

    def _backward(self, states, tokens, mask, w):
        """Trusted core of ``backward`` (C-contiguous int64 ids in range, a 0/1
        float64 mask, finite float64 w of the same shape): no re-checking."""
        w = np.ascontiguousarray(w * mask)  # (B, T), zero at padding
        return _tabular_backward(self.theta, states, tokens, mask, w)


# input checks: from minirl_lm/core/validate.py ------------------------------------------------
#   The kinds core's functions share beyond `minirl_lm.boundary`'s: logits that may hold `-inf`


def logits(*shapes):
    """Logits: a float64 array (a fresh copy) of one of `shapes` ("..." first: any leading axes),
    the last axis V >= 1; entries finite or `-inf` (an impossible token), every row (last
    axis) with a finite entry (a row of `-inf` only has no softmax): `array`'s `neginf`."""

    def read(x, name, dims):
        ndim = np.ndim(x) if _regular(x) else 0  # else: the array kind says what came
        return array(*[_expand(s, ndim) for s in shapes], neginf=True)(x, name, dims)

    return read


def id_array(*shapes, empty=False):
    """Integer ids: an int64 C-contiguous array of one of `shapes` ("..." first: any leading
    axes)."""

    def read(x, name, dims):
        try:
            nd = np.ndim(x)
        except ValueError:  # ragged: the array kind says so
            nd = 1
        want = [_expand(s, nd).split() for s in shapes]
        if isinstance(x, np.ndarray) and x.dtype == np.int64 and x.flags.c_contiguous and (empty or x.size):
            for s in want:
                if len(s) == x.ndim and all(dims.get(k, n) == n for k, n in zip(s, x.shape)):
                    dims.update(zip(s, x.shape))
                    return x
        if _regular(x) and (np.asarray(x).dtype == bool or _holds_bool(x)):  # True is not an id
            raise TypeError(f"{name}: expected integer ids, got a bool in {_show(x)}"[:200])
        return array(*(" ".join(s) for s in want), integer=True, empty=empty)(x, name, dims)

    return read


def _regular(x):
    try:
        np.asarray(x)
    except (ValueError, TypeError, OverflowError):  # ragged, huge ints: the array kind says what
        return False
    return True


def _holds_bool(x):
    """A sequence (not an array) holding a bool among numbers (NumPy reads True as 1)."""
    if isinstance(x, (np.ndarray, str, bytes)):
        return False
    return any(isinstance(v, (bool, np.bool_)) for v in np.asarray(x, dtype=object).ravel())


def _show_validate(x):
    return f"array of dtype {x.dtype}" if isinstance(x, np.ndarray) else repr(x)


def _expand(shape, ndim):
    """`shape` with its "..." (if any) as the leading letters `_0 _1 ...` that make `ndim` axes."""
    rest = shape.split()
    lead = [f"_{i}" for i in range(max(ndim - len(rest) + 1, 0))] if "..." in rest else []
    return " ".join(a for k in rest for a in (lead if k == "..." else [k]))


# the declared boundary: from minirl_lm/boundary.py --------------------------------------------
#   The declared boundary: one engine applies the contracts each function declares beside it.
#   A declared function binds its arguments by keyword, reads each with its kind (a valid form
#   comes back converted, arrays as fresh float64 copies; anything else raises a TypeError or
#   ValueError starting with the argument's name), checks the relations, runs the body, and
#   refuses a non-finite result with one ValueError naming the function. `f.core` is the body.


def boundary(where=(), returns="", args=None, **kinds):
    """Declare the kinds of a function's arguments (`name=kind`), the relations between them
    (`where=[rule, ...]`) and the names of its results (`returns="loss grad"`)."""
    kinds = {**kinds, **(args or {})}

    def declare(f):
        sig = inspect.signature(f)
        rules = [(r, list(inspect.signature(r).parameters)) for r in where]

        @functools.wraps(f)
        def checked(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a, dims = bound.arguments, {}
            for name, read in kinds.items():
                a[name] = read(a[name], name, dims)
            for rule, params in rules:
                if (msg := rule(**{p: a[p] for p in params if p in a})) is not None:
                    raise ValueError(msg)
            with np.errstate(all="ignore"):
                out = f(*bound.args, **bound.kwargs)
            if returns is None:
                return out
            numeric = {n: a[n] for n in kinds if isinstance(a[n], (float, np.ndarray))}  # not ints, options
            return finite(out, f.__name__, returns.split(), numeric)

        checked.core, checked.kinds = f, dict(kinds)  # the body, and what it declares
        checked.returns = returns.split() if returns else None  # the results' names, if declared
        return checked

    return declare


def finite(out, fname, names, inputs):
    """`out` (a number, an array or a tuple of them) if every entry is finite, else the
    ValueError of step 6: `fname`, the results `names` that overflowed, the ranges of
    `inputs`."""
    leaves = [_flat(v) for v in (out if isinstance(out, tuple) else (out,))]  # one per result
    bad = [i for i, v in enumerate(leaves) if not np.isfinite(v).all()]
    if not bad:
        return out
    what = " and ".join(names[i] if i < len(names) else f"result {i}" for i in bad)
    kind = "NaN" if any(np.isnan(leaves[i]).any() for i in bad) else "inf"
    given = ", ".join(
        f"{n} in [{np.min(v):g}, {np.max(v):g}]" if np.ndim(v) else f"{n} = {v:g}"
        for n, v in inputs.items()
        if v is not None
    )
    raise ValueError(f"{fname}: expected a finite {what}, got {kind} (beyond float64) from {given}")


def _flat(v):
    """Every number of a result (a number, an array, or a tuple of them, nested) as one array."""
    if isinstance(v, (tuple, list)):
        return np.concatenate([_flat(u) for u in v]) if v else np.zeros(0)
    return np.asarray(v, dtype=np.float64).ravel()


def array(*shapes, values=None, low=None, high=None, low_open=False, integer=False, empty=False, neginf=False):
    """A float64 array (a fresh copy) of one of `shapes`, each a string of letters ("B T") or
    fixed lengths ("B 2"), its entries finite, among `values` if given, in `[low, high]` (or
    `(low, high]` with `low_open`)."""
    shapes = [s.split() for s in shapes]

    def fits(s, shape, dims):
        return len(s) == len(shape) and all(
            (int(k) == n) if k.isdigit() else dims.get(k, n) == n for k, n in zip(s, shape)
        )

    def read(x, name, dims):
        try:
            a = None if isinstance(x, (str, bytes)) else np.asarray(x)
        except (ValueError, TypeError, OverflowError):  # ragged nesting, huge ints
            a = None
        if a is None or a.dtype.kind not in ("iub" if integer else "fiub"):  # float, int, uint, bool
            noun = "an integer array" if integer else "a real-valued array"
            raise TypeError(f"{name}: expected {noun}, got {_show(x)}")
        a = np.array(a, dtype=np.int64 if integer else np.float64)  # a copy: the caller's is never written
        ok = [s for s in shapes if fits(s, a.shape, dims)]
        if not ok:
            want = " or ".join(str(tuple(dims.get(k, int(k) if k.isdigit() else k) for k in s)) for s in shapes)
            raise ValueError(f"{name}: expected shape {want.replace(chr(39), '')}, got {a.shape}")
        if 0 in a.shape and not empty:
            raise ValueError(
                f"{name}: expected a non-empty array (every axis of length >= 1), got shape {a.shape}"
            )
        dims.update((k, n) for k, n in zip(ok[0], a.shape) if not k.isdigit())
        all_finite = integer or np.isfinite(a).all()  # one pass on the good path
        if not all_finite and np.isnan(a).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(a).sum())} NaN entries")
        if not all_finite and (inf := np.isposinf(a) if neginf else np.isinf(a)).any():
            want = "finite values or -inf (no +inf)" if neginf else "finite values (no +-inf)"
            raise ValueError(f"{name}: expected {want}, got {int(inf.sum())} such entries")
        if neginf and not all_finite and (dead := np.isneginf(a).all(axis=-1)).any():  # -inf entries
            raise ValueError(
                f"{name}: expected a finite entry in every row (-inf everywhere has no softmax), got "
                f"{int(dead.sum())} all -inf rows, the first at {tuple(int(i) for i in np.argwhere(dead)[0])}"
            )
        if values is not None and not (among := functools.reduce(np.logical_or, [a == v for v in values])).all():
            want = " and ".join(f"{v:g}" for v in values)
            raise ValueError(f"{name}: expected only {want}, got value {a[~among].flat[0].item()!r}")
        if low is not None and a.size and ((a <= low) if low_open else (a < low)).any():
            raise ValueError(
                f"{name}: expected entries {'>' if low_open else '>='} {low:g}, got min {a.min().item()!r}"
            )
        if high is not None and a.size and (a > high).any():
            raise ValueError(f"{name}: expected entries <= {high:g}, got max {a.max().item()!r}")
        return a

    return read


def generator(rng, name, dims):
    """A `np.random.Generator`, the one source of every draw."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), got {_show(rng)}"
        )
    return rng


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

THETA = logits("S V")  # (S, V) logits, -inf allowed, a finite entry per row
STATES = id_array("...")  # state ids of any shape, in [0, S): `_in_table`
BATCH_IDS = id_array("B T")  # (B, T) state or token ids, not copied; in range: `_in_table`

softmax_table = boundary(theta=THETA, returns="probs")(softmax_table)

log_softmax_table = boundary(theta=THETA, returns=None)(log_softmax_table)  # -inf where theta is -inf

TabularPolicy.__init__ = boundary(theta=THETA, returns=None)(TabularPolicy.__init__)

TabularPolicy.sample = boundary(
    states=STATES, rng=generator, where=[_rows_of_table], returns=None
)(TabularPolicy.sample)

TabularPolicy.logp = boundary(
    states=BATCH_IDS, tokens=BATCH_IDS, mask=_batch_mask, where=[_in_table], returns=None
)(TabularPolicy.logp)

TabularPolicy.backward = boundary(
    states=BATCH_IDS, tokens=BATCH_IDS, mask=_batch_mask, dlogp=_upstream, where=[_in_table], returns=None
)(TabularPolicy.backward)  # an overflow: checked below, in O(S + B T)
