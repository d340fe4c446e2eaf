"""The bad-input battery's table, part pg: policy gradient (minirl_lm/pg/). See battery.py."""

import numpy as np

from battery_data import (ADV, B, F, GRADER, IDS, LOGP, LOGP2, MASK, MDP, POLICY, PROBS2, R, RNG,
                          T, THETA, const)
from minirl_lm.pg import advantages as adv_mod
from minirl_lm.pg import clip
from minirl_lm.pg import entropy
from minirl_lm.pg import grpo
from minirl_lm.pg import kl
from minirl_lm.pg import offpolicy
from minirl_lm.pg import reinforce
from minirl_lm.pg import seqclip
from minirl_lm.pg import shaping


LOSS_ARGS = dict(logp=("float", LOGP), logp_old=("float", LOGP2), adv=("float", ADV),
                 mask=("mask", MASK), eps=("eps", const(0.2)), eps_high=("pos", const(0.28)),
                 agg=("option", const("token_mean")), max_len=("int1", const(3)))

TABLE = [
    # advantages.py
    F(adv_mod.no_baseline, rewards=("float", R)),
    F(adv_mod.centred, rewards=("float", R)),
    F(adv_mod.standardized, rewards=("float", R), eps=("nonneg", const(1e-8)),
      ddof=("ddof", const(0))),
    F(adv_mod.leave_one_out, rewards=("float", R)),
    F(adv_mod.advantages, rewards=("float", R), baseline=("option", const("mean")),
      eps=("nonneg", const(1e-8)), ddof=("ddof", const(0))),
    F(adv_mod.broadcast, adv=("float_any", ADV), mask=("mask", MASK)),
    F(adv_mod.reinforce_pp, token_rewards=("float", LOGP), mask=("mask", MASK),
      gamma=("unit", const(0.9)), eps=("nonneg", const(1e-8)), ddof=("ddof", const(1))),
    F(adv_mod.reinforce_pp_baseline, rewards=("float_any", lambda: np.array([[1.0], [0.0]])),
      mask=("mask", MASK), eps=("nonneg", const(1e-8)), ddof=("ddof", const(1))),
    F(adv_mod.remax, rewards=("float", R), greedy_rewards=("float", ADV)),
    F(adv_mod.opo, rewards=("float", R), lengths=("float", lambda: np.array([[1.0, 2.0],
                                                                           [3.0, 0.0]]))),
    F(adv_mod.batch_std, rewards=("float", R), eps=("nonneg", const(1e-8)),
      ddof=("ddof", const(0))),
    # clip.py
    F(clip.clipped_surrogate, **LOSS_ARGS),
    F(clip.clip_fraction, **{k: v for k, v in LOSS_ARGS.items() if k not in ("agg", "max_len")}),
    # grpo.py
    F(grpo.grpo_loss, logp=("float", LOGP), logp_old=("float", LOGP2), logp_ref=("float", LOGP),
      adv=("float", ADV), mask=("mask", MASK), eps=("eps", const(0.2)),
      eps_high=("pos", const(0.28)), beta=("nonneg", const(0.04)),
      kl_estimator=("option", const("k3")), agg=("option", const("token_mean")),
      max_len=("int1", const(3))),
    F(grpo.grpo_step, policy=("policy", POLICY), ref_policy=("policy", POLICY), mdp=("mdp_any", MDP),
      grader=("grader", const(GRADER)), rng=("generator", RNG), K=("int1", const(2)),
      mu=("int1", const(2)), lr=("pos", const(0.1)), eps=("eps", const(0.2)),
      eps_high=("pos", const(0.28)), beta=("nonneg", const(0.04)),
      kl_estimator=("option", const("k3")), agg=("option", const("token_mean")),
      baseline=("option", const("standardized")), adv_eps=("nonneg", const(1e-8)),
      ddof=("ddof", const(0))),
    # kl.py
    F(kl.kl_per_token, logp=("float", LOGP), logp_ref=("float", LOGP2), mask=("mask", MASK),
      estimator=("option", const("k3"))),
    F(kl.kl_penalty, logp=("float", LOGP), logp_ref=("float", LOGP2), mask=("mask", MASK),
      estimator=("option", const("k2")), agg=("option", const("seq_sum")),
      max_len=("int1", const(3))),
    F(kl.kl_in_reward, rewards=("float", ADV), logp=("float", LOGP), logp_ref=("float", LOGP2),
      mask=("mask", MASK), beta=("nonneg", const(0.1))),
    F(kl.kl_penalty_straight_through, logp=("float", LOGP), logp_ref=("float", LOGP2),
      mask=("mask", MASK), estimator=("option", const("k3")), agg=("option", const("token_mean")),
      max_len=("int1", const(3))),
    F(kl.kl_penalty_is, logp=("float", LOGP), logp_old=("float", LOGP2), logp_ref=("float", LOGP),
      mask=("mask", MASK), agg=("option", const("token_mean")), max_len=("int1", const(3))),
    F(kl.adaptive_kl_coef, beta=("nonneg", const(0.1)), current_kl=("real", const(0.3)),
      target_kl=("pos", const(0.2)), horizon=("pos", const(100.0)),
      n_steps=("nonneg", const(8.0))),
    F(kl.exact_kl, p=("prob", PROBS2), q=("prob", PROBS2)),
    F(kl.exact_kl_grad_theta, theta=("float_neginf", THETA), theta_ref=("float_neginf", THETA),
      weights=("float", lambda: np.array([1.0, 2.0]))),
    F(kl.exact_reverse_kl_grad_theta, theta=("float_neginf", THETA),
      theta_ref=("float_neginf", THETA), weights=("float", lambda: np.array([1.0, 2.0]))),
    # reinforce.py
    F(reinforce.token_weights, mask=("mask", MASK), agg=("option", const("constant")),
      max_len=("int1", const(3))),
    F(reinforce.reinforce_loss, logp=("float", LOGP), adv=("float", ADV), mask=("mask", MASK),
      agg=("option", const("seq_sum")), max_len=("int1", const(3))),
    F(reinforce.sequence_reinforce_loss, seq_logp=("float", ADV), adv=("float", ADV)),
    # seqclip.py
    F(seqclip.dual_clip_surrogate, **LOSS_ARGS, c=("gt1", const(3.0))),
    F(seqclip.sequence_ratio, logp=("float", LOGP), logp_old=("float", LOGP2),
      mask=("mask", MASK), ratio=("option", const("geometric"))),
    F(seqclip.gspo_surrogate, logp=("float", LOGP), logp_old=("float", LOGP2), adv=("float", ADV),
      mask=("mask", MASK), eps=("eps", const(0.2)), eps_high=("pos", const(0.28)),
      ratio=("option", const("product"))),
    F(seqclip.cispo_loss, logp=("float", LOGP), logp_old=("float", LOGP2), adv=("float", ADV),
      mask=("mask", MASK), rho_min=("unit", const(0.5)), rho_max=("ge1", const(5.0)),
      agg=("option", const("token_mean")), max_len=("int1", const(3))),
    # offpolicy.py
    F(offpolicy.is_weights, logp_old=("float", LOGP2), logp_mu=("float", LOGP),
      mask=("mask", MASK), level=("option", const("sequence")), mode=("option", const("truncate")),
      c_max=("ge1", const(2.0)), c_min=("unit", const(0.5))),
    F(offpolicy.off_policy_sequence_mask, logp=("float", LOGP), logp_mu=("float", LOGP2),
      adv=("float", ADV), mask=("mask", MASK), delta=("nonneg", const(0.1))),
    F(offpolicy.rejection_mask, logp_old=("float", LOGP2), logp_mu=("float", LOGP),
      mask=("mask", MASK), option=("option", const("seq_mean_k1")), hi=("ge1", const(2.0)),
      lo=("eps", const(0.5))),
    F(offpolicy.corrected_pg_loss, logp=("float", LOGP), adv=("float", ADV), mask=("mask", MASK),
      weights=("float", lambda: np.ones((B, T))), agg=("option", const("seq_sum")),
      max_len=("int1", const(3))),
    F(offpolicy.minibatch_rows, B=("int1", const(4)), M=("int1", const(2)),
      rng=("generator", RNG)),
    F(offpolicy.accumulation_weights, mask=("mask", MASK), G=("int1", const(2)),
      mode=("option", const("dapo")), max_len=("int1", const(3))),
    # entropy.py
    F(entropy.entropy_table, theta=("float_neginf", THETA)),
    F(entropy.entropy_grad_table, theta=("float_neginf", THETA)),
    F(entropy.entropy_bonus, theta=("float_neginf", THETA), states=("ids2", IDS(2)),
      mask=("mask", MASK), agg=("option", const("token_mean")), max_len=("int1", const(3))),
    # shaping.py
    F(shaping.filter_groups, rewards=("float", R)),
    F(shaping.acceptance_probability, p=("unit", const(0.3)), K=("int1", const(2))),
    F(shaping.resample_factor, p=("unit", const(0.3)), K=("int1", const(2))),
    F(shaping.overlong_penalty, lengths=("ids4", IDS(4, (B,))), max_len=("int1", const(3)),
      buffer_len=("int1", const(2)), penalty_factor=("nonneg", const(1.0))),
    F(shaping.truncated, tokens=("tokids", IDS(3)), mask=("mask", MASK), eos=("int0", const(0))),
    F(shaping.mask_truncated, tokens=("tokids", IDS(3)), mask=("mask", MASK),
      eos=("int0", const(0))),
]
