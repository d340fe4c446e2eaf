"""Token MDP vs sequence bandit: one estimator, two readings, and where they part ways.

With terminal reward, gamma = 1 and a prompt-dependent baseline b(x), the token-level REINFORCE
estimator sum_t (R - b(x)) grad log pi(y_t | s_t) equals the bandit estimator
(R - b(x)) grad log pi(y | x), sample for sample, eq. (token_equals_sequence). This program
measures that on a multi-token task, computing the bandit side independently (complex-step
derivatives of the whole-response log-prob, no per-token backward at all), then switches on one
per-token ingredient at a time and prints the gradient difference it causes:

  - a prefix-dependent baseline v(s_t) (exact), a critic with GAE (lam < 1), exact or fitted;
  - per-token KL shaping (against the KL folded into the sequence reward);
  - discounting, gamma < 1;
  - per-token clipping against clipping the sequence-level ratio, after theta moved from theta_old.

Two columns per row: the difference on the sampled batch, and the difference of the expectations,
computed exactly by enumerating every response. A zero in the second column means the per-token
ingredient changes the samples (the variance) but not what is estimated.

    $ python examples/token_vs_sequence.py            # the table on the page
    $ python examples/token_vs_sequence.py --K 64 --seed 3
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.clip import clip_fraction, clipped_surrogate
from minirl_lm.pg.kl import kl_in_reward
from minirl_lm.pg.reinforce import reinforce_loss, sequence_reinforce_loss
from minirl_lm.values.critic import fit_values, gae, monte_carlo_returns, per_token_rewards, td_errors

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _cli import integer, quiet_pipe, real, seed  # noqa: E402

# ---- the task: copy the prompt, graded at the end ---------------------------------------------
EOS, ALPHABET = 0, "abc"  # token 0 is EOS, tokens 1..3 are the letters
PROMPTS = ("ab", "bca", "c")  # answers of 2, 3 and 1 letters (+ EOS)


def grader(prompt, response):
    """Terminal reward in [0, 1]: letters in the right place / max(len(response), len(prompt))."""
    text = "".join(ALPHABET[y - 1] for y in response if y != EOS)
    hits = sum(a == b for a, b in zip(text, prompt))
    return hits / max(len(text), len(prompt))


def make_task(max_len=4):
    return TokenMDP(PROMPTS, V=1 + len(ALPHABET), eos=EOS, max_len=max_len)


# ---- exact tools: every response, every state value ------------------------------------------
def state_values(mdp, probs):
    """v^pi(s) = E[R | s] on the prefix tree, by backward induction (gamma = 1): (S,)."""
    values = np.zeros(mdp.S)
    for s in range(mdp.S - 1, -1, -1):  # deepest prefixes first
        n, prefix = mdp.prefix_of(s)
        for y in range(mdp.V):
            child = mdp.step(prefix, y)
            q = grader(mdp.prompts[n], child) if mdp.is_terminal(child) else values[mdp.state_id(n, child)]
            values[s] += probs[s, y] * q
    return values


def complex_step_seq_jacobian(theta, ro, h=1e-30):
    """d log pi(y_b | x_b) / d theta[s, v] for every response b: (B, S, V).

    The bandit view: log pi(y | x) as one function of theta, differentiated by the complex step
    Im f(theta + i h e_sv) / h (exact to rounding: no subtraction). No token scores involved.
    """
    B = ro.tokens.shape[0]
    jac = np.zeros((B,) + theta.shape)
    for s in np.unique(ro.states[ro.mask > 0]):  # unvisited rows: derivative 0
        for v in range(theta.shape[1]):
            tc = theta.astype(complex)
            tc[s, v] += 1j * h
            z = tc[ro.states]  # (B, T, V)
            m = z.real.max(axis=-1, keepdims=True)  # (B, T, 1)
            lse = m[..., 0] + np.log(np.exp(z - m).sum(axis=-1))  # (B, T)
            lp = np.take_along_axis(z, ro.tokens[..., None], -1)[..., 0] - lse  # (B, T)
            jac[:, s, v] = (lp * ro.mask).sum(axis=1).imag / h  # (B,) eq. (factorization)
    return jac


# ---- the estimators, as dloss/dlogp (B, T) for the policy's backward --------------------------
def bandit(ro, weight):
    """Sequence view: loss -(1/B) sum_b weight_b log pi(y_b | x), spread onto its tokens."""
    _, dseq = sequence_reinforce_loss(np.zeros(len(weight)), weight)  # eq. (pg_sequence)
    return dseq[:, None] * ro.mask  # d seq_logp / d logp = mask


def token(ro, adv_tok):
    """Token view: loss -(1/B) sum_{b,t} A[b,t] log pi(y_t | s_t)."""
    _, d = reinforce_loss(np.zeros(ro.mask.shape), adv_tok * ro.mask, ro.mask, agg="seq_sum")
    return d  # eq. (pg_token)


def divergences(ro, R, pol, pol_ref, v_exact, v_fit, args):
    """[(name, dlogp of the per-token variant, dlogp of its sequence-level counterpart)]."""
    logp, _ = pol.logp(ro.states, ro.tokens, ro.mask)
    logp_ref, _ = pol_ref.logp(ro.states, ro.tokens, ro.mask)
    b = v_exact[ro.states[:, 0]]  # (B,) b(x) = v^pi(x)
    A = R - b  # (B,)
    r_tok = per_token_rewards(R, logp, logp_ref, ro.mask, 0.0)  # (B, T) R on the last token
    base = bandit(ro, A)
    rows = [("terminal R, gamma = 1, b(x)", token(ro, A[:, None]), base)]
    # a baseline that depends on the prefix: A_t = R - v(s_t)
    rows.append(("prefix baseline v^pi(s_t)", token(ro, R[:, None] - v_exact[ro.states]), base))
    # a critic: TD errors and GAE, eq. (td_error), eq. (gae)
    for name, v in (("exact", v_exact), ("fitted", v_fit)):
        delta = td_errors(v, ro.states, r_tok, ro.mask, gamma=1.0)
        rows.append(
            (f"critic {name}, GAE lam = {args.lam:g}", token(ro, gae(delta, ro.mask, 1.0, args.lam)), base)
        )
    # per-token KL shaping vs the KL folded into the sequence reward, eq. (kl_shaped_reward)
    r_kl = per_token_rewards(R, logp, logp_ref, ro.mask, args.beta)  # (B, T)
    G = monte_carlo_returns(r_kl, ro.mask, 1.0)  # (B, T) reward to go
    r_seq = kl_in_reward(R, logp, logp_ref, ro.mask, args.beta)  # (B,) eq. (kl_reward)
    rows.append((f"per-token KL, beta = {args.beta:g}", token(ro, G - b[:, None]), bandit(ro, r_seq - b)))
    # discounting: G_t = gamma^(|y|-t) R, exponent 0 at the last token: early tokens get less
    G = monte_carlo_returns(r_tok, ro.mask, args.gamma)
    rows.append((f"gamma = {args.gamma:g}", token(ro, G - b[:, None]), base))
    return rows


def clip_pair(ro, logp, logp_old, A, eps):
    """Per-token clip vs the clip of the sequence ratio prod_t rho_t: two dlogp (B, T)."""
    _, d_tok = clipped_surrogate(logp, logp_old, A, ro.mask, eps, agg="seq_sum")  # eq. (ppo_clip)
    one = np.ones((len(A), 1))  # (B, 1): one "token"
    seq, seq_old = (logp * ro.mask).sum(1, keepdims=True), (logp_old * ro.mask).sum(1, keepdims=True)
    _, d_seq = clipped_surrogate(seq, seq_old, A, one, eps, agg="seq_sum")  # rho = prod_t rho_t
    return d_tok, d_seq * ro.mask  # spread onto the tokens


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of theta and of the batch")
    p.add_argument(
        "--K",
        type=integer(1, 1024),
        default=8,
        help="responses per prompt in the batch (at most 1024: the run at 4096 takes over a minute)",
    )
    p.add_argument("--scale", type=real(0, 100), default=1.0, help="std of the random logits theta")
    p.add_argument("--lam", type=real(0, 1, high_open=True), default=0.5, help="GAE lambda (< 1)")
    p.add_argument("--beta", type=real(0, 100), default=0.1, help="per-token KL coefficient")
    p.add_argument("--gamma", type=real(0, 1, high_open=True), default=0.9, help="discount (< 1)")
    p.add_argument("--eps", type=real(0, 1, low_open=True), default=0.2, help="clip range epsilon")
    p.add_argument(
        "--move", type=real(0, 100), default=0.3, help="std of the perturbation theta - theta_old before clipping"
    )
    args = p.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    mdp = make_task()
    pol = TabularPolicy(args.scale * rng.normal(size=(mdp.S, mdp.V)))  # pi_theta
    pol_ref = TabularPolicy(np.zeros((mdp.S, mdp.V)))  # pi_ref: uniform
    ro = mdp.rollout(pol, args.K, rng)  # B = N*K, prompt-major
    R = mdp.score(grader, ro)  # (B,)
    B = len(R)
    allr = mdp.all_responses()  # every response
    R_all = mdp.score(grader, allr)
    v_exact = state_values(mdp, pol.probs())  # (S,) v^pi
    v_fit = np.zeros(mdp.S)  # critic fitted on the batch
    r_tok = per_token_rewards(R, np.zeros(ro.mask.shape), np.zeros(ro.mask.shape), ro.mask, 0.0)
    for _ in range(20):
        v_fit, _ = fit_values(v_fit, ro.states, r_tok, ro.mask, gamma=1.0, lr=0.5, target="mc")

    print(
        f"task: copy the prompt {', '.join(PROMPTS)}; V = {mdp.V} (EOS + {ALPHABET}), "
        f"max_len = {mdp.max_len}, S = {mdp.S} states, {allr.tokens.shape[0]} responses in all"
    )
    counts = np.bincount(ro.lengths, minlength=mdp.max_len + 1)[1:]  # (max_len,) responses per length
    print(
        f"batch: K = {args.K} per prompt, B = {B}, mean reward {R.mean():.3f}; responses of length "
        + ", ".join(f"{n}: {c}" for n, c in enumerate(counts, start=1))
    )

    # ---- eq. (token_equals_sequence), sample for sample ----------------------------------------
    A = R - v_exact[ro.states[:, 0]]  # (B,) R - b(x)
    jac = complex_step_seq_jacobian(pol.theta, ro)  # (B, S, V) bandit scores
    d_tok = token(ro, A[:, None])  # (B, T)
    worst = 0.0
    for b in range(B):
        sl = slice(b, b + 1)
        g_tok = B * pol.backward(ro.states[sl], ro.tokens[sl], ro.mask[sl], d_tok[sl])  # -(R-b) sum_t score
        g_seq = -A[b] * jac[b]  # -(R-b) grad log pi(y|x)
        worst = max(worst, np.abs(g_tok - g_seq).max())
    scale_g = np.abs(-A[:, None, None] * jac).max()
    print("\nsample for sample, eq. (token_equals_sequence):")
    print(
        f"  max over {B} responses of max |token-view gradient - bandit gradient| = {worst:.2e}"
        f"   (largest entry {scale_g:.2f})"
    )

    # ---- where they stop agreeing ---------------------------------------------------------------
    def grad(policy, batch, dlogp, weight=None):
        if weight is not None:  # expectation by enumeration
            dlogp = dlogp * weight[:, None]
        return policy.backward(batch.states, batch.tokens, batch.mask, dlogp)

    probs_all = np.exp(pol.logp(allr.states, allr.tokens, allr.mask)[1])  # pi(y|x) (B_all,)
    w_all = len(R_all) * probs_all / mdp.N  # 1/B -> pi(y|x) mu_0(x)
    batch_rows = divergences(ro, R, pol, pol_ref, v_exact, v_fit, args)
    exact_rows = divergences(allr, R_all, pol, pol_ref, v_exact, v_fit, args)
    g_scale = np.abs(grad(pol, ro, batch_rows[0][2])).max()
    print(
        f"\nbatch gradient (mean over B) and exact expected gradient of each per-token variant,"
        f"\nminus its sequence-level counterpart (max |difference| over theta; the bandit batch"
        f"\ngradient's largest entry is {g_scale:.2e}):"
    )
    print(f"  {'per-token ingredient':36s} {'batch':>10s} {'expected':>10s}")
    for (name, dv, dref), (_, ev, eref) in zip(batch_rows, exact_rows):
        diff_b = np.abs(grad(pol, ro, dv) - grad(pol, ro, dref)).max()
        diff_e = np.abs(grad(pol, allr, ev, w_all) - grad(pol, allr, eref, w_all)).max()
        print(f"  {name:36s} {diff_b:10.2e} {diff_e:10.2e}")

    # ---- clipping: per-token ratios vs the sequence ratio ---------------------------------------
    pol_new = TabularPolicy(pol.theta + args.move * rng.normal(size=pol.theta.shape))
    rows = []
    for label, policy in (("theta = theta_old", pol), (f"theta moved (std {args.move:g})", pol_new)):
        out = []
        for batch, RR, weight in ((ro, R, None), (allr, R_all, w_all)):
            AA = RR - v_exact[batch.states[:, 0]]
            lp_old, _ = pol.logp(batch.states, batch.tokens, batch.mask)
            lp, _ = policy.logp(batch.states, batch.tokens, batch.mask)
            d_t, d_s = clip_pair(batch, lp, lp_old, AA, args.eps)
            out.append(np.abs(grad(policy, batch, d_t, weight) - grad(policy, batch, d_s, weight)).max())
            if weight is None:
                rho = np.exp(lp - lp_old)[batch.mask > 0]
                rho_seq = np.exp(((lp - lp_old) * batch.mask).sum(1))
                frac_t = clip_fraction(lp, lp_old, AA, batch.mask, args.eps)
                frac_s = clip_fraction(
                    np.log(rho_seq)[:, None], np.zeros((len(AA), 1)), AA, np.ones((len(AA), 1)), args.eps
                )
                stats = (rho.min(), rho.max(), rho_seq.min(), rho_seq.max(), frac_t, frac_s)
        rows.append((label, out, stats))
        if label == "theta = theta_old":  # rho = 1: REINFORCE exactly
            lp, _ = pol.logp(ro.states, ro.tokens, ro.mask)
            d_t, _ = clip_pair(ro, lp, lp, A, args.eps)
            at_one = np.abs(grad(pol, ro, d_t) - grad(pol, ro, token(ro, A[:, None]))).max()
    print(f"\nper-token clip vs sequence-ratio clip (eps = {args.eps:g}, samples from pi_old):")
    print(
        f"  {'':28s} {'batch':>10s} {'expected':>10s}  {'token rho':>13s}  {'sequence rho':>13s}"
        f"  {'clipped: tokens':>15s} {'sequences':>9s}"
    )
    for label, (db, de), (r0, r1, s0, s1, ft, fs) in rows:
        print(
            f"  {label:28s} {db:10.2e} {de:10.2e}  {r0:5.2f} .. {r1:5.2f}  {s0:5.2f} .. {s1:5.2f}"
            f"  {ft:15.3f} {fs:9.3f}"
        )
    print(f"  at theta = theta_old the clipped gradient is REINFORCE's: max |difference| = {at_one:.2e}")


if __name__ == "__main__":
    main()
