# minirl_lm 0.1.0: a self-contained copy of minirl_lm/values/optimum.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/values/optimum.py -o DIR
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

"""The KL-regularized (tilted) optimum: closed form, backward _induction, exploit threshold.

The KL-regularized objective of a policy `pi` against the frozen reference `pi_ref`, for
prompts `x ~ mu_0` and a reward `R(x, y)`, is

```text
J(pi) = E_x [ E_{y~pi(.|x)} R(x, y) - beta KL(pi(.|x) || pi_ref(.|x)) ]        eq. (kl_objective)
```

and for `beta > 0` its maximizer is the reference tilted by the reward:

```text
pi*(y|x) = pi_ref(y|x) exp(R(x, y) / beta) / Z(x),
Z(x) = sum_y pi_ref(y|x) exp(R(x, y) / beta),                                  eq. (kl_optimum)
J(pi*) = E_x beta log Z(x),     J(pi*) - J(pi) = beta E_x KL(pi || pi*).
```

(The last line is the proof: `J(pi) = E_x [beta log Z(x) - beta KL(pi || pi*)]`.)

Tiny beta. As `beta -> 0`, `pi*` puts all its mass on the responses of largest reward among the
support of `pi_ref`, split between them in proportion to `pi_ref`. The code subtracts the row's
largest reward before dividing by `beta`, so tied rewards give exactly 0 and `pi_ref` breaks the
tie to rounding even at `beta = 1e-6`; `beta = 0` itself (the argmax, no KL) is rejected:
`beta > 0`.

Multi-token responses, terminal reward. On the prefix tree of a `TokenMDP` the same optimum is
a per-state policy, by backward _induction over soft values (the soft Bellman equation with
deterministic transitions `s ∘ a`, concatenation):

```text
q(s, a) = R(x, y)          if s ∘ a is terminal (EOS or the length cap), y = the response
        = v(s ∘ a)         otherwise
v(s) = beta log sum_a pi_ref(a|s) exp(q(s, a) / beta)                           eq. (soft_bellman)
pi*(a|s) = pi_ref(a|s) exp((q(s, a) - v(s)) / beta)
```

The product of `pi*(a|s)` along a response telescopes to `pi_ref(y|x) exp(R(x, y)/beta) / Z(x)`
with `v(x) = beta log Z(x)`: the tree optimum is the closed form on whole responses.

The exploit threshold, eq. (exploit_threshold). On a prompt where a hedge earns reward gap
`dR` over an honest answer and the reference puts log-odds `dl_ref` against it
(`dl_ref = log pi_ref(honest) - log pi_ref(hedge)`), the tilted optimum's odds are
`pi*(hedge) / pi*(honest) = exp(-dl_ref + dR / beta)`: the hedge is preferred to any one honest
answer iff `beta < dR / dl_ref`. (Whether it also holds the majority of the mass depends on how
many honest answers share the rest; the page "The loophole" computes both.)

Probability tables in, not log-probs: these functions need whole distributions. The tree
functions (`soft_values`, `tilted_optimum_tree`, `kl_objective_tree`) take a `TokenMDP` with
`ids="enumerate"` and use its prefix enumeration (`S`, `V`, `prompts`, `prefix_of`,
`state_id`, `step`, `is_terminal`); they do not import `minirl_lm.core.mdp`. Each public
function declares its arguments with `boundary`; its body is the math. `tilt.core` is the
row-wise tilt the multi-turn values and best-of-n call on their own arrays. Demonstrated by
`pytest tests/values/test_optimum.py`.

Names in the frameworks: none. The tilted optimum and its exploit threshold are analysis, not
a training option of TRL, verl or OpenRLHF.
"""

import functools
import inspect
import numbers

import numpy as np


__all__ = [
    "tilt",
    "tilted_optimum",
    "kl_objective",
    "optimal_value",
    "soft_values",
    "tilted_optimum_tree",
    "kl_objective_tree",
    "exploit_threshold",
    "hedge_odds",
]

TREE = ("S", "V", "N", "ids", "prompts", "prefix_of()", "state_id()", "step()", "is_terminal()")


def _tree_mdp(mdp, name, dims):
    """A `TokenMDP` with `ids="enumerate"` (every state listed), by the members the tree
    functions use; it fixes the letters `S` and `V` of the `(S, V)` tables beside it."""
    missing = [m.rstrip("()") for m in TREE if not hasattr(mdp, m.rstrip("()"))]
    got = type(mdp).__name__ + (f" without {', '.join(missing)}" if missing else f" with ids={mdp.ids!r}")
    if missing or mdp.ids != "enumerate":
        raise TypeError(f"{name}: expected a TokenMDP with ids='enumerate', got {got}")
    dims.update(S=mdp.S, V=mdp.V, N=mdp.N)
    return mdp


def _prompt_weights(weights, N):
    """`(N,)` prompt weights `mu_0`: the read `weights`, uniform if None."""
    return np.full(N, 1.0 / N) if weights is None else weights


def tilt(pi_ref, q, beta):
    """Row-wise log of `pi_ref * exp(q / beta)` normalized, and its log-normalizer times beta,
    eq. (kl_optimum), stably.

    For a finite `q` (rewards; the tree's `q` once checked) `log pi*` is in `[-inf, 0]`: on the
    support `a = log pi_ref + (q - m) / beta <= a_max`, finite at the best reward, and
    `log_z >= a_max`; off it `-inf`. So `pi* = exp(log pi*)` is always in `[0, 1]`.

    Args:
        pi_ref: `(Y,)` or `(N, Y)` probabilities, rows summing to 1.
        q: rewards (or soft action values) of the shape of `pi_ref`.
        beta: `> 0`.

    Returns:
        `(log_pi_star, v)`: log-probabilities of `pi_ref`'s shape, `-inf` off its support (not
        checked for finiteness: that `-inf` is the answer), and the soft values `beta log Z`,
        one per row.
    """
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


# ---------------------------------------------------------------- one-token responses (bandit)


def tilted_optimum(pi_ref, reward, beta):
    """The tilted optimum `pi*(y|x) = pi_ref(y|x) exp(R(x, y)/beta) / Z(x)`, eq. (kl_optimum).

    Args:
        pi_ref: `(N, Y)` probabilities, rows summing to 1.
        reward: `(N, Y)` rewards `R(x, y)`.
        beta: `> 0`.

    Returns:
        `(N, Y)` probabilities, 0 off the support of `pi_ref`.
    """
    log_pi_star, _ = tilt.core(pi_ref, reward, beta)
    return np.exp(log_pi_star)  # (N, Y), 0 off support


def kl_objective(pi, pi_ref, reward, beta, weights=None):
    """The objective `J(pi) = sum_x mu_0(x) [E_pi R - beta KL(pi || pi_ref)]`, eq. (kl_objective).

    `0 log 0 = 0`; mass of `pi` where `pi_ref = 0` makes the KL infinite and `J = -inf` (the
    one non-finite result returned).

    Args:
        pi: `(N, Y)` probabilities, rows summing to 1.
        pi_ref: `(N, Y)` probabilities, rows summing to 1.
        reward: `(N, Y)` rewards `R(x, y)`.
        beta: `>= 0`.
        weights: `(N,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        The float `J(pi)`.

    Raises:
        ValueError: a bad argument (named), or `J` beyond float64 (named after the function).
    """
    if beta > 0 and ((pi > 0) & (pi_ref == 0)).any():
        return -np.inf  # KL = +inf
    w = _prompt_weights(weights, pi.shape[0])  # (N,)
    pos = (pi > 0) & (beta > 0)  # beta = 0: no KL term at all
    log_ratio = np.zeros_like(pi)  # (N, Y)
    log_ratio[pos] = np.log(pi[pos]) - np.log(pi_ref[pos])
    e_r = w @ (pi * reward).sum(axis=1)  # E_pi r, finite where J is
    per_x = (pi * (reward - beta * log_ratio)).sum(axis=1)  # (N,) eq. (kl_objective)
    inputs = dict(pi=pi, pi_ref=pi_ref, reward=reward, beta=beta)
    return finite((float(w @ per_x), float(e_r)), "kl_objective", ["J", "E_pi R"], inputs)[0]


def optimal_value(pi_ref, reward, beta, weights=None):
    """The maximum of eq. (kl_objective), `J(pi*) = sum_x mu_0(x) beta log E_{pi_ref} exp(R(x, y)/beta)`.

    Args:
        pi_ref: `(N, Y)` probabilities, rows summing to 1.
        reward: `(N, Y)` rewards `R(x, y)`.
        beta: `> 0`.
        weights: `(N,)` the prompt distribution `mu_0`, uniform by default.

    Returns:
        The float `J(pi*)`.
    """
    _, v = tilt.core(pi_ref, reward, beta)  # (N,)
    return float(_prompt_weights(weights, pi_ref.shape[0]) @ v)


# ---------------------------------------------------------------- the prefix tree, eq. (soft_bellman)


def _graded(grader, prompt, response):
    """`grader(prompt, response)` as a finite float, else an error naming `grader`."""
    r = grader(prompt, response)

    def got():  # built only when raising: this runs once per response
        return f"for response {response}, got {type(r).__name__} {r!r}"[:160]

    if isinstance(r, (bool, np.bool_)) or not isinstance(r, numbers.Real):
        raise TypeError(f"grader: expected a real number (a finite reward) {got()}")
    try:
        v = float(r)
    except OverflowError:  # an int beyond float64
        v = np.inf
    if not np.isfinite(v):
        raise ValueError(f"grader: expected a finite number (a finite reward) {got()}")
    return v


def _induction(mdp, grader, backup):
    """Backward _induction on the prefix tree: q(s, a) from the children, v(s) = backup(s, q(s, .))."""
    values = np.zeros(mdp.S)  # (S,)
    q = np.zeros((mdp.S, mdp.V))  # (S, V)
    for s in range(mdp.S - 1, -1, -1):  # ids are level by level: deepest first
        n, prefix = mdp.prefix_of(s)
        for a in range(mdp.V):
            child = mdp.step(prefix, a)  # s.a: concatenation
            if mdp.is_terminal(child):
                q[s, a] = _graded(grader, mdp.prompts[n], child)  # terminal V = r
            else:
                q[s, a] = values[mdp.state_id(n, child)]
        values[s] = backup(s, q[s])
    return values, q


def soft_values(mdp, pi_ref, grader, beta):
    """Soft values by backward _induction on the prefix tree of `mdp`, eq. (soft_bellman).

    Args:
        mdp: a `TokenMDP` with `ids="enumerate"`.
        pi_ref: `(S, V)` per-state probabilities.
        grader: `grader(prompt, response) -> R(x, y)` (response: a tuple of token ids, EOS
            included).
        beta: `> 0`.

    Returns:
        `(values, q)`: `(S,)` soft values `v(s)` (at the prompts' root states,
        `beta log Z(x)`) and `(S, V)` soft action values `q(s, a)`.
    """
    return _induction(mdp, grader, lambda s, q_s: tilt.core(pi_ref[s], q_s, beta)[1])


def tilted_optimum_tree(mdp, pi_ref, grader, beta):
    """The per-state optimal policy `pi*(a|s) = pi_ref(a|s) exp((q(s, a) - v(s))/beta)`.

    Args:
        mdp: a `TokenMDP` with `ids="enumerate"`.
        pi_ref: `(S, V)` per-state probabilities.
        grader: `grader(prompt, response) -> R(x, y)`.
        beta: `> 0`.

    Returns:
        `(S, V)` probabilities.

    Raises:
        ValueError: a bad argument (named), or soft values beyond float64 (named after the
            function).
    """
    _, q = soft_values.core(mdp, pi_ref, grader, beta)
    log_pi_star, _ = tilt.core(pi_ref, q, beta)  # normalizer = V(s), row-wise
    return np.where(np.isfinite(q), np.exp(log_pi_star), np.nan)  # an overflowed q: no answer


def kl_objective_tree(mdp, pi, pi_ref, grader, beta, weights=None):
    """Eq. (kl_objective) for a per-state policy `pi` on the prefix tree of `mdp`.

    Policy evaluation with the per-token KL,
    `v(s) = sum_a pi(a|s) [q(s, a) - beta log(pi(a|s)/pi_ref(a|s))]`, whose root values sum the
    token KLs into `KL(pi(.|x) || pi_ref(.|x))` over whole responses. At `tilted_optimum_tree`
    it equals the mean of the root soft values. Mass of `pi` where `pi_ref = 0` makes `J = -inf`
    (the one non-finite result returned). The arguments `beta` and `weights`, the float `J(pi)`
    returned and the errors raised are those of `kl_objective`.

    Args:
        mdp: a `TokenMDP` with `ids="enumerate"`.
        pi: `(S, V)` per-state probabilities.
        pi_ref: `(S, V)` per-state probabilities.
        grader: `grader(prompt, response) -> R(x, y)`.
    """
    pos = (pi > 0) & (beta > 0)
    log_ratio = np.zeros_like(pi)  # (S, V), 0 log 0 = 0
    log_ratio[pos] = np.log(pi[pos]) - np.log(pi_ref[pos])  # pi_ref = 0 < pi: KL = +inf

    def backup(s, q_s):  # actions pi never takes add 0
        return np.where(pi[s] > 0, pi[s] * (q_s - beta * log_ratio[s]), 0.0).sum()

    values, _ = _induction(mdp, grader, backup)
    roots = [mdp.state_id(n, ()) for n in range(mdp.N)]
    out = float(_prompt_weights(weights, mdp.N) @ values[roots])
    if out == -np.inf and not np.isnan(values).any() and np.isposinf(log_ratio).any():
        return out  # pi > 0 = pi_ref: KL = +inf
    return finite(out, "kl_objective_tree", ["J"], dict(pi=pi, pi_ref=pi_ref, beta=beta))


# ---------------------------------------------------------------- the exploit threshold


def exploit_threshold(gap, log_odds):
    """The `beta` below which the tilted optimum prefers the hedge to any one honest answer.

    `dR / dl_ref`, eq. (exploit_threshold).

    Args:
        gap: the reward gap `dR > 0` of the hedge over an honest answer.
        log_odds: the reference log-odds `dl_ref > 0` against the hedge,
            `log pi_ref(honest) - log pi_ref(hedge)`.

    Returns:
        The float threshold.

    Raises:
        ValueError: a bad argument (named), or a threshold beyond float64 (named after the
            function).
    """
    return gap / log_odds  # eq. (exploit_threshold)


def hedge_odds(gap, log_odds, beta):
    """The odds `pi*(hedge) / pi*(honest) = exp(-dl_ref + dR / beta)` at the tilted optimum.

    Greater than 1 iff `beta < dR / dl_ref`.

    Args:
        gap: the reward gap `dR` of the hedge over an honest answer.
        log_odds: the reference log-odds `dl_ref` against the hedge.
        beta: `> 0`.

    Returns:
        The float odds.

    Raises:
        ValueError: a bad argument (named), or odds beyond float64 (named after the function:
            a tiny `beta`, a huge `gap` or `log_odds`).
    """
    return float(np.exp(-log_odds + gap / beta))  # the exponent is finite or +-inf, never NaN


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


def optional(of):
    """None, or a value of the kind `of`."""
    return lambda x, name, dims: None if x is None else of(x, name, dims)


def function(call, nargs):
    """A callable `call` (a string saying how it is called) taking `nargs` positional arguments."""

    def read(f, name, dims):
        if not callable(f) or isinstance(f, type):
            raise TypeError(f"{name}: expected a callable {call}, got {_show(f)}")
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):  # a builtin without a signature
            return f
        try:
            sig.bind(*range(nargs))
        except TypeError:
            raise TypeError(
                f"{name}: expected a callable {call} taking {nargs} positional arguments, "
                f"got one with signature {sig}"
            ) from None
        return f

    return read


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


POSITIVE = number(0.0, low_open=True)
NONNEGATIVE = number(0.0)


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

GRADER = function("grader(prompt, response)", 2)
WEIGHTS = optional(simplex("N"))  # the prompt distribution mu_0; None: uniform
BANDIT = dict(pi_ref=simplex("N Y"), reward=array("N Y"), beta=POSITIVE)
OBJECTIVE = dict(pi=simplex("N Y"), pi_ref=simplex("N Y"), reward=array("N Y"), beta=NONNEGATIVE, weights=WEIGHTS)
TREE_ARGS = dict(mdp=_tree_mdp, pi_ref=simplex("S V"), grader=GRADER, beta=POSITIVE)
POLICY_TREE = dict(mdp=_tree_mdp, pi=simplex("S V"), pi_ref=simplex("S V"), grader=GRADER)

tilt = boundary(pi_ref=simplex("Y", "N Y"), q=array("Y", "N Y"), beta=POSITIVE, returns=None)(tilt)

tilted_optimum = boundary(**BANDIT, returns="pi_star")(tilted_optimum)

kl_objective = boundary(**OBJECTIVE, returns=None)(kl_objective)

optimal_value = boundary(**BANDIT, weights=WEIGHTS, returns="J")(optimal_value)

soft_values = boundary(**TREE_ARGS, returns="values q")(soft_values)

tilted_optimum_tree = boundary(**TREE_ARGS, returns="pi_star")(tilted_optimum_tree)

kl_objective_tree = boundary(**POLICY_TREE, beta=NONNEGATIVE, weights=WEIGHTS, returns=None)(kl_objective_tree)

exploit_threshold = boundary(gap=POSITIVE, log_odds=POSITIVE, returns="threshold")(exploit_threshold)

hedge_odds = boundary(gap=number(), log_odds=number(), beta=POSITIVE, returns="odds")(hedge_odds)
