"""The bad-input battery's table, part direct: direct preference (minirl_lm/direct/). See battery.py."""

import numpy as np
from battery_data import ADV, GRADER, IDS, JUDGE, LOGP, LOGP2, MASK, MDP, POLICY, RNG, F, R, const

from minirl_lm.direct import dpo, preferences

TABLE = [
    # dpo.py
    F(dpo.bradley_terry_loss, r_chosen=("float", ADV), r_rejected=("float", lambda: ADV()[::-1])),
    F(
        dpo.reward_table_loss,
        r_phi=("float", R),
        prompt=("ids2", IDS(2, (2,))),
        chosen=("ids2", IDS(2, (2,))),
        rejected=("ids2", lambda: np.array([1, 0])),
    ),
    F(
        dpo.dpo_loss,
        seq_logp_c=("float", ADV),
        seq_logp_r=("float", lambda: ADV() - 1),
        seq_logp_ref_c=("float", ADV),
        seq_logp_ref_r=("float", ADV),
        beta=("pos", const(0.5)),
        variant=("option", const("conservative")),
        label_smoothing=("half", const(0.1)),
        weights=("float", lambda: np.array([0.5, 0.5])),
    ),
    F(dpo.token_grad, dseq=("float", ADV), mask=("mask", MASK)),
    F(
        dpo.bt_sample_preferences,
        reward=("float", R),
        mu=("prob", lambda: np.array([[0.5, 0.5], [0.25, 0.75]])),
        n_pairs=("int1", const(4)),
        rng=("generator", RNG),
        mu0=("prob", lambda: np.array([0.5, 0.5])),
    ),
    # preferences.py
    F(
        preferences.ipo_loss,
        logp_c=("float", LOGP),
        mask_c=("mask", MASK),
        logp_r=("float", LOGP2),
        mask_r=("mask", MASK),
        seq_logp_ref_c=("float", ADV),
        seq_logp_ref_r=("float", lambda: ADV() - 1),
        beta=("pos", const(0.5)),
        average=("flag", const(True)),
        weights=("float", lambda: np.array([0.5, 0.5])),
    ),
    F(
        preferences.simpo_loss,
        logp_c=("float", LOGP),
        mask_c=("mask", MASK),
        logp_r=("float", LOGP2),
        mask_r=("mask", MASK),
        beta=("pos", const(2.0)),
        gamma=("nonneg", const(0.5)),
        weights=("float", lambda: np.array([0.5, 0.5])),
    ),
    F(
        preferences.orpo_loss,
        logp_c=("float", LOGP),
        mask_c=("mask", MASK),
        logp_r=("float", LOGP2),
        mask_r=("mask", MASK),
        lam=("nonneg", const(0.1)),
        weights=("float", lambda: np.array([0.5, 0.5])),
    ),
    F(
        preferences.kto_loss,
        logp=("float", LOGP),
        mask=("mask", MASK),
        seq_logp_ref=("float", ADV),
        desirable=("bools", lambda: np.array([True, False])),
        beta=("pos", const(0.5)),
        z0=("nonneg", const(0.1)),
        lambda_d=("nonneg", const(1.0)),
        lambda_u=("nonneg", const(1.5)),
        weights=("float", lambda: np.array([0.5, 0.5])),
    ),
    F(preferences.bradley_terry_judge, grader=("callable2", const(GRADER))),
    F(
        preferences.online_dpo_step,
        mdp=("mdp_any", MDP),
        policy=("policy", POLICY),
        ref=("policy", POLICY),
        judge=("judge", const(JUDGE)),
        beta=("pos", const(0.5)),
        lr=("pos", const(0.1)),
        rng=("generator", RNG),
        pairs_per_prompt=("int1", const(1)),
    ),
]
