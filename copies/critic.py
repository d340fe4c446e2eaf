# minirl_lm 0.1.0: a self-contained copy of minirl_lm/values/critic.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/values/critic.py -o DIR
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

"""The token-MDP view: a tabular critic over prefixes, TD errors, GAE, per-token KL shaping.

Each token is an action `a_t = y_t` taken in the state `s_t = (x, y_<t)`, `t = 1, ..., |y|`;
the response ends in the terminal state `s_{|y|+1}`, whose value is 0. A critic `v(s)` is a
table over state ids, `values`, shape `(S,)`. Arrays are `(B, T)`; column `t - 1` holds step `t`.

Per-token KL shaping (the reward PPO-based RLHF optimizes): at every real token `t` of a
response,

```text
r_t = -beta (log pi(y_t|s_t) - log pi_ref(y_t|s_t)) + 1[t = |y|] R(x, y)      eq. (kl_shaped_reward)
```

TD error, GAE and Monte-Carlo returns, with `v(s_{|y|+1}) = 0` at the terminal state:

```text
delta_t = r_t + gamma v(s_{t+1}) - v(s_t)                                      eq. (td_error)
A_t = delta_t + gamma lam A_{t+1},  A_{|y|+1} = 0                              eq. (gae)
G_t = r_t + gamma G_{t+1},          G_{|y|+1} = 0                              eq. (mc_return)
```

Two identities the tests check: `lam = 1` gives `A_t = G_t - v(s_t)` (the sum telescopes),
`lam = 0` gives `A_t = delta_t`. With `v = 0`, `gamma = lam = 1` and the terminal reward alone,
`A_t = R(x, y)` at every token: one response-level weight on every token's score, the bandit
view. A nonzero `v`, `lam < 1`, `gamma < 1` or the per-token KL gives different tokens different
advantages: only the token MDP can say what those mean. GAE here is not whitened (verl whitens
it over the batch's tokens; the page "Where to go next" cites the code).

Critic fitting. The value loss over the real tokens of the batch, `M = sum(mask)` of them:

```text
loss_v = (1 / M) sum_{b,t} mask 0.5 (v(s_bt) - target_bt)^2                  eq. (value_loss)
dloss_v / dv[s] = (1 / M) sum over (b, t) with s_bt = s of mask (v(s_bt) - target_bt)
```

(a scatter into `s`), with targets `G_t` (Monte Carlo) or `r_t + gamma v(s_{t+1})` (TD(0), held
fixed: a semi-gradient). A response of length 0 (an all-padding row) gets no reward, no TD
error, no advantage, no loss.

Inputs are per-token arrays `(B, T)` with the mask, right-padded (a critic reads the rows as
prefixes); `values` is an `(S,)` table. Each public function declares its arguments with
`boundary`; its body is the math. Demonstrated by `pytest tests/values/test_critic.py`.

Names in the frameworks (`docs/next.md` keeps the versions and defaults):

```text
gae gamma, lam (1, 1)    verl algorithm.gamma, algorithm.lam (1.0, 1.0), adv_estimator=gae
                         (whitened); OpenRLHF --algo.advantage.gamma, --algo.advantage.lambd (1,
                         1), estimator gae (whitened over the batch's tokens); TRL GRPO: no
                         critic
clipped_value_loss clip  verl critic.cliprange_value (0.5); OpenRLHF --critic.value_clip (0.5)
per_token_rewards        verl algorithm.use_kl_in_reward; OpenRLHF the default (the KL in the
                         reward)
```
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = [
    "per_token_rewards",
    "td_errors",
    "gae",
    "monte_carlo_returns",
    "value_loss",
    "fit_values",
    "clipped_value_loss",
]

ACTIONS = "(mask: every token of the row, action_mask: the trained ones)"
COMPACT = "minirl_lm.multiturn.env.action_view to compact the rows (scatter puts results back)"
GAE_ACTIONS, RETURNS_ACTIONS = (
    "minirl_lm.multiturn.values.gae_actions",
    "minirl_lm.multiturn.values.returns_actions",
)


def _states_in_table(states, values):
    """Every state id indexes the `(S,)` table."""
    if states.max() >= values.size:
        return f"states: expected ids < {values.size} (the table's size), got max {states.max()}"


def per_token_rewards(terminal_reward, logp, logp_ref, mask, beta):
    """KL-shaped per-token rewards `r_t`, eq. (kl_shaped_reward).

    The KL term is treated as data (no gradient through it), as in PPO-based RLHF.

    Args:
        terminal_reward: `(B,)` sequence rewards `R(x, y)`, added at each row's last real token.
        logp: `(B, T)` token log-probs under `pi`.
        logp_ref: `(B, T)` token log-probs under `pi_ref`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        beta: the KL coefficient, `>= 0`.

    Returns:
        `(B, T)` per-token rewards, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a non-finite reward (named after the function,
            with the range of its inputs).
    """
    u = log_ratio(logp, logp_ref, mask)  # (B, T), 0 at padding
    r = -beta * u  # (B, T) eq. (kl_shaped_reward)
    lengths = mask.sum(axis=1).astype(np.int64)  # (B,)
    rows = np.flatnonzero(lengths > 0)  # length 0: nothing at all
    r[rows, lengths[rows] - 1] += terminal_reward[rows]  # score at the last real token
    return r


def td_errors(values, states, rewards, mask, gamma=1.0):
    """TD errors `delta_t = r_t + gamma v(s_{t+1}) - v(s_t)`, eq. (td_error); `v(terminal) = 0`.

    Args:
        values: `(S,)` the critic's table `v`.
        states: `(B, T)` int state ids `s_t`.
        rewards: `(B, T)` per-token rewards `r_t`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        gamma: the discount, in `[0, 1]`.

    Returns:
        `(B, T)` TD errors, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a non-finite TD error (named after the function).
    """
    v = values[states] * mask  # (B, T) V(s_t), 0 at padding
    v_next = np.zeros_like(v)  # (B, T) V(s_{t+1})
    v_next[:, :-1] = v[:, 1:]  # 0 after the last real token
    return (rewards + gamma * v_next - v) * mask  # eq. (td_error)


def _discounted_sum(x, mask, c):
    """Eqs. (gae) and (mc_return) on read arrays: `out_t = x_t + c out_{t+1}`, 0 at padding."""
    out = np.zeros_like(x)  # (B, T)
    acc = np.zeros(x.shape[0])  # (B,) the sum from t+1 on
    for t in range(x.shape[1] - 1, -1, -1):  # right to left
        acc = (x[:, t] + c * acc) * mask[:, t]  # padding resets to 0
        out[:, t] = acc
    return out


def gae(deltas, mask, gamma=1.0, lam=1.0):
    """GAE advantages `A_t = delta_t + gamma lam A_{t+1}`, eq. (gae) (not whitened).

    Args:
        deltas: `(B, T)` TD errors, from `td_errors`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        gamma: the discount, in `[0, 1]`.
        lam: GAE's `lambda`, in `[0, 1]`.

    Returns:
        `(B, T)` advantages, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a sum beyond float64 (named after the function).
    """
    return _discounted_sum(deltas * mask, mask, gamma * lam)  # eq. (gae)


def monte_carlo_returns(rewards, mask, gamma=1.0):
    """Monte-Carlo returns `G_t = r_t + gamma G_{t+1}`, eq. (mc_return).

    Args:
        rewards: `(B, T)` per-token rewards `r_t`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        gamma: the discount, in `[0, 1]`.

    Returns:
        `(B, T)` returns, 0 at padding.

    Raises:
        ValueError: a bad argument (named), or a sum beyond float64 (named after the function).
    """
    return _discounted_sum(rewards * mask, mask, gamma)  # eq. (mc_return)


def value_loss(values, states, targets, mask):
    """Mean squared value error over real tokens and its gradient on the table, eq. (value_loss).

    An all-padding batch has loss 0 and gradient 0.

    Args:
        values: `(S,)` the critic's table `v`.
        states: `(B, T)` int state ids.
        targets: `(B, T)` regression targets.
        mask: `(B, T)` 0/1 float mask, right-padded.

    Returns:
        `(loss, dvalues)`: a float and the `(S,)` gradient.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or gradient (named after the
            function).
    """
    M = max(mask.sum(), 1.0)  # real tokens
    err = (values[states] - targets) * mask  # (B, T) V(s_t) - target_t
    loss = 0.5 * np.sum(err * err) / M  # eq. (value_loss)
    dvalues = np.zeros_like(values)  # (S,)
    np.add.at(dvalues, states, err / M)  # d/dV(s_t) = err / M, scattered
    return float(loss), dvalues


def fit_values(values, states, rewards, mask, *, gamma=1.0, lr=0.5, target="mc"):
    """One gradient step of the tabular critic on eq. (value_loss).

    Args:
        values: `(S,)` the critic's table `v` (not modified).
        states: `(B, T)` int state ids.
        rewards: `(B, T)` per-token rewards `r_t`.
        mask: `(B, T)` 0/1 float mask, right-padded.
        gamma: the discount, in `[0, 1]`.
        lr: the step size, `> 0`.
        target: `"mc"` regresses `v(s_t)` on `G_t`; `"td0"` on `r_t + gamma v(s_{t+1})` from
            the current table (held fixed).

    Returns:
        `(new_values, loss)`: the `(S,)` updated table and the loss before the step.

    Raises:
        ValueError: a bad argument (named), or a non-finite loss or step (a target beyond
            float64 makes the loss so), named after the function.
    """
    if target == "mc":
        y = monte_carlo_returns.core(rewards, mask, gamma)  # (B, T) eq. (mc_return)
    else:
        y = td_errors.core(values, states, rewards, mask, gamma) + values[states] * mask  # r + gamma V(s')
    loss, dvalues = value_loss.core(values, states, y, mask)  # eq. (value_loss)
    return values - lr * dvalues, loss


def clipped_value_loss(vpreds, values_old, returns, mask, clip):
    """PPO's clipped value loss over real tokens and its gradient, eq. (value_clip).

    ```text
    v_clip = clip(vpred, v_old - c, v_old + c)
    L = (1 / M) sum_{b,t} mask 0.5 max((vpred - G)^2, (v_clip - G)^2)
    dL/dvpred = (1 / M) (vpred - G)  where the first branch is the max (ties included),
                0                    where the clipped branch is strictly larger
    ```

    The clipped branch can only be strictly larger when vpred is outside the clip range, where
    `v_clip` is a constant: that is why its gradient is 0.

    Args:
        vpreds: `(B, T)` values predicted by the critic being trained.
        values_old: `(B, T)` values of the critic that scored the batch (data).
        returns: `(B, T)` targets G (data).
        mask: `(B, T)` 0/1 float mask, right-padded.
        clip: the range c, `> 0`.

    Returns:
        `(loss, dloss_dvpred)`: a float and the `(B, T)` gradient, 0 at padding; an all-padding
        batch gives `(0.0, 0)`. Scatter `dloss_dvpred` into a value table with
        `np.add.at(dvalues, states, d)`.

    Raises:
        ValueError: a bad argument (named), or a squared error beyond float64 (named after the
            function, with the range of its inputs).
    """
    G = returns  # (B, T) the targets
    M = max(mask.sum(), 1.0)
    v_clip = np.clip(vpreds, values_old - clip, values_old + clip)  # (B, T); a bound may be +-inf
    l1 = (vpreds - G) ** 2  # (B, T) unclipped
    l2 = (v_clip - G) ** 2  # (B, T) clipped
    loss = 0.5 * (np.maximum(l1, l2) * mask).sum() / M  # eq. (value_clip)
    dloss = np.where(l1 >= l2, vpreds - G, 0.0) * mask / M  # (B, T)
    return float(loss), dloss


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


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


def right_padded(shape, what, where):
    """A 0/1 float mask of `shape` whose rows are prefixes (1s then 0s), as `what` reads them; a
    mask with holes is refused, and the message says `where` such a mask goes."""
    mask = array(shape, values=(0.0, 1.0))

    def read(x, name, dims):
        m = mask(x, name, dims)
        rises = (m[:, 1:] > m[:, :-1]).any(axis=1)  # (B,) a 1 after a 0
        if rises.any():
            row = int(np.flatnonzero(rises)[0])
            col = int(np.flatnonzero(m[row, 1:] > m[row, :-1])[0]) + 1  # its first 1 after a 0
            shown = (
                f"is {m[row].astype(int).tolist()}" if m.shape[1] <= 20 else f"has a 1 after a 0 at column {col}"
            )
            raise ValueError(
                f"{name}: expected right padding (1s then 0s in each row) for {what}, row {row} {shown}; a "
                f"mask with holes (tool outputs) is accepted by the token-level objectives; here use {where}"
            )
        return m

    return read


def padded(what, where):
    """The relation form of `right_padded`, on an argument `mask` (B, T) already read."""
    read = right_padded("B T", what, where)

    def rule(mask):
        read(mask, "mask", {})  # raises, or the mask is right-padded

    return rule


def number(low=-np.inf, high=np.inf, low_open=False, integer=False, high_open=False):
    """A finite real number as a Python float (an int with `integer`) in `[low, high]`; an end is
    excluded with `low_open` or `high_open`."""
    noun = "an integer" if integer else "a number"
    show = lambda b: f"{b}" if isinstance(b, int) else f"{b:g}"  # noqa: E731  an int bound in full
    bounds = [f"{'>' if low_open else '>='} {show(low)}"] if low > -np.inf else []
    bounds += [f"{'<' if high_open else '<='} {show(high)}"] if high < np.inf else []

    def read(x, name, dims):
        if isinstance(x, bool) or not isinstance(x, numbers.Integral if integer else numbers.Real):
            raise TypeError(f"{name}: expected {'an integer' if integer else 'a real number'}, got {_show(x)}")
        try:
            v = int(x) if integer else float(x)
        except OverflowError:  # an int beyond float64
            v = np.inf
        if not integer and not np.isfinite(v):  # an int is finite however large
            raise ValueError(f"{name}: expected a finite number, got {x}"[:200])
        if (v <= low if low_open else v < low) or (v >= high if high_open else v > high):
            raise ValueError(f"{name}: expected {noun} {' and '.join(bounds)}, got {v}")
        return v

    return read


def one_of(options):
    """One of `options` (compared by equality; True is not 1)."""

    def read(x, name, dims):
        try:
            ok = not isinstance(x, bool) and x in set(options)
        except TypeError:
            raise TypeError(f"{name}: expected one of {list(options)}, got unhashable {_show(x)}") from None
        if not ok:
            raise ValueError(f"{name}: expected one of {list(options)}, got {x!r}"[:200])
        return x

    return read


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


POSITIVE = number(0.0, low_open=True)
NONNEGATIVE = number(0.0)


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

_PREFIXES = padded("the critic (values over prefixes)", f"{GAE_ACTIONS} {ACTIONS}, or {COMPACT}")
_GAE = padded("GAE (a sum over the later tokens)", f"{GAE_ACTIONS} {ACTIONS}")
_RETURNS = padded("the returns to go (a sum over the later tokens)", f"{RETURNS_ACTIONS} {ACTIONS}")
_LAST_TOKEN = padded("the terminal reward on the last real token", COMPACT)
UNIT = number(0.0, 1.0)  # a discount gamma or GAE's lambda, in [0, 1]
STATES = array("B T", integer=True, low=0)  # state ids into the critic's table
CRITIC = dict(mask=MASK, values=array("S"), states=STATES)  # the mask first: it fixes (B, T)
ON_PREFIXES = [_PREFIXES, _states_in_table]
REWARDS = dict(mask=MASK, terminal_reward=array("B"), logp=TOKENS, logp_ref=TOKENS, beta=NONNEGATIVE)
FIT = dict(rewards=TOKENS, gamma=UNIT, lr=POSITIVE, target=one_of(("mc", "td0")))
VALUE_CLIP = dict(mask=MASK, vpreds=TOKENS, values_old=TOKENS, clip=POSITIVE)

per_token_rewards = boundary(**REWARDS, where=[_LAST_TOKEN], returns="rewards")(per_token_rewards)

td_errors = boundary(**CRITIC, rewards=TOKENS, gamma=UNIT, where=ON_PREFIXES, returns="deltas")(td_errors)

gae = boundary(mask=MASK, deltas=TOKENS, gamma=UNIT, lam=UNIT, where=[_GAE], returns="advantages")(gae)

monte_carlo_returns = boundary(
    mask=MASK, rewards=TOKENS, gamma=UNIT, where=[_RETURNS], returns="returns"
)(monte_carlo_returns)

value_loss = boundary(**CRITIC, targets=TOKENS, where=ON_PREFIXES, returns="loss dvalues")(value_loss)

fit_values = boundary(**CRITIC, **FIT, where=ON_PREFIXES, returns="new_values loss")(fit_values)

clipped_value_loss = boundary(
    **VALUE_CLIP, args={"returns": TOKENS}, where=[_PREFIXES], returns="loss dloss_dvpred"
)(clipped_value_loss)
