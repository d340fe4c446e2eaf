"""Common confusions about GRPO-style losses, each settled by a few lines of arithmetic.

One function per confusion, each a few lines on the library's public functions, printing what it
measures and checking (examples/_claims.py) every comparison the docs page states about it: in
strict mode (MINIRL_CLAIMS_STRICT=1, the site's build and the tests) a claim that no longer holds
stops the run with exit status 1; elsewhere it prints a line saying so. Everything is deterministic (each
sampled run seeds its own np.random.default_rng). The docs page "Common confusions" shows each
function (a snippet section) and runs it.

    loss_zero      the loss is ~0 but the policy moves (rho = 1, centred advantages)
    never_clips    one epoch per group means rho = 1: the clip fraction is 0
    minibatches    two mini-batches of one group: the second step's ratios are not 1
    aggregation    per-token weights of a short and a long response under each normalizer
    bessel         population versus Bessel std at K = 2 (and the factor sqrt((K-1)/K))
    k_equals_1     what K = 1 does in each baseline: r, 0, 0, ValueError
    clip_fraction  one epoch in four mini-batches, and a ratio taken against a sampler
    accumulation   gradient accumulation: each normalizer against its own big batch
    entropy_knob   my entropy collapses: the sign of the identity, and which knob acts when
    clip_vs_bonus  clip-higher against the entropy bonus: epochs, tokens and fixed points

    $ python examples/confusions.py              # all of them
    $ python examples/confusions.py loss_zero    # one
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.pg.advantages import centred, leave_one_out, no_baseline, standardized
from minirl_lm.pg.clip import clip_fraction as clip_frac
from minirl_lm.pg.clip import clipped_surrogate
from minirl_lm.pg.entropy import entropy_bonus, entropy_grad_table, entropy_table
from minirl_lm.pg.entropy_knobs import entropy_step
from minirl_lm.pg.grpo import grpo_step
from minirl_lm.pg.offpolicy import ACCUM, accumulation_weights, minibatch_rows
from minirl_lm.pg.reinforce import token_weights

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_claims.py, beside this file
from _claims import claim  # noqa: E402
from _cli import quiet_pipe  # noqa: E402


# --8<-- [start:loss_zero]
def loss_zero():
    policy = TabularPolicy(np.array([[0.5, 0.0, -0.5, 0.2]]))  # one prompt, V = 4
    states = np.zeros((4, 1), dtype=np.int64)  # (B, T) = (4, 1)
    tokens = np.array([[0], [1], [2], [3]])  # a group of K = 4 responses
    mask = np.ones((4, 1))
    r = np.array([1.0, 0.0, 0.3, 1.0])  # r(y) of each token y
    adv = centred(r[tokens].reshape(1, 4)).reshape(-1)  # (N, K) -> (B,), sums to 0
    logp, _ = policy.logp(states, tokens, mask)
    loss, dlogp = clipped_surrogate(logp, logp.copy(), adv, mask)  # first epoch: logp_old = logp
    dtheta = policy.backward(states, tokens, mask, dlogp)  # (1, V)
    print(f"advantages          {np.round(adv, 4)}")
    print(f"loss value          {loss:.3e}")
    print(f"dloss/dlogp         {np.round(dlogp[:, 0], 4)}")
    print(f"dloss/dtheta        {np.round(dtheta[0], 4)}")
    before = policy.probs()[0] @ r
    policy.theta -= 1.0 * dtheta  # one step, lr = 1
    print(f"E_pi[r] before/after one step: {before:.4f} -> {policy.probs()[0] @ r:.4f}")
    claim(abs(loss) < 1e-12 and np.abs(dlogp).max() > 0, "the loss is zero up to rounding, its gradient is not")
    claim(bool(policy.probs()[0] @ r > before), "one step on a zero loss raises the expected reward")


# --8<-- [end:loss_zero]


# --8<-- [start:never_clips]
def never_clips():
    mdp = TokenMDP(prompts=[0], V=4, max_len=1)  # one prompt, one-token answers
    grader = lambda prompt, response: float(response[0] in (0, 3))  # tokens 0 and 3 are right
    fractions = {}
    for E in (1, 4):  # update epochs on each group (grpo_step's `mu`)
        policy = TabularPolicy(np.zeros((mdp.S, mdp.V)))
        rng = np.random.default_rng(0)
        for group in range(3):
            info = grpo_step(policy, policy.copy(), mdp, grader, rng, K=8, mu=E, lr=1.0, beta=0.0)
            fractions.setdefault(E, []).append(list(info["clip_fraction"]))
            print(f"E = {E}, group {group}: clip fraction per epoch {np.round(fractions[E][-1], 3).tolist()}")
    claim(all(f == [0.0] for f in fractions[1]), "one epoch per group: the clip fraction is 0 on every step")
    claim(all(f[0] == 0.0 for f in fractions[4]), "E = 4: the first epoch of every group clips nothing")
    claim(max(max(f[1:]) for f in fractions[4]) > 0, "E = 4: a later epoch clips")


# --8<-- [end:never_clips]


# --8<-- [start:minibatches]
def minibatches():
    rng = np.random.default_rng(1)
    mdp = TokenMDP(["x0", "x1"], V=3, eos=0, max_len=2)
    policy = TabularPolicy(rng.normal(size=(mdp.S, mdp.V)))
    ro = mdp.rollout(policy, 8, rng)  # B = 16: two groups of K = 8
    A = standardized(np.array([float(1 in y) for y in ro.responses()]).reshape(2, 8))
    A = A.reshape(-1)[:, None] * ro.mask  # (B, T)
    logp_old, _ = policy.logp(ro.states, ro.tokens, ro.mask)
    spans = []
    for step, rows in enumerate((np.arange(0, 16, 2), np.arange(1, 16, 2)), 1):  # two mini-batches
        st, tk, m = ro.states[rows], ro.tokens[rows], ro.mask[rows]
        logp, _ = policy.logp(st, tk, m)
        rho = np.exp(logp - logp_old[rows])[m > 0]
        spans.append((rho.min(), rho.max()))
        print(f"mini-batch step {step}: rho in [{rho.min():.3f}, {rho.max():.3f}]")
        _, g = clipped_surrogate(logp, logp_old[rows], A[rows], m, 0.2, agg="token_mean")
        policy.theta -= 2.0 * policy.backward(st, tk, m, g)
    claim(spans[0] == (1.0, 1.0), "the first mini-batch step reads rho = 1 exactly")
    claim(spans[1] != (1.0, 1.0), "the second mini-batch step, same epoch, reads rho != 1")


# --8<-- [end:minibatches]


# --8<-- [start:aggregation]
def aggregation():
    mask = np.array(
        [
            [1, 1, 0, 0, 0, 0, 0, 0],  # a short response: 2 tokens
            [1, 1, 1, 1, 1, 1, 1, 1.0],
        ]
    )  # a long response: 8 tokens
    print(f"{'agg':>20}  {'w per token (short, long)':>26}  {'total (short, long)':>20}")
    w = {}
    for agg in ("seq_sum", "token_mean", "seq_mean_token_mean", "constant"):
        w[agg] = token_weights(mask, agg, max_len=8 if agg == "constant" else None)  # (B, T)
        per_token, total = w[agg][:, 0], w[agg].sum(axis=1)
        print(f"{agg:>20}  {per_token[0]:12.4f} {per_token[1]:12.4f}  {total[0]:9.4f} {total[1]:9.4f}")
    smtm = w["seq_mean_token_mean"]
    claim(bool(smtm[0].sum() == smtm[1].sum() and smtm[0, 0] > smtm[1, 0]), "seq_mean_token_mean: equal totals")
    claim(bool(np.ptp(w["token_mean"][mask > 0]) == 0), "token_mean: every token of the batch the same weight")
    claim(np.allclose(w["constant"], w["seq_sum"] / 8, rtol=1e-15, atol=0), "constant: seq_sum / T_max")


# --8<-- [end:aggregation]


# --8<-- [start:bessel]
def bessel():
    r = np.array([[1.0, 0.0]])  # K = 2, one right, one wrong
    pop, bes = standardized(r, ddof=0)[0], standardized(r, ddof=1)[0]
    print(f"population std (ddof=0): A = {pop}")
    print(f"Bessel std     (ddof=1): A = {bes}")
    print(f"1/sqrt(2)              =     {1 / np.sqrt(2):.8f}")
    claim(
        np.allclose(pop, [1, -1], atol=1e-7) and np.allclose(bes, [2**-0.5, -(2**-0.5)], atol=1e-7),
        "+-1, +-1/sqrt 2",
    )
    for K in (2, 4, 8, 64):
        r = np.random.default_rng(K).random((1, K))  # any rewards with a spread
        ratio = standardized(r, std_eps=0.0, ddof=1) / standardized(r, std_eps=0.0, ddof=0)
        print(
            f"K = {K:2d}: A(ddof=1) / A(ddof=0) = {ratio.mean():.6f}, sqrt((K-1)/K) = {np.sqrt((K - 1) / K):.6f}"
        )
        claim(np.allclose(ratio, np.sqrt((K - 1) / K), rtol=1e-12), "the two differ by the factor sqrt((K-1)/K)")


# --8<-- [end:bessel]


# --8<-- [start:k_equals_1]
def k_equals_1():
    r = np.array([[0.7], [1.0], [0.0]])  # N = 3 prompts, K = 1 each
    print(f"no baseline:         {no_baseline(r).ravel()}")
    print(f"centred:             {centred(r).ravel()}")
    print(f"standardized ddof=0: {standardized(r, ddof=0).ravel()}")
    print(f"standardized ddof=1: {standardized(r, ddof=1).ravel()}")
    zero = [centred(r), standardized(r, ddof=0), standardized(r, ddof=1)]
    claim(all(np.array_equal(a, np.zeros_like(r)) for a in zero), "K = 1: centred, standardized are 0 exactly")
    claim(np.array_equal(no_baseline(r), r), "K = 1: no baseline keeps the raw reward")
    try:
        leave_one_out(r)
    except ValueError as err:
        print(f"leave-one-out:       ValueError\n  {err}")
    else:
        claim(False, "K = 1: leave-one-out refuses")


# --8<-- [end:k_equals_1]


# --8<-- [start:clip_fraction]
def clip_fraction():
    rng = np.random.default_rng(0)
    mdp = TokenMDP(["x0", "x1"], V=3, eos=0, max_len=3)
    policy = TabularPolicy(rng.normal(size=(mdp.S, mdp.V)))
    ro = mdp.rollout(policy, 16, rng)  # B = 32: two groups of K = 16
    A = standardized(np.array([float(y[0] == 1) for y in ro.responses()]).reshape(2, 16)).reshape(-1)
    logp_old, _ = policy.logp(ro.states, ro.tokens, ro.mask)  # (B, T), fixed for the epoch
    logp_mu, _ = TabularPolicy(policy.theta / 2.0).logp(ro.states, ro.tokens, ro.mask)  # a sampler
    fractions = []
    for rows in minibatch_rows(32, 4, rng):  # one epoch, four optimizer steps
        st, tk, m = ro.states[rows], ro.tokens[rows], ro.mask[rows]
        logp, _ = policy.logp(st, tk, m)
        fractions.append(clip_frac(logp, logp_old[rows], A[rows], m, 0.2))
        print(f"minibatch step {len(fractions)}: clip fraction {fractions[-1]:.3f}")
        _, g = clipped_surrogate(logp, logp_old[rows], A[rows], m, 0.2)
        policy.theta -= 3.0 * policy.backward(st, tk, m, g)
    bypass = clip_frac(logp_old, logp_mu, A, ro.mask, 0.2)  # first step, ratio against mu
    print(f"bypass step 1 (ratio against a sampler at temperature 2): clip fraction {bypass:.3f}")
    claim(fractions[0] == 0.0, "the first step of an epoch clips nothing")
    claim(min(fractions[1:]) > 0 and bypass > 0, "every later mini-batch step, and the bypass step, clips")


# --8<-- [end:clip_fraction]


# --8<-- [start:accumulation]
def accumulation():
    lengths = np.array([1, 8, 3, 5, 2, 7, 4, 6])  # B = 8 responses
    mask = (np.arange(8)[None, :] < lengths[:, None]).astype(float)  # (B, T)
    print(f"B = 8 responses of lengths {lengths.tolist()}, M = {int(mask.sum())} real tokens")
    own_big = {"dapo": "token_mean", "bnpo": "token_mean", "grpo": "seq_mean_token_mean"}
    own_big |= {"dr_grpo": "constant", "sum": "token_mean"}  # sum: bnpo with the 1/G forgotten
    for G in (2, 4):  # gradient_accumulation_steps at a fixed batch
        M_g = mask.reshape(G, -1).sum(axis=1)  # (G,) real tokens per micro-batch
        print(f"G = {G}, M_g = {M_g.astype(int).tolist()}: accumulated weight / own big batch's, per micro-batch")
        for mode in ACCUM:
            w = accumulation_weights(mask, G, mode)  # (B, T) summed over the G backward passes
            big = token_weights(mask, own_big[mode])  # (B, T) one backward over the batch
            ratio = np.array([(w[b][mask[b] > 0] / big[b][mask[b] > 0]).mean() for b in np.split(np.arange(8), G)])
            print(f"  {mode:8s} vs {own_big[mode]:20s} {np.round(ratio, 4).tolist()}")
            exact = np.allclose(w, big, rtol=1e-15, atol=0)
            if mode in ("dapo", "grpo", "dr_grpo"):
                claim(exact, "dapo, grpo and dr_grpo reproduce their own big batch at every G")
            if mode == "bnpo":
                claim(np.allclose(ratio, mask.sum() / (G * M_g), rtol=1e-14), "bnpo: the factor M / (G M_g)")
                claim(not exact, "bnpo: its weights are not its own big batch's")
            if mode == "sum":
                claim(np.allclose(w.sum(), G, rtol=1e-14), "without 1/G: the total weight is G")


# --8<-- [end:accumulation]


# --8<-- [start:entropy_knob]
def entropy_knob():
    theta = np.array([[2.0, 0.0, -1.0]])  # one state, three answers; the likely one is right
    pi = np.exp(theta) / np.exp(theta).sum()  # (1, V)
    for name, R in (("likely answer right", [1.0, 0.0, 0.0]), ("unlikely answer right", [0.0, 0.0, 1.0])):
        A = np.array(R) - pi @ np.array(R)  # (1, V) advantage under pi
        _, pg, _ = entropy_step(theta, 1e-3 * pi * A)  # eq. (ent_identity), the vanilla step
        _, bonus, _ = entropy_step(theta, 1e-3 * 0.1 * entropy_grad_table(theta))  # c = 0.1
        print(f"{name:22s}: dH of the step {pg[0]:+.2e}, of the bonus c = 0.1 {bonus[0]:+.2e}")
        claim(
            bool((pg[0] < 0) == (name == "likely answer right")),
            "the step lowers H iff the likely answer is right",
        )
        claim(bool(bonus[0] > 0), "the bonus raises H")
    logp = np.log(pi[0, [0, 2]])[:, None]  # (B, T) = (2, 1): one epoch, rho = 1
    A2, m = np.array([1.0, -1.0]), np.ones((2, 1))
    same = all(
        (clipped_surrogate(logp, logp, A2, m, 0.2, eh)[1] == clipped_surrogate(logp, logp, A2, m)[1]).all()
        for eh in (0.28, 10.0)
    )
    print(f"first epoch of a batch: clip-higher's gradient equals the symmetric clip's: {same}")
    claim(same, "on the first epoch clip-higher changes nothing")


# --8<-- [end:entropy_knob]


# --8<-- [start:clip_vs_bonus]
def clip_vs_bonus():
    y = np.array([[2], [2], [0], [1]])  # (B, T): one state; the unlikely token 2 is rewarded twice
    A, m, s = np.array([1.0, 1.0, -1.0, -1.0]), np.ones((4, 1)), np.zeros((4, 1), np.int64)
    H = {}
    for name, eps_high, c in (
        ("symmetric clip", 0.2, 0.0),
        ("clip-higher", 0.28, 0.0),
        ("bonus c = 0.05", 0.2, 0.05),
    ):
        for epochs in (1, 4):
            pol = TabularPolicy(np.array([[2.0, 0.0, -1.0]]))
            old, _ = pol.logp(s, y, m)
            for _ in range(epochs):
                logp, _ = pol.logp(s, y, m)
                _, g = clipped_surrogate(logp, old, A, m, 0.2, eps_high)
                d = pol.backward(s, y, m, g) + c * entropy_bonus(pol.theta, s, m)[1]
                pol.theta -= 0.15 * d
            H[name, epochs] = entropy_table(pol.theta)[0]
            print(f"{name:15s} {epochs} epoch(s): H {H[name, epochs]:.4f}")
    claim(bool(H["clip-higher", 1] == H["symmetric clip", 1]), "one epoch: clip-higher is the symmetric clip")
    claim(bool(H["clip-higher", 4] > H["symmetric clip", 4]), "four epochs: clip-higher ends with more entropy")
    claim(bool(H["bonus c = 0.05", 1] > H["symmetric clip", 1]), "the bonus acts from the first epoch")


# --8<-- [end:clip_vs_bonus]


CONFUSIONS = {
    f.__name__: f
    for f in (
        loss_zero,
        never_clips,
        minibatches,
        aggregation,
        bessel,
        k_equals_1,
        clip_fraction,
        accumulation,
        entropy_knob,
        clip_vs_bonus,
    )
}


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="confusions to settle: " + ", ".join(CONFUSIONS) + " (default all)",
    )
    args = p.parse_args(argv)
    for name in args.names:
        if name not in CONFUSIONS:
            p.error(f"NAME: expected one of {', '.join(CONFUSIONS)}, got {name!r}")
    names = args.names or list(CONFUSIONS)
    for i, name in enumerate(names):
        if len(names) > 1:
            print(("\n" if i else "") + f"== {name}")
        CONFUSIONS[name]()


if __name__ == "__main__":
    main()
