"""The chapter's toy: four arithmetic prompts, nine one-token answers, two graders.

Prompts `x` (`mu_0` uniform): `"2+2"`, `"3*4"`, `"8*8"`, `"9*9"`; their answers 4, 12, 64, 81.
Responses `y`, one token each (`V = 9`): `"1"`, `"3"`, `"4"`, `"7"`, `"12"`, `"19"`, `"23"`,
`"35"` and the hedge `"one of 4, 12, 64 or 81"` (id 8). No honest candidate answers `"8*8"` or
`"9*9"`.

```text
gold grader (a verifier)   R(x, y) = 1 iff y is the answer
sloppy grader (a grep)     R(x, y) = 1 iff the answer occurs in the text of y
```

The hedge contains every answer, so the sloppy grader passes it on every prompt: sloppy = gold +
hedge, prompt by prompt. The reference (and the start) puts logit 0 on the eight numbers and
`-4` on the hedge: a reward gap of 1 over reference log-odds of 4 is eq. (exploit_threshold)'s
`beta < 1/4`, below which the tilted optimum prefers the hedge to any one honest answer.

One training step, eq. (toy_step), for every prompt `x` (rows are independent, so all prompts are
drawn in one batch: row `n*K + k` is draw `k` of prompt `n`, the same draws as `rng.choice` per
prompt):

```text
y_1..y_K ~ pi(.|x)                                        K responses
R~_k = R(x, y_k) - beta log(pi(y_k|x) / pi_ref(y_k|x))    KL folded into the reward, eq. (kl_reward)
A = (R~ - mean R~) / (std R~ + 1e-8)                      population std, eq. (pg_normalized)
theta[x] += lr (1/K) sum_k A_k (onehot(y_k) - pi(.|x))    one step per group: rho = 1, no clip
```

The update is the policy's backward of the loss `-(1/K) sum_k A_k log pi(y_k|x)` per prompt
(`dloss/dlogp = -A_k / K`), eq. (per_state_backward), in the arithmetic of the policy's NumPy
path (`minirl_lm/core/_tabular.py`, equal to the Numba kernels to rounding): a run gives the
same bits with or without Numba, and never imports it. A training run is thousands of steps on
a 4 x 9 table, so `train` checks its arguments once and its steps run the trusted cores in
place; a step whose groups all got equal rewards (every step at `K = 1`) has every `A_k = 0`
and stops before the advantages, and the sampling table is rebuilt only after a step moved
`theta`.

Evaluation is exact (no sampling): success `= mean_x sum_y pi(y|x) R_gold(x, y)`; hedge
`= mean_x pi(hedge|x)`. Demonstrated by `python examples/k_sweep.py` and
`python examples/loophole.py`.
"""

import functools
import numbers

import numpy as np

from minirl_lm.boundary import COUNT, NONNEGATIVE, boundary, finite, function, has, number, one_of
from minirl_lm.core._tabular import _tabular_logp
from minirl_lm.core.ops import log_softmax
from minirl_lm.core.policy import TabularPolicy, _softmax
from minirl_lm.core.validate import real_result
from minirl_lm.pg.advantages import REWARD_MAX, advantages
from minirl_lm.pg.kl import kl_in_reward

__all__ = [
    "PROMPTS",
    "ANSWERS",
    "RESPONSES",
    "HEDGE",
    "HEDGE_LOGIT",
    "GRADERS",
    "gold_grader",
    "sloppy_grader",
    "reward_table",
    "reference_theta",
    "evaluate",
    "train",
]

PROMPTS = ("2+2", "3*4", "8*8", "9*9")
ANSWERS = ("4", "12", "64", "81")
RESPONSES = ("1", "3", "4", "7", "12", "19", "23", "35", "one of 4, 12, 64 or 81")
HEDGE = 8
HEDGE_LOGIT = -4.0

# ---- the toy's kinds (minirl_lm.boundary)

PROMPT = one_of(PROMPTS)
TOY_POLICY = has("a TabularPolicy", "probs() theta")  # of the toy's shape: `_toy_shape`
BASELINE = one_of(("standardized", "mean", "loo"))
SEED = number(0, integer=True)


def _one_token(x, name, dims):
    """A one-token response: a tuple holding one token id in [0, 9), as a tuple of an int."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__len__") or len(x) != 1:
        raise ValueError(
            f"{name}: expected a tuple of one token id (the toy's responses are one token), got {x!r}"[:200]
        )
    y = x[0]
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Integral):
        raise TypeError(f"{name}: expected an integer token id, got {y!r}"[:200])
    if not 0 <= y < len(RESPONSES):
        raise ValueError(f"{name}: expected a token id in [0, {len(RESPONSES)}), got {y}")
    return (int(y),)


def _a_grader(x, name, dims):
    """ "gold", "sloppy" (a grader of `GRADERS`) or a callable `grader(prompt, response)`; the
    callable."""
    if isinstance(x, str):
        return GRADERS[one_of(GRADERS)(x, name, dims)]
    if not callable(x):
        raise TypeError(
            f"{name}: expected 'gold', 'sloppy' or a callable grader(prompt, response), got {type(x).__name__}"
        )
    return function("grader(prompt, response)", 2)(x, name, dims)


def _step_counts(x, name, dims):
    """A collection of step counts (ints >= 1; their upper end is `within_steps`'), as a set."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__iter__"):
        raise TypeError(f"{name}: expected a collection of step counts, got {type(x).__name__}")
    return {number(1, integer=True)(v, name, dims) for v in x}


def _toy_shape(policy):
    """The policy's table is the toy's, (4, 9)."""
    got = getattr(policy.theta, "shape", None)
    if got != (len(PROMPTS), len(RESPONSES)):
        return (
            f"policy: expected a TabularPolicy of shape ({len(PROMPTS)}, {len(RESPONSES)}) for the toy, "
            f"got {type(policy).__name__} with shape {got}"
        )
    return None


def _a_budget(K, n_responses, baseline, record_at):
    """At least one step (`n_responses >= K`), recorded steps among them, two responses per
    group for leave-one-out."""
    if n_responses < K:
        return f"n_responses: expected an integer >= {K} (K, one step), got {n_responses}"
    if record_at and max(record_at) > n_responses // K:
        return f"record_at: expected an integer <= {n_responses // K} (the steps), got {max(record_at)}"
    if baseline == "loo" and K == 1:
        return "baseline: leave-one-out needs K >= 2, got K = 1"
    return None


@boundary(prompt=PROMPT, response=_one_token, returns=None)
def gold_grader(prompt, response):
    """The gold grader: 1.0 iff the one-token response is the prompt's answer (a verifier).

    Args:
        prompt: one of `PROMPTS`.
        response: a tuple holding one token id in `[0, 9)`.

    Returns:
        1.0 or 0.0.
    """
    return float(RESPONSES[response[0]] == ANSWERS[PROMPTS.index(prompt)])


@boundary(prompt=PROMPT, response=_one_token, returns=None)
def sloppy_grader(prompt, response):
    """The sloppy grader: 1.0 iff the answer occurs in the response's text (a grep).

    The hedge passes everywhere.

    Args:
        prompt: one of `PROMPTS`.
        response: a tuple holding one token id in `[0, 9)`.

    Returns:
        1.0 or 0.0.
    """
    return float(ANSWERS[PROMPTS.index(prompt)] in RESPONSES[response[0]])


GRADERS = {"gold": gold_grader, "sloppy": sloppy_grader}


@boundary(grader=_a_grader, returns=None)
def reward_table(grader):
    """The reward `R(x, y)` of every prompt and response.

    Args:
        grader: `"gold"`, `"sloppy"` or a callable `grader(prompt, response)` returning a
            finite number.

    Returns:
        `(N, V) = (4, 9)` rewards.
    """
    return np.array(
        [
            [
                real_result(grader(x, (y,)), "grader", f" (a finite reward) for {x!r}, {y}")
                for y in range(len(RESPONSES))
            ]
            for x in PROMPTS
        ]
    )  # (N, V) R(x, y)


def reference_theta():
    """The reference (and starting) logits: 0 on the numbers, `-4` on the hedge.

    Returns:
        `(4, 9)` float64 logits.
    """
    theta = np.zeros((len(PROMPTS), len(RESPONSES)))
    theta[:, HEDGE] = HEDGE_LOGIT
    return theta


@boundary(policy=TOY_POLICY, where=[_toy_shape], returns=None)
def evaluate(policy):
    """Exact scores of a policy on the toy (no sampling).

    Args:
        policy: a `TabularPolicy` with a `(4, 9)` table.

    Returns:
        A dict with `success` (gold reward), `sloppy` (sloppy reward), `hedge` (mass on the
        hedge) and `per_prompt`.
    """
    pi = policy.probs()  # (N, V)
    per_prompt = (pi * reward_table.core(gold_grader)).sum(axis=1)  # (N,)
    sloppy = (pi * reward_table.core(sloppy_grader)).sum(axis=1)  # (N,)
    return dict(success=per_prompt.mean(), sloppy=sloppy.mean(), hedge=pi[:, HEDGE].mean(), per_prompt=per_prompt)


@functools.lru_cache(maxsize=None)
def _batch(N, K):
    """The constant arrays of a one-token step, read-only: the prompts (N, 1); the prompt of
    each draw (B,), prompt-major, the same as (B, 1) states, and their (B, 1) mask."""
    n = np.arange(N)[:, None]  # (N, 1)
    x = np.repeat(np.arange(N), K)  # (B,) row n*K + k is draw k of prompt n
    states = x[:, None]  # (B, 1)
    mask = np.ones(states.shape)  # (B, 1): one token each
    for a in (n, x, mask):
        a.flags.writeable = False
    return n, x, states, mask


def _sampling_cdf(theta):
    """The inverse-CDF table (N, V) of pi(.|x) = softmax(theta[x]), built as rng.choice and
    TabularPolicy.sample build it: a draw is the number of entries of its row <= u ~ U[0, 1)."""
    cdf = np.cumsum(_softmax(theta), axis=1)  # (N, V)
    cdf /= cdf[:, -1:]
    return cdf


def _toy_step(theta, theta_ref, cdf, rewards, K, rng, beta, lr, baseline):
    """One step of eq. (toy_step) on every prompt, in place on the logits ``theta`` (N, V).

    cdf: ``_sampling_cdf(theta)``; theta_ref: the frozen reference logits; rewards: the (N, V)
    reward table; K responses per prompt; baseline: "standardized" (the chapter), "mean" or
    "loo" (see advantages.py). Returns True iff theta moved (then its cdf is stale).
    The arguments are checked once by ``train``: this inner loop is thousands of tiny steps, so
    it runs the library's trusted cores (the NumPy ones: on a 4 x 9 table a kernel call buys
    nothing, and importing Numba would cost more than the whole run) on arrays it built itself.
    """
    N, V = theta.shape
    n, x, states, mask = _batch(N, K)  # (N, 1), (B,), (B, 1), (B, 1)
    u = rng.random(N * K).reshape(N, K, 1)  # (N, K, 1) draw k of prompt n, prompt by prompt
    y = (cdf[:, None, :] <= u).sum(axis=2)  # (N, K) y_k ~ pi(.|x), as rng.choice(V, K, p=pi[x])
    r = rewards[n, y]  # (N, K) terminal rewards, one group per prompt
    if beta > 0:  # eq. (kl_reward), data only
        tokens = y.reshape(-1, 1)  # (B, 1)
        logp, _ = _tabular_logp(theta, states, tokens, mask)  # (B, 1)
        logp_ref, _ = _tabular_logp(theta_ref, states, tokens, mask)  # (B, 1)
        with np.errstate(over="ignore", invalid="ignore"):  # beyond the domain: refused below
            r = kl_in_reward.core(r.ravel(), logp, logp_ref, mask, beta).reshape(N, K)  # (N, K)
        if not np.abs(r).max() <= REWARD_MAX:  # the advantages' domain (NaN included)
            raise ValueError(
                f"beta: expected a KL coefficient for which the shaped rewards stay "
                f"within |r| <= {REWARD_MAX:g}, got beta = {beta:g} (max |r| = "
                f"{np.abs(r).max():g})"
            )
    if (r == r[:, :1]).all():  # every group equal (always at K = 1): every A_k = 0, no step
        return False
    A = advantages.core(r, baseline, 1e-8, 0)  # (N, K) eq. (pg_normalized)
    w = A.ravel() / -K  # (B,) dloss/dlogp = -A_k / K of -(1/K) sum_k A_k log pi(y_k|x)
    # the policy's backward, eq. (per_state_backward), for one token per draw and every prompt
    # visited: sum_k w_k onehot(y_k) - c[x] pi(.|x), c[x] = sum_k w_k, both sums in draw order
    onehot = np.bincount((n * V + y).ravel(), weights=w, minlength=N * V).reshape(N, V)  # (N, V)
    c = np.bincount(x, weights=w, minlength=N)  # (N,)
    theta -= lr * (onehot - c[:, None] * np.exp(log_softmax(theta)))  # eq. (toy_step)
    return True


@boundary(
    K=COUNT,
    n_responses=COUNT,
    seed=SEED,
    grader=_a_grader,
    beta=NONNEGATIVE,
    lr=NONNEGATIVE,
    baseline=BASELINE,
    record_at=_step_counts,
    where=[_a_budget],
    returns=None,
)
def train(K, n_responses, seed, *, grader="gold", beta=0.0, lr=2.0, baseline="standardized", record_at=()):
    """Train from the reference with `n_responses` per prompt (`n_responses // K` steps).

    Args:
        K: responses per prompt and step.
        n_responses: the budget of responses per prompt.
        seed: the seed of the generator `np.random.default_rng(seed)`.
        grader: `"gold"`, `"sloppy"` or a callable grader.
        beta: the KL coefficient, folded into the reward.
        lr: the step size.
        baseline: `"standardized"`, `"mean"` or `"loo"` (`K >= 2`).
        record_at: step counts in `[1, n_responses // K]` after which to record the success.

    Returns:
        `(policy, ref, curve)`: the trained `TabularPolicy`, the reference, and a list of
        `(responses drawn per prompt, success)` pairs, one per entry of `record_at`.
    """
    steps = n_responses // K
    rewards = reward_table.core(grader)  # (N, V) every cell
    if np.abs(rewards).max() > REWARD_MAX:  # the grader's output, not an argument
        raise ValueError(
            f"grader: expected rewards |R| <= {REWARD_MAX:g} (the advantages' domain), "
            f"got max |R| = {np.abs(rewards).max():g}"
        )
    rng = np.random.default_rng(seed)
    ref = TabularPolicy(reference_theta())
    policy = ref.copy()
    theta = policy.theta  # (N, V) the policy's own table, stepped in place
    cdf = _sampling_cdf(theta)  # (N, V) rebuilt only when a step moved theta
    curve = []
    for step in range(1, steps + 1):
        if _toy_step(theta, ref.theta, cdf, rewards, K, rng, beta, lr, baseline):
            cdf = _sampling_cdf(theta)
        if step in record_at:
            curve.append((step * K, evaluate.core(policy)["success"]))
    finite(policy.theta[np.isfinite(ref.theta)], "train", ["the trained logits"], {"beta": beta, "lr": lr})
    return policy, ref, curve
