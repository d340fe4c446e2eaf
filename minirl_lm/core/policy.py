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

import numpy as np

from minirl_lm.boundary import MASK, TOKENS, boundary, finite, generator
from minirl_lm.core._tabular import (  # the NumPy path: the kernels' twins, bound below on first use
    _abs_sum,
    _dead_row,
    _dtheta_fault,
    _tabular_backward,
    _tabular_logp,
    policy_batch_fast,
    weights_fast,
)
from minirl_lm.core.ops import log_softmax
from minirl_lm.core.validate import id_array, logits

__all__ = ["softmax_table", "log_softmax_table", "TabularPolicy"]

THETA = logits("S V")  # (S, V) logits, -inf allowed, a finite entry per row
STATES = id_array("...")  # state ids of any shape, in [0, S): `_in_table`
BATCH_IDS = id_array("B T")  # (B, T) state or token ids, not copied; in range: `_in_table`


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


@boundary(theta=THETA, returns="probs")
def softmax_table(theta):
    """Row-wise softmax `pi(. | s)` of a logit table.

    Args:
        theta: `(S, V)` logits; `-inf` entries give probability 0, every row needs a finite
            entry.

    Returns:
        `(S, V)` probabilities, rows summing to 1.
    """
    return _softmax(theta)


@boundary(theta=THETA, returns=None)  # -inf where theta is -inf
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

    @boundary(theta=THETA, returns=None)
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
    @boundary(states=STATES, rng=generator, where=[_rows_of_table], returns=None)
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
    @boundary(states=BATCH_IDS, tokens=BATCH_IDS, mask=_batch_mask, where=[_in_table], returns=None)
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
    @boundary(
        states=BATCH_IDS, tokens=BATCH_IDS, mask=_batch_mask, dlogp=_upstream, where=[_in_table], returns=None
    )  # an overflow: checked below, in O(S + B T)
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
