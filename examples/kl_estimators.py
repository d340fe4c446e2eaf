"""k1, k2, k3 side by side, exact by enumeration, and the fixed point each KL placement trains to.

A two-state table, V = 4 tokens: the policy pi = softmax(theta), the frozen reference pi_ref, an
older policy pi_old that sampled an off-policy batch, and a reward r(s, y). With
u = log pi(y|s) - log pi_ref(y|s), kl.py's per-token estimators are

    k1 = u,   k2 = u^2 / 2,   k3 = exp(-u) - 1 + u           eqs. (kl_k1), (kl_k2), (kl_k3)

Part 1, the estimators. Every expectation is a sum over the V tokens of a state:
- E_pi[k] on-policy, beside KL(pi || pi_ref) and KL(pi_ref || pi) (kl.exact_kl);
- Var_pi[k], and a Monte-Carlo mean +- s.e. from --samples draws per state (np.random.default_rng);
- off-policy, y ~ pi_old: E_old[k] without a weight, and E_old[rho k] with rho = pi / pi_old;
- E_pi[grad k] as a loss term (the sample is data; only logp carries a gradient), through
  TabularPolicy.backward, against 0, grad KL(pi || pi_ref) and grad KL(pi_ref || pi)
  (kl.exact_kl_grad_theta, kl.exact_reverse_kl_grad_theta).

Part 2, the placements, trained by exact expected gradient ascent (theta += lr * E[grad]) from
pi_ref, each on J = E_pi r minus beta times its KL term. The step is scaled to the curvature: the
KL term's Hessian in theta is beta times the softmax covariance diag(pi) - pi pi^T (eigenvalues
at most 1/2), so lr = 1/beta by default. A run that reaches the step cap before max|E grad| < 1e-13
is reported as "did not converge" with its final |grad|: its row is where it stopped, not a
fixed point.
- k1 in the reward: r~ = r - beta u (kl.kl_in_reward), REINFORCE on r~, eq. (kl_reward);
- k1, k2 or k3 in the loss: REINFORCE on r plus beta * k as a separate term, eq. (kl_objective).
Each is compared with the tilted optimum pi* = pi_ref exp(r / beta) / Z (optimum.tilted_optimum),
the maximizer of E r - beta KL(pi || pi_ref), and with the maximizer of E r - beta KL(pi_ref || pi),
pi(y) = beta pi_ref(y) / (nu - r(y)) with nu > max r fixed by normalization (solved here
by bisection: the library has no function for this maximizer).

Part 3, a beta sweep: for each beta, the distance between the two optima pi_rev and pi* (closed
forms), and k3 in the loss trained as in part 2, to check that it lands on pi_rev at every beta.

    $ python examples/kl_estimators.py
    $ python examples/kl_estimators.py --beta 0.2 --plot kl.svg
    $ python examples/kl_estimators.py --sweep 0.1,1,10
"""

import argparse
import math
import os
import sys

import numpy as np

from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.kl import exact_kl, exact_kl_grad_theta, exact_reverse_kl_grad_theta, kl_in_reward, kl_per_token
from minirl_lm.values.optimum import kl_objective, tilted_optimum

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _cli import integer, plot_path, real, reals, seed  # noqa: E402

THETA_REF = np.array([[0.5, 0.0, -0.5, -1.0], [0.0, 0.0, 0.0, 0.0]])
THETA = np.array(
    [
        [-0.5, 0.5, 0.0, 0.5],  # pi: where the estimators are read
        [1.0, -1.0, 0.5, 0.0],
    ]
)
THETA_OLD = np.array(
    [
        [0.0, 0.3, -0.3, 0.2],  # pi_old: sampled the off-policy batch
        [0.6, -0.6, 0.3, 0.0],
    ]
)
REWARD = np.array([[1.0, 0.0, 0.0, 0.5], [0.0, 1.0, 0.0, 0.0]])
EST = ("k1", "k2", "k3")
SWEEP = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
MAX_LR_BETA = 100.0  # lr x beta: the default step is 1 (lr = 1/beta)


def enumeration(S, V):
    """Every (state, token) pair once, as a batch of B = S*V one-token responses (B, 1)."""
    states = np.repeat(np.arange(S), V)[:, None]  # (B, 1)
    tokens = np.tile(np.arange(V), S)[:, None]  # (B, 1)
    return states, tokens, np.ones((S * V, 1))


def per_state(x, S, V):
    """A (B, 1) per-token array back to (S, V)."""
    return x.reshape(S, V)


# ---------------------------------------------------------------- part 1: the estimators


def estimator_table(policy, ref, old, samples, seed):
    S, V = policy.theta.shape
    states, tokens, mask = enumeration(S, V)
    pi, pi_ref, pi_old = policy.probs(), ref.probs(), old.probs()  # (S, V) each
    logp, _ = policy.logp(states, tokens, mask)  # (B, 1)
    logp_ref, _ = ref.logp(states, tokens, mask)  # (B, 1)
    fwd, rev = exact_kl(pi, pi_ref), exact_kl(pi_ref, pi)  # (S,) each
    g_fwd = exact_kl_grad_theta(policy.theta, ref.theta)  # (S, V)
    g_rev = exact_reverse_kl_grad_theta(policy.theta, ref.theta)
    rng = np.random.default_rng(seed)
    draws = policy.sample(np.repeat(np.arange(S), samples), rng).reshape(S, samples)  # (S, n)
    rows = []
    for est in EST:
        k, dk = kl_per_token(logp, logp_ref, mask, est)  # (B, 1) each
        k = per_state(k, S, V)  # (S, V)
        mean = (pi * k).sum(axis=1)  # (S,) E_pi[k]
        var = (pi * (k - mean[:, None]) ** 2).sum(axis=1)  # (S,) Var_pi[k]
        off = (pi_old * k).sum(axis=1)  # (S,) E_old[k], no weight
        off_is = (pi_old * (pi / pi_old) * k).sum(axis=1)  # (S,) E_old[rho k]
        mc = np.take_along_axis(k, draws, axis=1)  # (S, n) k of the sampled tokens
        # E_pi[grad k] as a loss term: weight pi(y|s) dk/dlogp on each token's score
        grad = policy.backward(states, tokens, mask, pi.reshape(-1, 1) * dk)  # (S, V)
        for s in range(S):
            rows.append(
                {
                    "est": est,
                    "s": s,
                    "mean": mean[s],
                    "fwd": fwd[s],
                    "rev": rev[s],
                    "var": var[s],
                    "off": off[s],
                    "off_is": off_is[s],
                    "mc": mc[s].mean(),
                    "mc_se": mc[s].std(ddof=1) / math.sqrt(samples),
                }
            )
        rows[-1]["grad"] = {
            "0": np.abs(grad).max(),
            "fwd": np.abs(grad - g_fwd).max(),
            "rev": np.abs(grad - g_rev).max(),
        }
    return rows


def print_estimators(rows, samples, seed):
    print("Part 1. Per-token KL estimators on the table, exact by enumeration over tokens")
    print(f"(MC: {samples} draws per state from pi, np.random.default_rng({seed}), mean +- s.e.)")
    print()
    head = (
        f"{'est':>3} {'s':>2}  {'E_pi[k]':>9}  {'KL(pi||ref)':>11}  {'KL(ref||pi)':>11}  "
        f"{'Var_pi[k]':>9}  {'MC mean':>18}  {'E_old[k]':>9}  {'E_old[rho k]':>12}"
    )
    print(head)
    print("-" * len(head))
    for w in rows:
        mc = f"{w['mc']:.4f} +- {w['mc_se']:.4f}"
        print(
            f"{w['est']:>3} {w['s']:>2}  {w['mean']:9.6f}  {w['fwd']:11.6f}  {w['rev']:11.6f}  "
            f"{w['var']:9.6f}  {mc:>18}  {w['off']:9.6f}  {w['off_is']:12.6f}"
        )
    print()
    print("E_pi[grad k] as a loss term (the sample is data), on theta (2 x 4): max abs difference")
    head = f"{'est':>3}  {'from 0':>9}  {'from grad KL(pi||ref)':>21}  {'from grad KL(ref||pi)':>21}"
    print(head)
    print("-" * len(head))
    for w in rows:
        if "grad" in w:
            d = w["grad"]
            print(f"{w['est']:>3}  {d['0']:9.1e}  {d['fwd']:21.1e}  {d['rev']:21.1e}")


# ---------------------------------------------------------------- part 2: the placements


def expected_ascent(policy, ref, reward, beta, placement):
    """E[grad] of J = E_pi r - beta * (the placement's KL term) on theta: (S, V)."""
    S, V = policy.theta.shape
    states, tokens, mask = enumeration(S, V)
    pi = policy.probs().reshape(-1, 1)  # (B, 1) the expectation's weights
    logp, _ = policy.logp(states, tokens, mask)  # (B, 1)
    logp_ref, _ = ref.logp(states, tokens, mask)  # (B, 1)
    r = reward.reshape(-1)  # (B,)
    if placement == "k1 in reward":
        r_kl = kl_in_reward(r, logp, logp_ref, mask, beta)  # (B,) eq. (kl_reward), data
        return policy.backward(states, tokens, mask, pi * r_kl[:, None])  # REINFORCE on r~
    est = placement.split()[0]
    _, dk = kl_per_token(logp, logp_ref, mask, est)  # (B, 1)
    # eq. (kl_objective): REINFORCE on r, minus beta times the penalty's (pathwise) gradient
    return policy.backward(states, tokens, mask, pi * (r[:, None] - beta * dk))


def reverse_kl_optimum(pi_ref, reward, beta):
    """argmax E_pi r - beta KL(pi_ref || pi), row-wise: pi = beta pi_ref / (nu - r), (S, V)."""
    out = np.empty_like(pi_ref)
    for s in range(pi_ref.shape[0]):
        lo, hi = reward[s].max(), reward[s].max() + beta  # sum(pi) > 1 at lo+, <= 1 at hi
        for _ in range(200):  # bisection on nu
            nu = 0.5 * (lo + hi)  # the multiplier
            if (beta * pi_ref[s] / (nu - reward[s])).sum() > 1.0:
                lo = nu
            else:
                hi = nu
        p = beta * pi_ref[s] / (hi - reward[s])
        out[s] = p / p.sum()
    return out


PLACEMENTS = ("k1 in reward", "k1 in loss", "k2 in loss", "k3 in loss")


def train(ref, reward, beta, lr, iters, tol=1e-13):
    """Exact gradient ascent from pi_ref per placement, until max |E grad| < tol or iters steps."""
    pi_star = tilted_optimum(ref.probs(), reward, beta)  # eq. (kl_optimum)
    out = {}
    for placement in PLACEMENTS:
        policy = ref.copy()  # start at the reference
        hist = []
        for _ in range(iters):
            grad = expected_ascent(policy, ref, reward, beta, placement)  # (S, V)
            if np.abs(grad).max() < tol:
                break  # a fixed point, to rounding
            policy.theta += lr * grad
            hist.append(exact_kl(policy.probs(), pi_star).sum())
        out[placement] = (policy, np.abs(grad).max(), np.array(hist))
    return pi_star, out


def print_convergence(out, iters, tol=1e-13):
    """Say loudly which runs stopped at the step cap rather than at a fixed point."""
    for placement in PLACEMENTS:
        _, gnorm, hist = out[placement]
        if not gnorm < tol:
            note = (
                "expected: no fixed point"
                if placement == "k1 in loss"
                else "its row is where it stopped, not a fixed point"
            )
            print(f"did not converge: {placement}, {hist.size} steps, final max|E grad| {gnorm:.1e} ({note})")


def print_placements(ref, reward, beta, lr, iters, pi_star, out):
    pi_rev = reverse_kl_optimum(ref.probs(), reward, beta)
    J_star = kl_objective(pi_star, ref.probs(), reward, beta)
    print()
    print(f"Part 2. Where each placement trains to: beta = {beta}")
    print(f"exact expected gradient ascent from pi_ref, lr = {lr}, until max|E grad| < 1e-13 or {iters} steps")
    print("pi*    = pi_ref exp(r/beta) / Z maximizes E r - beta KL(pi||ref)")
    print("pi_rev = beta pi_ref / (nu - r) maximizes E r - beta KL(ref || pi)")
    print()
    head = (
        f"{'placement':>12}  {'steps':>5}  {'|grad| end':>10}  {'KL(pi||pi*)':>11}  {'max|pi-pi*|':>11}  "
        f"{'J(pi*)-J(pi)':>12}  {'max|pi-pi_rev|':>14}"
    )
    print(head)
    print("-" * len(head))
    for placement in PLACEMENTS:
        policy, gnorm, _ = out[placement]
        pi = policy.probs()
        steps = out[placement][2].size
        print(
            f"{placement:>12}  {steps:5d}  {gnorm:10.1e}  {exact_kl(pi, pi_star).sum():11.2e}  "
            f"{np.abs(pi - pi_star).max():11.2e}  "
            f"{J_star - kl_objective(pi, ref.probs(), reward, beta):12.2e}  "
            f"{np.abs(pi - pi_rev).max():14.2e}"
        )
    print_convergence(out, iters)
    print("(k1 in the loss has E[grad k1] = 0: no penalty reaches theta, which drifts toward the")
    print(" argmax of r and has no fixed point; the row shows where it is after the last step)")
    print()
    print("pi at the end of each run, state 0 (reward " + ", ".join(f"{x:g}" for x in reward[0]) + ")")
    print(f"{'pi_ref':>12}  " + "  ".join(f"{p:.4f}" for p in ref.probs()[0]))
    print(f"{'pi*':>12}  " + "  ".join(f"{p:.4f}" for p in pi_star[0]))
    print(f"{'pi_rev':>12}  " + "  ".join(f"{p:.4f}" for p in pi_rev[0]))
    for placement in PLACEMENTS:
        print(f"{placement:>12}  " + "  ".join(f"{p:.4f}" for p in out[placement][0].probs()[0]))


def sweep(ref, reward, betas, iters, tol=1e-13):
    """Part 3: pi_rev against pi* over beta (closed forms), and where k3 in the loss lands."""
    pi_ref = ref.probs()
    print()
    print("Part 3. The two optima over beta: pi_rev (where k3 in the loss lands) against pi*")
    print(f"(k3 in the loss trained as in part 2, lr = 1/beta, at most {iters} steps)")
    print()
    head = (
        f"{'beta':>6}  {'KL(pi_rev||pi*)':>15}  {'max|pi_rev-pi*|':>15}  "
        f"{'J(pi*)-J(pi_rev)':>16}  {'k3 steps':>8}  {'|grad| end':>10}  {'max|pi_k3-pi_rev|':>17}"
    )
    print(head)
    print("-" * len(head))
    for beta in betas:
        pi_star = tilted_optimum(pi_ref, reward, beta)
        pi_rev = reverse_kl_optimum(pi_ref, reward, beta)
        policy, grad = ref.copy(), None
        for step in range(iters):  # noqa: B007 (read below: the step the ascent stopped at)
            grad = expected_ascent(policy, ref, reward, beta, "k3 in loss")
            if np.abs(grad).max() < tol:
                break
            policy.theta += grad / beta
        else:
            step = iters
        gnorm = np.abs(grad).max()
        flag = "" if gnorm < tol else "  did not converge"
        print(
            f"{beta:6g}  {exact_kl(pi_rev, pi_star).sum():15.3e}  "
            f"{np.abs(pi_rev - pi_star).max():15.3e}  "
            f"{kl_objective(pi_star, pi_ref, reward, beta) - kl_objective(pi_rev, pi_ref, reward, beta):16.3e}  "
            f"{step:8d}  {gnorm:10.1e}  {np.abs(policy.probs() - pi_rev).max():17.1e}{flag}"
        )


def plot(policy, ref, out, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "kl_estimators"
    fig, ax = plt.subplots(2, 1, figsize=(6.4, 6.4))  # stacked: readable on a phone
    u = np.linspace(-2.0, 2.0, 201)[:, None]  # log pi/pi_ref, (201, 1)
    for est in EST:
        k, _ = kl_per_token(u, np.zeros_like(u), np.ones_like(u), est)
        ax[0].plot(u[:, 0], k[:, 0], label=est)
    ax[0].axhline(0.0, color="0.7", lw=0.8)
    ax[0].set_xlabel("u = log pi(y) / pi_ref(y)")
    ax[0].set_ylabel("per-token estimate")
    ax[0].legend(fontsize=8)
    styles = {"k1 in reward": "-", "k1 in loss": "-", "k2 in loss": "--", "k3 in loss": "-"}
    for placement in PLACEMENTS:  # k1 in reward and k2 in loss coincide
        hist = out[placement][2]
        ax[1].semilogy(np.arange(1, hist.size + 1), np.maximum(hist, 1e-18), styles[placement], label=placement)
    ax[1].set_xlabel("exact gradient step")
    ax[1].set_ylabel("KL(pi || pi*)")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--beta", type=real(0.01, 100), default=0.5, help="KL coefficient (default 0.5)")
    p.add_argument(
        "--lr",
        type=real(0, 1000, low_open=True),
        default=None,
        help="step size of part 2 (default 1/beta, scaled to the KL term's curvature)",
    )
    p.add_argument(
        "--iters",
        type=integer(1, 10**6),
        default=1000,
        help="at most this many exact gradient steps (default 1000)",
    )
    p.add_argument(
        "--samples",
        type=integer(2, 10**7),
        default=10000,
        help="Monte-Carlo draws per state in part 1 (default 10000)",
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of the Monte-Carlo column")
    p.add_argument(
        "--sweep",
        type=reals(0.01, 100, allow_empty=True),
        default=SWEEP,
        help="comma-separated betas of part 3, '' to skip it (default " + ",".join(f"{b:g}" for b in SWEEP) + ")",
    )
    p.add_argument("--plot", metavar="PATH", type=plot_path, help="write a figure (SVG or PNG by extension)")
    args = p.parse_args(argv)
    if args.lr is None:
        args.lr = 1.0 / args.beta
    if args.lr * args.beta > MAX_LR_BETA:
        p.error(
            f"--lr: expected a step size with lr x beta <= {MAX_LR_BETA:g} (the KL term's "
            f"curvature is beta; a longer step overshoots until k3 overflows), got "
            f"{args.lr:g} at --beta {args.beta:g}"
        )
    policy, ref, old = TabularPolicy(THETA), TabularPolicy(THETA_REF), TabularPolicy(THETA_OLD)
    rows = estimator_table(policy, ref, old, args.samples, args.seed)
    print_estimators(rows, args.samples, args.seed)
    pi_star, out = train(ref, REWARD, args.beta, args.lr, args.iters)
    print_placements(ref, REWARD, args.beta, args.lr, args.iters, pi_star, out)
    if args.sweep:
        sweep(ref, REWARD, args.sweep, args.iters)
    if args.plot:
        plot(policy, ref, out, args.plot)
        print(f"\nfigure written to {args.plot}")


if __name__ == "__main__":
    main()
