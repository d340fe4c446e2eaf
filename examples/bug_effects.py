"""What each bug of the zoo does to the update, measured exactly against the correct code.

Every mutant of `scripts/bugzoo.py` is a real bug a framework shipped, written as a small edit of
one of our files. This program applies each edit IN MEMORY (the file's source is read, edited
with the zoo's exactly-once rule and executed as a fresh module whose own `minirl_lm.*` imports
are the real package; nothing is written to disk), runs one small deterministic measurement on
the mutated module and on the real one, and prints one line per mutant:

    bug NAME (SOURCE): what the bug does, and what the correct code does

Exact means computed, not sampled: expectations are sums over every outcome (the four responses
of a bandit, every response of a small token MDP, every (world, trajectory) pair of the
calculator, every batch of two groups of K = 4 Bernoulli draws), or values on fixed inputs. The seed
draws the policy tables only. Each measurement also returns an `effect`, a number that is exactly 0 when the
module under test computes what the real code computes (tests/examples/test_bug_effects.py runs every
measurement on the unmutated source too and asserts exactly 0 there).

    $ python examples/bug_effects.py
    $ python examples/bug_effects.py --only kl_loss_maximized --seed 3
"""

import argparse
import importlib.util
import sys
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "examples"))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import plot_path, quiet_pipe, seed  # noqa: E402

import bugzoo  # noqa: E402  (the zoo's table: name, source, file, edits)
from minirl_lm.core.mdp import TokenMDP  # noqa: E402
from minirl_lm.direct import preferences
from minirl_lm.multiturn import env as multiturn
from minirl_lm.multiturn import values as multiturn_values
from minirl_lm.multiturn.calculator import calculator, calculator_reference  # noqa: E402
from minirl_lm.pg import (
    advantages,  # noqa: E402
    clip,
    grpo,
    kl,
    offpolicy,  # noqa: E402
    seqclip,
)
from minirl_lm.values import critic
from minirl_lm.values.optimum import tilted_optimum  # noqa: E402

_spec = importlib.util.spec_from_file_location("multi_turn_example", ROOT / "examples" / "multi_turn.py")
_mt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mt)
row_grads, conditional_mean = _mt.row_grads, _mt.conditional_mean  # (B, S*V) scores, E[x | key]

REAL = {
    "minirl_lm/pg/clip.py": clip,
    "minirl_lm/pg/advantages.py": advantages,
    "minirl_lm/pg/kl.py": kl,
    "minirl_lm/pg/grpo.py": grpo,
    "minirl_lm/values/critic.py": critic,
    "minirl_lm/pg/seqclip.py": seqclip,
    "minirl_lm/pg/offpolicy.py": offpolicy,
    "minirl_lm/direct/preferences.py": preferences,
    "minirl_lm/multiturn/values.py": multiturn_values,
    "minirl_lm/multiturn/env.py": multiturn,
}


# ---- the mutated module, in memory ---------------------------------------------------------------
def load(mutant, pristine=False):
    """A fresh module object from `mutant.file`, with the mutant's edits applied (unless pristine).

    The edits are the zoo's own (`bugzoo.apply`: each anchor matched once, by its function and
    the statements' syntax tree, so a reformat cannot stale it); the module is executed under its
    own name but not registered in sys.modules, so its `minirl_lm.*` imports are the real package.
    """
    path = ROOT / mutant.file
    text = path.read_text()
    if not pristine:
        text = bugzoo.apply(mutant, text)
    mod = types.ModuleType(mutant.file[:-3].replace("/", "."))
    mod.__file__ = str(path)
    exec(compile(text, str(path), "exec"), mod.__dict__)
    return mod


# ---- the claims a page makes about a measurement (checked on mutants, not on the real code)
_CHECK = [True]


def _claim(ok, sentence):
    """`claim` on a mutant's measurement; on the unmutated source (pristine) the bug's claims do
    not apply, and nothing is checked."""
    return claim(ok, sentence) if _CHECK[0] else sentence


# ---- shared exact tools --------------------------------------------------------------------------
def softmax(theta):
    z = np.exp(theta - theta.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def cos(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


class Bandit:
    """One prompt, Y = 4 one-token responses: pi, pi_ref, rewards; batches of every response."""

    def __init__(self, rng):
        self.theta_ref = np.array([1.0, 0.5, 0.0, -0.5])
        self.theta = self.theta_ref + rng.normal(scale=0.5, size=4)  # pi != pi_ref
        self.r = np.array([0.0, 1.0, 0.5, 1.0])
        self.Y = 4
        self.mask = np.ones((4, 1))

    def logp(self, theta=None):
        p = softmax(self.theta if theta is None else theta)
        return np.log(p)[:, None]  # (Y, 1) one row each

    def expected_grad(self, d, theta=None):
        """E_y[c(y) grad log pi(y)] for per-row dloss/dlogp d (Y, 1) of a "seq_sum" loss over
        the Y rows (weights 1/Y), i.e. c(y) = Y d[y]: the expected loss gradient on theta (Y,)."""
        p = softmax(self.theta if theta is None else theta)
        c = self.Y * d[:, 0]
        return (p * c) @ (np.eye(self.Y) - p[None, :])  # (Y,)


N_TOKEN_MDP = TokenMDP(["x"], V=3, eos=0, max_len=3).all_responses().mask.shape[0]


def token_mdp(rng):
    """Copy task: one prompt, V = 3 (EOS = 0), up to 3 tokens; every response enumerated."""
    mdp = TokenMDP(["x"], V=3, eos=0, max_len=3)
    ro = mdp.all_responses()
    P = softmax(rng.normal(size=(mdp.S, mdp.V)))
    P_ref = softmax(rng.normal(size=(mdp.S, mdp.V)))
    m = ro.mask
    logp = np.log(P[ro.states, ro.tokens]) * m  # (B, T)
    logp_ref = np.log(P_ref[ro.states, ro.tokens]) * m
    pr = np.exp(logp.sum(axis=1))  # (B,) pi(y | x)
    R = np.array([float(1 in y) for y in ro.responses()])  # token 1 appears
    return mdp, ro, P, logp, logp_ref, pr, R


def exact_values(mdp, ro, pr, rewards):
    """V(s) = E[reward to go | s_t = s] (S,), by enumeration (0 where unreachable)."""
    G = critic.monte_carlo_returns(rewards, ro.mask)  # (B, T)
    p_tok = np.broadcast_to(pr[:, None], ro.mask.shape)[ro.mask > 0]
    v, _ = conditional_mean(p_tok, ro.states[ro.mask > 0], G[ro.mask > 0], mdp.S)
    return v


# ---- one measurement per mutant ------------------------------------------------------------------
def m_clip_fraction_sign(mod, rng):
    u = np.tile([-0.5, -0.1, 0.1, 0.5], 2)[None, :]  # (1, 8) log-ratios
    A = np.repeat([1.0, -1.0], 4)[None, :]  # both signs
    logp_old = np.full((1, 8), -1.0)
    mask = np.ones((1, 8))
    _, d = clip.clipped_surrogate(logp_old + u, logp_old, A, mask, 0.2)
    true = float(np.mean(d == 0.0))  # gradient zeroed
    reported = mod.clip_fraction(logp_old + u, logp_old, A, mask, 0.2)
    _claim(bool(reported > true), "the buggy clip fraction counts tokens that keep their gradient")
    return (
        f"reported clip fraction {reported:.3f} where {true:.3f} of tokens are clipped (gradient zeroed)",
        abs(reported - true),
    )


def m_singleton_raw_reward(mod, rng):
    b = Bandit(rng)

    def update(m):
        A = m.centred(b.r[:, None])[:, 0]  # Y groups of K = 1
        p = softmax(b.theta)
        return (p * A) @ (np.eye(4) - p[None, :]), A

    g, A = update(mod)
    g0, A0 = update(advantages)
    _claim(bool(A[1] == b.r[1]), "the mutant gives a singleton group its raw reward")
    _claim(bool(np.all(g0 == 0) and np.any(g != 0)), "the correct K = 1 update is exactly 0, the mutant's is not")
    return (
        f"a K = 1 group with reward 1 gets advantage {A[1]:.3f} (correct: {A0[1]:.3f}); "
        f"exact expected update norm {np.linalg.norm(g):.4f} where the correct code's is "
        f"{np.linalg.norm(g0):.4f}",
        float(np.abs(g - g0).max() + np.abs(A - A0).max()),
    )


def m_equal_rewards_residue(mod, rng):
    r = np.full((1, 6), 0.2)  # K = 6 equal rewards
    out = []
    for eps in (1e-8, 0.0):
        out.append(
            (np.abs(mod.standardized(r, std_eps=eps)).max(), np.abs(advantages.standardized(r, std_eps=eps)).max())
        )
    (a1, c1), (a0, c0) = out
    _claim(
        bool(a0 == 1.0 and c1 == c0 == 0),
        "with eps = 0 the residue standardizes to |A| = 1; the correct code gives 0",
    )
    _claim(bool(0 < a1 < 1e-6), "with eps = 1e-8 the mutant's advantage is residue over eps, nonzero")
    return (
        f"6 equal rewards 0.2 get |A| up to {a1:.1e} (eps = 1e-8) and {a0:.3f} (eps = 0) "
        f"where the correct code gives {max(c1, c0):.0f}",
        float(abs(a1 - c1) + abs(a0 - c0)),
    )


def m_batch_not_group_statistics(mod, rng):
    p, K = np.array([0.9, 0.2]), 4  # two prompts
    outs = np.array(np.meshgrid(*[[0, 1]] * (2 * K), indexing="ij")).reshape(2 * K, -1).T

    def moments(m):
        """Exact mean (2,) and total variance (trace of the covariance) of the update, and the
        part of the mean that comes from groups of equal rewards (2,)."""
        g, g2, flat = np.zeros(2), 0.0, np.zeros(2)
        for y in outs:  # all 256 batches
            y = y.reshape(2, K).astype(float)
            prob = np.prod(np.where(y > 0, p[:, None], 1 - p[:, None]))
            A = m.standardized(y)  # (2, K)
            u = (A * (y - p[:, None])).mean(axis=1)  # d/d logit_n of one batch
            g, g2 = g + prob * u, g2 + prob * float(u @ u)
            flat += prob * u * (y.min(axis=1) == y.max(axis=1))  # no signal in that group
        return g, g2 - float(g @ g), flat

    (g, var, flat), (g0, var0, _) = moments(mod), moments(advantages)
    easy = mod.standardized(np.array([[1.0, 1, 1, 1], [0, 0, 0, 1]]))[0, 0]
    share = flat[0] / g[0]  # the easy prompt's expected update from its equal-reward groups
    _claim(bool(easy > 0), "under batch statistics an all-correct group gets a positive advantage")
    _claim(bool(share > 0), "under batch statistics groups of equal rewards move the easy prompt")
    return (
        f"an all-correct group next to [0, 0, 0, 1] gets A = {easy:+.3f} (correct: 0); "
        f"exact expected update (256 batches, K = 4) relative error {rel(g, g0):.3f}, "
        f"cosine {cos(g, g0):.3f}, {share:.3f} of the easy prompt's from groups of equal "
        f"rewards (correct: 0); its variance (trace of the covariance over the batches) "
        f"{var:.4f} where the correct code's is {var0:.4f}: {var / var0:.2f}x, "
        f"{'lower' if var < var0 else 'higher'}",
        float(np.abs(g - g0).max() + abs(easy) + abs(var - var0)),
    )


def m_kl_estimator_fallthrough(mod, rng):
    b = Bandit(rng)
    lp, lp_ref = b.logp(), b.logp(b.theta_ref)
    g = {}
    for m in (mod, kl):
        for est in ("k1", "k2"):
            _, dk = m.kl_per_token(lp, lp_ref, b.mask, est)
            g[m, est] = b.expected_grad(dk / b.Y)  # E[dk grad log pi]
    e2 = rel(g[mod, "k2"], g[kl, "k2"])
    n1 = float(np.linalg.norm(g[mod, "k1"] - g[kl, "k1"]))
    g3 = b.expected_grad(kl.kl_per_token(lp, lp_ref, b.mask, "k3")[1] / b.Y)
    _claim(bool(np.all(g[kl, "k1"] == 0) or np.abs(g[kl, "k1"]).max() < 1e-15), "k1's expected gradient is 0")
    _claim(bool(np.array_equal(g[mod, "k1"], g3)), "the mutant's 'k1' is k3")
    _claim(bool(e2 == 0), "the mutant's 'k2' is unaffected")
    return (
        f"'k1' returns k3: its expected gradient (0 for k1) has norm "
        f"{np.linalg.norm(g[mod, 'k1']):.4f}, k3's own; 'k2' falls through to nothing "
        f"(relative error {e2:.3f})",
        e2 + n1,
    )


def _grpo_update(m, b, theta, beta):
    p = softmax(theta)
    A = b.r - p @ b.r  # exact mean baseline
    lp = b.logp(theta)
    _, d = m.grpo_loss(lp, lp, b.logp(b.theta_ref), A, b.mask, beta=beta, kl_estimator="k2", agg="seq_sum")
    return b.expected_grad(d, theta)  # E grad of the loss


def kl_path(m, b, beta=0.5, lr=1.0, steps=2000):
    """KL(pi_t || pi*) (steps + 1,) along exact expected GRPO steps from pi_ref, eq. (kl_optimum)."""
    pi_star = tilted_optimum(softmax(b.theta_ref)[None], b.r[None], beta)
    th, out = b.theta_ref.copy(), []
    for _ in range(steps + 1):
        out.append(float(kl.exact_kl(softmax(th)[None], pi_star)[0]))
        th = th - lr * _grpo_update(m, b, th, beta)  # gradient descent
    return np.array(out)


def _kl_bugs(mod, rng):
    b, beta, steps = Bandit(rng), 0.5, 2000
    g, g0 = _grpo_update(mod, b, b.theta, beta), _grpo_update(grpo, b, b.theta, beta)
    paths = [kl_path(m, b, beta, steps=steps) for m in (mod, grpo)]
    land = [x[-1] for x in paths]
    _claim(bool(land[1] < 1e-12), "the correct code's exact steps converge to the tilted optimum")
    _claim(
        bool(0 < np.argmin(paths[0]) < 50 and land[0] > paths[0][0]),
        "the mutant's steps first approach pi*, then end farther from it than pi_ref is",
    )
    _claim(bool(cos(g, g0) > 0), "one step of the mutant has a positive cosine with the correct one")
    return (
        f"GRPO loss gradient (k2, beta = {beta:g}) relative error {rel(g, g0):.3f}, "
        f"cosine {cos(g, g0):+.3f}; {steps} exact expected steps reach KL(pi || pi*) = "
        f"{land[0]:.3f} where the correct code reaches {land[1]:.1e}",
        float(np.abs(g - g0).max() + abs(land[0] - land[1])),
    )


m_kl_coefficient_ignored = _kl_bugs
m_kl_loss_maximized = _kl_bugs


def _critic_update(mod, rng, rewards_of, td_of, lam):
    mdp, ro, P, logp, logp_ref, pr, R = token_mdp(rng)
    beta = 0.5
    r_ok = critic.per_token_rewards(R, logp, logp_ref, ro.mask, beta)  # eq. (kl_shaped_reward)
    values = exact_values(mdp, ro, pr, r_ok)  # exact critic, (S,)
    out = []
    for m in (mod, critic):
        r = rewards_of(m).per_token_rewards(R, logp, logp_ref, ro.mask, beta)
        A = critic.gae(td_of(m).td_errors(values, ro.states, r, ro.mask), ro.mask, 1.0, lam)
        out.append(pr @ row_grads(P, ro.states, ro.tokens, ro.mask, A))
    return out, values


def m_token_kl_summed_at_the_end(mod, rng):
    state = rng.bit_generator.state
    (g, g0), _ = _critic_update(mod, rng, lambda m: m, lambda m: critic, 0.9)
    rng.bit_generator.state = state  # the same tables
    (h, h0), _ = _critic_update(mod, rng, lambda m: m, lambda m: critic, 1.0)
    _claim(
        bool(rel(h, h0) < 1e-12 < rel(g, g0)),
        "at lam = 1 only rounding separates the two; at lam = 0.9 they differ",
    )
    return (
        f"exact expected update ({N_TOKEN_MDP} responses, exact critic, GAE lam = 0.9) "
        f"relative error {rel(g, g0):.3f}, cosine {cos(g, g0):.3f} (lam = 1: relative error "
        f"{rel(h, h0):.0e})",
        float(np.abs(g - g0).max()),
    )


def m_gae_reads_masked_values(mod, rng):
    (g, g0), values = _critic_update(mod, rng, lambda m: critic, lambda m: m, 0.9)
    _claim(bool(values[0] != 0 and rel(g, g0) > 0), "the prompt state's value is not 0 and the update moves")
    return (
        f"padded rows bootstrap V(state 0) = {values[0]:.3f} at their last token: exact "
        f"expected update (GAE lam = 0.9) relative error {rel(g, g0):.3f}, cosine "
        f"{cos(g, g0):.3f}",
        float(np.abs(g - g0).max()),
    )


def _first_epoch(m, b, c):
    p = softmax(b.theta)
    A = b.r - p @ b.r
    lp = b.logp()
    _, d = m.dual_clip_surrogate(lp, lp, A, b.mask, eps=0.2, c=c, agg="seq_sum")  # rho = 1
    return b.expected_grad(d), d[:, 0], A


def m_dual_clip_positive_advantage(mod, rng):
    b = Bandit(rng)
    g, d, A = _first_epoch(mod, b, 3.0)
    g0, _, _ = _first_epoch(seqclip, b, 3.0)
    lost = int(((d == 0) & (A > 0)).sum())
    _claim(bool(lost == (A > 0).sum() > 0), "every positive-advantage response loses its gradient")
    return (
        f"first epoch (rho = 1, c = 3): {lost} of {int((A > 0).sum())} positive-advantage "
        f"responses lose their gradient; expected update relative error {rel(g, g0):.3f}, "
        f"cosine {cos(g, g0):.3f}",
        float(np.abs(g - g0).max()),
    )


def m_dual_clip_constant_below_one(mod, rng):
    b = Bandit(rng)
    g0, _, _ = _first_epoch(seqclip, b, 3.0)  # rho = 1: REINFORCE
    try:
        g, d, A = _first_epoch(mod, b, 0.8)
    except ValueError as e:
        return f"c = 0.8 rejected: {str(e).split(' (')[0]}", 0.0
    lost = int(((d == 0) & (A < 0)).sum())
    _claim(bool(lost == (A < 0).sum() > 0), "every negative-advantage response loses its gradient")
    return (
        f"c = 0.8 accepted (the correct code raises ValueError): on the first epoch {lost} of "
        f"{int((A < 0).sum())} negative-advantage responses lose their gradient; expected "
        f"update relative error {rel(g, g0):.3f}, cosine {cos(g, g0):.3f}",
        float(np.abs(g - g0).max()),
    )


def m_accumulation_divides_twice(mod, rng):
    lengths, G = np.array([5, 3, 4, 1, 2, 5, 3, 2]), 4
    mask = (np.arange(5)[None, :] < lengths[:, None]).astype(float)  # (8, 5)
    N = mask.sum()
    w = mod.accumulation_weights(mask, G, "dapo")[mask > 0] * N  # / big batch's 1/N
    w0 = offpolicy.accumulation_weights(mask, G, "dapo")[mask > 0] * N
    _claim(
        bool(np.allclose(w, 1 / G, rtol=1e-12) and np.allclose(w0, 1, rtol=1e-12)), "the step is G times too small"
    )
    return (
        f"every token's weight is {w.min():.3f}..{w.max():.3f} times the big batch's token "
        f"mean (G = {G} micro-batches) where the correct code gives {w0.min():.3f}..{w0.max():.3f}",
        float(np.abs(w - w0).max()),
    )


def m_ipo_summed_not_averaged(mod, rng):
    n_c, n_r, beta, base = 8, 4, 0.1, -8.0
    mc, mr = np.ones((1, n_c)), np.ones((1, n_r))
    ref_c, ref_r = np.array([base * n_c]), np.array([base * n_r])

    def grads(m, delta):  # chosen tokens shifted
        _, (gc, gr) = m.ipo_loss(
            np.full((1, n_c), base + delta), mc, np.full((1, n_r), base), mr, ref_c, ref_r, beta, average=True
        )
        return gc, gr

    res = []
    for m in (mod, preferences):
        (gc, gr), (gc1, _) = grads(m, 0.0), grads(m, 1.0)
        res.append((gc[0, 0], gr[0, 0], -gc.sum() / (gc1.sum() - gc.sum())))  # quadratic: root
    (c, r, land), (c0, r0, land0) = res
    _claim(
        bool(np.isclose(c / c0, n_c) and np.isclose(r / r0, n_r) and np.isclose(land * n_c, land0)),
        "the summed gradient is n times the averaged one, and its landing point n times smaller",
    )
    return (
        f"at pi = pi_ref the per-token gradient is {c / c0:.1f}x (chosen, {n_c} tokens) and "
        f"{r / r0:.1f}x (rejected, {n_r} tokens) the averaged one; it lands at a per-token "
        f"log-ratio {land:.3f} where {land0:.3f} (1/(2 beta), beta = {beta:g}) was meant",
        float(abs(c - c0) + abs(r - r0) + abs(land - land0)),
    )


def _calculator(rng):
    env = calculator(0.8, 0.1)
    P = softmax(calculator_reference(env) + rng.normal(size=(env.S, env.V)))
    ep = env.all_episodes()
    s, y, m, _, pos = multiturn.action_view(env, ep)
    pr = np.exp((np.log(P[s, y]) * m).sum(axis=1) + ep.log_env)  # eq. (traj_prob)
    values, q = multiturn_values.policy_values(env, P)
    return env, P, ep, (s, y, m, pos), pr, values, q


def m_gae_reset_at_observations(mod, rng):
    env, P, ep, (s, y, m, pos), pr, values, q = _calculator(rng)
    v_tok = values[ep.states] * ep.action_mask
    key = (ep.states * env.V + ep.tokens)[ep.action_mask > 0]
    p_tok = np.broadcast_to(pr[:, None], ep.mask.shape)[ep.action_mask > 0]
    exact = (q - values[:, None]).ravel()  # A(s, y) = Q - V
    out = []
    for mm in (mod, multiturn_values):
        A = mm.gae_actions(v_tok, ep.rewards, ep.mask, ep.action_mask, 1.0, 0.9)
        cm, mass = conditional_mean(p_tok, key, A[ep.action_mask > 0], env.S * env.V)
        g = pr @ row_grads(P, s, y, m, np.take_along_axis(A, pos, 1) * m)
        out.append((A, np.abs(cm - exact)[mass > 0].max(), g))
    (A, bias, g), (A0, bias0, g0) = out
    _claim(
        bool(bias0 < 1e-12 < bias), "carried GAE is unbiased to rounding with the exact critic; reset GAE is not"
    )
    return (
        f"calculator, exact critic, GAE lam = 0.9: advantage bias {bias:.3f} (max over (s, y) "
        f"against Q - V) where the correct code's is {bias0:.0e}; expected update relative "
        f"error {rel(g, g0):.3f}",
        float(np.abs(A - A0).max()),
    )


def m_observation_tokens_trained(mod, rng):
    env, P, ep, (s, y, m, pos), pr, values, q = _calculator(rng)
    A_seq = ep.R - values[0]  # R - V(x)
    out = []
    for mm in (mod, multiturn):
        sb, yb, mb, _, _ = mm.action_view(env, ep)
        out.append((pr @ row_grads(P, sb, yb, mb, A_seq[:, None] * mb), mb.sum()))
    (g, n), (g0, n0) = out
    _claim(bool(n > n0 and rel(g, g0) > 0), "observation tokens enter the loss and bias the expected update")
    return (
        f"calculator, all {len(pr)} (world, trajectory) pairs: {int(n - n0)} of the {int(n)} "
        f"tokens in the loss are observation tokens; exact expected "
        f"update relative error {rel(g, g0):.3f}, cosine {cos(g, g0):.3f}",
        float(np.abs(g - g0).max()),
    )


MEASURE = {m.name: globals()[f"m_{m.name}"] for m in bugzoo.MUTANTS}


def measure(mutant, pristine=False, seed=0):
    """(text, effect) of one mutant's measurement; pristine runs it on the unmutated source."""
    _CHECK[0] = not pristine
    try:
        return MEASURE[mutant.name](load(mutant, pristine), np.random.default_rng(seed))
    finally:
        _CHECK[0] = True


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--only", metavar="NAME", action="append", help="measure only this mutant (repeatable)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the policy tables (default 0)")
    p.add_argument(
        "--plot",
        metavar="PATH",
        type=plot_path,
        help="draw KL(pi || pi*) along the exact expected GRPO steps, correct code and "
        "the two KL bugs (SVG or PNG)",
    )
    args = p.parse_args(argv)
    known = {m.name: m for m in bugzoo.MUTANTS}
    for name in args.only or ():
        if name not in known:
            p.error(f"--only: expected one of {', '.join(known)}, got {name!r}")
    for m in [known[n] for n in args.only] if args.only else bugzoo.MUTANTS:
        text, _ = measure(m, seed=args.seed)
        print(f"bug {m.name:28} ({m.source}): {text}", flush=True)
    if args.plot:
        plot(args.plot, args.seed)


def plot(path, seed):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b = Bandit(np.random.default_rng(seed))
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for name, label, style in (
        ("", "correct code", "-"),
        ("kl_coefficient_ignored", "KL coefficient ignored", "--"),
        ("kl_loss_maximized", "KL with the wrong sign", ":"),
    ):
        m = grpo if not name else load(next(x for x in bugzoo.MUTANTS if x.name == name))
        ax.semilogy(np.maximum(kl_path(m, b, steps=300), 1e-16), style, label=label)
    ax.set_xlabel("exact expected step")
    ax.set_ylabel(r"KL$(\pi \,\|\, \pi^*)$")
    ax.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
