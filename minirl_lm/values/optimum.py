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

import numbers

import numpy as np

from minirl_lm.boundary import NONNEGATIVE, POSITIVE, array, boundary, finite, function, number, optional, simplex

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


GRADER = function("grader(prompt, response)", 2)
WEIGHTS = optional(simplex("N"))  # the prompt distribution mu_0; None: uniform


def _prompt_weights(weights, N):
    """`(N,)` prompt weights `mu_0`: the read `weights`, uniform if None."""
    return np.full(N, 1.0 / N) if weights is None else weights


@boundary(pi_ref=simplex("Y", "N Y"), q=array("Y", "N Y"), beta=POSITIVE, returns=None)
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

BANDIT = dict(pi_ref=simplex("N Y"), reward=array("N Y"), beta=POSITIVE)


@boundary(**BANDIT, returns="pi_star")
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


OBJECTIVE = dict(pi=simplex("N Y"), pi_ref=simplex("N Y"), reward=array("N Y"), beta=NONNEGATIVE, weights=WEIGHTS)


@boundary(**OBJECTIVE, returns=None)
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


@boundary(**BANDIT, weights=WEIGHTS, returns="J")
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


TREE_ARGS = dict(mdp=_tree_mdp, pi_ref=simplex("S V"), grader=GRADER, beta=POSITIVE)


@boundary(**TREE_ARGS, returns="values q")
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


@boundary(**TREE_ARGS, returns="pi_star")
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


POLICY_TREE = dict(mdp=_tree_mdp, pi=simplex("S V"), pi_ref=simplex("S V"), grader=GRADER)


@boundary(**POLICY_TREE, beta=NONNEGATIVE, weights=WEIGHTS, returns=None)
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


@boundary(gap=POSITIVE, log_odds=POSITIVE, returns="threshold")
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


@boundary(gap=number(), log_odds=number(), beta=POSITIVE, returns="odds")
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
