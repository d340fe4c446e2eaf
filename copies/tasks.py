# minirl_lm 0.1.0: a self-contained copy of minirl_lm/tasks.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/tasks.py -o DIR
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
import inspect
import numbers

import numpy as np


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


def gold_grader(prompt, response):
    """The gold grader: 1.0 iff the one-token response is the prompt's answer (a verifier).

    Args:
        prompt: one of `PROMPTS`.
        response: a tuple holding one token id in `[0, 9)`.

    Returns:
        1.0 or 0.0.
    """
    return float(RESPONSES[response[0]] == ANSWERS[PROMPTS.index(prompt)])


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


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# part 3: from minirl_lm/core/policy.py --------------------------------------------------------
#   The tabular softmax policy `pi_theta(y | s) = softmax(theta[s])_y`.


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


def _softmax(theta):
    """Row-wise softmax of a checked (S, V) logit table (stable; -inf entries give 0)."""
    z = theta - theta.max(axis=1, keepdims=True)  # (S, V), max entry 0
    e = np.exp(z)  # (S, V)
    return e / e.sum(axis=1, keepdims=True)


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
        """An independent copy: use it as the frozen reference `pi_ref`."""
        return TabularPolicy(self.theta)

    def probs(self):
        """The probabilities `pi(. | s)` of every state."""
        return _softmax(self.theta)

    def log_probs(self):
        """The log-probabilities `log pi(. | s)` of every state."""
        return log_softmax(self.theta)

    # ---- sampling --------------------------------------------------------
    def sample(self, states, rng):
        """One token per entry of `states`, drawn with `rng`."""
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
        """Token log-probs and sequence log-probs, eq. (factorization)."""
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
        """The gradient `dloss/dtheta` from `g = dloss/dlogp`, eq. (policy_backward)."""
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
        """Trusted core of ``backward`` (C-contiguous int64 ids in range, a 0/1 float64 mask,
        finite float64 w of the same shape): no re-checking."""
        w = np.ascontiguousarray(w * mask)  # (B, T), zero at padding
        return _tabular_backward(self.theta, states, tokens, mask, w)


# part 4: from minirl_lm/pg/advantages.py ------------------------------------------------------
#   Baselines: the group of K responses to one prompt is its own baseline.


BASELINES = ("none", "mean", "standardized", "loo")
REWARD_MAX = 1e150  # |rewards| bound: the standardized baseline squares the spread


def bounded_rewards(rewards, greedy_rewards=None):
    """Every `|R| <= REWARD_MAX`, the advantages' domain (the standardized baseline squares the
    spread); ReMax's greedy rewards too."""
    if (m := np.abs(rewards).max()) > REWARD_MAX:
        return (
            f"rewards: expected |r| <= {REWARD_MAX:g} (the standardized baseline squares the spread, "
            f"which overflows float64 beyond ~1e154), got max |r| = {m:g}"
        )
    if greedy_rewards is not None and (m := np.abs(greedy_rewards).max()) > REWARD_MAX:
        return f"greedy_rewards: expected |r| <= {REWARD_MAX:g}, got max {m:g}"


def _others(rewards, baseline="loo"):
    """Leave-one-out has `K >= 2` rewards per group to average."""
    if baseline == "loo" and rewards.shape[1] < 2:
        return f"rewards: leave-one-out needs K >= 2 responses per prompt (others to average), got {rewards.shape}"


def group_mean(r):
    """Mean of each group of checked rewards `(N, K)`, `(N, 1)`; exactly the common value when a
    group's rewards are equal (`np.mean` of identical floats can differ from them)."""
    mean = r.sum(axis=1, keepdims=True) / r.shape[1]  # (N, 1), r.mean's arithmetic
    equal = (r == r[:, :1]).all(axis=1, keepdims=True)  # (N, 1)
    return np.where(equal, r[:, :1], mean)  # (N, 1)


def standardized(rewards, std_eps=1e-8, ddof=0):
    """Group-standardized advantages, eq. (pg_normalized): `A = (R - mean) / (std + xi)`."""
    c = rewards - group_mean(rewards)  # (N, K)
    dof = max(rewards.shape[1] - ddof, 1)  # K = 1, ddof = 1: c == 0, so std = 0
    ss = (c * c).sum(axis=1, keepdims=True)  # (N, 1)
    std = np.sqrt(ss / dof)  # (N, 1)
    # c*c underflows (subnormal or 0) below ~1e-154; rescale groups whose sum of squares is
    # under 1e-290 (|c| < ~1e-145: never an ordinary group), leaving all others bit-identical
    tiny = (ss < 1e-290) & (c != 0).any(axis=1, keepdims=True)  # (N, 1)
    if np.count_nonzero(tiny):
        s = np.where(tiny, np.abs(c).max(axis=1, keepdims=True), 1.0)  # (N, 1)
        cs = c / s  # (N, K)
        std = np.where(tiny, s * np.sqrt((cs * cs).sum(axis=1, keepdims=True) / dof), std)
    denom = std + std_eps  # (N, 1)
    if std_eps > 0:  # denom > 0 everywhere
        return c / denom  # eq. (pg_normalized)
    # eq. (pg_normalized); a zero spread with std_eps = 0 gives 0, not 0/0
    return np.divide(c, denom, out=np.zeros_like(c), where=denom > 0)


def advantages(rewards, baseline="standardized", std_eps=1e-8, ddof=0):
    """Group advantages with the chosen baseline."""
    if baseline == "none":
        return rewards.copy()  # eq. (pg_vanilla); not the caller's array (GRPO returns both)
    if baseline == "standardized":
        return standardized.core(rewards, std_eps, ddof)
    c = rewards - group_mean(rewards)  # (N, K) eq. (pg_centred)
    K = rewards.shape[1]
    return c if baseline == "mean" else (K / (K - 1)) * c  # eq. (pg_loo)


# part 5: from minirl_lm/pg/kl.py --------------------------------------------------------------
#   KL to the frozen reference: per-token estimators, their two placements, and the exact KL.


def kl_in_reward(rewards, logp, logp_ref, mask, beta):
    """The KL folded into the reward, eq. (kl_reward): `R~ = R - beta sum_t u_t` (k1 summed)."""
    return rewards - beta * log_ratio(logp, logp_ref, mask).sum(axis=1)  # (B,) eq. (kl_reward)


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


def real_result(value, name, context=""):
    """A callable's return value (a grader's reward) as a finite Python float, else an error
    naming `name` (the callable): None, a string, a bool, NaN or inf are rejected."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number{context}, got {_describe(value)}")
    try:
        x = float(value)
    except OverflowError:
        x = np.inf  # an int beyond float64
    if not np.isfinite(x):
        raise ValueError(f"{name}: expected a finite number{context}, got {value}"[:200])
    return x


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


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


NONNEGATIVE = number(0.0)
COUNT = number(1, integer=True)  # an integer >= 1


DDOF = number(0, 1, integer=True)  # a std's delta degrees of freedom: population 0, Bessel 1


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)

THETA = logits("S V")  # (S, V) logits, -inf allowed, a finite entry per row
STATES = id_array("...")  # state ids of any shape, in [0, S): `_in_table`
BATCH_IDS = id_array("B T")  # (B, T) state or token ids, not copied; in range: `_in_table`
PROMPT = one_of(PROMPTS)
TOY_POLICY = has("a TabularPolicy", "probs() theta")  # of the toy's shape: `_toy_shape`
BASELINE = one_of(("standardized", "mean", "loo"))
SEED = number(0, integer=True)

gold_grader = boundary(prompt=PROMPT, response=_one_token, returns=None)(gold_grader)

sloppy_grader = boundary(prompt=PROMPT, response=_one_token, returns=None)(sloppy_grader)

reward_table = boundary(grader=_a_grader, returns=None)(reward_table)

evaluate = boundary(policy=TOY_POLICY, where=[_toy_shape], returns=None)(evaluate)

train = boundary(
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
)(train)

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

standardized = boundary(
    rewards=array("N K"), std_eps=NONNEGATIVE, ddof=DDOF, where=[bounded_rewards]
)(standardized)

advantages = boundary(
    rewards=array("N K"),
    baseline=one_of(BASELINES),
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    where=[bounded_rewards, _others],
)(advantages)

kl_in_reward = boundary(
    logp=TOKENS, logp_ref=TOKENS, mask=MASK, rewards=array("B"), beta=NONNEGATIVE, returns="rewards"
)(kl_in_reward)
