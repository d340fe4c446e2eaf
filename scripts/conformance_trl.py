"""TRL pairs recorded after the objectives of 2025-26 (`scripts/conformance.py` runs them last, so every
earlier pair keeps its id): the entropy mask and the adaptive entropy coefficient, VESPO's weight and its
clamps, the rest of the DPO loss types and the f-divergences, the distillers (GKD, DistillationTrainer,
SDFT), the reward model's margin and centering, and the token log-prob and entropy helpers.

Imported by `scripts/conformance.py` (which installs the stand-ins first); the helpers come from there.
"""

import types
from collections import defaultdict

import numpy as np
from conformance import (
    EMPTY,
    HOLES,
    PAD,
    TOK,
    TOL_F32,
    T,
    _Accel,
    cases,
    pair,
    pref_cases,
    token_case,
    trl_dpo_loss,
    trl_loss,
    trl_self,
    tt,
    val,
    val_grad,
    where_fn,
    where_text,
)


class _AccelPad(_Accel):
    def pad_across_processes(self, x, dim=0, pad_index=0):
        return x


def _f32(x):
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def logit_cases(Bl=4, Tl=5, V=7, scale=2.0):
    """Student and teacher logits (B, T, V) with a right-padded mask and one with a hole."""
    out = []
    for s, kind in enumerate(["pad", "pad", "holes"]):
        rng = np.random.default_rng(110 + s)
        L = rng.integers(1, Tl + 1, Bl)
        L[0] = Tl
        mask = (np.arange(Tl) < L[:, None]).astype(float)
        if kind == "holes":
            mask[0, 1:3] = 0.0
        zs, zt = rng.normal(0.0, scale, (Bl, Tl, V)), rng.normal(0.0, scale, (Bl, Tl, V))
        tokens = rng.integers(0, V, (Bl, Tl)).astype(float)
        out.append(
            (f"seed{s}" if kind == "pad" else "holes", kind, {"zs": zs, "zt": zt, "mask": mask, "tokens": tokens})
        )
    return out


def trl_late_pairs():
    import torch
    from trl.experimental.gkd.gkd_trainer import GKDTrainer
    from trl.experimental.sdft import loss_utils as sd
    from trl.trainer import distillation_trainer as dt
    from trl.trainer import grpo_trainer as gt
    from trl.trainer import utils as tu
    from trl.trainer.dpo_trainer import DPOTrainer
    from trl.trainer.grpo_trainer import GRPOTrainer
    from trl.trainer.reward_trainer import RewardTrainer

    # ---- the entropy mask: float32-exact entropies agree; a float64 tie at the quantile is dropped by TRL
    def ent_mask_run(rho_h):
        def run(inp):
            s = types.SimpleNamespace(accelerator=_AccelPad())
            m = GRPOTrainer.get_high_entropy_mask(s, tt(inp["entropies"]), tt(inp["mask"]), 1 - rho_h)
            return val(m.double())

        return run

    ec = []
    for name, kind, c in cases(PAD + HOLES + EMPTY, ("mask", "entropies")):
        c["entropies"] = _f32(c["entropies"])
        ec.append((name, kind, c))
    for rho_h in (0.2, 0.5):
        pair(
            "TRL",
            f"GRPOTrainer.get_high_entropy_mask(threshold={1 - rho_h:.1f}) (top_entropy_quantile={rho_h})",
            where_fn(GRPOTrainer.get_high_entropy_mask),
            "entropy_knobs.entropy_mask",
            "entropy_mask",
            {"rho_h": rho_h},
            ent_mask_run(rho_h),
            ec,
            note="entropies rounded to float32 values, so TRL's float32 quantile is exact",
        )
    tie = token_case(5, "pad")
    ent = np.where(tie["mask"] > 0, np.round(tie["entropies"] * 0.5, 3), 0.0)  # all below 1.1
    ent[:3] = np.where(tie["mask"][:3] > 0, 1.1, 0.0)  # the top half ties at 1.1, in float32 1.1000000238...
    pair(
        "TRL",
        "GRPOTrainer.get_high_entropy_mask(threshold=0.8), entropies tied at 1.1 (float64)",
        where_fn(GRPOTrainer.get_high_entropy_mask),
        "entropy_knobs.entropy_mask",
        "entropy_mask",
        {"rho_h": 0.2},
        ent_mask_run(0.2),
        [("tie", "pad", {"entropies": ent, "mask": tie["mask"]})],
        diff="trl_entropy_f32",
    )

    # the masked loss inside _compute_loss
    toks = TOK + ("logp_ref", "hull", "entropies")
    emc = []
    for name, kind, c in cases(PAD + EMPTY + HOLES, toks):
        c["entropies"] = _f32(c["entropies"])
        emc.append((name, kind, c))
    for lt, agg in [("grpo", "seq_mean_token_mean"), ("dapo", "token_mean")]:

        def run(inp, lt=lt):
            lp = tt(inp["logp"], True)
            s = trl_self(loss_type=lt, top_entropy_quantile=0.2)
            s.get_high_entropy_mask = lambda e, m, q: GRPOTrainer.get_high_entropy_mask(
                types.SimpleNamespace(accelerator=_AccelPad()), e, m, q
            )
            return val_grad(trl_loss(s, lp, inp, entropies=inp["entropies"]), lp)

        pair(
            "TRL",
            f"GRPOTrainer._compute_loss(loss_type={lt!r}, top_entropy_quantile=0.2)",
            where_text(
                gt, "entropy_mask = self.get_high_entropy_mask(entropies, mask, 1 - self.top_entropy_quantile)"
            ),
            "entropy_knobs.entropy_masked_loss",
            "entropy_masked",
            {"rho_h": 0.2, "eps": 0.2, "agg": agg},
            run,
            emc,
        )

    # ---- the adaptive entropy coefficient: _compute_loss over S optimizer steps, the coefficient after each
    def run_adaptive(inp):
        s = trl_self(loss_type="dapo", _entropy_bonus_enabled=True, use_adaptive_entropy=True)
        s.entropy_coef, s._last_world_entropy, s._entropy_window_stats = 0.01, float("inf"), None
        s.args.entropy_target, s.args.entropy_coef_delta = 0.2, 0.005
        s.args.entropy_coef_min, s.args.entropy_coef_max = 0.0, 0.02
        out = []
        for H in inp["entropy_steps"]:
            trl_loss(s, tt(inp["logp"], True), inp, entropies=H)
            out.append(s.entropy_coef)
        return val(np.array(out))

    ac = []
    for s_ in range(2):
        c = {k: v for k, v in token_case(20 + s_, "pad").items() if k in TOK + ("logp_ref", "hull")}
        rng = np.random.default_rng(120 + s_)
        levels = [0.1, 0.15, 0.3, 0.05, 0.1, 0.12, 0.5, 0.5, 0.5, 0.19]
        c["entropy_steps"] = np.stack([rng.uniform(0.5, 1.5, (6, T)) * lv for lv in levels])
        ac.append((f"seed{s_}", "pad", c))
    pair(
        "TRL",
        "GRPOTrainer entropy_coef update (use_adaptive_entropy=True, entropy_coef=0.01, entropy_target=0.2, "
        "entropy_coef_delta=0.005, entropy_coef_max=0.02), via _compute_loss",
        where_text(gt, "if world_entropy <= self.args.entropy_target:"),
        "entropy_knobs.adaptive_entropy_coef",
        "adaptive_entropy",
        {"coef": 0.01, "target": 0.2, "delta": 0.005, "coef_min": 0.0, "coef_max": 0.02},
        run_adaptive,
        ac,
        note="value: the coefficient after each of 10 steps; H is each step's token-mean entropy",
    )

    # ---- VESPO's weight, its log-ratio clamps and its lambda floor
    def gamma_run(**kw):
        def run(inp):
            u = tt(inp["logp"] - inp["logp_old"])
            phi = GRPOTrainer.get_gamma_weights(tt(inp["adv"])[:, None], u, tt(inp["mask"]), None, **kw)
            return val(phi[:, 0])

        return run

    for kw, conf in [
        ({}, {}),
        (
            {"k_pos": 1.0, "lambda_pos": 1.5, "k_neg": 0.5, "lambda_neg": 4.0},
            {"k_pos": 1.0, "lam_pos": 1.5, "k_neg": 0.5, "lam_neg": 4.0},
        ),
    ]:
        pair(
            "TRL",
            f"GRPOTrainer.get_gamma_weights({', '.join(f'{k}={v}' for k, v in kw.items())})",
            where_fn(GRPOTrainer.get_gamma_weights),
            "trust.vespo_weight",
            "vespo_weight",
            conf,
            gamma_run(**kw),
            cases(PAD + HOLES + EMPTY, TOK),
        )
    c = {k: v for k, v in token_case(0, "pad").items() if k in TOK}
    c["mask"][1] = 0.0
    c["mask"][1, :2] = 1.0  # row 1 (A > 0): two tokens, log-ratios -25 and +15
    c["logp_old"][1, :2], c["logp"][1, :2] = [-0.5, -20.0], [-25.5, -5.0]
    assert c["adv"][1] > 0
    pair(
        "TRL",
        "GRPOTrainer.get_gamma_weights(), log-ratios -25 and +15 in one response",
        where_fn(GRPOTrainer.get_gamma_weights),
        "trust.vespo_weight",
        "vespo_weight",
        {},
        gamma_run(),
        [("clamp", "pad", c)],
        diff="trl_vespo_clamp",
    )
    pair(
        "TRL",
        "GRPOTrainer.get_gamma_weights(lambda_pos=1e-05)",
        where_fn(GRPOTrainer.get_gamma_weights),
        "trust.vespo_weight",
        "vespo_weight",
        {"lam_pos": 1e-5},
        gamma_run(lambda_pos=1e-5),
        cases(PAD, TOK),
        diff="trl_vespo_lambda",
    )

    # ---- the rest of the DPO loss types, and the f-divergences (alpha_divergence is not recorded: its clamp
    # table, dpo_trainer.py `clamp_max = {torch.float16: ...}`, has no float64 entry, a KeyError in float64)
    for lt, extra, conf in [
        ("hinge", {}, {}),
        ("robust", {"label_smoothing": 0.1}, {"label_smoothing": 0.1}),
        ("exo_pair", {"label_smoothing": 1e-3}, {"label_smoothing": 1e-3}),
        ("discopop", {}, {"tau": 0.05}),
        ("bco_pair", {}, {}),
        ("nca_pair", {}, {}),
        ("sppo_hard", {}, {}),
        ("apo_zero", {}, {}),
        ("apo_down", {}, {}),
        ("sigmoid", {"f_divergence_type": "forward_kl"}, {"divergence": "forward_kl"}),
        ("sigmoid", {"f_divergence_type": "js_divergence"}, {"divergence": "js_divergence"}),
        ("hinge", {"f_divergence_type": "js_divergence"}, {"divergence": "js_divergence"}),
    ]:

        def run(inp, lt=lt, extra=extra):
            lc, lr = tt(inp["logp_c"], True), tt(inp["logp_r"], True)
            kw = {"label_smoothing": 0.0, "f_alpha_divergence_coef": 0.5, **extra}
            kw["args"] = types.SimpleNamespace(discopop_tau=0.05)
            return val_grad(trl_dpo_loss(DPOTrainer, lt, 0.1, lc, lr, inp, **kw), lc, lr)

        label = ", ".join([f"loss_type={lt!r}", "beta=0.1"] + [f"{k}={v!r}" for k, v in extra.items()])
        pair(
            "TRL",
            f"DPOTrainer._compute_loss({label})",
            where_fn(DPOTrainer._compute_loss),
            "family.dpo_family_loss",
            "dpo_family",
            {"loss_type": lt, "beta": 0.1, **conf},
            run,
            pref_cases(),
        )

    # ---- distillation: GKD, the stable DistillationTrainer's chunked loss, SDFT's divergences
    lc_ = logit_cases()
    for beta, tau in [(0.5, 1.0), (0.0, 1.0), (1.0, 1.0), (0.3, 0.7)]:

        def run(inp, beta=beta, tau=tau):
            zs = tt(inp["zs"], True)
            labels = torch.where(tt(inp["mask"]) > 0, 0, -100)
            return val_grad(
                GKDTrainer.generalized_jsd_loss(zs, tt(inp["zt"]), labels, beta=beta, temperature=tau), zs
            )

        pair(
            "TRL",
            f"GKDTrainer.generalized_jsd_loss(beta={beta}, temperature={tau})",
            where_fn(GKDTrainer.generalized_jsd_loss),
            "distill.objectives.generalized_jsd",
            "gjsd",
            {"beta": beta, "temperature": tau},
            run,
            lc_,
        )
    for beta, tau in [(1.0, 1.0), (0.5, 1.0), (0.0, 2.0), (1.0, 0.5)]:

        def run(inp, beta=beta, tau=tau):
            zs = tt(inp["zs"], True)
            V = zs.shape[-1]
            eye = torch.eye(V)  # the lm_head: the hidden states are the logits
            loss, _, _ = dt._chunked_divergence_loss(
                zs, tt(inp["zt"]), eye, eye, tt(inp["mask"]), beta, temperature=tau
            )
            return val_grad(loss, zs)

        pair(
            "TRL",
            f"DistillationTrainer _chunked_divergence_loss(beta={beta}, temperature={tau})",
            where_fn(dt._chunked_divergence_loss),
            "distill.objectives.generalized_jsd",
            "gjsd",
            {"beta": beta, "temperature": tau},
            run,
            lc_,
            tol=TOL_F32[0],
            tol_why="the chunked kernel computes in float32",
            note="the lm_head weights are the identity, so the hidden states are the logits",
        )
    for alpha in (0.0, 0.5, 1.0):

        def run(inp, alpha=alpha):
            zs = tt(inp["zs"], True)
            m = tt(inp["mask"])
            d = sd.compute_full_logit_self_distillation_loss(zs, tt(inp["zt"]), distillation_alpha=alpha)
            return val_grad((d * m).sum() / m.sum().clamp(min=1.0), zs)

        pair(
            "TRL",
            f"sdft compute_full_logit_self_distillation_loss(distillation_alpha={alpha}), token mean",
            where_fn(sd.compute_full_logit_self_distillation_loss),
            "distill.objectives.generalized_jsd",
            "gjsd",
            {"beta": alpha, "temperature": 1.0},
            run,
            lc_,
            note="TRL's per-token divergence; the mean over the mask is taken here",
        )

    def run(inp):
        zs = tt(inp["zs"], True)
        m = tt(inp["mask"])
        ids = torch.tensor(inp["tokens"], dtype=torch.long)
        per = sd.compute_sampled_token_self_distillation_loss(zs, tt(inp["zt"]), ids, distillation_alpha=1.0)
        return val_grad((per * m).sum() / m.shape[0], zs)

    pair(
        "TRL",
        "sdft compute_sampled_token_self_distillation_loss(distillation_alpha=1.0), summed over the mask / B",
        where_fn(sd.compute_sampled_token_self_distillation_loss),
        "distill.samples.reverse_kl_reward",
        "sd_sampled",
        {},
        run,
        lc_,
        note="grad: with respect to the student's logits (ours: dlogp times d logp / d logits)",
    )

    # ---- token log-probs and entropies from logits
    def run(inp):
        zs = tt(inp["zs"], True)
        lp = tu.selective_log_softmax(zs, torch.tensor(inp["tokens"], dtype=torch.long))
        (lp * tt(inp["mask"])).sum().backward()
        return {"value": lp.detach().numpy() * inp["mask"], "grad": zs.grad.numpy().copy()}

    pair(
        "TRL",
        "selective_log_softmax",
        where_fn(tu.selective_log_softmax),
        "core.ops.log_softmax (the sampled token's entry)",
        "logprobs",
        {},
        run,
        lc_,
        note="value: the masked token log-probs; grad: d(sum mask logp)/dlogits",
    )

    def run(inp):
        z = tt(inp["theta"], True)
        H = tu.entropy_from_logits(z)
        H.sum().backward()
        return {"value": H.detach().numpy(), "grad": z.grad.numpy().copy()}

    pair(
        "TRL",
        "entropy_from_logits",
        where_fn(tu.entropy_from_logits),
        "entropy.entropy_table / entropy_grad_table",
        "entropy",
        {},
        run,
        [(f"seed{s}", "pad", {"theta": np.random.default_rng(130 + s).normal(0, 2, (5, 7))}) for s in range(3)],
    )

    # ---- the reward model: margin and centering
    for margin, center in [(False, None), (True, None), (True, 0.01), (False, 0.1)]:

        def run(inp, margin=margin, center=center):
            rc, rr = tt(inp["seq_c"], True), tt(inp["seq_r"], True)
            P = rc.shape[0]
            s = types.SimpleNamespace(
                model=types.SimpleNamespace(training=True),
                args=types.SimpleNamespace(center_rewards_coefficient=center),
                accelerator=_Accel(),
                _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
                _total_train_tokens=0,
                _tp_size=1,
            )
            inputs = {
                "input_ids": torch.zeros((2 * P, 2), dtype=torch.long),
                "attention_mask": torch.ones((2 * P, 2)),
            }
            if margin:
                inputs["margin"] = tt(inp["margin"])
            model = lambda **kw: types.SimpleNamespace(logits=torch.cat([rc, rr])[:, None])  # noqa: E731
            return val_grad(RewardTrainer.compute_loss(s, model, inputs), rc, rr)

        rcs = []
        for name, kind, c in pref_cases():
            c = {k: c[k] for k in ("seq_c", "seq_r")}
            if margin:
                c["margin"] = np.round(np.random.default_rng(140 + len(rcs)).uniform(0, 1, len(c["seq_c"])), 2)
            rcs.append((name, kind, c))
        pair(
            "TRL",
            f"RewardTrainer.compute_loss({'margin, ' if margin else ''}center_rewards_coefficient={center})",
            where_fn(RewardTrainer.compute_loss),
            "reward.bt.bt_margin_loss",
            "bt_margin",
            {"center": center or 0.0},
            run,
            rcs,
            note="the rewards of the chosen and rejected responses are the seq_c, seq_r arrays",
        )
