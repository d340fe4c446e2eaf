# minirl_lm 0.1.0: a self-contained copy of minirl_lm/multiturn/values.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/multiturn/values.py -o DIR
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

"""Values with chance nodes: backward induction, the soft optimum, returns and GAE over actions.

Backward induction on the tree of a `MultiTurnMDP`. At a policy state s the world is unknown; its
posterior given the prefix is P(w | s) proportional to prior(w) prod_{spans in s} P(o | w) (the
policy's factors cancel). For an action a that ends a turn with reward r(w), eq. (chance_bellman):

    q(s, a) = sum_w P(w | s) r(w) + C(s, a)
    C(s, a) = v(s.a)                        if the turn goes on
            = 0                             if the episode ends
            = sum_o P(o | s.a) v(s.a.o)     after a call: a chance node, an expectation
    P(o | s.a) = sum_w P(w | s) P(o | w)

and the policy state backs up its actions one of two ways:

    v^pi(s) = sum_a pi(a | s) q(s, a)                                       policy evaluation
    v*(s)   = beta log sum_a pi_ref(a | s) exp(q(s, a) / beta)             eq. (soft_bellman)
    pi*(a | s) = pi_ref(a | s) exp((q(s, a) - v*(s)) / beta)

The soft optimum maximizes `J(pi) = E[R - beta sum_{action tokens} log(pi / pi_ref)]`; at a
chance node nothing is chosen, so the max becomes an expectation. The gap

```text
J(pi*) - J(pi) = beta KL(P_pi(tau) || P_pi*(tau)) >= 0
```

holds with the environment's factors cancelling in the ratio: it is the distance to the optimum
the example prints.

Returns and GAE over action tokens. Rewards sit on policy tokens; the recursion runs over the
action mask and skips the environment's tokens, carrying the running return, the next value and
the running advantage across an observation span, eq. (gae_carry):

    delta_t = r_t + gamma v(s_t') - v(s_t),   A_t = delta_t + gamma lam A_t'

where t' is the next *policy* token of the row. `carry=False` is the bug: the recursion restarts
(running return, next value and running advantage set to 0) at every masked position, so a turn
before an observation never sees the rewards or values after it. Both return 0 off the action
mask. Imports NumPy, minirl_lm.boundary, minirl_lm.multiturn.env (its kinds) and
minirl_lm.values.optimum (the tilt of one state's row).
"""

import functools
import inspect
import numbers

import numpy as np


# part 1: from minirl_lm/multiturn/env.py ------------------------------------------------------
#   Multi-turn episodes: the environment writes tokens too, and the transition becomes stochastic.


def ids(shape, **bounds):
    """An int64 array of token or state ids of `shape` (`array(shape, integer=True, **bounds)`);
    a bool array is not one (NumPy would read True as 1)."""

    def kind(x, name, dims):
        if getattr(x, "dtype", None) == np.bool_:
            raise TypeError(f"{name}: expected an integer array of ids, got an array of dtype bool")
        return array(shape, integer=True, **bounds)(x, name, dims)

    return kind


def _env_kind(what, members):
    """An environment with `members` (what the body reads of it); it fixes the letters S (its
    states) and V (its vocabulary) for the later arguments: a policy table is `(S, V)`."""

    def kind(x, name, dims):
        env = has(what, members)(x, name, dims)
        dims.update(S=env.S, V=env.V)
        return env

    return kind


MULTITURN_MDP = _env_kind("a MultiTurnMDP", "children is_policy loglik p_obs spans S V")


def actions_on_the_trajectory(mask, action_mask):
    """The policy writes tokens of the trajectory only: `action_mask <= mask`."""
    if (action_mask > mask).any():
        b, t = np.argwhere(action_mask > mask)[0]
        return f"action_mask: expected 1 only where mask is 1, got 1 at row {b}, position {t} where mask is 0"


# part 2: from minirl_lm/values/optimum.py -----------------------------------------------------
#   The KL-regularized (tilted) optimum: closed form, backward _induction, exploit threshold.


def tilt(pi_ref, q, beta):
    """Row-wise log of `pi_ref * exp(q / beta)` normalized, and its log-normalizer times beta,
    eq. (kl_optimum), stably."""
    support = pi_ref > 0  # (.., Y)
    m = np.where(support, q, -np.inf).max(axis=-1, keepdims=True)  # (.., 1) best reward on support
    # -inf off support, set directly: log 0 + (q - m) / beta would be -inf + inf = NaN where an
    # off-support reward exceeds m and overflows (q - m) / beta. Never log 0: the log is taken on
    # the support only, and the sum below is >= 1 (its largest term is exp(0)) or NaN.
    with np.errstate(over="ignore", invalid="ignore"):  # q holding overflowed soft values (the tree)
        t = np.broadcast_to((q - m) / beta, support.shape)  # (.., Y)
        a = np.full(support.shape, -np.inf)
        a[support] = np.log(pi_ref[support]) + t[support]
        a_max = a.max(axis=-1, keepdims=True)  # (.., 1), 0 or log pi_ref: finite
        log_z = a_max + np.log(np.exp(a - a_max).sum(axis=-1, keepdims=True))  # (.., 1)
        v = m + beta * log_z  # eq. (kl_optimum): beta log Z
    return a - log_z, v[..., 0]  # log pi*, V


# minirl_lm/multiturn/values.py itself ---------------------------------------------------------


__all__ = ["policy_values", "soft_optimum", "kl_objective", "gae_actions", "returns_actions", "turn_values"]


def _rewards_on_actions(rewards, action_mask):
    """Rewards sit on the policy's tokens: 0 where `action_mask` is 0."""
    if (rewards * (1 - action_mask) != 0).any():
        return "rewards: expected rewards on policy tokens only (0 where action_mask is 0)"


def _states_within(values, states):
    """Every state id indexes `values`."""
    if states.max() >= values.size:
        return f"states: expected ids < {values.size} (the states of values), got max {states.max()}"


ACTIONS = [actions_on_the_trajectory, _rewards_on_actions]  # returns' and GAE's relations


def _posterior(loglik):
    """P(w | s) from log prior + log likelihood (W,); an unreachable prefix gets the uniform."""
    if not np.isfinite(loglik).any():
        return np.full(loglik.size, 1.0 / loglik.size)
    p = np.exp(loglik - loglik.max())  # (W,)
    return p / p.sum()


def _induction(env, backup):
    """Q (S, V) and V (S,) over the policy states, children first; chance rows stay 0."""
    values, q = np.zeros(env.S), np.zeros((env.S, env.V))
    for s in range(env.S - 1, -1, -1):  # ids: parents before children
        if not env.is_policy[s]:
            continue
        post = _posterior(env.loglik[s])  # (W,) P(w | s)
        for a, (r, kind, nxt) in enumerate(env.children[s]):
            qa = post @ r  # expected reward of the turn
            if kind == "turn":
                qa += values[nxt]
            elif kind == "env":  # eq. (chance_bellman): expectation
                for m, _, s2 in nxt:
                    qa += (post @ env.p_obs[:, m]) * values[s2]
            q[s, a] = qa
        values[s] = backup(s, q[s])
    return values, q


def policy_values(env, probs):
    """v^pi and q^pi of the per-state policy `probs`, eq. (chance_bellman).

    Args:
        env: a `MultiTurnMDP`.
        probs: `(S, V)` the policy's probabilities, a row per state of `env` (entries >= 0, rows
            summing to 1 within 1e-9; rows of chance states are not read).

    Returns:
        `(values (S,), q (S, V))`; values and q at chance states are 0 (unused); `values[0]`
        is the expected return E R.
    """
    return _induction(env, lambda s, q_s: probs[s] @ q_s)


def soft_optimum(env, pi_ref, beta):
    """Soft-optimal policy by backward induction with chance nodes, eq. (soft_bellman).

    Args:
        env: a `MultiTurnMDP`.
        pi_ref: `(S, V)` reference probabilities.
        beta: KL coefficient > 0.

    Returns:
        `(values (S,), q (S, V), pi_star (S, V))`; `values[0]` is `J(pi*)`. Rows of chance states
        of `pi_star` are copies of `pi_ref` (the policy never writes there).
    """
    backup = lambda s, q_s: tilt.core(pi_ref[s][None], q_s[None], beta)[1][0]  # noqa: E731
    values, q = _induction(env, backup)  # eq. (soft_bellman)
    pi_star = pi_ref.copy()
    for s in np.flatnonzero(env.is_policy):
        pi_star[s] = np.exp(tilt.core(pi_ref[s][None], q[s][None], beta)[0][0])  # pi_ref e^{(Q-V)/beta}
    return values, q, pi_star


def kl_objective(env, probs, pi_ref, beta):
    """J(pi) = E[R - beta sum over action tokens of log(pi / pi_ref)], by induction.

    Args:
        env: a `MultiTurnMDP`.
        probs: `(S, V)` the policy pi's probabilities, a row per state of `env` (entries >= 0,
            rows summing to 1 within 1e-9).
        pi_ref: `(S, V)` the reference's probabilities, likewise.
        beta: the KL coefficient, `>= 0`.

    Returns:
        J, a float. A token pi writes where pi_ref is 0 makes J = -inf (at `beta = 0`, J = E R
        whatever the supports), the one infinite result returned.

    Raises:
        ValueError: a bad argument (named), or any other overflow (a huge beta), naming
            `kl_objective`.
    """
    lr = np.log(probs) - np.log(pi_ref)  # -inf or NaN where probs is 0: the backup reads probs > 0 only
    pen = beta * lr if beta > 0 else np.zeros_like(lr)  # beta = 0: J = E R, supports aside

    def backup(s, q_s):
        return np.where(probs[s] > 0, probs[s] * (q_s - pen[s]), 0.0).sum()

    J = float(_induction(env, backup)[0][0])
    if J == -np.inf and ((probs > 0) & (pi_ref == 0)).any():  # pi writes where pi_ref cannot
        return J  # the documented -inf: returns=None, and the engine's one check for the rest
    return finite(J, "kl_objective", ["J"], dict(probs=probs, pi_ref=pi_ref, beta=beta))


# ---- returns and GAE over the action mask -------------------------------------------------------
def _recursion(values, rewards, action_mask, c_next, c_acc, carry):
    """Right to left: A_t = r_t + c_next V' - V_t + c_acc A', primes over the next policy token."""
    B, T = action_mask.shape
    out = np.zeros((B, T))
    nxt, acc = np.zeros(B), np.zeros(B)  # (B,) V(s_t'), A_t'
    for t in range(T - 1, -1, -1):
        on = action_mask[:, t] > 0
        new = rewards[:, t] + c_next * nxt - values[:, t] + c_acc * acc  # eq. (gae_carry)
        keep = 1.0 if carry else 0.0  # carry: skip; bug: restart at 0
        acc = np.where(on, new, keep * acc)
        nxt = np.where(on, values[:, t], keep * nxt)
        out[:, t] = np.where(on, acc, 0.0)
    return out


def gae_actions(values, rewards, mask, action_mask, gamma=1.0, lam=1.0, carry=True):
    """GAE over the policy tokens of multi-turn rows, eq. (gae_carry): (B, T).

    Args:
        values: `(B, T)` critic value v(s_t) at every position (read on policy tokens only).
        rewards: `(B, T)` per-token rewards, 0 off the action mask.
        mask: `(B, T)` trajectory tokens, right-padded.
        action_mask: `(B, T)` policy tokens.
        gamma: in [0, 1].
        lam: see `gamma`.
        carry: True carries across observation spans; False restarts at every masked
            position (the bug this module measures).
    """
    return _recursion(values, rewards, action_mask, gamma, gamma * lam, carry)


def returns_actions(rewards, mask, action_mask, gamma=1.0, carry=True):
    """Reward to go G_t over the policy tokens, eq. (gae_carry) with no values and `lam = 1`.

    Args:
        rewards: `(B, T)` per-token rewards, 0 off the action mask.
        mask: `(B, T)` 0/1 trajectory tokens, right-padded.
        action_mask: `(B, T)` 0/1 policy tokens, 1 only where `mask` is 1.
        gamma: the discount, in [0, 1].
        carry: True carries across observation spans; False restarts at every masked position
            (the bug this module measures).

    Returns:
        G, `(B, T)`: the reward to go on policy tokens, 0 elsewhere.
    """
    return _recursion(np.zeros(action_mask.shape), rewards, action_mask, 0.0, gamma, carry)


def turn_values(values, states, mask, action_mask):
    """V at the first policy state of each token's turn, on every policy token.

    A turn starts at the first policy token of a row and at the first policy token after an
    observation span.

    Args:
        values: `(S,)` a value per state (as `policy_values` returns).
        states: `(B, T)` integer state ids before each token, each in `[0, S)`.
        mask: `(B, T)` 0/1 trajectory tokens, right-padded.
        action_mask: `(B, T)` 0/1 policy tokens, 1 only where `mask` is 1.

    Returns:
        turn_values, `(B, T)`: 0 off the policy tokens.
    """
    out, cur = np.zeros(mask.shape), np.zeros(mask.shape[0])
    prev = np.zeros(mask.shape[0])  # action_mask at t - 1 (0 before t = 0)
    for t in range(mask.shape[1]):
        start = (action_mask[:, t] > 0) & (prev == 0)
        cur = np.where(start, values[states[:, t]], cur)
        out[:, t] = cur * action_mask[:, t]
        prev = action_mask[:, t]
    return out


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


def simplex(*shapes):
    """Probabilities: a float64 array of one of `shapes`, entries >= 0, each row (last axis)
    summing to 1 within 1e-9 (stricter than `Generator.choice`'s ~1.5e-8, so a table that
    passes here is one `rng.choice` accepts)."""
    entries = array(*shapes, low=0.0)

    def read(x, name, dims):
        p = entries(x, name, dims)
        s = p.sum(axis=-1)
        if not np.allclose(s, 1.0, rtol=0.0, atol=1e-9):
            worst = float(s.ravel()[int(np.argmax(np.abs(s - 1.0)))])
            raise ValueError(f"{name}: expected rows summing to 1 (within 1e-9), got a row summing to {worst!r}")
        return p

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


def flag(x, name, dims):
    """True or False (a NumPy bool too; not 0 or 1)."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {_show(x)}")
    return bool(x)


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


TOKENS = array("B T")  # one number per position of each response (log-probs)


POSITIVE = number(0.0, low_open=True)
NONNEGATIVE = number(0.0)


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

# every token of an episode, right-padded; the holes (the environment's tokens) go in action_mask
TRAJECTORY = right_padded(
    "B T",
    "the trajectory mask (every token of the episode)",
    "action_mask for the policy's tokens (0 where the environment wrote)",
)
ACTION_MASK = array("B T", values=(0.0, 1.0))  # 1 on the policy's tokens: holes where the env wrote
UNIT = number(0.0, 1.0)  # gamma, lam
TABLE = simplex("S V")  # a policy's probabilities, a row per state of the environment

policy_values = boundary(env=MULTITURN_MDP, probs=TABLE, returns="values q")(policy_values)

soft_optimum = boundary(env=MULTITURN_MDP, pi_ref=TABLE, beta=POSITIVE, returns="values q pi_star")(soft_optimum)

kl_objective = boundary(env=MULTITURN_MDP, probs=TABLE, pi_ref=TABLE, beta=NONNEGATIVE, returns=None)(kl_objective)

gae_actions = boundary(
    values=TOKENS,
    rewards=TOKENS,
    mask=TRAJECTORY,
    action_mask=ACTION_MASK,
    gamma=UNIT,
    lam=UNIT,
    carry=flag,
    where=ACTIONS,
    returns="advantages",
)(gae_actions)

returns_actions = boundary(
    rewards=TOKENS, mask=TRAJECTORY, action_mask=ACTION_MASK, gamma=UNIT, carry=flag, where=ACTIONS, returns="G"
)(returns_actions)

turn_values = boundary(
    values=array("S"),
    states=ids("B T", low=0),
    mask=TRAJECTORY,
    action_mask=ACTION_MASK,
    where=[_states_within, actions_on_the_trajectory],
    returns="turn_values",
)(turn_values)

tilt = boundary(pi_ref=simplex("Y", "N Y"), q=array("Y", "N Y"), beta=POSITIVE, returns=None)(tilt)
