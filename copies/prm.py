# minirl_lm 0.1.0: a self-contained copy of minirl_lm/reward/prm.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/reward/prm.py -o DIR
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

"""Process reward models: a score per step (per turn) of a multi-turn episode, and its use as reward.

An outcome reward model scores a whole episode; a process reward model (PRM) scores each step.
On a `MultiTurnMDP` a step is a turn: the policy tokens up to the one that ends it (a call, EOS
or the length cap), so a step is the pair `(s, a)` of the state before that last token and the
token. The PRM here is tabular, a logit `r_phi(s, a)` per step, and its labels are Math-Shepherd's
hard estimates (Wang et al. 2024): a step is labelled with the outcome `o_b` in [0, 1] of the
episode it was taken in (a verifier's "the final answer is right"). Per episode `b` of weight
`w_b` and its steps `k`:

```text
loss = sum_b w_b sum_k [softplus(r_phi(s_k, a_k)) - o_b r_phi(s_k, a_k)] + l2 |r_phi|^2 / 2    eq. (prm_loss)
dloss/dr_phi(s, a) = sum over steps at (s, a) of w_b (sigma(r_phi(s, a)) - o_b) + l2 r_phi(s, a)
```

The fit is separable, one convex problem per step `(s, a)`: with `n = sum w_b` and
`k = sum w_b o_b` over the steps taken at `(s, a)`, the stationarity is

```text
n sigma(r) - k + l2 r = 0,      at l2 = 0:  p(s, a) = sigma(r) = k / n        eq. (prm_fit)
```

so with episodes weighted by their probability under the sampling policy `pi` the PRM is the
probability that the outcome is right given the step, the outcome's value `Q^pi(s, a)`. A step
never taken (`n = 0`) keeps `r = 0`, `p = 1/2`.

Used as a reward, per turn, eq. (prm_reward):

```text
direct:    r_k = p(s_k, a_k)                        a sum over turns: more turns, more reward
progress:  r_k = p(s_k, a_k) - p(s_{k-1}, a_{k-1}),  p(s_0, a_0) = 0
```

Progress telescopes, `sum_k r_k = p(last step)`, and the last step's label is the outcome's
conditional expectation given the whole observable episode; so with the exact fit (the episode
law in `weights`, `l2 = 0`) the soft optimum under progress rewards is the soft optimum under
the outcome (the rewards differ by a potential, Ng et al. 1999). Direct rewards pay for every
turn and move the optimum toward more turns. `process_env` builds the environment whose turn
rewards are these, so `multiturn/values.py` (`soft_optimum`, `policy_values`) runs on them.

Demonstrated by `python examples/reward_models.py`.

Names in the frameworks: none (TRL's and OpenRLHF's released wheels have outcome reward trainers
only; `docs/next.md`).
"""

import copy
import functools
import inspect
import numbers

import numpy as np


__all__ = ["prm_data", "prm_loss", "fit_prm", "process_rewards", "process_env"]


def _multiturn_env(env, name, dims):
    """A `MultiTurnMDP` (what is read of it); its table shape `(S, V)` binds the letters S, V."""
    env = has("a MultiTurnMDP", "children is_policy loglik p_obs S V W check()")(env, name, dims)
    dims.update(S=env.S, V=env.V)
    return env


def _episodes_of_env(env, ep):
    """`ep` is a batch of `env`'s episodes: `MultiTurnMDP.check` raises naming what is not."""
    env.check(ep)


def _one_outcome_per_episode(ep, outcome):
    """One outcome label per episode of `ep`."""
    if outcome.shape[0] != ep.mask.shape[0]:
        return f"outcome: expected shape ({ep.mask.shape[0]},), one label per episode of ep, got {outcome.shape}"


def _steps_in_table(states, tokens, r_phi=None, env=None):
    """Every step `(s, a)` is a cell of the `(S, V)` table (`r_phi`'s, or the environment's)."""
    S, V = r_phi.shape if r_phi is not None else (env.S, env.V)
    for name, ids, n, what in (("states", states, S, "states"), ("tokens", tokens, V, "tokens")):
        if ids.max() >= n:
            return f"{name}: expected ids < {n} (the table's {what}), got max {int(ids.max())}"


def _ends_turn(env, s, a):
    kids = env.children[s]  # (reward, kind, next) per token
    _, kind, _ = kids[a]
    return kind != "turn"


def prm_data(env, ep, outcome):
    """The steps of each episode and their labels, Math-Shepherd's hard estimates.

    Args:
        env: a `MultiTurnMDP`.
        ep: `Episodes` of `env` (`rollout` or `all_episodes`); `env.check(ep)` must pass.
        outcome: `(B,)` each episode's outcome label in [0, 1].

    Returns:
        `(steps, labels)`, both `(B, T)`: 1.0 at the last policy token of each turn, and
        `outcome[b]` there (0 elsewhere).
    """
    on = ep.action_mask > 0  # (B, T)
    steps = np.zeros(ep.mask.shape)  # (B, T)
    for b, t in zip(*np.nonzero(on)):
        steps[b, t] = float(_ends_turn(env, int(ep.states[b, t]), int(ep.tokens[b, t])))
    return steps, steps * outcome[:, None]  # (B, T) eq. (prm_loss): every step gets the outcome


def _step_weights(steps, weights):
    B = steps.shape[0]
    w = np.full(B, 1.0 / B) if weights is None else weights  # (B,) the mean by default
    return w[:, None] * steps  # (B, T) each step's weight


def prm_loss(r_phi, states, tokens, steps, labels, weights=None):
    """The PRM's cross-entropy on the steps, eq. (prm_loss) at `l2 = 0`, and dloss/dr_phi.

    Args:
        r_phi: `(S, V)` logits, one per step `(s, a)`.
        states: `(B, T)` state ids.
        tokens: `(B, T)` token ids.
        steps: `(B, T)` 0/1, 1 at the steps (`prm_data`).
        labels: `(B, T)` labels in [0, 1] (read at the steps).
        weights: `(B,)` nonnegative episode weights, default `1/B`.

    Returns:
        `(loss, dr_phi)`: a float and the `(S, V)` gradient.
    """
    r = r_phi[states, tokens]  # (B, T)
    c = _step_weights(steps, weights)  # (B, T)
    loss = float((c * (np.logaddexp(0.0, r) - labels * r)).sum())  # eq. (prm_loss)
    g = c * (sigmoid(r) - labels)  # (B, T) d/dr = sigma(r) - o
    dr_phi = np.zeros_like(r_phi)  # (S, V)
    np.add.at(dr_phi, (states, tokens), g)  # scatter: a step taken twice accumulates
    return loss, dr_phi


def fit_prm(env, states, tokens, steps, labels, weights=None, l2=0.0):
    """The minimizer of eq. (prm_loss) over the table, eq. (prm_fit), as probabilities.

    Args:
        env: the `MultiTurnMDP` (its table shape `(S, V)`).
        states: `(B, T)` state ids.
        tokens: `(B, T)` token ids.
        steps: `(B, T)` 0/1 steps (`prm_data`).
        labels: `(B, T)` labels in [0, 1].
        weights: `(B,)` nonnegative episode weights, default `1/B` (the law of the episodes: exact).
        l2: the ridge coefficient `>= 0` on the logits.

    Returns:
        `(S, V)` `p(s, a) = sigma(r_phi(s, a))`; `1/2` where no step was taken.
    """
    c = _step_weights(steps, weights)  # (B, T)
    n, k = np.zeros((env.S, env.V)), np.zeros((env.S, env.V))
    np.add.at(n, (states, tokens), c)  # (S, V) eq. (prm_fit): the weight of each step
    np.add.at(k, (states, tokens), c * labels)  # (S, V) and of its right outcomes
    if l2 == 0.0:
        return np.where(n > 0, k / np.where(n > 0, n, 1.0), 0.5)  # eq. (prm_fit) at l2 = 0
    lo, hi = -n / l2, n / l2  # f(lo) <= 0 <= f(hi) for f(r) = n sigma(r) - k + l2 r
    for _ in range(2200):  # bisection: f increases; 2 n / l2 < 2^1025 halves to neighbours in < 2200
        mid = (lo + hi) / 2
        if np.all((mid == lo) | (mid == hi)):  # every lo, hi adjacent doubles: converged
            break
        up = n * sigmoid(mid) - k + l2 * mid > 0
        lo, hi = np.where(up, lo, mid), np.where(up, mid, hi)
    return sigmoid((lo + hi) / 2)  # n / l2 beyond float64: NaN, reported by the boundary


def process_rewards(env, p_step, mode="progress"):
    """Per-step rewards `(S, V)` of eq. (prm_reward) from the PRM's `p_step`; 0 inside turns.

    Args:
        env: a `MultiTurnMDP`.
        p_step: `(S, V)` step scores in [0, 1] (`fit_prm`).
        mode: `"direct"` or `"progress"`.

    Returns:
        `(S, V)` rewards in `[-1, 1]`, nonzero only at the steps `(s, a)` that end a turn.
    """
    prev = np.zeros(env.S)  # p of the step before each policy state, 0 at the root
    out = np.zeros((env.S, env.V))  # (S, V)
    for s in np.flatnonzero(env.is_policy):  # ids: a parent before its children
        for a, (_, kind, nxt) in enumerate(env.children[s]):
            if kind == "turn":
                prev[nxt] = prev[s]
                continue
            out[s, a] = p_step[s, a] - (prev[s] if mode == "progress" else 0.0)  # eq. (prm_reward)
            if kind == "env":
                for _, _, s2 in nxt:
                    prev[s2] = p_step[s, a]
    return out


def process_env(env, p_step, mode="progress", extra=None):
    """A copy of `env` whose turn rewards are the PRM's, eq. (prm_reward), plus `extra`.

    The PRM sees the observable prefix, not the hidden world: each turn's reward is the same in
    every world. The copy's `children` (what `rollout`, `all_episodes` and `multiturn/values.py`
    read) carry the new rewards; `env` is not changed. The rewards are finite: `extra` plus a
    number in `[-1, 1]`.

    Args:
        env: a `MultiTurnMDP`.
        p_step: `(S, V)` step scores in [0, 1].
        mode: `"direct"` or `"progress"`.
        extra: `(S, V)` a reward added at each step (a call's price), default 0.

    Returns:
        a `MultiTurnMDP`.
    """
    r = process_rewards.core(env, p_step, mode) + (0.0 if extra is None else extra)  # (S, V)
    new = copy.copy(env)
    new.children = {
        s: [
            (np.zeros(env.W) if kind == "turn" else np.full(env.W, r[s, a]), kind, nxt)
            for a, (_, kind, nxt) in enumerate(kids)
        ]
        for s, kids in env.children.items()
    }
    return new


# part 1: from minirl_lm/core/ops.py -----------------------------------------------------------
#   The small pieces every objective shares, one definition each.


def sigmoid(z):
    """`sigma(z) = exp(-softplus(-z))`: no overflow at either tail."""
    return np.exp(-np.logaddexp(0.0, -z))


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


def optional(of):
    """None, or a value of the kind `of`."""
    return lambda x, name, dims: None if x is None else of(x, name, dims)


def has(what, members):
    """Any object with `members`, a string of names (`"logp() theta"`: `logp()` a method, `theta`
    an attribute), whatever its type: what the body uses of it; `what` says what fits."""
    members = members.split()

    def lacks(x, m):
        return not callable(getattr(x, m[:-2], None)) if m.endswith("()") else not hasattr(x, m)

    def read(x, name, dims):
        if missing := [m.rstrip("()") for m in members if lacks(x, m)]:
            raise TypeError(
                f"{name}: expected {what} (with {', '.join(members)}), "
                f"got {type(x).__name__} without {', '.join(missing)}"
            )
        return x

    return read


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


NONNEGATIVE = number(0.0)


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

IDS = array("B T", integer=True, low=0)  # a state's or a token's id at each position
STEPS = dict(
    steps=MASK,  # 1 at the steps (prm_data)
    states=IDS,
    tokens=IDS,
    labels=array("B T", low=0.0, high=1.0),
    weights=optional(array("B", low=0.0)),  # episode weights; None: 1/B each
)
P_STEP = dict(env=_multiturn_env, p_step=array("S V", low=0.0, high=1.0), mode=one_of(("direct", "progress")))
EPISODES = has("an Episodes batch (rollout or all_episodes)", "states tokens mask action_mask rewards")

prm_data = boundary(
    env=_multiturn_env,
    ep=EPISODES,
    outcome=array("B", low=0.0, high=1.0),
    where=[_episodes_of_env, _one_outcome_per_episode],
    returns="steps labels",
)(prm_data)

prm_loss = boundary(r_phi=array("S V"), **STEPS, where=[_steps_in_table], returns="loss dr_phi")(prm_loss)

fit_prm = boundary(env=_multiturn_env, **STEPS, l2=NONNEGATIVE, where=[_steps_in_table], returns="p_step")(fit_prm)

process_rewards = boundary(**P_STEP, returns="rewards")(process_rewards)

process_env = boundary(**P_STEP, extra=optional(array("S V")), returns=None)(process_env)  # returns an environment
