"""Multi-turn: a noisy calculator closes the loop; every number exact (all trajectories enumerated).

The task (`minirl_lm.multiturn.calculator`): answer a hidden binary question; the policy may call a
tool that replies "= d", right with probability q, at a cost per call. After a call the
environment writes tokens the policy did not choose, so rollouts carry a `mask` (every token) and
an `action_mask` (the policy's tokens). The program prints one labelled line per measured
quantity, at a perturbed reference theta = theta_ref + N(0, 1) (parts 1-4, 6) and along training
from pi_ref (part 5):

  1. the score identity with environment factors, sample for sample;
  2. the observation-token bug (mask instead of action_mask), bias of the expected gradient;
  3. returns and GAE carried across observation spans vs reset at masked positions;
  4. the variance of the update under four baselines (exact, every group of K counted);
  5. the soft optimum by backward induction with chance nodes, GRPO and PPO-with-critic
     trained toward it: J(pi*) - J(pi) per iteration;
  6. per-turn (process) rewards: the token view and the sequence view part ways.

    $ python examples/multi_turn.py
    $ python examples/multi_turn.py --q 0.55 --K 4 --plot multi_turn.svg
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm.core.policy import TabularPolicy, softmax_table
from minirl_lm.exact.groups import iid_moments
from minirl_lm.exact.scores import row_updates
from minirl_lm.multiturn.calculator import CALL, calculator, calculator_reference
from minirl_lm.multiturn.env import action_view
from minirl_lm.multiturn.values import (
    gae_actions,
    kl_objective,
    policy_values,
    returns_actions,
    soft_optimum,
    turn_values,
)
from minirl_lm.pg.advantages import standardized
from minirl_lm.pg.clip import clipped_surrogate
from minirl_lm.pg.grpo import grpo_loss
from minirl_lm.values.critic import fit_values, gae, td_errors

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import integer, plot_path, quiet_pipe, real, seed  # noqa: E402

# ---- exact tools: minirl_lm.exact (row_updates, eq. (exact_linear); iid_moments) -------------------
row_grads = row_updates  # per-row gradients sum_t A[b,t] grad log pi(y_t | s_t): (B, S*V)
group_moments = iid_moments  # E g, E|g|^2 of g = sum_{k,j} c[k,j] R_j S_k over K i.i.d. draws


def conditional_mean(p, key, x, size):
    """E[x | key] over the tokens (weights p), and P(key): two (size,) arrays."""
    mass = np.bincount(key, weights=p, minlength=size)
    tot = np.bincount(key, weights=p * x, minlength=size)
    return np.divide(tot, mass, out=np.zeros(size), where=mass > 0), mass


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


# ---- training ------------------------------------------------------------------------------------
def train(env, pi_ref, beta, method, K, iters, lr, rng, record):
    """GRPO or PPO-with-critic from pi_ref; returns [(iteration, J(pi*) - J(pi))]."""
    pol = TabularPolicy(np.log(pi_ref))
    ref = pol.copy()
    values = np.zeros(env.S)  # the PPO critic, (S,)
    j_star = soft_optimum(env, pi_ref, beta)[0][0]
    out = []
    for it in range(iters + 1):
        if it in record:
            out.append((it, j_star - kl_objective(env, pol.probs(), pi_ref, beta)))
        if it == iters:
            break
        ep = env.rollout(pol, K, rng)
        s, y, m, r, _ = action_view(env, ep)  # (B, Ta): policy tokens only
        logp, _ = pol.logp(s, y, m)
        logp_ref, _ = ref.logp(s, y, m)
        if method == "grpo":  # group-standardized R, k3 in loss
            A = standardized(ep.R[None, :])[0]  # (B,)
            _, d = grpo_loss(logp, logp, logp_ref, A, m, beta=beta, agg="token_mean")
            pol.theta -= lr * pol.backward(s, y, m, d)
            continue
        r_tok = r - beta * (logp - logp_ref) * m  # per-token KL in the reward
        for _ in range(5):
            values, _ = fit_values(values, s, r_tok, m, gamma=1.0, lr=0.5, target="mc")
        A = gae(td_errors(values, s, r_tok, m), m, 1.0, 0.9)  # compact rows: carried
        logp_old = logp
        for _ in range(2):  # two clipped epochs
            logp, _ = pol.logp(s, y, m)
            _, d = clipped_surrogate(logp, logp_old, A, m, 0.2, agg="seq_sum")
            pol.theta -= lr * pol.backward(s, y, m, d)
    return out


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--q", type=real(0, 1), default=0.8, help="probability the tool is right")
    p.add_argument("--K", type=integer(2, 16), default=8, help="episodes per group (2..16)")
    p.add_argument("--cost", type=real(0, 10), default=0.1, help="reward charged per call (0..10)")
    p.add_argument(
        "--beta", type=real(1e-3, 1e3), default=0.1, help="KL coefficient of the soft optimum (1e-3..1e3)"
    )
    p.add_argument("--lam", type=real(0, 1), default=0.9, help="GAE lambda")
    p.add_argument(
        "--iters",
        type=integer(1, 2000),
        default=300,
        help="training iterations (part 5; default 300, at most 2000: each costs about 20 ms, so the "
        "largest run takes under a minute)",
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of theta, the batch and training")
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="write the figure (SVG/PNG) to PATH")
    p.add_argument(
        "--takeaway",
        action="store_true",
        help="print only the page's three opening lines (parts 1-3, no training)",
    )
    args = p.parse_args(argv)
    takeaway, lines = args.takeaway, []
    defaults = vars(p.parse_args([]))
    page_run = all(v == defaults[k] for k, v in vars(args).items() if k not in ("plot", "takeaway"))
    say = (lambda *a, **k: None) if takeaway else print  # parts 1-3 print through this

    rng = np.random.default_rng(args.seed)
    env = calculator(args.q, args.cost)
    pol = TabularPolicy(calculator_reference(env) + rng.normal(size=(env.S, env.V)))  # parts 1-4, 6
    P = pol.probs()
    ep = env.all_episodes()  # every (world, trajectory)
    s, y, m, r, pos = action_view(env, ep)
    _, seq = pol.logp(s, y, m)
    pr = np.exp(seq + ep.log_env)  # eq. (traj_prob)
    values, q = policy_values(env, P)  # V^pi, Q^pi with chance nodes
    R, K = ep.R, args.K
    say(
        f"task: calculator, q = {args.q:g}, cost {args.cost:g} per call, "
        f"{env.max_turns} turns of <= {env.turn_len} tokens; S = {env.S} states "
        f"({int((~env.is_policy).sum())} chance), {len(R)} (world, trajectory) pairs, "
        f"sum of probabilities {pr.sum():.15f}"
    )

    # ---- 1. the score identity with environment factors ------------------------------------------
    batch = env.rollout(pol, K, rng)
    bs, by, bm, _, _ = action_view(env, batch)
    worst = 0.0
    for b in range(K):
        g_tok = pol.backward(
            bs[b : b + 1], by[b : b + 1], bm[b : b + 1], np.full((1, bm.shape[1]), batch.R[b]) * bm[b : b + 1]
        )  # R sum_{action} grad log pi
        g_traj = np.zeros_like(pol.theta)  # R grad log P(w, tau)
        for st in np.unique(batch.states[b][batch.mask[b] > 0]):
            for v in range(env.V):
                th = pol.theta.astype(complex)
                th[st, v] += 1e-30j
                z = th[batch.states[b]]  # (T, V) every position's row
                lse = np.log(np.exp(z - z.real.max(1, keepdims=True)).sum(1)) + z.real.max(1)
                lp = z[np.arange(env.T), batch.tokens[b]] - lse  # (T,)
                logP = batch.log_env[b] + (lp * batch.action_mask[b]).sum()  # eq. (traj_prob)
                g_traj[st, v] = batch.R[b] * logP.imag / 1e-30
        worst = max(worst, np.abs(g_tok - g_traj).max())
    say(f"score identity (action mask vs trajectory log-prob, {K} sampled episodes): max |difference| {worst:.1e}")

    # ---- 2. observation tokens in the loss -------------------------------------------------------
    A_seq = R - values[0]  # (M,) R - b(x)
    g_true = pr @ row_grads(P, s, y, m, A_seq[:, None] * m)
    H_bug = row_grads(P, ep.states, ep.tokens, ep.mask, A_seq[:, None] * ep.mask)
    g_bug = pr @ H_bug
    cos = g_bug @ g_true / np.linalg.norm(g_bug) / np.linalg.norm(g_true)
    chance_rows = np.repeat(~env.is_policy, env.V)
    share = np.linalg.norm((g_bug - g_true)[chance_rows]) / np.linalg.norm(g_bug - g_true)
    say(f"observation tokens in the loss: bias {rel(g_bug, g_true):.1e} (relative), cosine {cos:.2f}")
    say(f"  share of that bias in rows of chance states: {share:.3f}")
    # the bias is E[(R - b) sum_obs grad log pi] = g_R - b g_1: a baseline b moves it along g_1
    H_obs = row_grads(P, ep.states, ep.tokens, ep.mask, ep.mask * (1 - ep.action_mask))  # (M, S*V)
    g_R, g_1 = pr @ (R[:, None] * H_obs), pr @ H_obs  # E[R sum_obs score], E[sum_obs score]
    b_best = g_R @ g_1 / (g_1 @ g_1)  # the scalar b that minimizes |g_R - b g_1|
    bias_of = {
        name: np.linalg.norm(g_R - b * g_1) / np.linalg.norm(g_true)
        for name, b in (
            ("b = 0", 0.0),
            (f"b = v(x) = {values[0]:.3f}", values[0]),
            (f"the best scalar b = {b_best:.3f}", b_best),
        )
    }
    say(
        "  the same bias under three baselines (relative): "
        + ", ".join(f"{name}: {v:.1e}" for name, v in bias_of.items())
    )
    claim(
        bool(min(bias_of.values()) > 1e-6),
        "no baseline removes the observation-token bias: b moves it along E[sum_obs grad log pi]",
    )
    if takeaway:
        lines.append(
            f"2. Observation tokens in the loss bias the expected gradient by {rel(g_bug, g_true):.0%} "
            f"(relative); the best scalar baseline leaves {bias_of[f'the best scalar b = {b_best:.3f}']:.0%}."
        )

    # ---- 3. returns and GAE across observation spans ---------------------------------------------
    v_tok = values[ep.states] * ep.action_mask  # (M, T) V^pi(s_t), policy tokens
    key = (ep.states * env.V + ep.tokens)[ep.action_mask > 0]
    p_tok = np.broadcast_to(pr[:, None], ep.mask.shape)[ep.action_mask > 0]
    exact = (q - values[:, None]).ravel()  # A(s, y) = Q - V
    ests = {}
    for carry, tag in (
        (True, "carried across observation spans"),
        (False, "reset at observation tokens (verl bug)"),
    ):
        G = returns_actions(ep.rewards, ep.mask, ep.action_mask, carry=carry)
        ests[f"returns {tag}"] = (G - v_tok) * ep.action_mask
        ests[f"GAE (lam = {args.lam:g}) {tag}"] = gae_actions(
            v_tok, ep.rewards, ep.mask, ep.action_mask, 1.0, args.lam, carry
        )
    g_exact = pr @ row_grads(P, s, y, m, (R - values[0])[:, None] * m)
    biases = {}
    for name, A in ests.items():
        cm, mass = conditional_mean(p_tok, key, A[ep.action_mask > 0], env.S * env.V)
        bias = np.abs(cm - exact)[mass > 0].max()
        g = pr @ row_grads(P, s, y, m, np.take_along_axis(A, pos, 1) * m)
        biases[name] = (bias, rel(g, g_exact))
        say(f"{name}: advantage bias {bias:.1e} (max over (s, y)), gradient bias {rel(g, g_exact):.1e} (relative)")

    claim(bool(worst < 1e-12), "REINFORCE over the action mask is the trajectory estimator to rounding")
    claim(bool(share > 1 - 1e-12), "the observation-token bias sits in the rows of chance states")
    reset = [rel_g for name, (adv_b, rel_g) in biases.items() if "reset" in name]
    carried = [max(adv_b, rel_g) for name, (adv_b, rel_g) in biases.items() if "carried" in name]
    claim(bool(max(carried) < 1e-12), "returns and GAE carried across observation spans are unbiased")
    claim(bool(min(reset) > 1e-3), "returns and GAE reset at observation tokens are biased")
    if takeaway:
        lines.insert(
            0,
            f"1. The tool's factors drop out of the score: REINFORCE over the action mask is the "
            f"trajectory estimator to {worst:.0e}.",
        )
        lines.append(
            f"3. Returns and GAE reset at a tool reply bias the gradient by {min(reset):.0%} or more; "
            f"carried across it, by {max(carried):.0e}."
        )
        print("\n".join(lines))
        return

    # ---- 4. baselines under a stochastic environment ---------------------------------------------
    Sc = row_grads(P, s, y, m, m)  # (M, S*V) trajectory scores
    c_mean = (np.eye(K) - 1.0 / K) / K  # (1/K) sum_k (R_k - mean) S_k
    c_loo = (np.eye(K) * (1 + 1 / (K - 1)) - 1 / (K - 1)) / K  # (R_k - mean of the others)
    G = returns_actions(ep.rewards, ep.mask, ep.action_mask)
    per_turn = G - turn_values(values, ep.states, ep.mask, ep.action_mask)
    gae_ex = ests[f"GAE (lam = {args.lam:g}) carried across observation spans"]
    rows = []
    for name, c in (("group mean", c_mean), ("leave-one-out", c_loo)):
        first, second = group_moments(pr, R, Sc, c)
        rows.append((name, second - first @ first, rel(first, g_exact)))
    for name, A in (
        ("per-turn value baseline (exact)", per_turn),
        (f"GAE with the exact critic (lam = {args.lam:g})", gae_ex),
    ):
        H = row_grads(P, s, y, m, np.take_along_axis(A, pos, 1) * m)
        mean = pr @ H
        rows.append((name, (pr @ (H * H).sum(1) - mean @ mean) / K, rel(mean, g_exact)))
    for name, var, bias in rows:
        print(f"update variance, {name} (K = {K}): {var:.3e}, bias {bias:.1e} (relative)")
    (_, v_mean, b_mean), (_, v_loo, b_loo), (_, v_turn, b_turn), (_, v_gae, b_gae) = rows
    claim(bool(abs(v_mean / v_loo - ((K - 1) / K) ** 2) < 1e-9), "group mean's variance is ((K-1)/K)^2 of LOO's")
    claim(bool(abs(b_mean - 1 / K) < 1e-9), "the group mean's relative bias is 1/K")
    claim(
        bool(max(b_loo, b_turn, b_gae) < 1e-12), "leave-one-out, the per-turn value baseline and GAE are unbiased"
    )
    if page_run:
        claim(bool(v_gae < v_turn < v_loo), "GAE below the per-turn value baseline below leave-one-out")

    # ---- 5. the soft optimum, and training toward it ---------------------------------------------
    pi_ref = softmax_table(calculator_reference(env))  # a "pretrained" reference
    v_star, _, pi_star = soft_optimum(env, pi_ref, args.beta)
    print(
        f"soft optimum (beta = {args.beta:g}): J(pi*) {v_star[0]:.4f}, "
        f"pi*(<call> | x) {pi_star[0, CALL]:.3f}, J(pi_ref) "
        f"{kl_objective(env, pi_ref, pi_ref, args.beta):.4f}"
    )
    record = sorted({0, 10, 30, 100, args.iters} & set(range(args.iters + 1)))
    dense = sorted(set(record) | set(range(0, args.iters + 1, 10)))
    hist = {}
    for method, lr in (("grpo", 0.5), ("ppo", 1.0)):
        hist[method] = train(
            env, pi_ref, args.beta, method, K, args.iters, lr, np.random.default_rng(args.seed + 1), dense
        )
        gaps = dict(hist[method])
        name = "GRPO" if method == "grpo" else "PPO with a critic"
        print(
            f"{name}, J(pi*) - J(pi) at iterations {', '.join(map(str, record))}: "
            + ", ".join(f"{gaps[i]:.2e}" for i in record)
        )
    last = {name: dict(h)[args.iters] for name, h in hist.items()}
    best = min(last, key=last.get)
    print(
        f"closer to the soft optimum after {args.iters} iterations: "
        f"{'GRPO' if best == 'grpo' else 'PPO with a critic'}, J(pi*) - J(pi) "
        f"{last[best]:.2e} against {max(last.values()):.2e}"
    )

    # ---- 6. process rewards: a reward per turn ---------------------------------------------------
    A_tok = np.take_along_axis(G - values[0] * ep.action_mask, pos, 1) * m  # reward to go - b(x)
    A_seq_t = A_seq[:, None] * m  # R - b(x) on every policy token
    H_tok, H_seq = row_grads(P, s, y, m, A_tok), row_grads(P, s, y, m, A_seq_t)
    per_sample = pr @ np.linalg.norm(H_tok - H_seq, axis=1) / (pr @ np.linalg.norm(H_seq, axis=1))
    var = [pr @ (H * H).sum(1) - (pr @ H) @ (pr @ H) for H in (H_tok, H_seq)]
    print(
        f"process rewards, token view vs sequence view: per-sample difference "
        f"{per_sample:.2e} (relative), expected gradients differ by "
        f"{rel(pr @ H_tok, pr @ H_seq):.1e} (relative); variance per episode {var[0]:.3e} vs "
        f"{var[1]:.3e}"
    )

    claim(bool(per_sample > 1e-3), "with process rewards the two views differ sample by sample")
    claim(bool(rel(pr @ H_tok, pr @ H_seq) < 1e-12), "with process rewards the two views agree in expectation")

    if args.plot:
        plot(args, hist)


def plot(args, hist):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    qs = np.linspace(0.5, 1.0, 11)
    call = []
    for qq in qs:  # the optimum moves with q
        env = calculator(qq, args.cost)
        pi_ref = softmax_table(calculator_reference(env))
        call.append(soft_optimum(env, pi_ref, args.beta)[2][0, CALL])
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(5.2, 6.4))
    for method, label in (("grpo", "GRPO"), ("ppo", "PPO with a critic")):
        it, gap = zip(*hist[method])
        ax1.semilogy(it, np.maximum(gap, 1e-6), label=label)
    ax1.set_xlabel("iteration")
    ax1.set_ylabel(r"$J(\pi^*) - J(\pi)$")
    ax1.legend(frameon=False)
    ax2.plot(qs, call, "o-")
    ax2.axvline(0.5 + args.cost, color="gray", ls="--", label=r"$q = 1/2 + $ cost")
    ax2.set_xlabel("q, probability the tool is right")
    ax2.set_ylabel(r"$\pi^*(\mathrm{call} \mid x)$")
    ax2.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(args.plot)
    plt.close(fig)


if __name__ == "__main__":
    main()
