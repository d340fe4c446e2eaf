"""Masks with holes in every token-level objective of pg/: the loss and gradient of a batch whose
rows have holes (0s between 1s: tool outputs inside a response) equal those of the compacted rows
(holes removed, the trained tokens moved left in order), scattered back, for every aggregation.

Property tests (hypothesis draws the seed and the shape; every array comes from
`np.random.default_rng(seed)`): random masks with holes, empty and full rows, random logp, logp_old,
logp_ref, advantages of both signs (per response and per token), ratios inside and beyond the clip
range, garbage at the holes and at the padding (different in the two batches). The oracle and the
tolerance are `tests/holes.py`'s: per-token gradients bitwise, sums to 1e-12 relative.
"""

import numpy as np
import pytest
from holes import Pair, close, same_token_grad
from hypothesis import given, settings
from hypothesis import strategies as st

from minirl_lm.core.ops import AGGS
from minirl_lm.pg import clip, entropy, grpo, kl, klsequence, offpolicy, reinforce, seqclip, shaping, trust
from minirl_lm.pg.advantages import broadcast, reinforce_pp_baseline

EXAMPLES = 40
shapes = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(1, 9))  # seed, B, T


def draw(seed, B, T):
    """A Pair and the real values of one batch: log-probs under pi, pi_old, pi_ref, mu (ratios up
    to e^1.5 either way: beyond a clip range of 0.2), advantages per response and per token."""
    rng = np.random.default_rng(seed)
    pair = Pair(rng, B, T)
    logp = -rng.uniform(0.01, 4.0, (B, T))
    real = {
        "logp": logp,
        "logp_old": logp + rng.uniform(-1.5, 1.5, (B, T)),
        "logp_ref": logp + rng.uniform(-1.0, 1.0, (B, T)),
        "logp_mu": logp + rng.uniform(-1.0, 1.0, (B, T)),
        "adv_tok": rng.normal(0.0, 2.0, (B, T)),
        "weights": rng.uniform(0.0, 2.0, (B, T)),
    }
    h, c = {}, {}
    for k, v in real.items():
        h[k], c[k] = pair.arrays(v)
    h["weights"], c["weights"] = np.abs(h["weights"]), np.abs(c["weights"])  # >= 0 garbage
    adv = rng.normal(0.0, 2.0, B)  # (B,) shared: a row keeps its advantage
    return pair, h, c, adv


def max_lens(pair):
    """The max_len values to try: None (the default, the width T of both batches) and one above
    the most trained tokens of a row."""
    n = int(pair.mask.sum(axis=1).max())
    return (None, max(n, 1) + 3)


def check(pair, out_h, out_c, exact=True):
    """(loss, (B, T) gradient) of both batches: the loss to 1e-12, the gradient scattered back."""
    (loss_h, g_h), (loss_c, g_c) = out_h, out_c
    assert close(loss_h, loss_c), (loss_h, loss_c)
    same_token_grad(pair, g_h, g_c, exact)


# ---- the aggregation weights and REINFORCE -------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes)
def test_token_weights_of_a_row_with_holes_are_its_compacted_rows(s):
    pair, *_ = draw(*s)
    for agg in AGGS:
        for max_len in max_lens(pair):
            w_h = reinforce.token_weights(pair.mask, agg, max_len)
            w_c = reinforce.token_weights(pair.packed, agg, max_len)
            assert np.array_equal(w_h, pair.back(w_c))


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes, st.booleans())
def test_reinforce_and_corrected_pg_loss(s, per_token):
    pair, h, c, adv = draw(*s)
    A_h, A_c = (h["adv_tok"], c["adv_tok"]) if per_token else (adv, adv)
    for agg in AGGS:
        for max_len in max_lens(pair):
            check(
                pair,
                reinforce.reinforce_loss(h["logp"], A_h, pair.mask, agg, max_len),
                reinforce.reinforce_loss(c["logp"], A_c, pair.packed, agg, max_len),
            )
            check(
                pair,
                offpolicy.corrected_pg_loss(h["logp"], A_h, pair.mask, h["weights"], agg, max_len),
                offpolicy.corrected_pg_loss(c["logp"], A_c, pair.packed, c["weights"], agg, max_len),
            )


# ---- the clip family -------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes, st.booleans())
def test_clipped_dual_clip_and_cispo(s, per_token):
    pair, h, c, adv = draw(*s)
    A_h, A_c = (h["adv_tok"], c["adv_tok"]) if per_token else (adv, adv)
    args_h, args_c = (h["logp"], h["logp_old"], A_h), (c["logp"], c["logp_old"], A_c)
    for agg in AGGS:
        for max_len in max_lens(pair):
            check(
                pair,
                clip.clipped_surrogate(*args_h, pair.mask, 0.2, 0.28, agg, max_len),
                clip.clipped_surrogate(*args_c, pair.packed, 0.2, 0.28, agg, max_len),
            )
            check(
                pair,
                seqclip.dual_clip_surrogate(*args_h, pair.mask, eps=0.2, c=1.5, agg=agg, max_len=max_len),
                seqclip.dual_clip_surrogate(*args_c, pair.packed, eps=0.2, c=1.5, agg=agg, max_len=max_len),
            )
            for rho_min in (None, 0.8):
                check(
                    pair,
                    seqclip.cispo_loss(*args_h, pair.mask, rho_min=rho_min, rho_max=1.3, agg=agg, max_len=max_len),
                    seqclip.cispo_loss(
                        *args_c, pair.packed, rho_min=rho_min, rho_max=1.3, agg=agg, max_len=max_len
                    ),
                )
    f_h = clip.clip_fraction(*args_h, pair.mask, 0.2)
    assert f_h == clip.clip_fraction(*args_c, pair.packed, 0.2)  # counts: exact


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes)
def test_gspo_sequence_ratio_is_over_the_trained_tokens(s):
    """GSPO's ratio sums the log-ratios of a row's trained tokens (a row sum: 1e-12), and its
    geometric mean divides by their number."""
    pair, h, c, adv = draw(*s)
    for ratio in seqclip.RATIOS:
        r_h = seqclip.sequence_ratio(h["logp"], h["logp_old"], pair.mask, ratio)
        assert close(r_h, seqclip.sequence_ratio(c["logp"], c["logp_old"], pair.packed, ratio))
        check(
            pair,
            seqclip.gspo_surrogate(h["logp"], h["logp_old"], adv, pair.mask, eps=0.2, eps_high=None, ratio=ratio),
            seqclip.gspo_surrogate(
                c["logp"], c["logp_old"], adv, pair.packed, eps=0.2, eps_high=None, ratio=ratio
            ),
            exact=False,
        )


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes, st.booleans())
def test_trust_region_objectives(s, per_token):
    """SAPO and DPPO token by token (bitwise); GMPO, VESPO, LUSPO and the sequence-ratio KL
    through a row's sum over its trained tokens (1e-12)."""
    pair, h, c, adv = draw(*s)
    A_h, A_c = (h["adv_tok"], c["adv_tok"]) if per_token else (adv, adv)
    lp_h, lp_c = np.minimum(h["logp"], 0.0), np.minimum(c["logp"], 0.0)  # probabilities for DPPO
    lo_h, lo_c = np.minimum(h["logp_old"], 0.0), np.minimum(c["logp_old"], 0.0)
    for agg in AGGS:
        for max_len in max_lens(pair):
            check(
                pair,
                trust.sapo_loss(lp_h, lo_h, A_h, pair.mask, tau_pos=1.0, tau_neg=1.05, agg=agg, max_len=max_len),
                trust.sapo_loss(lp_c, lo_c, A_c, pair.packed, tau_pos=1.0, tau_neg=1.05, agg=agg, max_len=max_len),
            )
            for d in trust.DIVERGENCES:
                check(
                    pair,
                    trust.dppo_loss(
                        lp_h,
                        lo_h,
                        A_h,
                        pair.mask,
                        divergence=d,
                        delta=0.1,
                        delta_high=0.2,
                        c=2.0,
                        agg=agg,
                        max_len=max_len,
                    ),
                    trust.dppo_loss(
                        lp_c,
                        lo_c,
                        A_c,
                        pair.packed,
                        divergence=d,
                        delta=0.1,
                        delta_high=0.2,
                        c=2.0,
                        agg=agg,
                        max_len=max_len,
                    ),
                )
            check(
                pair,
                trust.vespo_loss(lp_h, lo_h, adv, pair.mask, agg=agg, max_len=max_len),
                trust.vespo_loss(lp_c, lo_c, adv, pair.packed, agg=agg, max_len=max_len),
                exact=False,
            )
            check(
                pair,
                klsequence.kl_penalty_is_sequence(lp_h, lo_h, h["logp_ref"], pair.mask, agg, max_len),
                klsequence.kl_penalty_is_sequence(lp_c, lo_c, c["logp_ref"], pair.packed, agg, max_len),
                exact=False,
            )
    check(
        pair,
        trust.gmpo_loss(lp_h, lo_h, adv, pair.mask),
        trust.gmpo_loss(lp_c, lo_c, adv, pair.packed),
        exact=False,
    )
    check(
        pair,
        seqclip.luspo_surrogate(lp_h, lo_h, adv, pair.mask),
        seqclip.luspo_surrogate(lp_c, lo_c, adv, pair.packed),
        exact=False,
    )


# ---- GRPO and the KL terms ------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes)
def test_grpo_loss_and_kl_penalties(s):
    pair, h, c, adv = draw(*s)
    for agg in AGGS:
        for max_len in max_lens(pair):
            for est in kl.ESTIMATORS:
                opts = dict(eps=0.2, eps_high=None, beta=0.1, kl_estimator=est, agg=agg, max_len=max_len)
                check(
                    pair,
                    grpo.grpo_loss(h["logp"], h["logp_old"], h["logp_ref"], adv, pair.mask, **opts),
                    grpo.grpo_loss(
                        c["logp"],
                        c["logp_old"],
                        c["logp_ref"],
                        adv,
                        pair.packed,
                        **opts,
                    ),
                )
                check(
                    pair,
                    kl.kl_penalty(h["logp"], h["logp_ref"], pair.mask, est, agg, max_len),
                    kl.kl_penalty(c["logp"], c["logp_ref"], pair.packed, est, agg, max_len),
                )
            for est in ("k1", "k3"):
                check(
                    pair,
                    kl.kl_penalty_straight_through(h["logp"], h["logp_ref"], pair.mask, est, agg, max_len),
                    kl.kl_penalty_straight_through(c["logp"], c["logp_ref"], pair.packed, est, agg, max_len),
                )
            check(
                pair,
                kl.kl_penalty_is(h["logp"], h["logp_old"], h["logp_ref"], pair.mask, agg, max_len),
                kl.kl_penalty_is(c["logp"], c["logp_old"], c["logp_ref"], pair.packed, agg, max_len),
            )


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes)
def test_kl_per_token_and_in_reward(s):
    pair, h, c, _ = draw(*s)
    r = np.random.default_rng(s[0] + 1).normal(size=pair.B)
    for est in kl.ESTIMATORS:
        k_h, dk_h = kl.kl_per_token(h["logp"], h["logp_ref"], pair.mask, est)
        k_c, dk_c = kl.kl_per_token(c["logp"], c["logp_ref"], pair.packed, est)
        assert np.array_equal(k_h, pair.back(k_c)) and np.array_equal(dk_h, pair.back(dk_c))
    shaped_h = kl.kl_in_reward(r, h["logp"], h["logp_ref"], pair.mask, 0.3)
    assert close(shaped_h, kl.kl_in_reward(r, c["logp"], c["logp_ref"], pair.packed, 0.3))


# ---- the entropy bonus ----------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes)
def test_entropy_bonus(s):
    """The bonus's gradient goes to the table: its per-state sums add the same nonzero weights in
    the same order, so it is bitwise; the loss is a sum (1e-12)."""
    pair, *_ = draw(*s)
    rng = np.random.default_rng(s[0] + 2)
    S, V = 4, 3
    theta = rng.normal(size=(S, V))
    st_h, st_c = pair.ints(rng.integers(0, S, (pair.B, pair.T)), S)
    for agg in AGGS:
        for max_len in max_lens(pair):
            loss_h, d_h = entropy.entropy_bonus(theta, st_h, pair.mask, agg, max_len)
            loss_c, d_c = entropy.entropy_bonus(theta, st_c, pair.packed, agg, max_len)
            assert close(loss_h, loss_c) and np.array_equal(d_h, d_c)


# ---- the off-policy weights and masks -----------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes)
def test_importance_weights_and_the_sequence_masks(s):
    """Sequence products and means run over the trained tokens: the token weights are bitwise,
    a sequence weight goes through a row sum (1e-12); the 0/1 masks are compared exactly (a row
    sum in another order moves a statistic by ~1e-16, and the drawn statistics are continuous:
    none lands that close to a bound)."""
    pair, h, c, adv = draw(*s)
    for level in offpolicy.LEVELS:
        for mode, bounds in (("truncate", (None, None)), ("truncate", (2.0, 0.5)), ("mask", (2.0, 0.5))):
            w_h = offpolicy.is_weights(
                h["logp_old"], h["logp_mu"], pair.mask, level=level, mode=mode, c_max=bounds[0], c_min=bounds[1]
            )
            w_c = offpolicy.is_weights(
                c["logp_old"], c["logp_mu"], pair.packed, level=level, mode=mode, c_max=bounds[0], c_min=bounds[1]
            )
            if level == "token":
                assert np.array_equal(w_h, pair.back(w_c))
            else:
                assert (w_h[pair.mask == 0] == 0).all() and close(w_h, pair.back(w_c))
    m_h = offpolicy.off_policy_sequence_mask(h["logp"], h["logp_mu"], adv, pair.mask, 0.1)
    m_c = offpolicy.off_policy_sequence_mask(c["logp"], c["logp_mu"], adv, pair.packed, 0.1)
    assert np.array_equal(m_h, pair.back(m_c))
    for option in offpolicy.REJECTION:
        hi = 1.5 if option.endswith("k1") else 0.3
        r_h = offpolicy.rejection_mask(h["logp_old"], h["logp_mu"], pair.mask, option=option, hi=hi)
        r_c = offpolicy.rejection_mask(c["logp_old"], c["logp_mu"], pair.packed, option=option, hi=hi)
        assert np.array_equal(r_h, pair.back(r_c)), option


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes, st.sampled_from(offpolicy.ACCUM))
def test_accumulation_weights(s, mode):
    pair, *_ = draw(*s)
    for G in (g for g in range(1, pair.B + 1) if pair.B % g == 0):
        for max_len in max_lens(pair):
            w_h = offpolicy.accumulation_weights(pair.mask, G, mode, max_len)
            assert np.array_equal(w_h, pair.back(offpolicy.accumulation_weights(pair.packed, G, mode, max_len)))


# ---- advantages on tokens and truncation ----------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes)
def test_token_advantages_and_truncation(s):
    """broadcast and REINFORCE++-baseline read the mask token by token; a truncated row is one
    whose last trained token is not EOS, the same token as its compacted row's last."""
    pair, _, _, adv = draw(*s)
    assert np.array_equal(broadcast(adv, pair.mask), pair.back(broadcast(adv, pair.packed)))
    r = adv.reshape(1, pair.B)  # (N, K) = (1, B): one group
    assert close(reinforce_pp_baseline(r, pair.mask), pair.back(reinforce_pp_baseline(r, pair.packed)))
    rng = np.random.default_rng(s[0] + 3)
    tok_h, tok_c = pair.ints(rng.integers(0, 3, (pair.B, pair.T)), 3)
    for eos in (0, 1):
        assert np.array_equal(shaping.truncated(tok_h, pair.mask, eos), shaping.truncated(tok_c, pair.packed, eos))
        m_h = shaping.mask_truncated(tok_h, pair.mask, eos)
        assert np.array_equal(m_h, pair.back(shaping.mask_truncated(tok_c, pair.packed, eos)))


# ---- fixed cases: a mask with holes, and the hole batch against hand values ------------------------------


def test_grpo_loss_takes_the_tool_mask_of_the_issue():
    """mask = [1, 1, 0, 1, 1] (a tool output at position 2): the loss and gradient are those of
    the four trained tokens, and the tool token's gradient is 0 whatever its log-probs hold."""
    logp = np.array([[-1.0, -0.5, 9.0, -2.0, -0.3]])
    logp_old = np.array([[-1.1, -0.4, -7.0, -2.2, -0.3]])
    logp_ref = np.array([[-0.9, -0.6, 3.0, -1.8, -0.5]])
    mask = np.array([[1.0, 1.0, 0.0, 1.0, 1.0]])
    keep = [0, 1, 3, 4]
    loss, g = grpo.grpo_loss(logp, logp_old, logp_ref, [1.5], mask)
    loss4, g4 = grpo.grpo_loss(logp[:, keep], logp_old[:, keep], logp_ref[:, keep], [1.5], np.ones((1, 4)))
    assert close(loss, loss4) and g[0, 2] == 0.0 and np.array_equal(g[:, keep], g4)
    # GSPO's geometric mean divides by the 4 trained tokens, not by the width 5
    loss, g = seqclip.gspo_surrogate(logp, logp_old, [1.5], mask)
    loss4, g4 = seqclip.gspo_surrogate(logp[:, keep], logp_old[:, keep], [1.5], np.ones((1, 4)))
    assert close(loss, loss4) and g[0, 2] == 0.0 and close(g[:, keep], g4)


@pytest.mark.parametrize("agg", AGGS)
def test_constant_uses_max_len_and_counts_trained_tokens_only(agg):
    """`max_len` for `"constant"` must cover the most trained tokens of a row (3 here, not the
    span 4 of row 0): 3 is accepted, 2 refused; the other aggregations ignore it."""
    mask = np.array([[1.0, 0.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    w = reinforce.token_weights(mask, agg, max_len=3)
    want = {"seq_sum": mask / 2, "token_mean": mask / 4, "constant": mask / 6, "token_sum": mask}
    want["seq_mean_token_mean"] = mask / (2 * np.array([[3.0], [1.0]]))
    assert np.array_equal(w, want[agg])
    if agg == "constant":
        with pytest.raises(ValueError, match=r"^max_len: expected >= the longest response \(3 trained tokens\)"):
            reinforce.token_weights(mask, agg, max_len=2)
