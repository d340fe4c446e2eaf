"""Masks with holes in the direct-alignment losses: a response's sequence log-prob `s` and length
`n` are its trained tokens' sum and count, so a batch whose rows have holes (0s between 1s: tool
outputs inside a response) has the loss and gradient of the compacted rows (holes removed, the
trained tokens moved left in order), scattered back.

Property tests (hypothesis draws the seed and the shapes; every array comes from
`np.random.default_rng(seed)`), with garbage at the holes and the padding (different in the two
batches). `s` and `n` are row sums, so losses and gradients are compared to 1e-12 relative
(`tests/holes.py`); `token_grad` is per token: bitwise.
"""

import numpy as np
from holes import Pair, close, same_token_grad
from hypothesis import given, settings
from hypothesis import strategies as st

from minirl_lm.core.logprob import masked_sum
from minirl_lm.direct.dpo import dpo_loss, token_grad
from minirl_lm.direct.preferences import ipo_loss, kto_loss, orpo_loss, simpo_loss

EXAMPLES = 40
shapes = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(1, 8), st.integers(1, 8))


def draw(seed, P, T_c, T_r):
    """Chosen and rejected rows of P pairs (log-probs in [-3, -0.01], no empty row: ORPO needs
    one token), their compacted twins, and the reference's sequence log-probs."""
    rng = np.random.default_rng(seed)
    pc, pr = Pair(rng, P, T_c, nonempty=True), Pair(rng, P, T_r, nonempty=True)
    lc = pc.arrays(-rng.uniform(0.01, 3.0, (P, T_c)))
    lr = pr.arrays(-rng.uniform(0.01, 3.0, (P, T_r)))
    ref_c, ref_r = -rng.uniform(0.0, 6.0, P), -rng.uniform(0.0, 6.0, P)
    return pc, pr, lc, lr, ref_c, ref_r


def check(pc, pr, out_h, out_c):
    (loss_h, (dc_h, dr_h)), (loss_c, (dc_c, dr_c)) = out_h, out_c
    assert close(loss_h, loss_c), (loss_h, loss_c)
    same_token_grad(pc, dc_h, dc_c, exact=False)
    same_token_grad(pr, dr_h, dr_c, exact=False)


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes)
def test_ipo_simpo_orpo_sum_over_the_trained_tokens(s):
    pc, pr, (lc_h, lc_c), (lr_h, lr_c), ref_c, ref_r = draw(*s)
    for average in (False, True):
        check(
            pc,
            pr,
            ipo_loss(lc_h, pc.mask, lr_h, pr.mask, ref_c, ref_r, 0.5, average=average),
            ipo_loss(lc_c, pc.packed, lr_c, pr.packed, ref_c, ref_r, 0.5, average=average),
        )
    check(pc, pr, simpo_loss(lc_h, pc.mask, lr_h, pr.mask, 2.0), simpo_loss(lc_c, pc.packed, lr_c, pr.packed, 2.0))
    check(
        pc,
        pr,
        orpo_loss(lc_h, pc.mask, lr_h, pr.mask, lam=0.3),
        orpo_loss(lc_c, pc.packed, lr_c, pr.packed, lam=0.3),
    )


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes)
def test_kto_sums_over_the_trained_tokens(s):
    pc, _, (l_h, l_c), _, ref, _ = draw(*s)
    desirable = np.random.default_rng(s[0] + 1).random(pc.B) < 0.5
    loss_h, d_h = kto_loss(l_h, pc.mask, ref, desirable, 0.5, z0=0.1, lambda_d=1.0, lambda_u=1.5)
    loss_c, d_c = kto_loss(l_c, pc.packed, ref, desirable, 0.5, z0=0.1, lambda_d=1.0, lambda_u=1.5)
    assert close(loss_h, loss_c)
    same_token_grad(pc, d_h, d_c, exact=False)


@settings(max_examples=EXAMPLES, deadline=None)
@given(shapes)
def test_dpo_through_the_masked_sum_and_token_grad(s):
    """DPO takes sequence log-probs: the masked sum of a row with holes is its trained tokens'
    (a row sum: 1e-12), and `token_grad` spreads the sequence gradient on them (bitwise for
    one sequence gradient)."""
    pc, pr, (lc_h, lc_c), (lr_h, lr_c), ref_c, ref_r = draw(*s)
    sc_h, sc_c = masked_sum(lc_h, pc.mask), masked_sum(lc_c, pc.packed)
    sr_h, sr_c = masked_sum(lr_h, pr.mask), masked_sum(lr_c, pr.packed)
    assert close(sc_h, sc_c) and close(sr_h, sr_c)
    loss_h, (gc_h, gr_h) = dpo_loss(sc_h, sr_h, ref_c, ref_r, 0.5)
    loss_c, (gc_c, gr_c) = dpo_loss(sc_c, sr_c, ref_c, ref_r, 0.5)
    assert close(loss_h, loss_c) and close(gc_h, gc_c) and close(gr_h, gr_c)
    same_token_grad(pc, token_grad(gc_c, pc.mask), token_grad(gc_c, pc.packed), exact=True)
