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
(`dloss/dlogp = -A_k / K`), so the same code path as every other estimator.

Evaluation is exact (no sampling): success `= mean_x sum_y pi(y|x) R_gold(x, y)`; hedge
`= mean_x pi(hedge|x)`. Demonstrated by `python examples/k_sweep.py` and
`python examples/loophole.py`.
"""

import functools

import numpy as np

from minirl_lm.pg.advantages import advantages
import numbers

from minirl_lm.core.checks import (callable_check, choice, finite_result, float_scalar, int_scalar,
                              real_result)
from minirl_lm.pg.kl import kl_in_reward
from minirl_lm.core.policy import TabularPolicy

PROMPTS = ("2+2", "3*4", "8*8", "9*9")
ANSWERS = ("4", "12", "64", "81")
RESPONSES = ("1", "3", "4", "7", "12", "19", "23", "35", "one of 4, 12, 64 or 81")
HEDGE = 8
HEDGE_LOGIT = -4.0


def _toy_args(prompt, response):
    """(answer, response text) of a toy prompt and a one-token response, checked."""
    if not isinstance(prompt, str) or prompt not in PROMPTS:
        raise ValueError(f"prompt: expected one of {list(PROMPTS)}, got {prompt!r}"[:200])
    if (isinstance(response, (str, bytes)) or not hasattr(response, "__len__")
            or len(response) != 1):
        raise ValueError(f"response: expected a tuple of one token id (the toy's responses are "
                         f"one token), got {response!r}"[:200])
    y = response[0]
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Integral):
        raise TypeError(f"response: expected an integer token id, got {y!r}"[:200])
    if not 0 <= y < len(RESPONSES):
        raise ValueError(f"response: expected a token id in [0, {len(RESPONSES)}), got {y}")
    return ANSWERS[PROMPTS.index(prompt)], RESPONSES[y]


def gold_grader(prompt, response):
    """The gold grader: 1.0 iff the one-token response is the prompt's answer (a verifier).

    Args:
        prompt: one of `PROMPTS`.
        response: a tuple holding one token id in `[0, 9)`.

    Returns:
        1.0 or 0.0.
    """
    answer, text = _toy_args(prompt, response)
    return float(text == answer)


def sloppy_grader(prompt, response):
    """The sloppy grader: 1.0 iff the answer occurs in the response's text (a grep).

    The hedge passes everywhere.

    Args:
        prompt: one of `PROMPTS`.
        response: a tuple holding one token id in `[0, 9)`.

    Returns:
        1.0 or 0.0.
    """
    answer, text = _toy_args(prompt, response)
    return float(answer in text)


GRADERS = {"gold": gold_grader, "sloppy": sloppy_grader}


def reward_table(grader):
    """The reward `R(x, y)` of every prompt and response.

    Args:
        grader: `"gold"`, `"sloppy"` or a callable `grader(prompt, response)` returning a
            finite number.

    Returns:
        `(N, V) = (4, 9)` rewards.
    """
    grader = GRADERS[choice(grader, "grader", set(GRADERS))] if isinstance(grader, str) else grader
    callable_check(grader, "grader", 2, "grader(prompt, response)")
    return np.array([[real_result(grader(x, (y,)), "grader", f" (a finite reward) for {x!r}, {y}")
                      for y in range(len(RESPONSES))] for x in PROMPTS])


def reference_theta():
    """The reference (and starting) logits: 0 on the numbers, `-4` on the hedge.

    Returns:
        `(4, 9)` float64 logits.
    """
    theta = np.zeros((len(PROMPTS), len(RESPONSES)))
    theta[:, HEDGE] = HEDGE_LOGIT
    return theta


def evaluate(policy):
    """Exact scores of a policy on the toy (no sampling).

    Args:
        policy: a `TabularPolicy` with a `(4, 9)` table.

    Returns:
        A dict with `success` (gold reward), `sloppy` (sloppy reward), `hedge` (mass on the
        hedge) and `per_prompt`.
    """
    shape = getattr(getattr(policy, "theta", None), "shape", None)
    if shape != (len(PROMPTS), len(RESPONSES)):
        raise ValueError(f"policy: expected a TabularPolicy of shape ({len(PROMPTS)}, "
                         f"{len(RESPONSES)}) for the toy, got {type(policy).__name__} with shape {shape}")
    pi = policy.probs()                                        # (N, V)
    per_prompt = (pi * reward_table("gold")).sum(axis=1)      # (N,)
    sloppy = (pi * reward_table("sloppy")).sum(axis=1)        # (N,)
    return dict(success=per_prompt.mean(), sloppy=sloppy.mean(),
                hedge=pi[:, HEDGE].mean(), per_prompt=per_prompt)


@functools.lru_cache(maxsize=None)
def _batch(N, K):
    """The constant (B, 1) states (prompt-major) and mask of a one-token step; read-only."""
    states = np.repeat(np.arange(N), K)[:, None]               # (B, 1), prompt-major
    mask = np.ones_like(states, dtype=np.float64)              # (B, 1): one token each
    states.flags.writeable = mask.flags.writeable = False
    return states, mask


def _toy_step(policy, ref, rewards, K, rng, beta=0.0, lr=2.0, baseline="standardized"):
    """One step of eq. (toy_step) on every prompt, in place on ``policy.theta``.

    rewards: the (N, V) reward table; K responses per prompt; ref: the frozen reference.
    baseline: "standardized" (the chapter), "mean" or "loo" (see advantages.py).
    The arguments are checked by ``train``; this inner loop is thousands of tiny steps, so it
    uses the policy's trusted cores on arrays it builds itself (inside the library, no
    re-checking).
    """
    N = policy.S
    states, mask = _batch(N, K)                                # (B, 1) each
    tokens = policy._sample(states, rng)                       # (B, 1) y ~ pi(.|x)
    r = rewards[states[:, 0], tokens[:, 0]]                    # (B,) terminal reward
    if beta > 0:                                               # eq. (kl_reward), data only
        logp, _ = policy._logp(states, tokens, mask)           # (B, 1)
        logp_ref, _ = ref._logp(states, tokens, mask)          # (B, 1)
        r = kl_in_reward(r, logp, logp_ref, mask, beta)
    A = advantages(r.reshape(N, K), baseline).reshape(-1, 1)   # (B, 1) eq. (pg_normalized)
    dlogp = -A / K                                             # loss -(1/K) sum_k A_k log pi(y_k|x)
    policy.theta -= lr * policy._backward(states, tokens, mask, dlogp)


def train(K, n_responses, seed, grader="gold", beta=0.0, lr=2.0, baseline="standardized",
          record_at=()):
    """Train from the reference with `n_responses` per prompt (`n_responses // K` steps).

    Args:
        K: responses per prompt and step.
        n_responses: the budget of responses per prompt.
        seed: the seed of the generator `np.random.default_rng(seed)`.
        grader: `"gold"`, `"sloppy"` or a callable grader.
        beta: the KL coefficient, folded into the reward.
        lr: the step size.
        baseline: `"none"`, `"mean"`, `"standardized"` or `"loo"`.
        record_at: step counts in `[1, n_responses // K]` after which to record the success.

    Returns:
        `(policy, ref, curve)`: the trained `TabularPolicy`, the reference, and a list of
        `(responses drawn per prompt, success)` pairs, one per entry of `record_at`.
    """
    K = int_scalar(K, "K", low=1)
    n_responses = int_scalar(n_responses, "n_responses", low=K)
    beta = float_scalar(beta, "beta", low=0.0)
    lr = float_scalar(lr, "lr", low=0.0)
    seed = int_scalar(seed, "seed", low=0)
    choice(baseline, "baseline", {"standardized", "mean", "loo"})
    if not (isinstance(grader, str) or callable(grader)):
        raise TypeError(f"grader: expected 'gold', 'sloppy' or a callable, got {type(grader).__name__}")
    if isinstance(record_at, (str, bytes)) or not hasattr(record_at, "__iter__"):
        raise TypeError(f"record_at: expected a collection of step counts, got {type(record_at).__name__}")
    steps = n_responses // K
    record_at = {int_scalar(v, "record_at", low=1, high=steps) for v in record_at}
    if baseline == "loo" and K == 1:
        raise ValueError("baseline: leave-one-out needs K >= 2, got K = 1")
    rewards = reward_table(grader)                             # the grader checked on every cell
    rng = np.random.default_rng(seed)
    ref = TabularPolicy(reference_theta())
    policy = ref.copy()
    curve = []
    for step in range(1, steps + 1):
        _toy_step(policy, ref, rewards, K, rng, beta=beta, lr=lr, baseline=baseline)
        if step in record_at:
            curve.append((step * K, evaluate(policy)["success"]))
    finite_result(policy.theta[np.isfinite(ref.theta)], "lr", "the trained logits")
    return policy, ref, curve
