"""verl pairs recorded after the objectives of 2025-26 (`scripts/conformance.py` runs them last, so every
earlier pair keeps its id): Clip-Cov, KL-Cov, GDPO, and DPPO's log-ratio clamp as a documented difference.

Imported by `scripts/conformance.py` (which installs the stand-ins first); the helpers come from there.
"""

import numpy as np
from conformance import (
    EMPTY,
    HOLES,
    PAD,
    TOK,
    TOL_F32,
    K,
    T,
    adv_bt,
    cases,
    pair,
    token_case,
    tt,
    val,
    val_grad,
    where_fn,
)


def _cfg(low=0.2, high=0.2, c=3.0, **policy_loss):
    from verl.workers.config import ActorConfig
    from verl.workers.config.actor import PolicyLossConfig

    return ActorConfig(
        strategy="fsdp",
        clip_ratio=0.2,
        clip_ratio_low=low,
        clip_ratio_high=high,
        clip_ratio_c=c,
        ppo_micro_batch_size_per_gpu=1,
        rollout_n=K,
        policy_loss=PolicyLossConfig(**policy_loss),
    )


def verl_late_pairs():
    import torch
    import verl.trainer.ppo.core_algos as ca

    # Clip-Cov draws its subset with torch.randperm; a ratio of 1 detaches every band token (m >= the band),
    # which is also the expectation the library returns with rng=None
    for lb, ub in [(0.0, 5.0), (0.3, 2.0)]:

        def run(inp, lb=lb, ub=ub):
            torch.manual_seed(0)
            lp = tt(inp["logp"], True)
            cfg = _cfg(loss_mode="clip_cov", clip_cov_ratio=1.0, clip_cov_lb=lb, clip_cov_ub=ub)
            loss, _ = ca.compute_policy_loss_clip_cov(
                tt(inp["logp_old"]), lp, adv_bt(inp), tt(inp["mask"]), "token-mean", cfg
            )
            return val_grad(loss, lp)

        pair(
            "verl",
            f"compute_policy_loss_clip_cov(clip_cov_ratio=1.0, clip_cov_lb={lb}, clip_cov_ub={ub})",
            where_fn(ca.compute_policy_loss_clip_cov),
            "entropy_knobs.clip_cov_loss",
            "clip_cov",
            {"ratio": 1.0, "cov_lb": lb, "cov_ub": ub, "eps": 0.2, "agg": "token_mean"},
            run,
            cases(PAD + HOLES + EMPTY, TOK),
            note="a ratio of 1 makes the subset the whole band: the draw is deterministic",
        )

    for ratio, coef in [(0.2, 1.0), (0.5, 0.5)]:

        def run(inp, ratio=ratio, coef=coef):
            lp = tt(inp["logp"], True)
            cfg = _cfg(loss_mode="kl_cov", kl_cov_ratio=ratio, ppo_kl_coef=coef)
            loss, _ = ca.compute_policy_loss_kl_cov(
                tt(inp["logp_old"]), lp, adv_bt(inp), tt(inp["mask"]), "token-mean", cfg
            )
            return val_grad(loss, lp)

        pair(
            "verl",
            f"compute_policy_loss_kl_cov(kl_cov_ratio={ratio}, ppo_kl_coef={coef})",
            where_fn(ca.compute_policy_loss_kl_cov),
            "entropy_knobs.kl_cov_loss",
            "kl_cov",
            {"ratio": ratio, "kl_coef": coef, "agg": "token_mean"},
            run,
            cases(PAD + HOLES + EMPTY, TOK),
        )

    # GDPO: per-reward GRPO advantages (float32 scores), weighted, whitened over the batch's tokens
    def run_gdpo(inp):
        r3 = inp["rewards3"]
        N, Kg, M = r3.shape
        mask = (np.arange(T) < inp["lengths"].reshape(-1, 1)).astype(float)
        L = mask.sum(1).astype(int)
        keys = [f"r{m}" for m in range(M)]
        att = torch.cat([torch.ones(N * Kg, 1), tt(mask)], 1).long()
        batch = {"prompts": torch.zeros((N * Kg, 1)), "attention_mask": att}
        ntb = {k: r3[:, :, m].ravel() for m, k in enumerate(keys)}
        from verl.trainer.config import AlgoConfig

        a, _ = ca.compute_gdpo_outcome_advantage(
            token_level_rewards=tt(np.zeros((N * Kg, T))),
            response_mask=tt(mask),
            index=np.repeat(np.arange(N), Kg),
            config=AlgoConfig(gdpo_reward_keys=keys, gdpo_reward_weights=[1.0, 0.5]),
            non_tensor_batch=ntb,
            batch=batch,
        )
        assert (L > 0).all()
        return val(a)

    gc = []
    for s in range(3):
        rng = np.random.default_rng(90 + s)
        r = np.stack([rng.integers(0, 2, (3, 4)).astype(float), rng.integers(0, 5, (3, 4)) / 4.0], axis=2)
        if s == 2:
            r[1, :, 0] = 1.0  # a group whose correctness is constant
        lengths = rng.integers(1, T + 1, (3, 4)).astype(float)
        gc.append((f"seed{s}", "pad", {"rewards3": r, "lengths": lengths}))
    pair(
        "verl",
        "compute_gdpo_outcome_advantage(gdpo_reward_weights=[1.0, 0.5])",
        where_fn(ca.compute_gdpo_outcome_advantage),
        "multireward.gdpo + advantages.reinforce_pp_baseline (the token whitening)",
        "gdpo_verl",
        {"weights": [1.0, 0.5]},
        run_gdpo,
        gc,
        tol=TOL_F32[0],
        tol_why="verl casts each reward to float32 (the rewards here are exact in float32)",
        note="value: the (B, T) advantages; rewards in quarters, so the float32 cast is exact",
    )

    # DPPO truncates min(rho, c) after clamping the log-ratio to [-20, 20]: c = 1e300 is e^20 there
    def run(inp):
        lp = tt(inp["logp"], True)
        loss, _ = ca.compute_policy_loss_dppo_tv(
            tt(inp["logp_old"]), lp, adv_bt(inp), tt(inp["mask"]), "token-mean", _cfg(c=1e300)
        )
        return val_grad(loss, lp)

    c = token_case(0, "pad")
    c = {k: c[k] for k in TOK}
    c["logp_old"][1, 1], c["logp"][1, 1] = -30.0, -5.0  # log-ratio 25 on a kept token (A > 0, p moves by 0.0067)
    assert c["adv"][1] > 0 and c["mask"][1, 1] > 0
    pair(
        "verl",
        "compute_policy_loss_dppo_tv(clip_ratio_c=1e300), a log-ratio of 25",
        where_fn(ca.compute_policy_loss_dppo_tv),
        "trust.dppo_loss",
        "dppo",
        {"divergence": "tv", "delta": 0.2, "c": 1e300, "agg": "token_mean"},
        run,
        [("logratio25", "pad", c)],
        diff="verl_dppo_clamp",
    )
