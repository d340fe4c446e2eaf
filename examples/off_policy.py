"""Off the policy: the sampler mu is not pi_old; what each correction does to the update, exactly.

A small multi-token task (2 prompts, EOS + 2 letters, up to 3 tokens: 15 responses per prompt).
pi_old is a random tabular policy; the sampler mu is pi_old at temperature kappa >= 1, with kappa
chosen so that the sequence-level KL(mu || pi_old) hits each level of --levels (the first is 0:
mu = pi_old). For every estimator and level, by enumerating every response (no sampling):

  bias      |E_mu[g] - grad J| / |grad J|, grad J the on-policy gradient of J = E_pi_old[R];
  cosine    between E_mu[g] and grad J;
  variance  trace of the covariance of the per-sample update g (one response, x ~ mu_0, y ~ mu).

g is the ascent direction in theta of one response's loss, with A = R - v(x), v the exact value of
pi_old. Estimators: sampler corrections as weights on REINFORCE (none, token/sequence IS,
truncated, masked, TRL's default sequence mask, TRL's off-policy sequence mask, verl's
geometric rejection), the clip family in verl's "bypass" mode (the ratio taken against mu), and
in the same bypass mode the trust regions without the clip (sapo, dppo_tv, dppo_kl, gmpo, vespo:
named without the suffix; the mini-batch run gives each one's fraction of tokens that lose their
gradient per optimizer step).

Then, in order: token IS with mu changed at one depth only (the prefix and the continuation as
the two sources of its bias); why dual-clip prints PPO's numbers (its floor never binds); a
sampled length sweep (responses of 8 to 64 tokens from a per-position policy) where the product
W's variance explodes; one epoch over a sampled batch in mini-batches (the clip fraction per
optimizer step); and the loss normalizers under gradient accumulation, each against its own big
batch. Every comparison the docs page states is checked here (examples/_claims.py).

    $ python examples/off_policy.py                  # the tables on the page
    $ python examples/off_policy.py --section takeaway      # the page's three opening lines
    $ python examples/off_policy.py --section conclusions   # its "What to conclude", as Markdown
    $ python examples/off_policy.py --quick          # a smaller sweep (the tests)
    $ python examples/off_policy.py --section minibatch --lr 1 --minibatches 8
    $ python examples/off_policy.py --plot off_policy.svg --levels 0,0.05,0.1,0.25 --seed 1
"""

import argparse
import os
import sys

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.core.policy import TabularPolicy
from minirl_lm.exact.scores import draw_moments
from minirl_lm.exact.tree import children, tree_product, tree_sum
from minirl_lm.pg.advantages import standardized
from minirl_lm.pg.clip import clip_fraction, clipped_surrogate
from minirl_lm.pg.offpolicy import (
    ACCUM,
    accumulation_weights,
    corrected_pg_loss,
    is_weights,
    minibatch_rows,
    off_policy_sequence_mask,
    rejection_mask,
)
from minirl_lm.pg.reinforce import token_weights
from minirl_lm.pg.seqclip import cispo_loss, dual_clip_surrogate, gspo_surrogate
from minirl_lm.pg.trust import dppo_loss, gmpo_loss, sapo_loss, vespo_loss

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
from _claims import claim  # noqa: E402
from _cli import integer, plot_path, quiet_pipe, real, reals, seed  # noqa: E402

EOS, PROMPTS = 0, ("ab", "b")  # token 0 is EOS, tokens 1, 2 are "a", "b"
DUAL_C, EPS = 3.0, 0.2  # the bypass rows' dual-clip bound c and clip range epsilon
DPPO_C = 3.0  # DPPO's truncation of the token ratio (verl's clip_ratio_c default)
SWEEP_LENGTHS, QUICK_LENGTHS = (8, 16, 32, 64), (8, 64)
# each accumulation mode against the loss it computes in one backward over the whole batch
OWN_BIG = {"dapo": "token_mean", "bnpo": "token_mean", "grpo": "seq_mean_token_mean", "dr_grpo": "constant"}
OWN_BIG["sum"] = "token_mean"  # the local token mean with the 1/G forgotten


def grader(prompt, response):
    """Letters in the right place / max(len(response), len(prompt)), in [0, 1]."""
    text = "".join("ab"[y - 1] for y in response if y != EOS)
    return sum(a == b for a, b in zip(text, prompt)) / max(len(text), len(prompt))


def make_task(max_len=3):
    return TokenMDP(PROMPTS, V=3, eos=EOS, max_len=max_len)


# ---- exact machinery: every response, its probabilities; the moments by the engine ----------
class Exact:
    """All responses of the task, rewards, values; the moments of any per-token update exactly
    (minirl_lm.exact: eq. (exact_moments) over the responses, the prefix tree for KL and Var W)."""

    def __init__(self, mdp, pi_old):
        self.mdp, self.pi_old = mdp, pi_old
        self.ro = ro = mdp.all_responses()
        self.R = mdp.score(grader, ro)  # (B,)
        self.logp_old, seq = pi_old.logp(ro.states, ro.tokens, ro.mask)  # (B, T), (B,)
        self.p_old = np.exp(seq) / mdp.N  # (B,) mu_0(x) pi_old(y|x)
        v = np.bincount(ro.prompt, self.p_old * self.R) * mdp.N  # (N,) v(x) = E_pi_old[R|x]
        self.A = self.R - v[ro.prompt]  # (B,)
        self.P_old = pi_old.probs()  # (S, V)
        self.child, self.roots = children(mdp)  # the prefix tree, eq. (tree_sum)
        self.grad_J = self.update(self.A[:, None] * ro.mask, self.p_old)[0]  # eq. (on_policy)

    def update(self, c, q):
        """E[g] (S*V,) and tr Cov[g] of g_b = sum_t c[b, t] score[b, t], b ~ q, eq. (exact_moments)."""
        ro = self.ro
        mean, var = draw_moments(q, c, self.P_old, ro.states, ro.tokens, ro.mask)
        return mean.ravel(), var

    def theta_mu(self, tau, depth=None):
        """The sampler's logits: theta_old / tau (at the states s_depth only, if depth is given)."""
        theta = self.pi_old.theta / tau
        if depth is not None:  # mu = pi_old except where token `depth` is chosen
            at = np.unique(self.ro.states[self.ro.lengths >= depth, depth - 1])  # ids of s_depth
            theta = self.pi_old.theta.copy()
            theta[at] /= tau
        return theta

    def sampler(self, tau, depth=None):
        """mu = softmax(theta_old / tau) (at the states s_depth only, if depth is given): its token
        log-probs (B, T) and mu_0(x) mu(y|x) (B,)."""
        lp, seq = TabularPolicy(self.theta_mu(tau, depth)).logp(self.ro.states, self.ro.tokens, self.ro.mask)
        return lp, np.exp(seq) / self.mdp.N

    def kl(self, tau, depth=None):
        """Sequence-level KL(mu || pi_old) = E_x E_mu[sum_t log mu/pi_old], over the tree, eq. (tree_sum)."""
        mu = TabularPolicy(self.theta_mu(tau, depth)).probs()  # (S, V)
        return float(tree_sum(self.child, self.roots, mu, np.log(mu / self.P_old)).mean())

    def var_W(self, tau):
        """Var_mu(W) = E_mu[W^2] - 1 of W = pi_old(y|x) / mu(y|x), over the tree, eq. (tree_product)."""
        mu = TabularPolicy(self.theta_mu(tau)).probs()  # (S, V)
        return float(tree_product(self.child, self.roots, mu, (self.P_old / mu) ** 2).mean() - 1.0)

    def tau_for(self, target):
        """The temperature tau >= 1 with KL(mu || pi_old) = target (bisection on log tau)."""
        if target == 0:
            return 1.0
        lo, hi = 0.0, 1.0
        while self.kl(np.exp(hi)) < target:
            lo, hi = hi, 2 * hi
            if hi > 64:
                raise ValueError(
                    f"expected KL levels below KL(uniform || pi_old) = {self.kl(np.exp(hi)):.4g}, got {target:g}"
                )
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.kl(np.exp(mid)) < target else (lo, mid)
        return float(np.exp(0.5 * (lo + hi)))

    def expect(self, dlogp, q, agg="seq_sum"):
        """E[g] (S*V,) and tr Cov[g] of the per-sample update g_b = -B dloss/dlogp . score.

        dlogp comes from a loss at seq_sum (weight 1/B) or seq_mean_token_mean (1/(B |y_b|)): both
        are per-response weights, so one response is one sample. agg="token_mean" takes dlogp at
        seq_sum and divides by the token count of the batch, in the large-batch limit: the mean
        is E[X] / E[L] (X the seq_sum update, L = |y|) and the variance per response is the delta
        method's, tr Cov[X - r L] / E[L]^2 with r = E[X] / E[L]."""
        c = -len(self.R) * dlogp
        EX, var = self.update(c, q)
        if agg != "token_mean":
            return EX, var
        L = self.ro.mask.sum(axis=1)  # (B,) |y|
        EL = float(q @ L)
        r = EX / EL
        EXL = self.update(c * L[:, None], q)[0]  # E[X L]
        var_L = float(q @ L**2) - EL**2
        return r, float((var - 2 * r @ (EXL - EX * EL) + var_L * (r @ r)) / EL**2)

    def moments(self, dlogp, q, agg="seq_sum"):
        """(bias, cosine, variance) of the per-sample update against grad J, see `expect`."""
        Eg, var = self.expect(dlogp, q, agg)
        return compare(Eg, self.grad_J) + (var,)


def compare(Eg, ref):
    """(|Eg - ref| / |ref|, cos(Eg, ref)); cosine nan where E[g] = 0 (every token masked)."""
    bias = float(np.linalg.norm(Eg - ref) / np.linalg.norm(ref))
    norms = np.linalg.norm(Eg) * np.linalg.norm(ref)
    return bias, (float(Eg @ ref / norms) if norms > 0 else float("nan"))


def curve_summary(curve, check):
    """The curve's one-line reading, computed; its comparisons claimed on the page's run (`check`)."""
    first, last = curve[0], curve[-1]
    vw = [r["var_W"] for r in curve]
    if check:
        claim(
            all(b > a for a, b in zip(vw, vw[1:])),
            "exact Var W grows with every added token",
            negation="exact Var W does not grow with every added token",
        )
        claim(
            first["T"] == 1 and first["tok_is"][1] == first["seq_is"][1] and first["tok_is"][0] < 1e-12,
            "at one token the token and sequence weights coincide: same variance, no bias",
        )
        claim(
            last["seq_is"][1] > last["none"][1],
            "at the longest length seq_is is noisier than no correction",
            negation="at the longest length seq_is is not noisier than no correction",
        )
        claim(
            all(r["tok_is"][0] > 1e-3 for r in curve[1:]),
            "tok_is is biased at every length above 1",
            negation="tok_is is unbiased at some length above 1",
        )
        claim(
            all(b["kl"] > a["kl"] for a, b in zip(curve, curve[1:])),
            "the KL per response grows with T",
            negation="the KL per response does not grow at every added token",
        )
    above = [r["T"] for r in curve if r["seq_is"][1] > r["none"][1]]
    b0 = first["tok_is"][0]
    kt = [r["kl_tok"] for r in curve]
    return (
        f"curve: from T = {first['T']} to {last['T']}, the KL per response goes from {first['kl']:.3f} to "
        f"{last['kl']:.3f} (per token between {min(kt):.3f} and {max(kt):.3f}), "
        f"exact Var W grows {vw[-1] / vw[0]:.1f}x "
        f"({vw[0]:.3f} to {vw[-1]:.3f}) and seq_is's variance {last['seq_is'][1] / first['seq_is'][1]:.1f}x, "
        + (
            f"above the uncorrected estimator's from T = {above[0]}"
            if above
            else "never above the uncorrected one"
        )
        + f"; tok_is's variance moves {last['tok_is'][1] / first['tok_is'][1]:.1f}x while its bias goes from "
        + ("0 (to rounding)" if b0 < 1e-12 else f"{b0:.3f}")
        + f" to {last['tok_is'][0]:.3f}"
    )


def length_curve(seed_, tau, lengths, args):
    """The exact lab at each response length T: pi_old the T = max(lengths) table restricted to
    the shorter prefixes (one policy for every T, drawn from its own seed, not the exact table's
    pi_old; its EOS logits lowered by 2, so that most responses run to the cap), mu at the fixed
    temperature tau (one temperature, not one per-token KL: that KL depends on the states the
    responses visit), every response enumerated. Per T: responses, KL(mu || pi_old) per response
    and per token, exact Var W, and (bias, variance) of none, tok_is and seq_is."""
    big = make_task(max(lengths))
    theta_big = np.random.default_rng([seed_, 8]).normal(size=(big.S, big.V))
    theta_big[:, EOS] -= 2.0  # EOS rarer: most responses run to the cap, so length matters
    out = []
    for T in lengths:
        mdp = make_task(T)
        rows = [big.state_id(n, pre) for n, pre in mdp.all_states()]  # the same prefixes
        ex = Exact(mdp, TabularPolicy(theta_big[rows]))
        logp_mu, q = ex.sampler(tau)
        est = {k: d for k, d in estimators(ex, logp_mu, args).items() if k in ("none", "tok_is", "seq_is")}
        row = {"T": T, "B": len(ex.R), "kl": ex.kl(tau), "var_W": ex.var_W(tau)}
        row["kl_tok"] = row["kl"] / float(q @ ex.ro.mask.sum(axis=1))  # per token of mu's responses
        row.update({k: ex.moments(d, q)[::2] for k, d in est.items()})  # (bias, variance)
        out.append(row)
    return out


def estimators(ex, logp_mu, args):
    """{name: dloss/dlogp (B, T)} of every estimator at theta = theta_old on all responses, each
    at its aggregation (`agg_of`; a token_mean row at seq_sum, divided by the tokens in
    `Exact.expect`)."""
    ro, lo, A = ex.ro, ex.logp_old, ex.A
    m, C = ro.mask, args.c

    def pg(w):
        return corrected_pg_loss(lo, A, m, w, agg="seq_sum")[1]  # eq. (pg_is)

    trl = is_weights(lo, logp_mu, m, level="sequence", mode="mask", c_max=3.0)  # TRL's default mode
    return {
        "none": pg(m),
        "tok_is": pg(is_weights(lo, logp_mu, m, level="token")),  # eq. (is_token)
        "seq_is": pg(is_weights(lo, logp_mu, m, level="sequence")),  # eq. (is_seq)
        "tok_tis": pg(is_weights(lo, logp_mu, m, level="token", c_max=C)),  # eq. (tis)
        "seq_tis": pg(is_weights(lo, logp_mu, m, level="sequence", c_max=C)),
        "tok_mis": pg(is_weights(lo, logp_mu, m, level="token", mode="mask", c_max=C, c_min=1 / C)),  # eq. (mis)
        "seq_mis": pg(is_weights(lo, logp_mu, m, level="sequence", mode="mask", c_max=C, c_min=1 / C)),
        "seq_mis_trl": pg(trl),
        "opsm_trl": pg(trl * off_policy_sequence_mask(lo, logp_mu, A, m, args.delta)),  # eq. (opsm)
        "rs_geo_verl": pg(rejection_mask(lo, logp_mu, m, option="seq_mean_k1", hi=args.geo)),  # eq. (rejection)
        # verl's bypass mode: the ratio is taken against the sampler (logp_old := logp_mu)
        "ppo_bypass": clipped_surrogate(lo, logp_mu, A, m, EPS, agg="seq_sum")[1],
        "dual_bypass": dual_clip_surrogate(lo, logp_mu, A, m, eps=EPS, c=DUAL_C, agg="seq_sum")[1],
        "gspo_bypass": gspo_surrogate(lo, logp_mu, A, m, eps=EPS)[1],  # 1/(B |y|): seq_mean_token_mean
        "cispo_bypass": cispo_loss(lo, logp_mu, A, m, rho_min=0.8, rho_max=1.28, agg="seq_sum")[1],
        # the trust regions without the clip, at the frameworks' defaults, the same bypass
        **trust_losses(lo, logp_mu, A, m, exact=True),  # named without "_bypass", to keep the column
    }


TRUST = ("sapo", "dppo_tv", "dppo_kl", "gmpo", "vespo")
# the aggregation each row runs at, and who ships it; every other row runs at seq_sum, the
# aggregation whose on-policy update is grad J itself (the lab's choice, see `SEQ_SUM_NOTE`)
SHIPPED = {
    "gspo_bypass": ("seq_mean_token_mean", "the GSPO paper's; TRL's recommended loss_type='grpo'"),
    "sapo": ("seq_mean_token_mean", "TRL loss_type='sapo' and verl, both fixed"),
    "dppo_tv": ("token_mean", "verl's default loss_agg_mode"),
    "dppo_kl": ("token_mean", "verl's default loss_agg_mode"),
    "gmpo": ("seq_mean_token_mean", "its own 1/(B |y|): verl's geo_mean ignores loss_agg_mode"),
    "vespo": ("token_mean", "TRL loss_type='vespo', fixed"),
}
SEQ_SUM_NOTE = (
    "every other row at seq_sum (1/B per token: its on-policy update is grad J, so its bias is "
    "off-policy bias only); the frameworks ship token_mean there (TRL loss_type='dapo', verl "
    "loss_agg_mode='token-mean'), whose on-policy update is grad J / E|y|"
)
# rows at another aggregation than their table row's, for the comparisons at equal aggregation
REFERENCES = (
    ("tok_is", "seq_mean_token_mean"),
    ("tok_is", "token_mean"),
    ("seq_is", "seq_mean_token_mean"),
    ("seq_is", "token_mean"),
    ("gspo_bypass", "token_mean"),  # verl's default for GSPO, and TRL's with its default loss_type
)


REF_WHO = {("gspo_bypass", "token_mean"): "verl's default loss_agg_mode; TRL's with its default loss_type='dapo'"}


def agg_of(name):
    return SHIPPED.get(name, ("seq_sum", ""))[0]


def trust_losses(logp, logp_old, A, m, exact=False):
    """{name: dloss/dlogp (B, T)} of SAPO, DPPO (TV, KL), GMPO, VESPO at their defaults and each at
    its shipped aggregation (SHIPPED; GMPO's 1/(B |y|) is its own). exact=True: a token_mean row
    at seq_sum instead (one response is one sample; `Exact.expect` divides by the tokens)."""
    agg = {k: "seq_sum" if exact and a == "token_mean" else a for k, (a, _) in SHIPPED.items()}
    return {
        "sapo": sapo_loss(logp, logp_old, A, m, agg=agg["sapo"])[1],  # eq. (sapo)
        "dppo_tv": dppo_loss(logp, logp_old, A, m, divergence="tv", c=DPPO_C, agg=agg["dppo_tv"])[1],  # eq. (dppo)
        "dppo_kl": dppo_loss(logp, logp_old, A, m, divergence="kl", c=DPPO_C, agg=agg["dppo_kl"])[1],
        "gmpo": gmpo_loss(logp, logp_old, A, m)[1],  # eq. (gmpo)
        "vespo": vespo_loss(logp, logp_old, A, m, agg=agg["vespo"])[1],  # eq. (vespo)
    }


def references(ex, logp_mu):
    """{(name, agg): dloss/dlogp (B, T)} of the REFERENCES rows (token_mean at seq_sum, as above)."""
    lo, A, m = ex.logp_old, ex.A, ex.ro.mask
    out = {}
    for name, agg in REFERENCES:
        if name == "gspo_bypass":  # GSPO-token form: each token's gradient is A s_b, not A s_b / |y_b|
            d = gspo_surrogate(lo, logp_mu, A, m, eps=EPS)[1] * m.sum(axis=1, keepdims=True)  # seq_sum
        else:
            w = is_weights(lo, logp_mu, m, level="token" if name == "tok_is" else "sequence")
            d = corrected_pg_loss(lo, A, m, w, agg="seq_sum" if agg == "token_mean" else agg)[1]
        out[name, agg] = d
    return out


def measure(ex, args, taus):
    """rows[name] = [(kl, bias, cosine, variance) per level] against grad J, the sampler of each
    at taus, every row at its aggregation (agg_of)."""
    return measure_split(ex, args, taus)[0]


def measure_split(ex, args, taus):
    """(rows, split): rows as `measure`; split[(name, agg)] = [(off-policy bias, cosine) per
    level] against the same row's own on-policy update (mu = pi_old, the first level), and
    split[(name, agg), "on"] = (cosine, |E g| / |grad J|) of that update against grad J (the
    aggregation alone), for every row off seq_sum and the REFERENCES."""
    rows, means = {}, {}
    for tau in taus:
        logp_mu, q = ex.sampler(tau)
        kl = ex.kl(tau)
        for name, d in estimators(ex, logp_mu, args).items():
            Eg, var = ex.expect(d, q, agg_of(name))
            rows.setdefault(name, []).append((kl,) + compare(Eg, ex.grad_J) + (var,))
            if agg_of(name) != "seq_sum":
                means.setdefault((name, agg_of(name)), []).append((Eg, var))
        for key, d in references(ex, logp_mu).items():
            means.setdefault(key, []).append(ex.expect(d, q, key[1]))
    split = {}
    for key, ms in means.items():
        on = ms[0][0]  # the first level is mu = pi_old
        split[key] = [compare(Eg, on) + (var,) for Eg, var in ms]
        split[key, "on"] = (compare(on, ex.grad_J)[1], float(np.linalg.norm(on) / np.linalg.norm(ex.grad_J)))
    return rows, split


def one_depth(ex, args, tau):
    """{depth: {name: (kl, bias, cosine, variance)}} for none, tok_is, seq_is with mu changed
    (temperature tau) only at the states s_depth: depth 1 moves the first token only (a prefix
    source for every later token), the last depth the last token only (a continuation source)."""
    out = {}
    for depth in (1, ex.mdp.max_len):
        logp_mu, q = ex.sampler(tau, depth)
        est = estimators(ex, logp_mu, args)
        out[depth] = {k: (ex.kl(tau, depth),) + ex.moments(est[k], q) for k in ("none", "tok_is", "seq_is")}
    return out


def dual_floor(ex, taus):
    """The largest bypass ratio pi_old / mu over the tokens with A < 0, per level: dual-clip's
    floor c A binds on a token iff A < 0 and rho > c (rho > 1 + eps > clip(rho) there)."""
    neg = (ex.A < 0)[:, None] & (ex.ro.mask > 0)  # (B, T)
    return [float(np.exp(ex.logp_old - ex.sampler(tau)[0])[neg].max()) for tau in taus]


# ---- the sampled length sweep: responses of 8 to 64 tokens -----------------------------------
def per_sample_updates(p, y, c):
    """g_b = sum_t c[b, t] (e_{y_bt} - p[t]) in row t: (n, L*V), one update per response of a
    policy whose state is the position (p: (L, V) its probabilities, y: (n, L) tokens)."""
    score = np.eye(p.shape[1])[y] - p[None]  # (n, L, V) d logp_t / d theta[t]
    return (c[:, :, None] * score).reshape(len(y), -1)


def length_sweep(seed_, kl_token, n, lengths, V=3):
    """Sampled variance of none, tok_is and seq_is on fixed-length responses (L tokens).

    The prefix tree of 64 tokens has V^64 states, so the policy here is tabular in the position:
    state t is the t-th token's row (pi_old random, mu = pi_old at one temperature kappa with a
    mean per-token KL(mu || pi_old) of kl_token). Reward: the fraction of tokens equal to a fixed
    target string; A = R - v with v = E_pi_old[R] exact. Per length: the exact sequence KL, the
    exact Var_mu(W) = prod_t sum_v pi_old^2 / mu - 1, and over n responses y ~ mu the trace of the
    covariance of the per-sample update g (with its standard error), and the fraction of
    responses whose ratio pi_old/mu leaves [1 - eps, 1 + eps] as the product W and as the
    geometric mean W^(1/L). Returns (kappa, [dict per length])."""
    rng = np.random.default_rng([seed_, 64])
    Lmax = max(lengths)
    theta = rng.normal(size=(Lmax, V))  # (Lmax, V) one row per position
    target = rng.integers(V, size=Lmax)  # (Lmax,)
    p_old = TabularPolicy(theta).probs()  # (Lmax, V)

    def kl_mean(kappa):
        q = TabularPolicy(theta / kappa).probs()
        return float((q * np.log(q / p_old)).sum(axis=1).mean())

    lo, hi = 0.0, 8.0  # bisection on log kappa
    if kl_mean(np.exp(hi)) < kl_token:
        raise ValueError(f"expected a per-token KL below {kl_mean(np.exp(hi)):.4g}, got {kl_token:g}")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if kl_mean(np.exp(mid)) < kl_token else (lo, mid)
    kappa = float(np.exp(0.5 * (lo + hi)))
    q_mu = TabularPolicy(theta / kappa).probs()  # (Lmax, V)
    out = []
    for L in lengths:
        p, q = p_old[:L], q_mu[:L]
        u = rng.random((n, L))  # inverse-CDF draws, y_t ~ mu(. | t)
        y = np.minimum((u[:, :, None] > np.cumsum(q, axis=1)[None]).sum(axis=2), V - 1)  # (n, L)
        states = np.broadcast_to(np.arange(L), (n, L)).copy()  # (n, L) state t = position t
        mask = np.ones((n, L))
        lp_old, _ = TabularPolicy(theta[:L]).logp(states, y, mask)  # (n, L)
        lp_mu, _ = TabularPolicy(theta[:L] / kappa).logp(states, y, mask)
        R = (y == target[:L]).mean(axis=1)  # (n,)
        A = R - p[np.arange(L), target[:L]].mean()  # (n,) v = E_pi_old[R] exactly
        row = {"L": L, "kl": float((q * np.log(q / p)).sum()), "var_W": float(np.prod((p**2 / q).sum(axis=1)) - 1)}
        for name, w in (
            ("none", mask),
            ("tok_is", is_weights(lp_old, lp_mu, mask, level="token")),  # eq. (is_token)
            ("seq_is", is_weights(lp_old, lp_mu, mask, level="sequence")),  # eq. (is_seq)
        ):
            c = -n * corrected_pg_loss(lp_old, A, mask, w, agg="seq_sum")[1]  # (n, L) w A
            g = per_sample_updates(p, y, c)  # (n, L*V) one update per response
            sq = ((g - g.mean(axis=0)) ** 2).sum(axis=1)  # (n,)
            row[name] = (float(sq.mean()), float(sq.std() / np.sqrt(n)))
        logW = (lp_old - lp_mu).sum(axis=1)  # (n,) log W
        row["out_W"] = float((np.abs(np.exp(logW) - 1) > EPS).mean())
        row["out_geo"] = float((np.abs(np.exp(logW / L) - 1) > EPS).mean())
        out.append(row)
    return kappa, out


# ---- one epoch in mini-batches, and the normalizers ------------------------------------------
def minibatch_epoch(mdp, pi_old, rng, args, tau):
    """Clip fraction before each optimizer step of one epoch over the mini-batches, and the clip
    fraction of the first step if the ratio is taken against a sampler at temperature tau."""
    pol = pi_old.copy()
    ro = mdp.rollout(pol, args.K, rng)
    r = mdp.score(grader, ro)
    A = standardized(r.reshape(-1, args.K)).reshape(-1)  # (B,)
    logp_old, _ = pi_old.logp(ro.states, ro.tokens, ro.mask)  # fixed for the epoch
    logp_mu, _ = TabularPolicy(pi_old.theta / tau).logp(ro.states, ro.tokens, ro.mask)
    bypass = clip_fraction(logp_old, logp_mu, A, ro.mask, EPS)  # theta = theta_old
    out, orders = [], []
    for rows in minibatch_rows(len(A), args.minibatches, rng):
        orders.append(rows)
        s, y, m = ro.states[rows], ro.tokens[rows], ro.mask[rows]
        lp, _ = pol.logp(s, y, m)
        frac = clip_fraction(lp, logp_old[rows], A[rows], m, EPS)
        rho = np.exp((lp - logp_old[rows]) * m)
        _, d = clipped_surrogate(lp, logp_old[rows], A[rows], m, EPS)
        pol.theta -= args.lr * pol.backward(s, y, m, d)  # one optimizer step
        out.append((frac, float(np.abs(rho - 1).max())))
    trust = trust_epochs(pi_old, ro, A, logp_old, orders, args.lr)
    return out, bypass, ro, trust


def trust_epochs(pi_old, ro, A, logp_old, orders, lr):
    """{name: [(lost, below half, below half in longer responses, which) per optimizer step]}: the
    same epoch (batch, mini-batches, step size) with each trust region's loss, at its shipped
    aggregation, instead of the clip. A token's weight is |dloss/dlogp| against the same loss's at
    theta = theta_old (the aggregation cancels there); over the real tokens with A != 0, `lost` is
    the fraction of weight exactly 0, `below half` of weight below 1/2; then the number of those
    below half that sit in a response of more than one token (in a one-token response the product
    ratio W is the token's ratio), and the set of (row, position) below half."""
    out = {}
    for name in TRUST:
        pol, steps = pi_old.copy(), []
        for rows in orders:
            s, y, m, a, lo = ro.states[rows], ro.tokens[rows], ro.mask[rows], A[rows], logp_old[rows]
            lp, _ = pol.logp(s, y, m)
            d = trust_losses(lp, lo, a, m)[name]  # (b, T)
            d0 = trust_losses(lo, lo, a, m)[name]  # (b, T) at rho = 1
            live = (m > 0) & (a[:, None] != 0)  # (b, T) the tokens with a gradient on-policy
            weight = np.abs(d[live]) / np.abs(d0[live])
            b, t = np.nonzero(live)
            low = weight < 0.5
            n_long = int((m.sum(axis=1)[b[low]] > 1).sum())
            which = frozenset(zip(rows[b[low]].tolist(), t[low].tolist()))
            steps.append((float((weight == 0).mean()), float(low.mean()), n_long, which))
            pol.theta -= lr * pol.backward(s, y, m, d)  # one optimizer step
        out[name] = steps
    return out


def both_below(trust, ro):
    """[(tokens below half in both SAPO and VESPO, of them in one-token responses) per step]."""
    out = []
    for a, b in zip(trust["sapo"], trust["vespo"]):
        both = a[3] & b[3]
        out.append((len(both), sum(int(ro.mask[r].sum()) == 1 for r, _ in both)))
    return out


def normalizers(mask, G):
    """{mode: (accumulated / own-big-batch weight on real tokens, total ratio, factor per
    micro-batch (G,))}: each mode of eq. (accum) against the loss it computes in one backward
    over the whole batch (OWN_BIG), and M_g, the real tokens of each micro-batch (G,)."""
    blocks = np.split(np.arange(len(mask)), G)  # consecutive micro-batches of B/G rows
    M_g = np.array([mask[b].sum() for b in blocks])  # (G,)
    res = {}
    for mode in ACCUM:
        w = accumulation_weights(mask, G, mode)  # (B, T) eq. (accum)
        big = token_weights(mask, OWN_BIG[mode])  # (B, T) eq. (pg_agg), one backward
        ratio = w[mask > 0] / big[mask > 0]  # (M,)
        fac = np.array([(w[b][mask[b] > 0] / big[b][mask[b] > 0]).mean() for b in blocks])
        res[mode] = (ratio, float(w.sum() / big.sum()), fac)
    return res, M_g


# ---- the page's sentences: each computed from the results or asserted here -----------------
def sentences(res):
    """(takeaway: 3 lines, conclusions: Markdown bullets, caption), every comparison claimed."""
    rows, levels, sw, norm, G = res["rows"], res["levels"], res["sweep"], res["norm"], res["G"]
    last = {k: v[-1] for k, v in rows.items()}
    kl = last["seq_is"][0]
    n_lv = len(levels) - 1
    claim(all(r[1] <= 1e-12 for r in rows["seq_is"]), "sequence IS has bias at most 1e-12 at every level")
    claim(
        all(r[1] > 1e-3 for r in rows["tok_is"][1:]),
        "token IS is biased at every mismatch",
        negation="token IS is unbiased at some mismatch",
    )
    d_first, d_last = res["depth"][1], res["depth"][max(res["depth"])]
    for d in (d_first, d_last):
        claim(d["tok_is"][1] > 1e-3 and d["seq_is"][1] <= 1e-12, "one changed depth: tok_is biased, seq_is not")
    # at KL 0 a row's update is its aggregation's on-policy update: rows of one aggregation agree
    sp = res["split"]
    by_agg = {}
    for k in rows:
        by_agg.setdefault(agg_of(k), []).append(k)
    same0 = all(np.array_equal(rows[k][0][1:], rows["none"][0][1:]) for k in by_agg["seq_sum"])
    claim(same0, "at KL 0 every seq_sum estimator prints the uncorrected row's numbers exactly")
    claim(
        all(np.allclose(rows[k][0], rows[ks[0]][0], rtol=1e-12, atol=0) for a, ks in by_agg.items() for k in ks),
        "at KL 0 the rows of one aggregation print the same numbers (to rounding)",
    )
    on = {a: sp[(ks[0], a), "on"] for a, ks in by_agg.items() if a != "seq_sum"}  # (cosine, norm)
    claim(
        on["seq_mean_token_mean"][0] < 1 - 1e-9 and abs(on["token_mean"][0] - 1) < 1e-12,
        "on-policy, seq_mean_token_mean turns the direction and token_mean only scales it",
    )
    claim(abs(on["token_mean"][1] * res["mean_len"] - 1) < 1e-12, "on-policy, token_mean is grad J / E|y|")
    claim(
        rows["dual_bypass"] == rows["ppo_bypass"],
        "dual_bypass prints ppo_bypass's numbers at every level",
        negation="dual_bypass does not print ppo_bypass's numbers at every level",
    )
    # the trust regions without the clip, off-policy (against their own on-policy update), each
    # against the estimator it reduces to at the same aggregation
    off = {k: [b for b, _, _ in v] for k, v in sp.items() if k[1] != "on"}
    var = {k: [v for _, _, v in vs] for k, vs in sp.items() if k[1] != "on"}
    S, TM = "seq_mean_token_mean", "token_mean"
    close = lambda a, b: np.allclose(a, b, rtol=1e-12, atol=1e-15)  # noqa: E731
    claim(
        close(sp["dppo_kl", TM], sp["tok_is", TM]),
        "DPPO-KL prints token IS's numbers at every level",
        negation="DPPO-KL does not print token IS's numbers (token_mean) at every level",
    )
    tv_same = [close(a, b) for a, b in zip(sp["dppo_tv", TM], sp["tok_is", TM])]
    n_tv = tv_same.index(False) if False in tv_same else len(tv_same)
    claim(
        0 < n_tv < len(tv_same) and not any(tv_same[n_tv:]),
        "DPPO-TV is token IS until its mask first binds, and differs from then on",
    )
    claim(
        all(a < b for a, b in zip(off["sapo", S][1:], off["tok_is", S][1:])),
        "SAPO's off-policy bias is below token IS's at the same aggregation at every mismatch",
    )
    claim(
        all(b > 1e-3 for b in off["vespo", TM][1:]) and var["vespo", TM][-1] < var["seq_is", TM][-1],
        "VESPO is biased at every mismatch and quieter than sequence IS (token_mean) at the last level",
    )
    claim(
        all(a > b for a, b in zip(off["gmpo", S][1:], off["gspo_bypass", S][1:])),
        "GMPO's off-policy bias is above GSPO's at every mismatch",
        negation="GMPO's off-policy bias is not above GSPO's at every mismatch",
    )
    claim(
        all(b <= 1e-12 for b in off["seq_is", S]) and all(b > 1e-3 for b in off["seq_is", TM][1:]),
        "sequence IS is unbiased for its own on-policy update at seq_mean_token_mean, not at token_mean",
    )
    tr = res["trust"]
    claim(
        all(st[0] == 0 for k in ("sapo", "vespo", "dppo_kl") for st in tr[k])
        and any(st[1] > 0 for st in tr["sapo"])
        and any(st[0] > 0 for st in tr["dppo_tv"])
        and all(st[0] > 0 for st in tr["gmpo"][1:]),
        "mini-batches: SAPO, VESPO and DPPO-KL lose no token's gradient (the smooth ones shrink some); "
        "DPPO-TV loses some; GMPO loses some at every step after the first",
    )
    both = res["both"]
    claim(both[-1][0] > 0, "at the last step some tokens are below half in both SAPO and VESPO")
    claim(max(res["floor"]) < DUAL_C, "the dual-clip floor c never binds: every A < 0 ratio is below c")
    claim(last["seq_tis"][3] < last["seq_is"][3] and last["seq_tis"][1] > 1e-3, "truncation: bias for variance")
    tok_lower = sum(t[3] < s[3] for t, s in zip(rows["tok_is"][1:], rows["seq_is"][1:]))
    seq_below_none = sum(s[3] < u[3] for s, u in zip(rows["seq_is"][1:], rows["none"][1:]))
    short, long_ = sw[0], sw[-1]
    r_short, r_long = short["seq_is"][0] / short["tok_is"][0], long_["seq_is"][0] / long_["tok_is"][0]
    claim(r_long > 3 and r_long > r_short, "sweep: seq_is's variance explodes with length, token IS's does not")
    claim(
        all(a["var_W"] < b["var_W"] for a, b in zip(sw, sw[1:])),
        "sweep: Var(W) grows with the length",
        negation="sweep: Var(W) does not grow with the length at every step",
    )
    tok_none = [r["tok_is"][0] / r["none"][0] for r in sw]
    claim(
        max(tok_none) < 2,
        "sweep: token IS's variance stays within 2x the uncorrected one's",
        negation="sweep: token IS's variance exceeds 2x the uncorrected one's at some length",
    )
    claim(
        long_["out_W"] > long_["out_geo"],
        "sweep: the product leaves the clip range more often than the mean",
        negation="sweep: the product does not leave the clip range more often than the mean",
    )
    claim(
        long_["out_W"] > 0.5,
        "sweep: at the longest length the product leaves [1 - eps, 1 + eps] on most responses",
    )
    fr = [f for f, _ in res["steps"]]
    claim(fr[0] == 0.0 and res["steps"][0][1] == 0.0, "the first mini-batch step sees rho = 1 exactly")
    claim(all(f > 0 for f in fr[1:]) and res["bypass"] > 0, "every later step, and the bypass step, clips")
    dev = {k: float(np.abs(r - 1).max()) for k, (r, _, _) in norm.items()}
    exact = [k for k in ("dapo", "grpo", "dr_grpo") if dev[k] <= 1e-15]
    claim(len(exact) == 3, "dapo, grpo and dr_grpo reproduce their own big batch to rounding")
    worst = max((dev[k] for k in exact), default=None)  # no mode exact: the claim above said so
    exactly = "none bit for bit" if worst is None else "bit for bit" if worst == 0 else f"to {worst:.0e}"
    M_g, M = res["M_g"], res["M_g"].sum()
    claim(np.allclose(norm["bnpo"][2], M / (G * M_g), rtol=1e-14), "bnpo's factor is M / (G M_g)")
    claim(np.ptp(norm["bnpo"][2]) > 0 and abs(norm["sum"][1] - G) < 1e-12, "bnpo moves weight; sum is G x")

    takeaway = [
        f"- **Only the sequence weight is unbiased.** Sequence IS has bias at most "
        f"{max(r[1] for r in rows['seq_is']):.0e} at every level; token IS has bias "
        f"{last['tok_is'][1]:.3f} at KL {kl:.3f}, and {d_last['tok_is'][1]:.3f} even when the sampler "
        f"differs from the trainer only where the last token is chosen (sequence IS: "
        f"{d_last['seq_is'][1]:.0e}).",
        f"- **The product's variance is a matter of length.** On these responses of at most "
        f"{res['max_len']} tokens sequence IS's variance is below the uncorrected estimator's at "
        f"{seq_below_none} of {n_lv} levels; in the sampled sweep at {long_['L']} tokens it is "
        f"{r_long:.1f} times token IS's ({r_short:.2f} times at {short['L']}).",
        f"- **Every bound is a bias where it binds, and one normalizer is an accumulation bug.** "
        f"Truncating the sequence weight at {res['c']:g} costs bias {last['seq_tis'][1]:.3f} at "
        f"KL {kl:.3f}; the PPO clip against the sampler, {last['ppo_bypass'][1]:.3f}. Under "
        f"gradient accumulation {', '.join(exact)} reproduce their own big batch ("
        + exactly
        + f"); bnpo's micro-batches are re-weighted by "
        f"{norm['bnpo'][2].min():.3f} to {norm['bnpo'][2].max():.3f}, and a dropped 1/G scales by {G}.",
    ]
    explode = next(r["L"] for r in sw if r["seq_is"][0] > 2 * r["tok_is"][0]) if r_long > 2 else None
    conclusions = [
        f"- At KL {kl:.3f}, untruncated sequence IS has bias {last['seq_is'][1]:.1e} (rounding) and "
        f"variance {last['seq_is'][3]:.3e}; token IS has bias {last['tok_is'][1]:.3f} (variance "
        f"{last['tok_is'][3]:.3e}); uncorrected samples from the sampler have bias {last['none'][1]:.3f}.",
        f"- **Token IS is biased through both sources.** With the sampler changed only at the first "
        f"token (the prefix of every later token comes from it) token IS has bias "
        f"{d_first['tok_is'][1]:.3f}; changed only at the last token (the continuation of every "
        f"earlier token comes from it), {d_last['tok_is'][1]:.3f}. Sequence IS: "
        f"{d_first['seq_is'][1]:.0e} and {d_last['seq_is'][1]:.0e}.",
        f"- **Variance, short responses.** Token IS has the lower variance of the two at {tok_lower} "
        f"of {n_lv} levels, and sequence IS's variance is below the uncorrected estimator's at "
        f"{seq_below_none} of {n_lv}: with at most {res['max_len']} tokens the product is a product "
        f"of at most {res['max_len']} ratios (exact Var(W) at most {max(res['var_W']):.3f}).",
        f"- **Variance, long responses.** In the sampled sweep Var(W) grows from "
        f"{short['var_W']:.3f} at {short['L']} tokens to {long_['var_W']:.1f} at {long_['L']}, and "
        f"sequence IS's variance from {r_short:.2f} to {r_long:.1f} times token IS's"
        + (f" (above twice from {explode} tokens on)" if explode else "")
        + f"; token IS's variance stays between {min(tok_none):.2f} and {max(tok_none):.2f} times the "
        f"uncorrected one's. At {long_['L']} tokens the product ratio leaves [{1 - EPS:g}, {1 + EPS:g}] on "
        f"{long_['out_W']:.0%} of the responses, the geometric mean on {long_['out_geo']:.0%} (GSPO's "
        f"choice).",
        f"- Sequence truncation at {res['c']:g} has bias {last['seq_tis'][1]:.3f} and variance "
        f"{last['seq_tis'][3]:.3e}, lower than untruncated sequence IS's: truncation trades bias for "
        f"variance.",
        f"- The PPO clip in bypass mode has bias {last['ppo_bypass'][1]:.3f}: with the ratio taken "
        f"against the sampler, the clip zeroes the gradient of every token whose ratio "
        r"\(\pi_{\theta_\text{old}} / \mu\) left the clip range"
        f" on the side its advantage pushes. Dual-clip prints the same "
        f"numbers at every level because its floor binds only on a token with \\(A < 0\\) and a ratio "
        f"above \\(c = {DUAL_C:g}\\), and the largest such ratio here is {max(res['floor']):.3f}.",
        f"- **Trust regions without the clip** (ratio against the sampler, each at its framework's "
        f"aggregation: SAPO and GMPO the per-sequence token mean, DPPO and VESPO the token mean). Their "
        f"bias against the policy gradient mixes two effects, and the run separates them. The aggregation "
        f"alone, on-policy: the per-sequence token mean turns the update (cosine "
        f"{on[S][0]:.4f} to the gradient, the \\(1/|y|\\) weighting, GSPO's too), the token mean only "
        f"scales it (by {on[TM][1]:.4f}, one over the mean length {res['mean_len']:.4f}). "
        f"The off-policy part, each against its "
        f"own on-policy update, at KL {kl:.3f}: DPPO truncates the token ratio at {DPPO_C:g} and masks a "
        f"token whose probability moved too far; DPPO-KL's mask never binds here, so it prints token IS's "
        f"numbers at the token mean ({off['dppo_kl', TM][-1]:.3f}); DPPO-TV's binds from KL "
        f"{levels[min(n_tv, len(levels) - 1)]:.3f} on ({off['dppo_tv', TM][-1]:.3f}). SAPO's soft gate "
        f"has {off['sapo', S][-1]:.3f}, below token IS's at the same aggregation at every level "
        f"({off['tok_is', S][-1]:.3f} here). VESPO's Gamma weight of the product ratio has "
        f"{off['vespo', TM][-1]:.3f} (variance {var['vespo', TM][-1]:.3e}, against sequence IS's "
        f"{var['seq_is', TM][-1]:.3e} at the token mean); sequence IS itself has "
        f"{off['seq_is', TM][-1]:.3f} at the token mean, whose token count is the sampler's, and "
        f"{max(off['seq_is', S]):.0e} at the per-sequence token mean. GMPO's geometric mean has "
        f"{off['gmpo', S][-1]:.3f}, above GSPO's at every level ({off['gspo_bypass', S][-1]:.3f} here). "
        f"In the mini-batch epoch at the last step GMPO has lost the gradient of "
        f"{tr['gmpo'][-1][0]:.0%} of the tokens, DPPO-TV of {tr['dppo_tv'][-1][0]:.0%}, SAPO and VESPO "
        f"of none (their weight is below half on {tr['sapo'][-1][1]:.0%} and {tr['vespo'][-1][1]:.0%}). "
        f"SAPO's gate is per token and VESPO's per response, yet at the last step {both[-1][0]} tokens "
        f"are below half in both, and "
        + (f"all {both[-1][1]} are" if both[-1][0] == both[-1][1] else f"{both[-1][1]} of them are")
        + " the lone token of a one-token response (the EOS of an empty answer): there the token's "
        "ratio is the response's \\(W\\), and the two gates read one ratio.",
        "- At KL 0 every seq_sum row prints the uncorrected row's numbers exactly, and the rows of each "
        "other aggregation print one another's (GSPO, SAPO and GMPO; DPPO and VESPO), to rounding: "
        "there their bias against the policy gradient is their aggregation's, not the sampler's.",
        f"- **Accumulation.** Against its own big batch, {', '.join(exact)} are exact ("
        + exactly
        + "); bnpo's factor M/(G M_g) is "
        + ", ".join(f"{f:.4f}" for f in norm["bnpo"][2])
        + f" on the {G} micro-batches; the local mean without 1/G is {norm['sum'][1]:g} times too large.",
    ]
    coincide = [k for k in rows if k != "dual_bypass" and rows[k] == rows["dual_bypass"]]
    drawn = f"dual_bypass is {' and '.join(coincide)}'s line exactly (one line, both labels). " if coincide else ""
    caption = (
        "The relative bias of each estimator's expected update against its own on-policy update (the "
        "same loss at &mu; = &pi;<sub>&theta;<sub>old</sub></sub>: the policy gradient for every row at "
        "seq_sum; for gspo_bypass and the trust regions their aggregation's update, so the plot shows "
        "the off-policy part only), against the sequence-level "
        "KL(&mu; &#8214; &pi;<sub>&theta;<sub>old</sub></sub>) of the sampler: token-level weights and "
        "the token-level clip family (top), sequence-level weights and masks (middle), the trust "
        "regions without the clip beside token IS at their two aggregations, tm the token mean and smtm "
        "the per-sequence token mean (bottom); the uncorrected estimator is the grey "
        "line in each. "
        + drawn
        + "seq_is stays at zero bias at every mismatch; every bounded row of the top two panels leaves zero "
        "where its bound first binds on some response. In the bottom panel dppo_kl is tok_is (tm)'s "
        "line exactly, and dppo_tv leaves it where its mask first binds."
    )
    return takeaway, conclusions, caption


def off_policy_rows(rows, split):
    """{line: [(kl, bias) per level]}: each row's bias against its own on-policy update (grad J for
    a seq_sum row), and the token IS references at the trust regions' aggregations."""
    kl = [r[0] for r in rows["none"]]
    out = {}
    for name, rs in rows.items():
        key = (name, agg_of(name))
        out[name] = (
            [(r[0], r[1]) for r in rs] if key not in split else list(zip(kl, (b for b, _, _ in split[key])))
        )
    for agg, short in (("token_mean", "tm"), ("seq_mean_token_mean", "smtm")):
        out[f"tok_is ({short})"] = list(zip(kl, (b for b, _, _ in split["tok_is", agg])))
    return out


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (
        ("token-level weights, token clip family", ("tok_is", "tok_tis", "tok_mis", "ppo_bypass", "cispo_bypass")),
        (
            "sequence-level weights and masks",
            ("seq_is", "seq_tis", "seq_mis", "seq_mis_trl", "opsm_trl", "rs_geo_verl", "gspo_bypass"),
        ),
        ("trust regions without the clip", TRUST + ("tok_is (tm)", "tok_is (smtm)")),
    )
    colors = plt.get_cmap("tab10").colors
    same = rows["dual_bypass"] == rows["ppo_bypass"]  # one line, labelled twice (else drawn too)
    if not same:
        panels = ((panels[0][0], panels[0][1] + ("dual_bypass",)), *panels[1:])
    fig, ax = plt.subplots(len(panels), 1, figsize=(6.4, 4.2 * len(panels)), sharex=True)
    for a, (title, names) in zip(ax, panels):
        kl, bias = np.array(rows["none"])[:, :2].T
        a.plot(kl, bias, color="0.55", lw=3, label="none (uncorrected)")
        for i, name in enumerate(names):  # drawn first = widest, so a line drawn over it shows it
            kl, bias = np.array(rows[name])[:, :2].T
            a.plot(
                kl,
                bias,
                color=colors[i],
                lw=2.6 - 0.3 * i,
                ls=("-", "--", "-.", ":")[i % 4],
                marker="osD^v<>"[i],
                ms=10 - i,
                mfc="none",
                label=name + (" = dual_bypass" if same and name == "ppo_bypass" else ""),
            )
        a.set_title(title, fontsize=11)
        a.set_ylabel(
            r"bias $\|E_\mu[\hat\nabla] - E_{\pi_\mathrm{old}}[\hat\nabla]\|"
            r" \,/\, \|E_{\pi_\mathrm{old}}[\hat\nabla]\|$",
            fontsize=10,
        )
        a.legend(fontsize=10, ncol=2, loc="upper left", frameon=False)
        a.set_ylim(bottom=-0.02, top=1.45 * max(np.array(rows[n])[:, 1].max() for n in names + ("none",)))
        a.grid(alpha=0.3)
    ax[-1].set_xlabel(r"KL($\mu\ \|\ \pi_{\theta_\mathrm{old}}$) per response", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of pi_old, the sampled batch and the sweep")
    p.add_argument(
        "--levels",
        type=reals(0),
        default=(0.0, 0.02, 0.05, 0.1, 0.2),
        help="KL(mu || pi_old) levels, comma-separated, increasing, the first 0",
    )
    p.add_argument(
        "--c", type=real(1, 1e6, low_open=True), default=1.5, help="truncation bound c_max (masks: [1/c, c])"
    )
    p.add_argument("--delta", type=real(0, 1e6, low_open=True), default=0.1, help="TRL off-policy mask threshold")
    p.add_argument(
        "--geo", type=real(1, 1e6, low_open=True), default=1.1, help="verl geometric rejection bound (> 1)"
    )
    p.add_argument("--K", type=integer(2, 10000), default=16, help="responses per prompt in the mini-batch run")
    p.add_argument("--minibatches", type=integer(1, 20000), default=4, help="mini-batches (and G micro-batches)")
    p.add_argument("--lr", type=real(0, 100, low_open=True), default=3.0, help="step size of the mini-batch run")
    p.add_argument(
        "--sweep-kl",
        type=real(0, 0.5, low_open=True),
        default=0.025,
        help="mean per-token KL(mu || pi_old) of the length sweep",
    )
    p.add_argument(
        "--sweep-samples", type=integer(100, 100000), default=20000, help="sampled responses per sweep length"
    )
    p.add_argument(
        "--max-len",
        type=integer(1, 10),
        default=3,
        help="response length cap T of the exact lab (1..10, default 3)",
    )
    p.add_argument(
        "--curve-max",
        type=integer(1, 10),
        default=8,
        help="the exact length curve runs T = 1..this (1..10, default 8)",
    )
    p.add_argument("--quick", action="store_true", help="a small sweep: lengths 8 and 64, 4000 samples each")
    p.add_argument(
        "--section",
        choices=(
            "all",
            "estimators",
            "curve",
            "sweep",
            "minibatch",
            "normalizers",
            "takeaway",
            "conclusions",
            "caption",
        ),
        default="all",
        help="print only one part of the output (takeaway, conclusions, caption: the page's sentences)",
    )
    p.add_argument(
        "--plot", metavar="PATH", type=plot_path, help="write the bias of every estimator against the KL"
    )
    args = p.parse_args(argv)
    args.levels = list(args.levels)
    if args.max_len != 3 and args.section in ("takeaway", "conclusions", "caption"):
        p.error(f"--section: the page's sentences are about the task of --max-len 3, got --max-len {args.max_len}")
    lv = np.array(args.levels)
    if len(lv) < 2 or lv[0] != 0 or np.any(np.diff(lv) <= 0):
        p.error(f"--levels: expected increasing finite levels starting at 0, got {args.levels}")
    if (args.K * len(PROMPTS)) % args.minibatches:
        p.error(
            f"--minibatches: expected a divisor of the batch size {args.K * len(PROMPTS)}, got {args.minibatches}"
        )
    lengths, n_sweep = (QUICK_LENGTHS, 4000) if args.quick else (SWEEP_LENGTHS, args.sweep_samples)

    rng = np.random.default_rng(args.seed)
    mdp = make_task(args.max_len)
    pi_old = TabularPolicy(rng.normal(size=(mdp.S, mdp.V)))
    ex = Exact(mdp, pi_old)
    try:
        taus = [ex.tau_for(target) for target in args.levels]  # before the run
    except ValueError as e:
        p.error(f"--levels: {e}")
    try:
        kappa_sweep, sweep = length_sweep(args.seed, args.sweep_kl, n_sweep, lengths)
    except ValueError as e:
        p.error(f"--sweep-kl: {e}")
    rows, split = measure_split(ex, args, taus)
    depth = one_depth(ex, args, taus[-1])
    floor = dual_floor(ex, taus)
    steps, bypass, ro, trust = minibatch_epoch(mdp, pi_old, rng, args, taus[-1])
    G = args.minibatches
    norm, M_g = normalizers(ro.mask, G)
    res = dict(rows=rows, levels=args.levels, depth=depth, floor=floor, sweep=sweep, steps=steps, trust=trust)
    res.update(
        both=both_below(trust, ro),
        split=split,
        bypass=bypass,
        norm=norm,
        M_g=M_g,
        G=G,
        c=args.c,
        max_len=mdp.max_len,
    )
    res["var_W"] = [ex.var_W(tau) for tau in taus]
    res["mean_len"] = float(ex.p_old @ ex.ro.mask.sum(axis=1))  # E_pi_old |y|
    curve = length_curve(args.seed, taus[-1], range(1, args.curve_max + 1), args)
    res["curve"] = curve
    sec = args.section
    if sec in ("all", "estimators"):
        print(
            f"task: prompts {', '.join(PROMPTS)}, V = {mdp.V} (EOS, a, b), max_len = "
            f"{mdp.max_len}, {len(ex.R)} responses; |grad J| = {np.linalg.norm(ex.grad_J):.4f}"
        )
        print(
            "sampler temperatures: "
            + ", ".join(
                f"kl {k:.3f} at kappa {t:.4f} (Var W {v:.3f})" for k, t, v in zip(args.levels, taus, res["var_W"])
            )
        )
        print(
            "bias and cosine against grad J; "
            + ", ".join(f"{k} at {a}" for k, (a, _) in SHIPPED.items())
            + " (their frameworks'; see 'split' below); "
            + SEQ_SUM_NOTE
        )
        print()
        for name, rs in rows.items():
            for kl, bias, cos, var in rs:
                print(f"estimator {name:12s} kl {kl:.3f}: bias {bias:.3e}, cosine {cos:.6f}, variance {var:.3e}")
        print(
            "\naggregation and off-policy bias apart, for each row off seq_sum and the same estimators at "
            "other aggregations: its on-policy update (mu = pi_old) against grad J (the aggregation alone), "
            "then per level its bias against that on-policy update (the off-policy part), and its variance "
            "per level"
        )
        for key in [k for k in split if k[1] != "on"]:
            name, agg = key
            cos0, norm0 = split[key, "on"]
            who = SHIPPED[name][1] if agg_of(name) == agg else REF_WHO.get(key, "reference")
            print(f"split {name:12s} {agg} ({who}): on-policy cosine {cos0:.6f}, norm {norm0:.4f} x |grad J|")
            print(
                f"split {name:12s} {agg}: off-policy bias "
                + " ".join(f"{b:.3e}" for b, _, _ in split[key])
                + "; variance "
                + " ".join(f"{v:.3e}" for _, _, v in split[key])
            )
        print(f"\nmu changed at one depth only (kappa {taus[-1]:.4f} there, pi_old elsewhere):")
        for d, est in depth.items():
            for name, (kl, bias, cos, var) in est.items():
                print(
                    f"depth {d} only  {name:8s} kl {kl:.3f}: bias {bias:.3e}, cosine {cos:.6f}, variance {var:.3e}"
                )
        print(
            f"\ndual-clip floor c = {DUAL_C:g}: largest bypass ratio pi_old/mu on an A < 0 token per level: "
            + ", ".join(f"{f:.3f}" for f in floor)
        )
    if sec in ("all", "curve"):
        print(
            f"\nexact length curve: a second random pi_old (np.random.default_rng([{args.seed}, 8]), the "
            f"{args.curve_max}-token task's table, EOS logits lowered by 2), restricted to each length T; mu "
            f"at kappa {taus[-1]:.4f} (the last level's temperature); every response enumerated "
            f"(minirl_lm.exact); kl per response (per token: over mu's mean length)"
        )
        for r in curve:
            print(
                f"curve T {r['T']:2d}: {r['B']:5d} responses, kl {r['kl']:.3f} ({r['kl_tok']:.3f}), "
                f"Var W {r['var_W']:.3e}; variance "
                + ", ".join(f"{k} {r[k][1]:.3e}" for k in ("none", "tok_is", "seq_is"))
                + f"; tok_is bias {r['tok_is'][0]:.3e}"
            )
        if len(curve) > 1:
            print(curve_summary(curve, check=args.curve_max == 8 and args.seed == 0))
    if sec in ("all", "sweep"):
        print(
            f"\nlength sweep (sampled, {n_sweep} responses per length): a per-position tabular "
            f"pi_old, V = 3, mu at kappa {kappa_sweep:.4f} (mean KL {args.sweep_kl:g} per token)"
        )
        for r in sweep:
            print(
                f"sweep L {r['L']:2d}: kl {r['kl']:.3f}, Var W {r['var_W']:.3e} (exact); variance "
                + ", ".join(f"{k} {r[k][0]:.3e} +- {r[k][1]:.1e}" for k in ("none", "tok_is", "seq_is"))
                + f"; ratio outside [{1 - EPS:g}, {1 + EPS:g}]: W {r['out_W']:.3f}, W^(1/L) {r['out_geo']:.3f}"
            )
    if sec in ("all", "minibatch"):
        print(
            f"\none epoch over B = {len(ro.lengths)} responses from pi_old in "
            f"{args.minibatches} mini-batches (PPO clip, eps {EPS:g}, lr {args.lr:g}):"
        )
        for i, (frac, dev) in enumerate(steps, 1):
            print(f"minibatch step {i}: clip fraction {frac:.3f}, max |rho - 1| {dev:.3e}")
        print(f"bypass step 1 (ratio against mu at kl {args.levels[-1]:.3f}): clip fraction {bypass:.3f}")
        print(
            "the same epoch with each trust region instead of the clip, at its shipped aggregation: per "
            "optimizer step, the fraction of tokens (A != 0) whose gradient is lost (0) and below half its "
            "on-policy size, and how many of those below half sit in responses of more than one token"
        )
        for name, st in trust.items():
            print(
                f"minibatch {name:8s}: lost "
                + " ".join(f"{x[0]:.3f}" for x in st)
                + "; below half "
                + " ".join(f"{x[1]:.3f}" for x in st)
                + "; of them in longer responses "
                + " ".join(str(x[2]) for x in st)
            )
        both = both_below(trust, ro)
        print(
            "below half in both sapo (per token) and vespo (per response), per step: "
            + " ".join(str(n) for n, _ in both)
            + " tokens, of them the lone token of a one-token response (W = rho there): "
            + " ".join(str(k) for _, k in both)
        )
    if sec in ("all", "normalizers"):
        M = int(ro.mask.sum())
        print(
            f"\nnormalizers: M = {M} real tokens in B = {len(ro.lengths)} responses, gradient accumulation "
            f"over G = {G} micro-batches (M_g = {', '.join(str(int(m)) for m in M_g)}); each mode's weight "
            f"per token against its own big batch (one backward over all B rows: ratio 1)"
        )
        print(f"{'mode':8s} {'ratio min .. max':>20s} {'total':>7s}   {'own big batch':20s} ratio per micro-batch")
        for mode, (ratio, total, fac) in norm.items():
            print(
                f"{mode:8s} {ratio.min():9.4f} .. {ratio.max():7.4f} {total:7.4f}   {OWN_BIG[mode]:20s} "
                + " ".join(f"{f:.4f}" for f in fac)
            )
    # the page's task: its sentences, every claim checked (after the tables, where a claim that does
    # not hold at a reader's flags prints its line)
    if args.max_len == 3:
        takeaway, conclusions, caption = sentences(res)
    if sec == "takeaway":
        print("\n".join(takeaway))
    if sec == "conclusions":
        print("\n".join(conclusions))
    if sec == "caption":
        print(caption)
    if args.plot:
        plot(off_policy_rows(rows, split), args.plot)
        if sec != "caption":
            print(f"\nfigure written to {args.plot}")


if __name__ == "__main__":
    main()
