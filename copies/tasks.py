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


__all__ = ["gold_grader", "sloppy_grader", "reward_table", "reference_theta", "evaluate", "train"]


PROMPTS = ("2+2", "3*4", "8*8", "9*9")
ANSWERS = ("4", "12", "64", "81")
RESPONSES = ("1", "3", "4", "7", "12", "19", "23", "35", "one of 4, 12, 64 or 81")
HEDGE = 8
HEDGE_LOGIT = -4.0


def _toy_args(prompt, response):
    """(answer, response text) of a toy prompt and a one-token response, checked."""
    y = toy_response(prompt, response, PROMPTS, len(RESPONSES))
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
    return grader_table(grader, GRADERS, PROMPTS, len(RESPONSES))


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
    toy_policy(policy, (len(PROMPTS), len(RESPONSES)))
    pi = policy.probs()  # (N, V)
    per_prompt = (pi * reward_table("gold")).sum(axis=1)  # (N,)
    sloppy = (pi * reward_table("sloppy")).sum(axis=1)  # (N,)
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


def train(K, n_responses, seed, grader="gold", beta=0.0, lr=2.0, baseline="standardized", record_at=()):
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
    K, steps, seed, beta, lr, record_at = train_args(K, n_responses, seed, grader, beta, lr, baseline, record_at)
    rewards = grader_table(grader, GRADERS, PROMPTS, len(RESPONSES), REWARD_MAX)  # every cell
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
            curve.append((step * K, evaluate(policy)["success"]))
    finite_result(policy.theta[np.isfinite(ref.theta)], "lr", "the trained logits")
    return policy, ref, curve


# ----------------------------------------------------------------------------------------------
# part 1: from minirl_lm/core/_tabular.py
#   The NumPy path of `TabularPolicy`: what it runs when Numba cannot be imported.
# ----------------------------------------------------------------------------------------------


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
    """False: the policy runs its full checks (`core/validate.py`'s `policy_batch`) on every batch."""
    return False


def weights_fast(w, shape):
    """False: the policy checks `dlogp` with `float_array`."""
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


# ----------------------------------------------------------------------------------------------
# part 2: from minirl_lm/core/ops.py
#   The small pieces every objective shares, one definition each.
# ----------------------------------------------------------------------------------------------


def log_ratio(logp, logp_other, mask):
    """`logp - logp_other` (B, T), exactly 0 at padding whatever the inputs hold there."""
    return np.subtract(logp, logp_other, out=np.zeros_like(logp), where=mask > 0)


def log_softmax(z):
    """Log-softmax over the last axis of checked logits (every row has a finite entry; `-inf`
    entries stay `-inf`), eq. (log_softmax)."""
    shifted = z - z.max(axis=-1, keepdims=True)  # (..., V), max entry 0
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# ----------------------------------------------------------------------------------------------
# part 3: from minirl_lm/core/policy.py
#   The tabular softmax policy `pi_theta(y | s) = softmax(theta[s])_y`.
# ----------------------------------------------------------------------------------------------


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
        self.theta = theta

    @property
    def theta(self):
        """The `(S, V)` float64 C-contiguous logit table."""
        return self._theta

    @theta.setter
    def theta(self, value):
        if value is getattr(self, "_theta", None):  # `policy.theta -= step`: in place
            theta_table(value)
        else:  # a new table: checked, then an own copy
            value = np.array(theta_table(value), dtype=np.float64, order="C")
        self._theta = value
        self.S, self.V = value.shape

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
        rng_check(rng, "rng")
        states = int_array(states, "states", low=0, high=self.S)
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
    def _check_batch(self, states, tokens, mask):
        if policy_batch_fast(states, tokens, mask, self.S, self.V):  # one jitted pass
            return states, tokens, mask
        return policy_batch(states, tokens, mask, self.S, self.V)  # converts, or raises

    def logp(self, states, tokens, mask):
        """Token log-probs and sequence log-probs, eq. (factorization)."""
        states, tokens, mask = self._check_batch(states, tokens, mask)
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
        states, tokens, mask = self._check_batch(states, tokens, mask)
        w = dlogp if weights_fast(dlogp, states.shape) else float_array(dlogp, "dlogp", shape=states.shape)
        dtheta = self._backward(states, tokens, mask, w)
        if _dtheta_fault(dtheta, states, tokens, mask, _abs_sum(w, mask)):  # O(S + B T), see there
            finite_result(dtheta, "dlogp", "dtheta (sums of dlogp per state)")
        return dtheta

    def _backward(self, states, tokens, mask, w):
        """Trusted core of ``backward`` (C-contiguous int64 ids in range, a 0/1 right-padded
        float64 mask, finite float64 w of the same shape): no re-checking."""
        w = np.ascontiguousarray(w * mask)  # (B, T), zero at padding
        return _tabular_backward(self.theta, states, tokens, mask, w)


# ----------------------------------------------------------------------------------------------
# part 4: from minirl_lm/pg/advantages.py
#   Baselines: the group of K responses to one prompt is its own baseline.
# ----------------------------------------------------------------------------------------------


BASELINES = ("none", "mean", "standardized", "loo")
REWARD_MAX = 1e150  # |rewards| bound: the standardized baseline squares the spread


def _in_domain(rewards, greedy_rewards=None):
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


def _group_mean(r):
    """Mean of each group, (N, 1); exactly the common value when a group's rewards are equal."""
    mean = r.sum(axis=1, keepdims=True) / r.shape[1]  # (N, 1), r.mean's arithmetic
    equal = (r == r[:, :1]).all(axis=1, keepdims=True)  # (N, 1)
    return np.where(equal, r[:, :1], mean)  # (N, 1)


def standardized(rewards, std_eps=1e-8, ddof=0):
    """Group-standardized advantages, eq. (pg_normalized): `A = (R - mean) / (std + xi)`."""
    c = rewards - _group_mean(rewards)  # (N, K)
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
    c = rewards - _group_mean(rewards)  # (N, K) eq. (pg_centred)
    K = rewards.shape[1]
    return c if baseline == "mean" else (K / (K - 1)) * c  # eq. (pg_loo)


# ----------------------------------------------------------------------------------------------
# part 5: from minirl_lm/pg/kl.py
#   KL to the frozen reference: per-token estimators, their two placements, and the exact KL.
# ----------------------------------------------------------------------------------------------


def kl_in_reward(rewards, logp, logp_ref, mask, beta):
    """The KL folded into the reward, eq. (kl_reward): `R~ = R - beta sum_t u_t` (k1 summed)."""
    return rewards - beta * log_ratio(logp, logp_ref, mask).sum(axis=1)  # (B,) eq. (kl_reward)


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/validate.py
#   The boundary of the log-prob primitive, the tabular policy and the kernels' NumPy twins:
# ----------------------------------------------------------------------------------------------


def policy_batch(states, tokens, mask, S, V):
    """The (B, T) batch of a tabular policy with S states and V tokens: int ids in [0, S) and [0,
    V) at every position (padding too), the same shape, and a 0/1 mask (holes allowed: each
    token is gathered on its own); returned as C-contiguous int64, int64, float64 (the kernels
    read them by pointer)."""
    states = int_array(states, "states", ndim=2, low=0, high=S)
    tokens = int_array(tokens, "tokens", ndim=2, low=0, high=V)
    same_shape("states", states, "tokens", tokens)
    mask = mask_array(mask, "mask", shape=states.shape)
    return (np.ascontiguousarray(states), np.ascontiguousarray(tokens), np.ascontiguousarray(mask))


def theta_table(theta, name="theta"):
    """A logit table `(S, V)`, `S, V >= 1`, float64, entries finite or `-inf` (an impossible
    token), every row with a finite entry (the policy's softmax needs one)."""
    theta = float_array(theta, name, ndim=2, allow_neginf=True)
    if theta.shape[0] < 1 or theta.shape[1] < 1:
        raise ValueError(f"{name}: expected shape (S, V) with S, V >= 1, got {theta.shape}")
    dead = ~np.isfinite(theta).any(axis=1)
    if dead.any():
        raise ValueError(
            f"{name}: expected at least one finite logit per row, row {int(np.argmax(dead))} is all -inf"
        )
    return theta


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/pg/validate.py
#   The boundary of the policy-gradient part, group level: the bundles of `pg/advantages.py` not
# ----------------------------------------------------------------------------------------------


def toy_response(prompt, response, prompts, V):
    """The token id of a one-token ``response`` to one of ``prompts`` (tasks.py's toy)."""
    if not isinstance(prompt, str) or prompt not in prompts:
        raise ValueError(f"prompt: expected one of {list(prompts)}, got {prompt!r}"[:200])
    if isinstance(response, (str, bytes)) or not hasattr(response, "__len__") or len(response) != 1:
        raise ValueError(
            f"response: expected a tuple of one token id (the toy's responses are one token), got {response!r}"[
                :200
            ]
        )
    y = response[0]
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Integral):
        raise TypeError(f"response: expected an integer token id, got {y!r}"[:200])
    if not 0 <= y < V:
        raise ValueError(f"response: expected a token id in [0, {V}), got {y}")
    return y


def grader_table(grader, graders, prompts, V, bound=None):
    """The ``(N, V)`` rewards of a grader (a name in ``graders`` or a callable) on every prompt
    and one-token response, each a finite number (``|R| <= bound`` if given)."""
    grader = graders[choice(grader, "grader", set(graders))] if isinstance(grader, str) else grader
    callable_check(grader, "grader", 2, "grader(prompt, response)")
    R = np.array(
        [
            [real_result(grader(x, (y,)), "grader", f" (a finite reward) for {x!r}, {y}") for y in range(V)]
            for x in prompts
        ]
    )
    return R if bound is None else grader_rewards(R, bound)


def grader_rewards(R, bound):
    """A grader's finite rewards ``R`` if every ``|R| <= bound`` (the advantages' domain), else a
    ValueError naming the grader (the rewards are its output, not an argument)."""
    if np.abs(R).max() > bound:
        raise ValueError(
            f"grader: expected rewards |R| <= {bound:g} (the advantages' domain), "
            f"got max |R| = {np.abs(R).max():g}"
        )
    return R


def toy_policy(policy, shape):
    """Raise unless ``policy`` holds a table ``theta`` of ``shape``."""
    got = getattr(getattr(policy, "theta", None), "shape", None)
    if got != shape:
        raise ValueError(
            f"policy: expected a TabularPolicy of shape ({shape[0]}, "
            f"{shape[1]}) for the toy, got {type(policy).__name__} with shape {got}"
        )
    return policy


def train_args(K, n_responses, seed, grader, beta, lr, baseline, record_at):
    """The arguments of tasks.train: ``(K, steps, seed, beta, lr, record_at (a set))``."""
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
    return K, steps, seed, beta, lr, record_at


# ----------------------------------------------------------------------------------------------
# input checks: from minirl_lm/core/checks.py
#   Input checks at the public boundary.
# ----------------------------------------------------------------------------------------------


def _describe(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"[:120]


def float_array(x, name, ndim=None, shape=None, finite=True, allow_neginf=False):
    """Return ``x`` as a float64 array after checking it. ndim: required number of dimensions
    (None: any). shape: required shape; a None entry matches any length. finite: reject NaN
    and +-inf; with ``allow_neginf`` a -inf entry is allowed (log-probabilities of impossible
    tokens), NaN and +inf never are."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(x)}")
    arr = _asarray(x, name)
    if arr.dtype.kind not in "fiub":  # float, int, uint, bool
        raise TypeError(f"{name}: expected a real-valued array, got {_describe(arr)}")
    arr = arr.astype(np.float64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if finite and not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(arr).sum())} NaN entries")
        bad = np.isposinf(arr) if allow_neginf else np.isinf(arr)
        if bad.any():
            what = "+inf" if allow_neginf else "+-inf"
            raise ValueError(f"{name}: expected finite values (no {what}), got {int(bad.sum())} such entries")
    return arr


def int_array(x, name, ndim=None, shape=None, low=None, high=None):
    """Return ``x`` as an int64 array of ids in ``[low, high)`` after checking it."""
    arr = _asarray(x, name)
    if arr.dtype.kind not in "iu":  # signed or unsigned integers
        raise TypeError(f"{name}: expected an integer array of ids, got {_describe(arr)}")
    arr = arr.astype(np.int64, copy=False)
    _check_shape(arr, name, ndim, shape)
    if arr.size:
        if low is not None and arr.min() < low:
            raise ValueError(f"{name}: expected ids >= {low}, got min {arr.min()}")
        if high is not None and arr.max() >= high:
            raise ValueError(f"{name}: expected ids < {high}, got max {arr.max()}")
    return arr


def mask_array(x, name, shape=None, prefix=None):
    """Return a (B, T) float64 mask of 0.0/1.0 (bool, int and float masks are accepted)."""
    arr = float_array(x, name, ndim=2, shape=shape)
    nonempty(arr, name)  # B >= 1 responses, T >= 1 positions
    binary = (arr == 0.0) | (arr == 1.0)
    if not binary.all():
        bad = arr[~binary]
        raise ValueError(f"{name}: expected only 0 and 1, got value {float(bad.flat[0])!r}")
    if prefix is None:
        return arr
    rises = arr[:, 1:] > arr[:, :-1]  # (B, T - 1): a 1 after a 0
    if rises.any():
        what, where = prefix
        row = int(np.nonzero(rises.any(axis=1))[0][0])
        raise ValueError(
            f"{name}: expected right padding (1s then 0s in each row) for {what}, "
            f"row {row} is {arr[row].astype(int).tolist()}; a mask with holes (tool outputs) "
            f"is accepted by the token-level objectives; here use {where}"
        )
    return arr


def same_shape(name_a, a, name_b, b):
    """Raise unless arrays ``a`` and ``b`` have the same shape (no broadcasting)."""
    for nm, x in ((name_a, a), (name_b, b)):
        if not isinstance(getattr(x, "shape", None), tuple):
            raise TypeError(f"{nm}: expected an array, got {_describe(x)}")
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {a.shape}, got {b.shape}")


def rng_check(rng, name):
    """Raise unless ``rng`` is a ``np.random.Generator``."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name}: expected a numpy.random.Generator (np.random.default_rng(seed)), got {_describe(rng)}"
        )
    return rng


def int_scalar(x, name, low=None, high=None):
    """Return ``x`` as a Python int in ``[low, high]`` (bounds inclusive)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {_describe(x)}")
    x = int(x)
    if low is not None and x < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected an integer <= {high}, got {x}")
    return x


def float_scalar(x, name, low=None, high=None, low_open=False):
    """Return ``x`` as a finite Python float, ``>= low`` (``> low`` if low_open), ``<= high``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {_describe(x)}")
    x = _float(x, name, "a finite number")
    if low is not None and (x <= low if low_open else x < low):
        raise ValueError(f"{name}: expected a number {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name}: expected a number <= {high}, got {x}")
    return x


def choice(x, name, options):
    """Raise unless ``x`` is one of ``options`` (an unhashable ``x`` is a TypeError naming it)."""
    try:
        hash(x)
    except TypeError:
        raise TypeError(
            f"{name}: expected one of {sorted(options, key=str)}, got unhashable {_describe(x)}"
        ) from None
    if isinstance(x, bool) or x not in options:  # True == 1 must not pick option 1
        raise ValueError(f"{name}: expected one of {sorted(options, key=str)}, got {x!r}")
    return x


def nonempty(arr, name):
    """Raise unless every axis of the checked array ``arr`` has length >= 1 (before a reduction)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a checked array, got {_describe(arr)}")
    if arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty array (every axis of length >= 1), got shape {arr.shape}")
    return arr


def finite_result(value, name, what):
    """Return ``value`` (a number, an array, or a tuple of them, nested) if every entry is
    finite; else raise a ValueError naming ``name``, the argument that drove the overflow."""
    if not (isinstance(name, str) and isinstance(what, str)):
        raise TypeError(f"finite_result: expected name and what as strings, got {name!r}, {what!r}")
    parts = [value]
    while parts:
        v = parts.pop()
        if isinstance(v, (tuple, list)):
            parts.extend(v)
            continue
        if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_, np.ndarray)):
            try:
                v = float(v)  # an exact number (a Fraction) too
            except OverflowError:
                raise ValueError(
                    f"{name}: expected a value for which {what} is finite in "
                    f"float64, got one beyond float64's range"
                ) from None
        a = _asarray(v, name)
        if isinstance(v, (str, bytes)) or a.dtype.kind not in "fiub":
            raise TypeError(f"{name}: expected a number or an array of numbers, got {_describe(v)}")
        if not np.isfinite(a.astype(np.float64, copy=False)).all():
            kind = "NaN" if np.isnan(a).any() else "inf"
            raise ValueError(
                f"{name}: expected a value for which {what} is finite in float64, "
                f"got one that makes it {kind} (overflow)"
            )
    return value


def real_result(value, name, context=""):
    """A callable's return value (a grader's reward) as a finite Python float, else an error
    naming ``name`` (the callable): None, a string, a bool, NaN or inf are rejected."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number{context}, got {_describe(value)}")
    return _float(value, name, f"a finite number{context}")


def callable_check(f, name, nargs, call="f(...)"):
    """Raise unless ``f`` is a callable that accepts ``nargs`` positional arguments."""
    if not callable(f) or isinstance(f, type):
        raise TypeError(f"{name}: expected a callable {call}, got {_describe(f)}")
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):  # builtins without a signature
        return f
    try:
        sig.bind(*range(nargs))
    except TypeError:
        raise TypeError(
            f"{name}: expected a callable {call} taking {nargs} positional arguments, got one with signature {sig}"
        ) from None
    return f


def _asarray(x, name):
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:  # ragged nesting, huge ints
        raise TypeError(f"{name}: expected an array, got {_describe(x)} ({e})") from None


def _check_shape(arr, name, ndim, shape):
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimension{'' if ndim == 1 else 's'}, got shape {arr.shape}")
    if shape is not None:
        ok = len(shape) == arr.ndim and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = ", ".join("any" if s is None else str(s) for s in shape)
            want = f"({want},)" if len(shape) == 1 else f"({want})"  # as Python prints a tuple
            raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")


def _float(x, name, expected):
    """A checked real number as a finite Python float (an int beyond float64 is not finite)."""
    try:
        x = float(x)
    except OverflowError:
        raise ValueError(
            f"{name}: expected {expected}, got an integer of {int(x).bit_length()} bits, beyond float64"
        ) from None
    if not np.isfinite(x):
        raise ValueError(f"{name}: expected {expected}, got {x}")
    return x


# ----------------------------------------------------------------------------------------------
# the declared boundary: from minirl_lm/boundary.py
#   The declared boundary: one engine applies the contracts each function declares beside it.
#   A declared function binds its arguments by keyword, reads each with its kind (a valid form
#   comes back converted, arrays as fresh float64 copies; anything else raises a TypeError or
#   ValueError starting with the argument's name), checks the relations, runs the body, and
#   refuses a non-finite result with one ValueError naming the function. `f.core` is the body.
# ----------------------------------------------------------------------------------------------


def boundary(where=(), returns="", **kinds):
    """Declare the kinds of a function's arguments (`name=kind`), the relations between them
    (`where=[rule, ...]`) and the names of its results (`returns="loss grad"`)."""

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


def array(*shapes, values=None, low=None, high=None, low_open=False, integer=False, empty=False):
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
        if not integer and np.isnan(a).any():
            raise ValueError(f"{name}: expected no NaN, got {int(np.isnan(a).sum())} NaN entries")
        if not integer and np.isinf(a).any():
            raise ValueError(
                f"{name}: expected finite values (no +-inf), got {int(np.isinf(a).sum())} such entries"
            )
        if values is not None and not np.isin(a, values).all():
            want = " and ".join(f"{v:g}" for v in values)
            raise ValueError(f"{name}: expected only {want}, got value {a[~np.isin(a, values)].flat[0].item()!r}")
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


def _show(x):
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    r = repr(x)  # an object's default repr holds its address, which differs from run to run
    return f"{type(x).__name__} {r}"[:120] if " at 0x" not in r else f"a {type(x).__name__} object"


TOKENS = array("B T")  # one number per position of each response (log-probs)


MASK = array("B T", values=(0.0, 1.0))  # 0/1, the trained tokens; holes allowed


NONNEGATIVE = number(0.0)


DDOF = number(0, 1, integer=True)  # a std's delta degrees of freedom: population 0, Bessel 1


# the declarations of the functions above (each a decorator in the package; a decorator
# runs where its function is defined, so in a copy, whose engine comes last, they follow it)


standardized = boundary(rewards=array("N K"), std_eps=NONNEGATIVE, ddof=DDOF, where=[_in_domain])(standardized)

advantages = boundary(
    rewards=array("N K"),
    baseline=one_of(BASELINES),
    std_eps=NONNEGATIVE,
    ddof=DDOF,
    where=[_in_domain, _others],
)(advantages)

kl_in_reward = boundary(
    logp=TOKENS, logp_ref=TOKENS, mask=MASK, rewards=array("B"), beta=NONNEGATIVE, returns="rewards"
)(kl_in_reward)
