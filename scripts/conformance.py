"""Record the frameworks' own outputs on our inputs: the fixtures `tests/test_conformance.py` replays.

Runs each framework function that has a minirl_lm counterpart (verl 0.9.1, OpenRLHF 0.11.2,
TRL 1.16.0, torch CPU, float64) on generated inputs and writes the inputs, the framework's
outputs and its autograd gradients to `tests/fixtures/conformance/` (`fixtures.npz` and the index
`index.json`, which records the versions, each pair's framework function with its file:line, the
minirl_lm function and configuration, and whether the lines were extracted from a trainer loop).

Inputs, per pair, on several seeds: right-padded masks with finite garbage (|x| ~ 30) at the
padding, a mask with holes (a multi-turn observation span), an all-padding row, advantages of
both signs, ratios beyond the clip bounds and beyond the dual-clip constant 3.

Install (a separate virtual environment; CI never does this, it only replays the fixtures):

    python3 -m venv /tmp/venv-conf && . /tmp/venv-conf/bin/activate
    pip install -e ".[conformance]"            # torch (CPU), numpy
    pip install --no-deps verl==0.9.1 openrlhf==0.11.2 trl==1.16.0
    pip install packaging omegaconf "tensordict>=0.8,<=0.10.0" cloudpickle pyvers \\
        "transformers>=5.5.3,<5.11,!=5.6.0" codetiming orjson accelerate datasets
    python scripts/conformance.py              # writes tests/fixtures/conformance/

The pairs recorded after the objectives of 2025-26 are in `conformance_verl.py`, `conformance_trl.py` and
`conformance_openrlhf.py` beside this file; they run last, so the earlier pairs keep their ids, and a re-run
keeps the recorded outputs of every pair whose index entry and inputs are unchanged.

Stand-ins (`STAND_INS`): modules replaced by empty ones so the functions under test import without
their heavy dependencies; none is called by a function under test (the reason is listed with each).

Extracted lines: where a framework computes inline in a trainer loop, the lines are copied into a
function here (`extracted_*`, each citing the file and line it copies) and the pair is marked
`extracted`. Everything else calls the framework's own function.
"""

import argparse
import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import sys
import time
import types
from collections import defaultdict

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "conformance")
VERSIONS = {"verl": "0.9.1", "openrlhf": "0.11.2", "trl": "1.16.0"}

# ---- stand-ins: (module, what it is replaced by, why no function under test can see it) ----------
STAND_INS = [
    (
        "ray",
        "an empty module with `ObjectRef = object`",
        "verl/protocol.py imports it for the `ray.ObjectRef` annotation of DataProtoFuture; "
        "openrlhf experience_maker.py imports it for remote calls; no tested function calls ray",
    ),
    (
        "deepspeed",
        "an empty module, only while openrlhf.models.utils is imported",
        "openrlhf/models/utils.py uses it in set_z3_leaf_modules only (ZeRO-3 leaf modules), never called here",
    ),
    (
        "openrlhf.models",
        "a package without its __init__",
        "the __init__ imports actor.py (peft, flash-attn); loss.py and utils.py load as plain submodules",
    ),
    (
        "openrlhf.trainer",
        "a package without its __init__",
        "the __init__ imports the trainers (Ray actors, DeepSpeed); ppo_utils loads as a submodule",
    ),
    (
        "openrlhf.trainer.ray",
        "a package without its __init__",
        "Ray actor classes, not used by the tested methods",
    ),
    (
        "openrlhf.trainer.ray.launcher",
        "a module with `RayActorGroup = object`",
        "experience_maker.py imports the name for annotations; the tested methods never touch it",
    ),
    (
        "openrlhf.utils",
        "a package without its __init__",
        "the __init__ imports math_utils (pylatexenc); logging_utils and seqlen_balancing load as submodules",
    ),
]


def _install_stand_ins():
    import trl.experimental.cpo.cpo_trainer  # noqa: F401  (before the deepspeed stand-in: transformers probes it)
    import trl.experimental.orpo.orpo_trainer  # noqa: F401
    import trl.trainer.grpo_trainer  # noqa: F401

    ray = types.ModuleType("ray")
    ray.ObjectRef = object
    sys.modules["ray"] = ray
    site = os.path.dirname(importlib.util.find_spec("openrlhf").origin)
    for name in ("openrlhf.models", "openrlhf.trainer", "openrlhf.trainer.ray", "openrlhf.utils"):
        m = types.ModuleType(name)
        m.__path__ = [os.path.join(site, *name.split(".")[1:])]
        sys.modules[name] = m
    launcher = types.ModuleType("openrlhf.trainer.ray.launcher")
    launcher.RayActorGroup = object
    sys.modules[launcher.__name__] = launcher
    sys.modules["deepspeed"] = types.ModuleType("deepspeed")
    import openrlhf.models.loss  # noqa: F401
    import openrlhf.models.utils  # noqa: F401
    import openrlhf.trainer.ppo_utils.experience_maker  # noqa: F401

    del sys.modules["deepspeed"]


# ---- where: file:line of a function, or of the first line holding a snippet ----------------------


def _rel(path):
    parts = path.split(os.sep)
    for top in ("verl", "openrlhf", "trl"):
        if top in parts:
            return "/".join(parts[len(parts) - 1 - parts[::-1].index(top) :])
    return path


def where_fn(fn):
    fn = inspect.unwrap(fn)
    return f"{_rel(inspect.getsourcefile(fn))}:{inspect.getsourcelines(fn)[1]}"


def where_text(module, snippet):
    """`module` is a module or a path relative to site-packages (a file whose package cannot be imported)."""
    if isinstance(module, str):
        root = os.path.dirname(os.path.dirname(importlib.util.find_spec("verl").origin))
        path = os.path.join(root, module)
    else:
        path = inspect.getsourcefile(module)
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if snippet in line:
                return f"{_rel(path)}:{i}"
    raise LookupError(f"{snippet!r} not in {path}")


# ---- inputs ---------------------------------------------------------------------------------------
B, T, K = 6, 6, 3  # 6 responses of up to 6 tokens, 2 prompts x 3


def token_case(seed, kind):
    """One batch (B, T): kind "pad" (right-padded, garbage at padding), "empty" (row 2 all padding) or
    "holes" (rows 0 and 1 have an observation span inside)."""
    rng = np.random.default_rng(seed)
    L = rng.integers(2, T + 1, B)
    L[0] = T
    if kind == "empty":
        L[2] = 0
    mask = (np.arange(T) < L[:, None]).astype(float)  # (B, T)
    hull = mask.copy()
    if kind == "holes":
        L[1] = T
        hull = (np.arange(T) < L[:, None]).astype(float)
        mask = hull.copy()
        mask[0, 2:4] = 0.0
        mask[1, 1:3] = 0.0
    logp_old = -rng.exponential(1.0, (B, T))
    logp = logp_old + rng.normal(0.0, 0.35, (B, T))
    logp[0, 0] = logp_old[0, 0] + 1.4  # rho ~ 4 > 3 (dual clip) on a negative-advantage row
    logp[1, 0] = logp_old[1, 0] - 0.9  # rho ~ 0.4 < 0.8
    logp[3, 1] = logp_old[3, 1] + 0.6  # rho ~ 1.8 > 1.28
    adv = rng.normal(0.0, 1.0, B)
    adv[0], adv[1], adv[3] = -abs(adv[0]) - 0.3, abs(adv[1]) + 0.2, abs(adv[3]) + 0.2
    logp_ref = logp_old + rng.normal(0.0, 0.3, (B, T))
    logp_mu = logp_old + rng.normal(0.0, 0.3, (B, T))
    values = rng.normal(0.0, 1.0, (B, T))
    vpreds = values + rng.normal(0.0, 0.4, (B, T))
    returns = values + rng.normal(0.0, 1.0, (B, T))
    rewards = rng.integers(0, 2, B).astype(float) + rng.normal(0.0, 0.3, B) * (seed % 2)
    token_rewards = rng.normal(0.0, 0.2, (B, T))
    entropies = rng.uniform(0.1, 2.0, (B, T))
    out = dict(
        mask=mask,
        hull=hull,
        logp=logp,
        logp_old=logp_old,
        logp_ref=logp_ref,
        logp_mu=logp_mu,
        adv=adv,
        values=values,
        vpreds=vpreds,
        returns=returns,
        rewards=rewards,
        token_rewards=token_rewards,
        entropies=entropies,
    )
    pad = hull == 0
    for name in ("logp", "logp_old", "logp_ref", "logp_mu", "values", "vpreds", "returns", "token_rewards"):
        out[name] = np.where(pad, rng.normal(0.0, 30.0, (B, T)), out[name])  # garbage at padding
    if kind == "holes":
        for name in ("logp", "logp_old", "logp_ref", "logp_mu"):
            out[name] = np.where((hull > 0) & (mask == 0), rng.normal(0.0, 30.0, (B, T)), out[name])
    return out


PAD = [("seed0", 0, "pad"), ("seed1", 1, "pad"), ("seed2", 2, "pad")]
EMPTY = [("empty", 3, "empty")]
HOLES = [("holes", 4, "holes")]


def cases(kinds, uses):
    out = []
    for name, seed, kind in kinds:
        c = token_case(seed, kind)
        out.append((name, kind, {k: c[k] for k in uses}))
    return out


def reward_cases(Kg, seeds=(0, 1, 2), ties=True):
    """(N, K) rewards on several seeds; a tied group (equal rewards) in the last case."""
    out = []
    for s in seeds:
        rng = np.random.default_rng(10 + s)
        r = np.round(rng.normal(0.0, 1.0, (3, Kg)), 3) if s != 1 else rng.integers(0, 2, (3, Kg)).astype(float)
        if ties and s == seeds[-1]:
            r[1] = 0.5
        L = rng.integers(1, T + 1, (3, Kg)).astype(float)
        out.append((f"seed{s}", "pad", {"rewards": r, "lengths": L, "greedy": rng.normal(0.0, 1.0, 3)}))
    return out


# ---- torch helpers --------------------------------------------------------------------------------
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_default_dtype(torch.float64)


def tt(x, grad=False):
    return torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=grad)


def val_grad(loss, *wrt):
    loss.backward()
    out = {"value": np.asarray(loss.detach().numpy(), dtype=np.float64)}
    for i, w in enumerate(wrt):
        g = w.grad
        out["grad" if i == 0 else f"grad{i}"] = np.zeros(tuple(w.shape)) if g is None else g.numpy().copy()
    return out


def val(x):
    return {"value": np.asarray(x.detach().numpy() if torch.is_tensor(x) else x, dtype=np.float64)}


# ---- the registry ---------------------------------------------------------------------------------
PAIRS = []


def pair(
    fw,
    fw_fn,
    where,
    mini,
    replay,
    config,
    run,
    case_list,
    extracted=False,
    tol=1e-10,
    tol_why="",
    diff=None,
    note="",
):
    """One (framework function, minirl_lm function, configuration) pair.

    run(inputs) -> {"value": ..., "grad": ...} from the framework; `replay` names the NumPy twin in
    examples/conformance.py and `config` its keyword arguments; `diff` names a row of its table of
    documented differences."""
    PAIRS.append(
        dict(
            framework=fw,
            fw_function=fw_fn,
            where=where,
            minirl=mini,
            replay=replay,
            config=config,
            run=run,
            cases=case_list,
            extracted=extracted,
            tol=tol,
            tol_why=tol_why,
            diff=diff,
            note=note,
        )
    )


TOK = ("mask", "logp", "logp_old", "adv")
TOL_EPS = (1e-7, "the framework adds 1e-8 to a per-row token count")
TOL_F32 = (1e-5, "the framework casts to float32")
TOL_WHITEN = (1e-7, "verl's masked_mean (inside masked_whiten) divides by the token count + 1e-8")
TOL_GROUP32 = (1e-5, "verl's group_mean_std computes the group statistics in float32")


def adv_bt(inp):
    return tt(inp["adv"][:, None] * np.ones((1, T)))


# ================================================================================================== verl
def verl_pairs():
    import verl.trainer.ppo.core_algos as ca
    import verl.utils.torch_functional as vF
    from verl.workers.config import ActorConfig

    vrb = "verl/trainer/ppo/v1/replay_buffer.py"  # its package imports transfer_queue: read, not imported
    vdapo = "verl/workers/reward_manager/dapo.py"

    def cfg(low=0.2, high=0.2, c=3.0):
        return ActorConfig(
            strategy="fsdp",
            clip_ratio=0.2,
            clip_ratio_low=low,
            clip_ratio_high=high,
            clip_ratio_c=c,
            ppo_micro_batch_size_per_gpu=1,
            rollout_n=K,
        )

    modes = {
        "token-mean": "token_mean",
        "seq-mean-token-mean": "seq_mean_token_mean",
        "seq-mean-token-sum": "seq_sum",
        "seq-mean-token-sum-norm": "constant",
    }
    tol_of = {"seq-mean-token-mean": TOL_EPS}

    # agg_loss on loss_mat = -A logp: REINFORCE with that aggregation
    for mode, agg in modes.items():

        def run(inp, mode=mode):
            lp = tt(inp["logp"], True)
            return val_grad(ca.agg_loss(-adv_bt(inp) * lp, tt(inp["mask"]), mode), lp)

        tol = tol_of.get(mode, (1e-10, ""))
        pair(
            "verl",
            f"agg_loss({mode!r})",
            where_fn(ca.agg_loss),
            "reinforce.reinforce_loss",
            "reinforce_loss",
            {"agg": agg},
            run,
            cases(PAD + HOLES + ([] if mode != "token-mean" else EMPTY), ("mask", "logp", "adv")),
            tol=tol[0],
            tol_why=tol[1],
        )
        if mode != "token-mean":
            pair(
                "verl",
                f"agg_loss({mode!r})",
                where_fn(ca.agg_loss),
                "reinforce.reinforce_loss",
                "reinforce_loss",
                {"agg": agg},
                run,
                cases(EMPTY, ("mask", "logp", "adv")),
                tol=tol[0],
                tol_why=tol[1],
                diff="nonempty_rows",
            )

    def run_scale(inp):
        lp = tt(inp["logp"], True)
        return val_grad(
            ca.agg_loss(-adv_bt(inp) * lp, tt(inp["mask"]), "seq-mean-token-sum-norm", loss_scale_factor=12), lp
        )

    pair(
        "verl",
        "agg_loss('seq-mean-token-sum-norm', loss_scale_factor=12)",
        where_fn(ca.agg_loss),
        "reinforce.reinforce_loss",
        "reinforce_loss",
        {"agg": "constant", "max_len": 12},
        run_scale,
        cases(PAD + HOLES, ("mask", "logp", "adv")),
    )

    # the vanilla policy loss is dual-clip PPO
    for (low, high, c), mode in [
        ((0.2, 0.2, 3.0), "token-mean"),
        ((0.2, 0.28, 3.0), "token-mean"),
        ((0.1, 0.3, 2.5), "token-mean"),
        ((0.2, 0.2, 3.0), "seq-mean-token-mean"),
        ((0.2, 0.28, 3.0), "seq-mean-token-sum"),
        ((0.2, 0.2, 3.0), "seq-mean-token-sum-norm"),
    ]:

        def run(inp, low=low, high=high, c=c, mode=mode):
            lp = tt(inp["logp"], True)
            loss, _ = ca.compute_policy_loss_vanilla(
                tt(inp["logp_old"]), lp, adv_bt(inp), tt(inp["mask"]), mode, cfg(low, high, c)
            )
            return val_grad(loss, lp)

        tol = tol_of.get(mode, (1e-10, ""))
        conf = f"clip_ratio_low={low}, clip_ratio_high={high}, clip_ratio_c={c}, {mode}"
        pair(
            "verl",
            f"compute_policy_loss_vanilla({conf})",
            where_fn(ca.compute_policy_loss_vanilla),
            "seqclip.dual_clip_surrogate",
            "dual_clip",
            {"eps": low, "eps_high": high, "c": c, "agg": modes[mode]},
            run,
            cases(PAD + HOLES + (EMPTY if mode == "token-mean" else []), TOK),
            tol=tol[0],
            tol_why=tol[1],
        )

    for mode, is_w in [("seq-mean-token-sum", False), ("token-mean", False), ("seq-mean-token-sum", True)]:

        def run(inp, mode=mode, is_w=is_w):
            lp = tt(inp["logp"], True)
            w = tt(np.minimum(np.exp(inp["logp_old"] - inp["logp_mu"]), 2.0)) if is_w else None
            loss, _ = ca.compute_policy_loss_reinforce(
                tt(inp["logp_mu"]), lp, adv_bt(inp), tt(inp["mask"]), mode, cfg(), rollout_is_weights=w
            )
            return val_grad(loss, lp)

        pair(
            "verl",
            f"compute_policy_loss_reinforce({mode}{', rollout_is_weights' if is_w else ''})",
            where_fn(ca.compute_policy_loss_reinforce),
            "offpolicy.corrected_pg_loss" if is_w else "reinforce.reinforce_loss",
            "corrected_pg" if is_w else "reinforce_loss",
            {"agg": modes[mode], **({"level": "token", "mode": "truncate", "c_max": 2.0} if is_w else {})},
            run,
            cases(PAD + HOLES, TOK + ("logp_mu",))
            if is_w
            else cases(PAD + HOLES, ("mask", "logp", "adv", "logp_mu")),
        )

    for low, high in [(0.2, 0.2), (0.2, 0.28)]:

        def run(inp, low=low, high=high):
            _, met = ca.compute_policy_loss_vanilla(
                tt(inp["logp_old"]), tt(inp["logp"]), adv_bt(inp), tt(inp["mask"]), "token-mean", cfg(low, high)
            )
            return val(met["actor/pg_clipfrac"])

        pair(
            "verl",
            f"compute_policy_loss_vanilla metrics['actor/pg_clipfrac'] (clip_ratio_high={high})",
            where_fn(ca.compute_policy_loss_vanilla),
            "clip.clip_fraction",
            "clip_fraction",
            {"eps": low, "eps_high": high},
            run,
            cases(PAD + HOLES + EMPTY, TOK),
            tol=TOL_EPS[0],
            tol_why="verl's masked_mean divides by the token count + 1e-8",
        )

    # GSPO: the release follows loss_agg_mode
    for mode, high in [("seq-mean-token-mean", 0.2), ("seq-mean-token-mean", 0.28), ("token-mean", 0.2)]:

        def run(inp, mode=mode, high=high):
            lp = tt(inp["logp"], True)
            loss, _ = ca.compute_policy_loss_gspo(
                tt(inp["logp_old"]), lp, adv_bt(inp), tt(inp["mask"]), mode, cfg(0.2, high)
            )
            return val_grad(loss, lp)

        pair(
            "verl",
            f"compute_policy_loss_gspo(clip_ratio_high={high}, {mode})",
            where_fn(ca.compute_policy_loss_gspo),
            "seqclip.gspo_surrogate",
            "gspo",
            {"eps": 0.2, "eps_high": high},
            run,
            cases(PAD + HOLES, TOK),
            tol=TOL_EPS[0],
            tol_why=TOL_EPS[1],
            diff="verl_gspo_token_mean" if mode == "token-mean" else None,
        )

    for (low, high), mode in [
        ((0.2, 0.2), "token-mean"),
        ((0.2, 0.28), "token-mean"),
        ((0.2, 0.28), "seq-mean-token-mean"),
    ]:

        def run(inp, low=low, high=high, mode=mode):
            lp = tt(inp["logp"], True)
            loss, _ = ca.compute_policy_loss_cispo(
                tt(inp["logp_old"]), lp, adv_bt(inp), tt(inp["mask"]), mode, cfg(low, high)
            )
            return val_grad(loss, lp)

        tol = tol_of.get(mode, (1e-10, ""))
        pair(
            "verl",
            f"compute_policy_loss_cispo(clip_ratio_low={low}, clip_ratio_high={high}, {mode})",
            where_fn(ca.compute_policy_loss_cispo),
            "seqclip.cispo_loss",
            "cispo",
            {"rho_min": 1 - low, "rho_max": 1 + high, "agg": modes[mode]},
            run,
            cases(PAD + HOLES, TOK),
            tol=tol[0],
            tol_why=tol[1],
        )

    # KL estimators per token: value and d(sum_t mask k)/dlogp
    for name, est in [("k1", "k1"), ("kl", "k1"), ("k2", "k2"), ("mse", "k2"), ("k3", "k3"), ("low_var_kl", "k3")]:

        def run(inp, name=name):
            lp = tt(inp["logp"], True)
            m = tt(inp["mask"])
            k = ca.kl_penalty(lp, tt(inp["logp_ref"]), name) * m
            (k.sum()).backward()
            return {"value": k.detach().numpy(), "grad": lp.grad.numpy().copy()}

        pair(
            "verl",
            f"kl_penalty({name!r})",
            where_fn(ca.kl_penalty),
            "kl.kl_per_token",
            "kl_per_token",
            {"estimator": est},
            run,
            cases(PAD + HOLES + EMPTY, ("mask", "logp", "logp_ref")),
        )

    def run_k3(inp):
        lp = tt(inp["logp"], True)
        k = ca.kl_penalty(lp, tt(inp["logp_ref"]), "k3") * tt(inp["mask"])
        (k.sum()).backward()
        return {"value": k.detach().numpy(), "grad": lp.grad.numpy().copy()}

    c = cases(PAD[:1], ("mask", "logp", "logp_ref"))
    c[0][2]["logp_ref"] = c[0][2]["logp_ref"] + 12.0 * c[0][2]["mask"]  # exp(-u) ~ e^12: beyond the clamp at 10
    pair(
        "verl",
        "kl_penalty('k3'), logp_ref - logp ~ 12",
        where_fn(ca.kl_penalty_forward),
        "kl.kl_per_token",
        "kl_per_token",
        {"estimator": "k3"},
        run_k3,
        c,
        diff="verl_k3_clamp",
    )

    for name, est in [("k1+", "k1"), ("k3+", "k3")]:

        def run(inp, name=name):
            lp = tt(inp["logp"], True)
            k = ca.kl_penalty(lp, tt(inp["logp_ref"]), name)
            return val_grad(ca.agg_loss(k, tt(inp["mask"]), "token-mean"), lp)

        pair(
            "verl",
            f"kl_penalty({name!r}) + agg_loss('token-mean')",
            where_fn(ca.kl_penalty),
            "kl.kl_penalty_straight_through",
            "kl_straight_through",
            {"estimator": est, "agg": "token_mean"},
            run,
            cases(PAD + HOLES, ("mask", "logp", "logp_ref")),
        )

    def run(inp):
        lp = tt(inp["logp"], True)
        k = ca.kl_penalty(lp, tt(inp["logp_ref"]), "low_var_kl")
        return val_grad(ca.agg_loss(k, tt(inp["mask"]), "token-mean"), lp)

    pair(
        "verl",
        "kl_penalty('low_var_kl') + agg_loss('token-mean') (use_kl_loss)",
        where_fn(ca.kl_penalty),
        "kl.kl_penalty",
        "kl_penalty",
        {"estimator": "k3", "agg": "token_mean"},
        run,
        cases(PAD + HOLES, ("mask", "logp", "logp_ref")),
    )

    # KL in the reward, per token and summed
    def run(inp):
        m = inp["mask"]
        L = m.sum(1).astype(int)
        scores = np.zeros((B, T))
        scores[np.arange(B), np.maximum(L - 1, 0)] = inp["rewards"] * (L > 0)
        r = ca.compute_rewards(tt(scores), tt(inp["logp"]), tt(inp["logp_ref"]), 0.1)
        return val(r * tt(m))

    pair(
        "verl",
        "compute_rewards(kl_ratio=0.1)",
        where_fn(ca.compute_rewards),
        "critic.per_token_rewards",
        "per_token_rewards",
        {"beta": 0.1},
        run,
        cases(PAD + EMPTY, ("mask", "logp", "logp_ref", "rewards")),
    )

    # advantages
    def adv_run(fn, **kw):
        def run(inp):
            r = inp["rewards"]
            N, Kg = r.shape
            mask = np.ones((N * Kg, T))
            if "lengths" in inp:
                mask = (np.arange(T) < inp["lengths"].reshape(-1, 1)).astype(float)
            scores = np.zeros((N * Kg, T))
            Lr = mask.sum(1).astype(int)
            scores[np.arange(N * Kg), Lr - 1] = r.ravel()
            index = np.repeat(np.arange(N), Kg)
            a, _ = fn(token_level_rewards=tt(scores), response_mask=tt(mask), index=index, **kw)
            return val(a[:, 0].reshape(N, Kg))

        return run

    for Kg in (2, 4):
        pair(
            "verl",
            f"compute_grpo_outcome_advantage(norm_adv_by_std_in_grpo=True), K={Kg}",
            where_fn(ca.compute_grpo_outcome_advantage),
            "advantages.advantages",
            "advantages",
            {"baseline": "standardized", "std_eps": 1e-6, "ddof": 1},
            adv_run(ca.compute_grpo_outcome_advantage),
            reward_cases(Kg),
        )
    pair(
        "verl",
        "compute_grpo_outcome_advantage(norm_adv_by_std_in_grpo=False)",
        where_fn(ca.compute_grpo_outcome_advantage),
        "advantages.advantages",
        "advantages",
        {"baseline": "mean"},
        adv_run(ca.compute_grpo_outcome_advantage, norm_adv_by_std_in_grpo=False),
        reward_cases(4),
    )
    pair(
        "verl",
        "compute_grpo_vectorized_outcome_advantage",
        where_fn(ca.compute_grpo_vectorized_outcome_advantage),
        "advantages.advantages",
        "advantages",
        {"baseline": "standardized", "std_eps": 1e-6, "ddof": 1},
        adv_run(ca.compute_grpo_vectorized_outcome_advantage),
        reward_cases(4),
        tol=TOL_GROUP32[0],
        tol_why=TOL_GROUP32[1],
    )
    pair(
        "verl",
        "compute_grpo_outcome_advantage, K=1",
        where_fn(ca.compute_grpo_outcome_advantage),
        "advantages.advantages",
        "advantages",
        {"baseline": "standardized", "std_eps": 1e-6, "ddof": 1},
        adv_run(ca.compute_grpo_outcome_advantage),
        reward_cases(1, ties=False),
        diff="verl_k1",
    )
    for Kg in (2, 4):
        pair(
            "verl",
            f"compute_rloo_outcome_advantage, K={Kg}",
            where_fn(ca.compute_rloo_outcome_advantage),
            "advantages.advantages",
            "advantages",
            {"baseline": "loo"},
            adv_run(ca.compute_rloo_outcome_advantage),
            reward_cases(Kg),
        )
    pair(
        "verl",
        "compute_rloo_vectorized_outcome_advantage, K=4",
        where_fn(ca.compute_rloo_vectorized_outcome_advantage),
        "advantages.advantages",
        "advantages",
        {"baseline": "loo"},
        adv_run(ca.compute_rloo_vectorized_outcome_advantage),
        reward_cases(4),
    )
    pair(
        "verl",
        "compute_rloo_outcome_advantage, K=1",
        where_fn(ca.compute_rloo_outcome_advantage),
        "advantages.advantages",
        "advantages",
        {"baseline": "loo"},
        adv_run(ca.compute_rloo_outcome_advantage),
        reward_cases(1, ties=False),
        diff="verl_k1",
    )
    pair(
        "verl",
        "compute_opo_outcome_advantage, K=4",
        where_fn(ca.compute_opo_outcome_advantage),
        "advantages.opo",
        "opo",
        {},
        adv_run(ca.compute_opo_outcome_advantage),
        reward_cases(4),
    )
    pair(
        "verl",
        "compute_opo_outcome_advantage, K=1",
        where_fn(ca.compute_opo_outcome_advantage),
        "advantages.opo",
        "opo",
        {},
        adv_run(ca.compute_opo_outcome_advantage),
        reward_cases(1, ties=False),
        diff="verl_k1",
    )

    def run_remax(inp):
        r, g = inp["rewards"], inp["greedy"]
        N, Kg = r.shape
        mask = (np.arange(T) < inp["lengths"].reshape(-1, 1)).astype(float)
        scores = np.zeros((N * Kg, T))
        scores[np.arange(N * Kg), mask.sum(1).astype(int) - 1] = r.ravel()
        a, _ = ca.compute_remax_outcome_advantage(
            token_level_rewards=tt(scores), response_mask=tt(mask), reward_baselines=tt(np.repeat(g, Kg))
        )
        return val(a[:, 0].reshape(N, Kg))

    pair(
        "verl",
        "compute_remax_outcome_advantage",
        where_fn(ca.compute_remax_outcome_advantage),
        "advantages.remax",
        "remax",
        {},
        run_remax,
        reward_cases(4),
    )

    def rpp_bl(inp):
        r = inp["rewards"]
        N, Kg = r.shape
        mask = (np.arange(T) < inp["lengths"].reshape(-1, 1)).astype(float)
        scores = np.zeros((N * Kg, T))
        scores[np.arange(N * Kg), mask.sum(1).astype(int) - 1] = r.ravel()
        a, _ = ca.compute_reinforce_plus_plus_baseline_outcome_advantage(
            token_level_rewards=tt(scores), response_mask=tt(mask), index=np.repeat(np.arange(N), Kg)
        )
        return val(a)

    pair(
        "verl",
        "compute_reinforce_plus_plus_baseline_outcome_advantage, K=4",
        where_fn(ca.compute_reinforce_plus_plus_baseline_outcome_advantage),
        "advantages.reinforce_pp_baseline",
        "rpp_baseline",
        {},
        rpp_bl,
        reward_cases(4, ties=False),
        tol=TOL_WHITEN[0],
        tol_why=TOL_WHITEN[1],
    )
    pair(
        "verl",
        "compute_reinforce_plus_plus_baseline_outcome_advantage, K=1",
        where_fn(ca.compute_reinforce_plus_plus_baseline_outcome_advantage),
        "advantages.reinforce_pp_baseline",
        "rpp_baseline",
        {},
        rpp_bl,
        reward_cases(1, ties=False),
        diff="verl_k1",
    )

    for gamma in (1.0, 0.9):

        def run(inp, gamma=gamma):
            a, _ = ca.compute_reinforce_plus_plus_outcome_advantage(
                token_level_rewards=tt(inp["token_rewards"]),
                response_mask=tt(inp["mask"]),
                config=types.SimpleNamespace(gamma=gamma),
            )
            return val(a)

        pair(
            "verl",
            f"compute_reinforce_plus_plus_outcome_advantage(gamma={gamma})",
            where_fn(ca.compute_reinforce_plus_plus_outcome_advantage),
            "advantages.reinforce_pp",
            "rpp",
            {"gamma": gamma},
            run,
            cases(PAD + EMPTY, ("mask", "token_rewards")),
            tol=TOL_WHITEN[0],
            tol_why=TOL_WHITEN[1],
        )

    for gamma, lam in [(1.0, 1.0), (0.99, 0.95)]:

        def run(inp, gamma=gamma, lam=lam):
            a, ret = ca.compute_gae_advantage_return(
                tt(inp["token_rewards"]), tt(inp["values"]), tt(inp["mask"]), gamma, lam
            )
            return {"value": ret.numpy() * inp["mask"], "grad": a.numpy() * inp["mask"]}

        pair(
            "verl",
            f"compute_gae_advantage_return(gamma={gamma}, lam={lam})",
            where_fn(ca.compute_gae_advantage_return),
            "critic.td_errors + critic.gae; advantages.reinforce_pp",
            "gae_verl",
            {"gamma": gamma, "lam": lam},
            run,
            cases(PAD + EMPTY, ("mask", "token_rewards", "values")),
            tol=TOL_WHITEN[0],
            tol_why=TOL_WHITEN[1],
            note="value: the returns; grad slot: the whitened advantages",
        )

        def run_h(inp, gamma=gamma, lam=lam):
            _, ret = ca.compute_gae_advantage_return(
                tt(inp["token_rewards"]), tt(inp["values"]), tt(inp["mask"]), gamma, lam
            )
            return {"value": (ret.numpy() - inp["values"]) * inp["mask"]}

        pair(
            "verl",
            f"compute_gae_advantage_return(gamma={gamma}, lam={lam}), observation spans",
            where_fn(ca.compute_gae_advantage_return),
            "multiturn.values.gae_actions(carry=True)",
            "gae_actions",
            {"gamma": gamma, "lam": lam},
            run_h,
            cases(HOLES + [("holes5", 5, "holes")], ("mask", "hull", "token_rewards", "values")),
            note="returns - values: the GAE before whitening",
        )

    for clip in (0.5, 0.2):

        def run(inp, clip=clip):
            vp = tt(inp["vpreds"], True)
            loss, _ = ca.compute_value_loss(vp, tt(inp["returns"]), tt(inp["values"]), tt(inp["mask"]), clip)
            return val_grad(loss, vp)

        pair(
            "verl",
            f"compute_value_loss(cliprange_value={clip})",
            where_fn(ca.compute_value_loss),
            "critic.clipped_value_loss",
            "clipped_value_loss",
            {"clip": clip},
            run,
            cases(PAD + HOLES + EMPTY, ("mask", "vpreds", "values", "returns")),
        )

    def run_kl(inp):
        out = []
        for kl, n in inp["kl_steps"]:
            c = ca.AdaptiveKLController(0.001, 0.1, 10000)
            c.update(kl, n)
            out.append(c.value)
        return val(np.array(out))

    kl_case = [
        (
            "steps",
            "pad",
            {"kl_steps": np.array([[0.05, 256], [0.1, 256], [0.3, 1024], [0.11, 4096], [-0.2, 64], [0.5, 50000]])},
        )
    ]
    pair(
        "verl",
        "AdaptiveKLController(0.001, 0.1, 10000).update",
        where_fn(ca.AdaptiveKLController.update),
        "kl.adaptive_kl_coef",
        "adaptive_kl",
        {"beta": 0.001, "target_kl": 0.1, "horizon": 10000},
        run_kl,
        kl_case,
    )

    # rollout correction
    import verl.trainer.ppo.rollout_corr_helper as rc

    for level, thr in [("token", 2.0), ("sequence", 2.0), ("token", 1.5)]:

        def run(inp, level=level, thr=thr):
            w, _ = rc.compute_rollout_correction_weights(
                tt(inp["logp_old"] - inp["logp_mu"]), tt(inp["mask"]), level, thr
            )
            return val(w * tt(inp["mask"]))

        pair(
            "verl",
            f"compute_rollout_correction_weights(rollout_is={level!r}, threshold={thr})",
            where_fn(rc.compute_rollout_correction_weights),
            "offpolicy.is_weights",
            "is_weights",
            {"level": level, "mode": "truncate", "c_max": thr},
            run,
            cases(PAD + HOLES, ("mask", "logp_old", "logp_mu")),
        )

    for opt, thr, kw in [
        ("token_k1", "0.8_1.25", {"hi": 1.25, "lo": 0.8}),
        ("seq_mean_k1", 1.1, {"hi": 1.1}),
        ("seq_sum_k3", 0.1, {"hi": 0.1}),
        ("seq_max_k2", 0.05, {"hi": 0.05}),
        ("token_k3", 0.02, {"hi": 0.02}),
    ]:

        def run(inp, opt=opt, thr=thr):
            m, _ = rc.compute_rollout_rejection_mask(
                tt(inp["logp_old"] - inp["logp_mu"]), tt(inp["mask"]), opt, thr
            )
            return val(m * tt(inp["mask"]))

        pair(
            "verl",
            f"compute_rollout_rejection_mask({opt!r}, {thr!r})",
            where_fn(rc.compute_rollout_rejection_mask),
            "offpolicy.rejection_mask",
            "rejection_mask",
            {"option": opt, **kw},
            run,
            cases(PAD + HOLES, ("mask", "logp_old", "logp_mu")),
        )

    # DAPO: group filter and overlong penalty (extracted)
    def run_filter(inp):
        r = inp["rewards"]
        return val(np.array([extracted_verl_filter_groups(list(row)) for row in r]))

    fc = reward_cases(4) + [("binary", "pad", {"rewards": np.array([[1.0, 1, 1, 1], [0, 1, 0, 0], [0, 0, 0, 0]])})]
    pair(
        "verl",
        "ReplayBuffer DAPO group filter (std == 0)",
        where_text(vrb, "float(np.std(values)) == 0.0"),
        "shaping.filter_groups",
        "filter_groups",
        {},
        run_filter,
        fc,
        extracted=True,
    )

    def run_overlong(inp):
        return val(np.array([extracted_verl_overlong(L, 16, 4, 1.0) for L in inp["lengths"]]))

    pair(
        "verl",
        "DAPORewardManager overlong_buffer (max_resp_len=16, len=4, penalty_factor=1)",
        where_text(vdapo, "overlong_reward = min"),
        "shaping.overlong_penalty",
        "overlong",
        {"max_len": 16, "buffer_len": 4, "penalty_factor": 1.0},
        run_overlong,
        [("lengths", "pad", {"lengths": np.arange(0, 17).astype(float)})],
        extracted=True,
    )

    def run_ent(inp):
        z = tt(inp["theta"], True)
        H = vF.entropy_from_logits(z)
        H.sum().backward()
        return {"value": H.detach().numpy(), "grad": z.grad.numpy().copy()}

    ent_case = [
        (f"seed{s}", "pad", {"theta": np.random.default_rng(20 + s).normal(0, 2, (5, 7))}) for s in range(3)
    ]
    pair(
        "verl",
        "entropy_from_logits",
        where_fn(vF.entropy_from_logits),
        "entropy.entropy_table / entropy_grad_table",
        "entropy",
        {},
        run_ent,
        ent_case,
    )


def verl_more_pairs():
    import verl.trainer.ppo.core_algos as ca

    for mode, agg in [("token-mean", "token_mean"), ("seq-mean-token-mean", "seq_mean_token_mean")]:

        def run(inp, mode=mode):
            z = tt(inp["logits"], True)
            loss = -ca.compute_entropy_loss(z, tt(inp["mask"]), mode)  # the bonus enters the loss with a minus
            return val_grad(loss, z)

        ent = []
        for name, kind, c in cases(PAD + HOLES, ("mask",)):
            c["logits"] = np.random.default_rng(50 + len(ent)).normal(0.0, 2.0, (B, T, 5))
            ent.append((name, kind, c))
        pair(
            "verl",
            f"-compute_entropy_loss({mode!r})",
            where_fn(ca.compute_entropy_loss),
            "entropy.entropy_bonus",
            "entropy_bonus",
            {"agg": agg},
            run,
            ent,
            tol=TOL_EPS[0] if mode != "token-mean" else 1e-10,
            tol_why=TOL_EPS[1] if mode != "token-mean" else "",
            note="one table row per (b, t): theta = the logits, states = arange(B T)",
        )

    for gamma in (1.0, 0.9):

        def run(inp, gamma=gamma):
            _, ret = ca.compute_reinforce_plus_plus_outcome_advantage(
                token_level_rewards=tt(inp["token_rewards"]),
                response_mask=tt(inp["mask"]),
                config=types.SimpleNamespace(gamma=gamma),
            )
            return val(ret)

        pair(
            "verl",
            f"compute_reinforce_plus_plus_outcome_advantage(gamma={gamma}) returns, observation spans",
            where_fn(ca.compute_reinforce_plus_plus_outcome_advantage),
            "multiturn.values.returns_actions(carry=True)",
            "returns_actions",
            {"gamma": gamma},
            run,
            cases(HOLES + [("holes5", 5, "holes")] + PAD[:1], ("mask", "hull", "token_rewards")),
        )


def extracted_verl_filter_groups(values):
    """verl/trainer/ppo/v1/replay_buffer.py (ReplayBuffer._classify_dapo_groups, the line holding
    `float(np.std(values)) == 0.0`): a group is filtered out (True here means kept) when it has more than one
    value and their std is 0."""
    filtered = len(values) > 1 and float(np.std(values)) == 0.0
    return not filtered


def extracted_verl_overlong(valid_response_length, max_resp_len, overlong_buffer_len, penalty_factor):
    """verl/workers/reward_manager/dapo.py (DAPORewardManager.__call__, the lines from
    `overlong_buffer_len = self.overlong_buffer_cfg.len`)."""
    expected_len = max_resp_len - overlong_buffer_len
    exceed_len = valid_response_length - expected_len
    overlong_reward = min(-exceed_len / overlong_buffer_len * penalty_factor, 0)
    return overlong_reward


# ============================================================================================== OpenRLHF
def openrlhf_pairs():
    import openrlhf.models.loss as ol
    import openrlhf.models.utils as ou
    import openrlhf.trainer.ppo_utils.experience_maker as em
    import openrlhf.trainer.ppo_utils.kl_controller as okl
    import openrlhf.trainer.ppo_utils.length_penalty as olp

    for kw, mini, replay, conf in [
        ({}, "clip.clipped_surrogate", "clipped", {"eps": 0.2, "agg": "token_mean"}),
        (
            {"clip_eps_high": 0.28},
            "clip.clipped_surrogate",
            "clipped",
            {"eps": 0.2, "eps_high": 0.28, "agg": "token_mean"},
        ),
        (
            {"dual_clip": 3.0},
            "seqclip.dual_clip_surrogate",
            "dual_clip",
            {"eps": 0.2, "c": 3.0, "agg": "token_mean"},
        ),
        (
            {"dual_clip": 3.0, "clip_eps_high": 0.28},
            "seqclip.dual_clip_surrogate",
            "dual_clip",
            {"eps": 0.2, "eps_high": 0.28, "c": 3.0, "agg": "token_mean"},
        ),
        (
            {"token_level_loss": False},
            "clip.clipped_surrogate",
            "clipped",
            {"eps": 0.2, "agg": "seq_mean_token_mean"},
        ),
        ({"policy_loss_type": "gspo"}, "seqclip.gspo_surrogate", "gspo", {"eps": 0.2}),
        (
            {"policy_loss_type": "gspo", "clip_eps_low": 3e-4, "clip_eps_high": 4e-4},
            "seqclip.gspo_surrogate",
            "gspo",
            {"eps": 3e-4, "eps_high": 4e-4},
        ),
    ]:

        def run(inp, kw=kw):
            lp = tt(inp["logp"], True)
            loss = ol.PolicyLoss(**kw)(lp, tt(inp["logp_old"]), adv_bt(inp), tt(inp["mask"]))[0]
            return val_grad(loss, lp)

        seq = kw.get("token_level_loss") is False or "policy_loss_type" in kw
        tol = TOL_EPS if seq else (1e-10, "")
        name = f"PolicyLoss({', '.join(f'{k}={v!r}' for k, v in kw.items())})"
        pair(
            "OpenRLHF",
            name,
            where_fn(ol.PolicyLoss.forward),
            mini,
            replay,
            conf,
            run,
            cases(PAD + HOLES + ([] if seq else EMPTY), TOK),
            tol=tol[0],
            tol_why=tol[1],
        )
        if seq:
            pair(
                "OpenRLHF",
                name,
                where_fn(ol.aggregate_loss),
                mini,
                replay,
                conf,
                run,
                cases(EMPTY, TOK),
                tol=tol[0],
                tol_why=tol[1],
                diff="nonempty_rows",
            )

    # train/rollout correction inside PolicyLoss
    for kw, replay, conf in [
        (
            {"is_correction_level": "token", "is_correction_mode": "clip", "is_correction_threshold": (0.5, 1.2)},
            "clipped_is",
            {"level": "token", "mode": "truncate", "c_max": 1.2, "c_min": 0.5},
        ),
        (
            {"is_correction_level": "token", "is_correction_mode": "mask", "is_correction_threshold": (0.8, 1.25)},
            "clipped_is",
            {"level": "token", "mode": "mask", "c_max": 1.25, "c_min": 0.8},
        ),
        (
            {"is_correction_level": "seq", "is_correction_mode": "mask", "is_correction_threshold": (0.9, 1.1)},
            "clipped_seqmask",
            {"hi": 1.0 / 0.9, "lo": 1.0 / 1.1},
        ),
    ]:

        def run(inp, kw=kw):
            lp = tt(inp["logp"], True)
            loss = ol.PolicyLoss(**kw)(
                lp, tt(inp["logp_old"]), adv_bt(inp), tt(inp["mask"]), rollout_log_probs=tt(inp["logp_mu"])
            )[0]
            return val_grad(loss, lp)

        name = f"PolicyLoss({', '.join(f'{k}={v!r}' for k, v in kw.items())})"
        mini = (
            "offpolicy.is_weights + clip.clipped_surrogate"
            if replay == "clipped_is"
            else "offpolicy.rejection_mask('seq_mean_k1') x is_weights('token') + clip.clipped_surrogate"
        )
        pair(
            "OpenRLHF",
            name,
            where_fn(ol.PolicyLoss.forward),
            mini,
            replay,
            {"eps": 0.2, **conf},
            run,
            cases(PAD + HOLES, TOK + ("logp_mu",)),
        )

    for token_level in (True, False):

        def run(inp, token_level=token_level):
            lp = tt(inp["logp"], True)
            return val_grad(ol.aggregate_loss(-adv_bt(inp) * lp, tt(inp["mask"]), token_level), lp)

        agg = "token_mean" if token_level else "seq_mean_token_mean"
        tol = (1e-10, "") if token_level else TOL_EPS
        pair(
            "OpenRLHF",
            f"aggregate_loss(token_level_loss={token_level})",
            where_fn(ol.aggregate_loss),
            "reinforce.reinforce_loss",
            "reinforce_loss",
            {"agg": agg},
            run,
            cases(PAD + HOLES + (EMPTY if token_level else []), ("mask", "logp", "adv")),
            tol=tol[0],
            tol_why=tol[1],
        )

    for clip in (0.2, None):

        def run(inp, clip=clip):
            vp = tt(inp["vpreds"], True)
            return val_grad(ol.ValueLoss(clip)(vp, tt(inp["values"]), tt(inp["returns"]), tt(inp["mask"])), vp)

        pair(
            "OpenRLHF",
            f"ValueLoss(clip_eps={clip})",
            where_fn(ol.ValueLoss.forward),
            "critic.clipped_value_loss" if clip else "critic.value_loss",
            "clipped_value_loss" if clip else "value_loss",
            {"clip": clip} if clip else {},
            run,
            cases(PAD + HOLES + EMPTY, ("mask", "vpreds", "values", "returns")),
        )

    for kw, variant in [
        ({"beta": 0.1}, {"variant": "dpo", "beta": 0.1}),
        ({"beta": 0.5}, {"variant": "dpo", "beta": 0.5}),
        ({"beta": 0.1, "label_smoothing": 0.1}, {"variant": "conservative", "beta": 0.1, "label_smoothing": 0.1}),
        ({"beta": 0.1, "ipo": True}, {"variant": "ipo", "beta": 0.1}),
    ]:

        def run(inp, kw=kw):
            c, r = tt(inp["seq_c"], True), tt(inp["seq_r"], True)
            loss = ol.DPOLoss(**kw)(c, r, tt(inp["seq_ref_c"]), tt(inp["seq_ref_r"]))[0]
            return val_grad(loss, c, r)

        pair(
            "OpenRLHF",
            f"DPOLoss({', '.join(f'{k}={v}' for k, v in kw.items())})",
            where_fn(ol.DPOLoss.forward),
            "dpo.dpo_loss",
            "dpo",
            variant,
            run,
            pref_cases(),
        )

    for cls in (ol.PairWiseLoss, ol.LogExpLoss):

        def run(inp, cls=cls):
            c, r = tt(inp["seq_c"], True), tt(inp["seq_r"], True)
            return val_grad(cls()(c, r), c, r)

        pair(
            "OpenRLHF",
            f"{cls.__name__}",
            where_fn(cls.forward),
            "dpo.bradley_terry_loss",
            "bradley_terry",
            {},
            run,
            pref_cases(),
            note="the rewards of the chosen and rejected responses are the seq_c, seq_r arrays",
        )

    for est in ("k1", "k2", "k3"):

        def run(inp, est=est):
            lp = tt(inp["logp"], True)
            k = ou.compute_approx_kl(lp, tt(inp["logp_ref"]), kl_estimator=est) * tt(inp["mask"])
            k.sum().backward()
            return {"value": k.detach().numpy(), "grad": lp.grad.numpy().copy()}

        pair(
            "OpenRLHF",
            f"compute_approx_kl(kl_estimator={est!r})",
            where_fn(ou.compute_approx_kl),
            "kl.kl_per_token",
            "kl_per_token",
            {"estimator": est},
            run,
            cases(PAD + HOLES + EMPTY, ("mask", "logp", "logp_ref")),
            tol=TOL_F32[0],
            tol_why=TOL_F32[1],
        )

    for est in ("k1", "k3"):

        def run(inp, est=est):
            lp = tt(inp["logp"], True)
            k = ou.compute_approx_kl(lp, tt(inp["logp_ref"]), kl_estimator=est, unbiased_gradient=True)
            return val_grad(ou.masked_mean(k, tt(inp["mask"])), lp)

        pair(
            "OpenRLHF",
            f"compute_approx_kl({est!r}, unbiased_gradient=True) + masked_mean",
            where_fn(ou.compute_approx_kl),
            "kl.kl_penalty_straight_through",
            "kl_straight_through",
            {"estimator": est, "agg": "token_mean"},
            run,
            cases(PAD + HOLES, ("mask", "logp", "logp_ref")),
            tol=TOL_F32[0],
            tol_why=TOL_F32[1],
        )

    def run(inp):
        kl = ou.compute_approx_kl(tt(inp["logp"]), tt(inp["logp_ref"]), kl_estimator="k1")
        r = ou.compute_reward(tt(inp["rewards"]), 0.1, kl, action_mask=tt(inp["mask"]))
        return val(r * tt(inp["mask"]))

    pair(
        "OpenRLHF",
        "compute_reward(kl_coef=0.1) with compute_approx_kl('k1')",
        where_fn(ou.compute_reward),
        "critic.per_token_rewards",
        "per_token_rewards",
        {"beta": 0.1},
        run,
        cases(PAD, ("mask", "logp", "logp_ref", "rewards")),
        tol=TOL_F32[0],
        tol_why=TOL_F32[1],
    )

    maker = em.RemoteExperienceMaker.__new__(em.RemoteExperienceMaker)  # methods only; no __init__ (Ray actors)
    for gamma, lam in [(1.0, 1.0), (0.99, 0.95)]:

        def run(inp, gamma=gamma, lam=lam):
            a, ret = maker.get_advantages_and_returns(
                tt(inp["values"]), tt(inp["token_rewards"]), tt(inp["mask"]), gamma, lam
            )
            return {"value": ret.numpy() * inp["mask"], "grad": a.numpy() * inp["mask"]}

        pair(
            "OpenRLHF",
            f"get_advantages_and_returns(gamma={gamma}, lambd={lam})",
            where_fn(em.RemoteExperienceMaker.get_advantages_and_returns),
            "critic.td_errors + critic.gae",
            "gae_openrlhf",
            {"gamma": gamma, "lam": lam},
            run,
            cases(PAD + EMPTY, ("mask", "token_rewards", "values")),
            note="value: the returns; grad slot: the advantages (unwhitened)",
        )
    for gamma in (1.0, 0.9):

        def run(inp, gamma=gamma):
            return val(
                maker.get_cumulative_returns(tt(inp["token_rewards"]), tt(inp["mask"]), gamma) * tt(inp["mask"])
            )

        pair(
            "OpenRLHF",
            f"get_cumulative_returns(gamma={gamma})",
            where_fn(em.RemoteExperienceMaker.get_cumulative_returns),
            "critic.monte_carlo_returns",
            "mc_returns",
            {"gamma": gamma},
            run,
            cases(PAD + EMPTY, ("mask", "token_rewards")),
        )

    here = where_text(em, 'if args.algo.advantage.estimator == "rloo":')
    for est, replay, conf in [
        ("rloo", "advantages", {"baseline": "loo"}),
        ("reinforce_baseline", "advantages", {"baseline": "mean"}),
        ("dr_grpo", "advantages", {"baseline": "mean"}),
        ("group_norm", "advantages", {"baseline": "standardized", "std_eps": 1e-9, "ddof": 1}),
    ]:

        def run(inp, est=est):
            return val(extracted_openrlhf_baseline(tt(inp["rewards"]), est))

        pair(
            "OpenRLHF",
            f"compute_advantages_and_returns baseline (estimator={est!r})",
            here,
            "advantages.advantages",
            replay,
            conf,
            run,
            reward_cases(4),
            extracted=True,
        )

    wh = where_text(em, "# ── Normalize advantages across all experiences ──")

    def run(inp):
        r = inp["rewards"]
        mask = (np.arange(T) < inp["lengths"].reshape(-1, 1)).astype(float)
        c = extracted_openrlhf_baseline(tt(r), "reinforce_baseline").reshape(-1, 1) * tt(mask)
        return val(extracted_openrlhf_whiten(c, tt(mask)) * tt(mask))

    pair(
        "OpenRLHF",
        "compute_advantages_and_returns (estimator='reinforce_baseline'), whitened",
        wh,
        "advantages.reinforce_pp_baseline",
        "rpp_baseline",
        {"std_eps": 0.0, "ddof": 0},
        run,
        reward_cases(4, ties=False),
        extracted=True,
        tol=TOL_F32[0],
        tol_why=TOL_F32[1],
    )

    def run(inp):
        G = maker.get_cumulative_returns(tt(inp["token_rewards"]), tt(inp["mask"]), 1.0)
        return val(extracted_openrlhf_whiten(G, tt(inp["mask"])) * tt(inp["mask"]))

    pair(
        "OpenRLHF",
        "compute_advantages_and_returns (estimator='reinforce'), whitened",
        wh,
        "advantages.reinforce_pp",
        "rpp",
        {"gamma": 1.0, "std_eps": 0.0, "ddof": 0},
        run,
        cases(PAD + EMPTY, ("mask", "token_rewards")),
        extracted=True,
        tol=TOL_F32[0],
        tol_why=TOL_F32[1],
    )

    def run(inp):
        out = []
        for kl, n in inp["kl_steps"]:
            c = okl.AdaptiveKLController(0.01, 6.0, 10000)
            c.update(kl, n)
            out.append(c.value)
        return val(np.array(out))

    kl_case = [("steps", "pad", {"kl_steps": np.array([[3.0, 256], [6.0, 256], [9.0, 1024], [6.5, 4096]])})]
    pair(
        "OpenRLHF",
        "AdaptiveKLController(0.01, 6.0, 10000).update",
        where_fn(okl.AdaptiveKLController.update),
        "kl.adaptive_kl_coef",
        "adaptive_kl",
        {"beta": 0.01, "target_kl": 6.0, "horizon": 10000},
        run,
        kl_case,
    )

    def run(inp):
        L = inp["lengths"]
        exp_ = types.SimpleNamespace(response_length=torch.tensor(L), rewards=torch.zeros(len(L)))
        olp.apply_overlong_penalty([exp_], 16, 4, 1.0)
        return val(exp_.rewards)

    pair(
        "OpenRLHF",
        "apply_overlong_penalty(max_new_tokens=16, overlong_buffer_len=4)",
        where_fn(olp.apply_overlong_penalty),
        "shaping.overlong_penalty",
        "overlong",
        {"max_len": 16, "buffer_len": 4, "penalty_factor": 1.0},
        run,
        [("lengths", "pad", {"lengths": np.arange(0, 17).astype(float)})],
    )


def extracted_openrlhf_baseline(rewards, estimator):
    """openrlhf/trainer/ppo_utils/experience_maker.py (RemoteExperienceMaker.compute_advantages_and_returns,
    the branch from `if args.algo.advantage.estimator == "rloo":`); `rewards` is (N, K)."""
    n = rewards.shape[1]
    if estimator == "rloo":
        baseline = (rewards.sum(-1, keepdim=True) - rewards) / (n - 1)
        rewards = rewards - baseline
    elif estimator in ["reinforce_baseline", "dr_grpo"]:
        rewards = rewards - rewards.mean(-1, keepdim=True)
    elif estimator == "group_norm":
        rewards = (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-9)
    return rewards


def extracted_openrlhf_whiten(advantages, action_mask):
    """openrlhf/trainer/ppo_utils/experience_maker.py (the block under `# ── Normalize advantages across all
    experiences ──`), one experience: the token mean and the population variance over the batch, in float32."""
    all_advantages = advantages.flatten().float()
    all_action_masks = action_mask.flatten()
    num_actions = all_action_masks.sum()
    mean = (all_advantages * all_action_masks).sum() / num_actions
    var = ((all_advantages - mean).pow(2) * all_action_masks).sum() / num_actions
    rstd = var.clamp(min=1e-8).rsqrt()
    return (advantages - mean) * rstd


def pref_cases(P=5, equal=False):
    out = []
    for s in range(3):
        rng = np.random.default_rng(30 + s)
        Lc = np.full(P, T) if equal else rng.integers(1, T + 1, P)
        Lr = rng.integers(1, T + 1, P)
        mc = (np.arange(T) < Lc[:, None]).astype(float)
        mr = (np.arange(T) < Lr[:, None]).astype(float)
        lc = np.where(mc > 0, -rng.exponential(0.3, (P, T)), rng.normal(0, 30, (P, T)))
        lr = np.where(mr > 0, -rng.exponential(0.3, (P, T)), rng.normal(0, 30, (P, T)))
        ref_c = np.where(mc > 0, lc, 0).sum(1) + rng.normal(0, 0.5, P)
        ref_r = np.where(mr > 0, lr, 0).sum(1) + rng.normal(0, 0.5, P)
        out.append(
            (
                f"seed{s}",
                "pad",
                {
                    "logp_c": lc,
                    "mask_c": mc,
                    "logp_r": lr,
                    "mask_r": mr,
                    "seq_c": np.where(mc > 0, lc, 0).sum(1),
                    "seq_r": np.where(mr > 0, lr, 0).sum(1),
                    "seq_ref_c": ref_c,
                    "seq_ref_r": ref_r,
                },
            )
        )
    return out


# =================================================================================================== TRL
class _Accel:
    num_processes = 1
    sync_gradients = True
    device = "cpu"

    def gather(self, x):
        return x

    def gather_for_metrics(self, x):
        return x

    def reduce(self, x, reduction="sum"):
        return x


def trl_self(**kw):
    """A stand-in `self` for GRPOTrainer._compute_loss: the attributes it reads, and a model whose forward
    returns the given per-token log-probs (the tensor the gradient is taken with respect to)."""
    args = types.SimpleNamespace(
        use_bias_correction_kl=kw.pop("use_bias_correction_kl", False),
        delta=kw.pop("delta", None),
        steps_per_generation=kw.pop("steps_per_generation", 1),
        sapo_temperature_pos=kw.pop("sapo_temperature_pos", 1.0),
        sapo_temperature_neg=kw.pop("sapo_temperature_neg", 1.05),
        vespo_k_pos=kw.pop("vespo_k_pos", 2.0),
        vespo_lambda_pos=kw.pop("vespo_lambda_pos", 3.0),
        vespo_k_neg=kw.pop("vespo_k_neg", 3.0),
        vespo_lambda_neg=kw.pop("vespo_lambda_neg", 2.0),
    )
    s = types.SimpleNamespace(
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        importance_sampling_level="token",
        beta=0.0,
        loss_type="grpo",
        epsilon_low=0.2,
        epsilon_high=0.2,
        use_vllm=False,
        vllm_importance_sampling_correction=False,
        model=types.SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1,
        accelerator=_Accel(),
        max_completion_length=T,
        _entropy_bonus_enabled=False,
        aux_loss_enabled=False,
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
        args=args,
    )
    for k, v in kw.items():
        setattr(s, k, v)
    return s


def trl_loss(s, lp, inp, rows=None, num_items=None, mask_key="mask", entropies=None):
    """GRPOTrainer._compute_loss, unbound, on `rows`; the model returns `lp` and `entropies` (default 0)."""
    from trl.trainer.grpo_trainer import GRPOTrainer

    rows = np.arange(B) if rows is None else rows
    m = inp[mask_key][rows]
    hull = inp.get("hull", inp[mask_key])[rows]
    sub = lp[rows]
    ent = torch.zeros_like(sub) if entropies is None else tt(entropies[rows])
    s._get_per_token_logps_and_entropies = lambda *a, **k: (sub, ent, None)
    s.get_gamma_weights = GRPOTrainer.get_gamma_weights  # VESPO's weight, a static method
    inputs = {
        "prompt_ids": torch.zeros((len(rows), 1), dtype=torch.long),
        "prompt_mask": torch.ones(len(rows), 1),
        "completion_ids": torch.zeros((len(rows), T), dtype=torch.long),
        "completion_mask": tt(hull),
        "advantages": tt(inp["adv"][rows]),
        "old_per_token_logps": tt(inp["logp_old"][rows]),
        "ref_per_token_logps": tt(inp["logp_ref"][rows]),
        "num_items_in_batch": tt(inp[mask_key].sum() if num_items is None else num_items),
    }
    if not np.array_equal(hull, m):
        inputs["tool_mask"] = tt(m)
    return GRPOTrainer._compute_loss(s, None, inputs)


def trl_pairs():
    from trl.experimental.cpo.cpo_trainer import CPOTrainer
    from trl.experimental.orpo.orpo_trainer import ORPOTrainer
    from trl.trainer import grpo_trainer as gt
    from trl.trainer import rloo_trainer as rt
    from trl.trainer.grpo_trainer import GRPOTrainer

    loss_where = where_fn(GRPOTrainer._compute_loss)
    toks = TOK + ("logp_ref", "hull")
    grid = [
        ({"loss_type": "grpo"}, "clipped", {"eps": 0.2, "agg": "seq_mean_token_mean"}, None),
        (
            {"loss_type": "grpo", "epsilon_high": 0.28},
            "clipped",
            {"eps": 0.2, "eps_high": 0.28, "agg": "seq_mean_token_mean"},
            None,
        ),
        ({"loss_type": "bnpo"}, "clipped", {"eps": 0.2, "agg": "token_mean"}, None),
        (
            {"loss_type": "dr_grpo", "max_completion_length": 12},
            "clipped",
            {"eps": 0.2, "agg": "constant", "max_len": 12},
            None,
        ),
        ({"loss_type": "dapo"}, "clipped", {"eps": 0.2, "agg": "token_mean"}, None),
        (
            {"loss_type": "dapo", "epsilon_high": 0.28},
            "clipped",
            {"eps": 0.2, "eps_high": 0.28, "agg": "token_mean"},
            None,
        ),
        ({"loss_type": "luspo"}, "clipped", {"eps": 0.2, "agg": "seq_sum"}, None),
        ({"loss_type": "cispo", "epsilon_high": 5.0}, "cispo", {"rho_max": 5.0, "agg": "token_mean"}, None),
        ({"loss_type": "cispo", "epsilon_high": 1.5}, "cispo", {"rho_max": 1.5, "agg": "token_mean"}, None),
        (
            {"loss_type": "cispo", "epsilon_high": 0.28},
            "cispo",
            {"rho_max": 0.28, "agg": "token_mean"},
            "trl_cispo_cap",
        ),
        (
            {"loss_type": "grpo", "beta": 0.04},
            "clipped_kl",
            {"eps": 0.2, "agg": "seq_mean_token_mean", "beta": 0.04},
            None,
        ),
        ({"loss_type": "dapo", "beta": 0.04}, "clipped_kl", {"eps": 0.2, "agg": "token_mean", "beta": 0.04}, None),
        (
            {"loss_type": "grpo", "beta": 0.04, "use_bias_correction_kl": True},
            "clipped_kl_is",
            {"eps": 0.2, "agg": "seq_mean_token_mean", "beta": 0.04},
            None,
        ),
        (
            {"loss_type": "dapo", "beta": 0.04, "use_bias_correction_kl": True},
            "clipped_kl_is",
            {"eps": 0.2, "agg": "token_mean", "beta": 0.04},
            None,
        ),
        (
            {"loss_type": "grpo", "delta": 3.0},
            "dual_clip",
            {"eps": 0.2, "c": 3.0, "agg": "seq_mean_token_mean"},
            None,
        ),
        (
            {"loss_type": "dapo", "delta": 2.5, "epsilon_high": 0.28},
            "dual_clip",
            {"eps": 0.2, "eps_high": 0.28, "c": 2.5, "agg": "token_mean"},
            None,
        ),
        ({"loss_type": "grpo", "importance_sampling_level": "sequence"}, "gspo", {"eps": 0.2}, None),
        (
            {
                "loss_type": "grpo",
                "importance_sampling_level": "sequence",
                "epsilon_low": 3e-4,
                "epsilon_high": 4e-4,
            },
            "gspo",
            {"eps": 3e-4, "eps_high": 4e-4},
            None,
        ),
        (
            {
                "loss_type": "grpo",
                "importance_sampling_level": "sequence",
                "beta": 0.04,
                "use_bias_correction_kl": True,
            },
            "gspo_kl_is",
            {"eps": 0.2, "beta": 0.04},
            "trl_seq_bias_kl",
        ),
    ]
    minis = {
        "clipped": "clip.clipped_surrogate",
        "cispo": "seqclip.cispo_loss",
        "clipped_kl": "clip.clipped_surrogate + beta kl.kl_penalty('k3')",
        "clipped_kl_is": "clip.clipped_surrogate + beta kl.kl_penalty_is",
        "dual_clip": "seqclip.dual_clip_surrogate",
        "gspo": "seqclip.gspo_surrogate",
        "gspo_kl_is": "seqclip.gspo_surrogate + beta kl.kl_penalty_is",
    }
    for kw, replay, conf, diff in grid:

        def run(inp, kw=kw):
            lp = tt(inp["logp"], True)
            return val_grad(trl_loss(trl_self(**kw), lp, inp), lp)

        name = f"GRPOTrainer._compute_loss({', '.join(f'{k}={v!r}' for k, v in kw.items())})"
        pair(
            "TRL", name, loss_where, minis[replay], replay, conf, run, cases(PAD + EMPTY + HOLES, toks), diff=diff
        )

    # gradient accumulation: G micro-batches, one backward each, summed (at rho = 1: the weights times -A)
    for lt, G in [("dapo", 2), ("bnpo", 2), ("grpo", 3), ("dr_grpo", 2)]:

        def run(inp, lt=lt, G=G):
            lp = tt(inp["logp_old"], True)
            for rows in np.array_split(np.arange(B), G):
                s = trl_self(loss_type=lt, current_gradient_accumulation_steps=G, steps_per_generation=G)
                trl_loss(
                    s,
                    lp,
                    {**inp, "logp_old": inp["logp_old"]},
                    rows=rows,
                    num_items=extracted_trl_num_items(inp["mask"]),
                ).backward()
            return {"value": np.float64(0.0), "grad": lp.grad.numpy().copy()}

        pair(
            "TRL",
            f"GRPOTrainer._compute_loss(loss_type={lt!r}) over {G} accumulated micro-batches (num_items_in_batch)",
            where_text(gt, "num_items_in_batch = self.accelerator.gather(loss_mask.sum())"),
            "offpolicy.accumulation_weights",
            "accumulation",
            {"G": G, "mode": lt, "max_len": T},
            run,
            cases(PAD + EMPTY + HOLES, TOK + ("logp_ref", "hull")),
            extracted=True,
            note="value slot unused; grad: the summed gradient at rho = 1",
        )

    def run(inp):
        return val(
            gt.GRPOTrainer.get_off_policy_mask(
                adv_bt(inp)[:, :1], tt(inp["logp"]), tt(inp["logp_mu"]), tt(inp["mask"]), 0.05
            )
            * tt(inp["mask"])
        )

    pair(
        "TRL",
        "GRPOTrainer.get_off_policy_mask(off_policy_threshold=0.05)",
        where_fn(gt.GRPOTrainer.get_off_policy_mask),
        "offpolicy.off_policy_sequence_mask",
        "opsm",
        {"delta": 0.05},
        run,
        cases(PAD + EMPTY + HOLES, ("mask", "logp", "logp_mu", "adv")),
    )

    adv_where = where_text(gt, 'elif self.scale_rewards == "batch":')
    for scale, replay, conf in [
        ("group", "advantages", {"baseline": "standardized", "std_eps": 1e-4, "ddof": 1}),
        ("none", "advantages", {"baseline": "mean"}),
        ("batch", "batch_std", {"std_eps": 1e-4, "ddof": 1}),
    ]:

        def run(inp, scale=scale):
            return val(extracted_trl_advantages(tt(inp["rewards"]), scale))

        pair(
            "TRL",
            f"GRPOTrainer advantages (scale_rewards={scale!r})",
            adv_where,
            "advantages." + ("batch_std" if scale == "batch" else "advantages"),
            replay,
            conf,
            run,
            reward_cases(4),
            extracted=True,
        )

    def run(inp):
        r = inp["rewards"]
        return val(
            extracted_trl_rloo(
                tt(r.ravel()), tt(inp["logp_old"]), tt(inp["logp_ref"]), tt(inp["mask"]), 0.05, r.shape[1]
            )
        )

    rc_ = []
    for name, kind, c in cases(PAD + EMPTY, ("mask", "logp_old", "logp_ref")):
        c["rewards"] = np.random.default_rng(len(rc_)).normal(0, 1, (2, 3))
        rc_.append((name, kind, c))
    pair(
        "TRL",
        "RLOOTrainer advantages with the KL in the reward (beta=0.05)",
        where_text(rt, "per_token_kl = old_per_token_logps - ref_per_token_logps"),
        "kl.kl_in_reward + advantages.advantages('loo')",
        "rloo_kl",
        {"beta": 0.05},
        run,
        rc_,
        extracted=True,
    )

    def run(inp):
        return val(extracted_trl_mask_truncated(inp["tokens"], tt(inp["mask"]), [2], 0))

    mt = []
    for s in range(3):
        rng = np.random.default_rng(40 + s)
        L = rng.integers(0, T + 1, B)
        L[0] = T
        mask = (np.arange(T) < L[:, None]).astype(float)
        tokens = rng.integers(3, 9, (B, T))
        ends = rng.integers(0, 2, B).astype(bool)
        tokens[np.arange(B), np.maximum(L - 1, 0)] = np.where(ends, 2, tokens[np.arange(B), np.maximum(L - 1, 0)])
        tokens = np.where(mask > 0, tokens, 0)
        mt.append((f"seed{s}", "pad", {"tokens": tokens.astype(float), "mask": mask}))
    pair(
        "TRL",
        "GRPOTrainer mask_truncated_completions (eos=2, pad=0)",
        where_text(gt, "if self.mask_truncated_completions:"),
        "shaping.mask_truncated",
        "mask_truncated",
        {"eos": 2},
        run,
        mt,
        extracted=True,
    )

    from trl.trainer.dpo_trainer import DPOTrainer

    for lt, beta, replay, conf in [
        ("sigmoid", 0.1, "dpo_tokens", {"variant": "dpo", "beta": 0.1}),
        ("sigmoid", 0.5, "dpo_tokens", {"variant": "dpo", "beta": 0.5}),
        ("ipo", 0.1, "ipo_avg", {"beta": 0.1}),
        ("ipo", 0.5, "ipo_avg", {"beta": 0.5}),
    ]:

        def run(inp, lt=lt, beta=beta):
            lc, lr = tt(inp["logp_c"], True), tt(inp["logp_r"], True)
            return val_grad(trl_dpo_loss(DPOTrainer, lt, beta, lc, lr, inp), lc, lr)

        pair(
            "TRL",
            f"DPOTrainer._compute_loss(loss_type={lt!r}, beta={beta})",
            where_fn(DPOTrainer._compute_loss),
            "preferences.ipo_loss(average=True)" if lt == "ipo" else "dpo.dpo_loss",
            replay,
            conf,
            run,
            pref_cases(),
        )

    from trl.trainer.kto_trainer import KTOTrainer

    for beta, wd, wu, calc in [
        (0.1, 1.0, 1.0, False),
        (0.5, 1.33, 1.0, False),
        (0.1, 1.0, 1.0, True),
        (0.5, 1.0, 1.5, True),
    ]:

        def run(inp, beta=beta, wd=wd, wu=wu, calc=calc):
            lp = tt(inp["logp"], True)
            loss, z0 = trl_kto_loss(KTOTrainer, beta, wd, wu, calc, lp, inp)
            inp["z0"] = np.float64(z0)  # recorded as an input: the reference point TRL computed (0 without KL)
            return val_grad(loss, lp)

        kc = []
        for s_ in range(3):
            c = token_case(60 + s_, "pad")
            rng = np.random.default_rng(70 + s_)
            kc.append(
                (
                    f"seed{s_}",
                    "pad",
                    {
                        "logp": np.where(c["mask"] > 0, -np.abs(c["logp"]), c["logp"]),
                        "mask": c["mask"],
                        "seq_ref": np.where(c["mask"] > 0, c["logp_ref"], 0).sum(1),
                        "desirable": np.array([1.0, 0, 1, 1, 0, 0]),
                        "kl_logp": rng.normal(-2.5, 0.5, B),
                        "kl_ref": rng.normal(-3.3, 0.5, B),
                    },
                )
            )
        pair(
            "TRL",
            f"KTOTrainer._compute_loss(beta={beta}, desirable_weight={wd}, "
            f"undesirable_weight={wu}, calculate_KL={calc})",
            where_fn(KTOTrainer._compute_loss),
            "preferences.kto_loss",
            "kto",
            {"beta": beta, "lambda_d": wd, "lambda_u": wu},
            run,
            kc,
            note="z0 (TRL's detached, clamped KL estimate on mismatched pairs) is read from the trainer's metrics",
        )

    for lt, beta in [("sigmoid", 0.1), ("ipo", 0.1)]:

        def run(inp, lt=lt, beta=beta):
            lp = tt(inp["logp"], True)
            return val_grad(
                extracted_trl_online_dpo(lp, tt(inp["logp_ref"]), tt(inp["mask"]), tt(inp["rewards"]), lt, beta),
                lp,
            )

        oc = []
        for name, kind, c in cases(PAD + EMPTY, ("mask", "logp", "logp_ref")):
            c["rewards"] = np.round(np.random.default_rng(80 + len(oc)).normal(0, 1, B), 1)
            c["rewards"][0] = c["rewards"][3]  # a tie: TRL takes the first completion as chosen
            oc.append((name, kind, c))
        pair(
            "TRL",
            f"OnlineDPOTrainer.training_step loss (loss_type={lt!r}, beta={beta}), labels from rewards",
            where_text("trl/experimental/online_dpo/online_dpo_trainer.py", "mask = first_half >= second_half"),
            "dpo.dpo_loss on TRL's labels",
            "online_dpo",
            {"variant": "dpo" if lt == "sigmoid" else "ipo", "beta": beta},
            run,
            oc,
            extracted=True,
        )

    # preference losses: CPO (SimPO, sigmoid, IPO), ORPO
    for lt, extra, replay, conf in [
        ("simpo", {"simpo_gamma": 0.5}, "simpo", {"beta": 2.0, "gamma": 0.5}),
        ("simpo", {"simpo_gamma": 1.0}, "simpo", {"beta": 2.0, "gamma": 1.0}),
        ("sigmoid", {"label_smoothing": 0.0}, "cpo_sigmoid", {"beta": 2.0}),
        ("sigmoid", {"label_smoothing": 0.2}, "cpo_sigmoid", {"beta": 2.0, "label_smoothing": 0.2}),
        ("ipo", {}, "cpo_ipo", {"beta": 2.0}),
    ]:
        avg = lt == "simpo"

        def run(inp, lt=lt, extra=extra, avg=avg):
            lc, lr = tt(inp["logp_c"], True), tt(inp["logp_r"], True)
            mc, mr = tt(inp["mask_c"]), tt(inp["mask_r"])
            sc, sr = (lc * mc).sum(1), (lr * mr).sum(1)  # get_batch_logps: masked sum (average: / length)
            if avg:
                sc, sr = sc / mc.sum(1), sr / mr.sum(1)
            s = types.SimpleNamespace(
                **{
                    "alpha": 0.0,
                    "beta": 2.0,
                    "loss_type": lt,
                    "simpo_gamma": 0.0,
                    "label_smoothing": 0.0,
                    "accelerator": _Accel(),
                    **extra,
                }
            )
            return val_grad(CPOTrainer.cpo_loss(s, sc, sr)[0].mean(), lc, lr)

        pair(
            "TRL",
            f"CPOTrainer.cpo_loss(loss_type={lt!r}, beta=2, {', '.join(f'{k}={v}' for k, v in extra.items())})",
            where_fn(CPOTrainer.cpo_loss),
            "preferences.simpo_loss" if avg else "dpo.dpo_loss (reference 0)",
            replay,
            conf,
            run,
            pref_cases(),
        )

    def run_orpo(inp):
        lc, lr = tt(inp["logp_c"], True), tt(inp["logp_r"], True)
        mc, mr = tt(inp["mask_c"]), tt(inp["mask_r"])
        ac, ar = (lc * mc).sum(1) / mc.sum(1), (lr * mr).sum(1) / mr.sum(1)
        s = types.SimpleNamespace(beta=0.1, accelerator=_Accel())
        nll = -(lc * mc).sum() / mc.sum()  # concatenated_forward: cross entropy over every chosen token
        return val_grad(nll - ORPOTrainer.odds_ratio_loss(s, ac, ar)[0].mean(), lc, lr)

    pair(
        "TRL",
        "ORPOTrainer.odds_ratio_loss(beta=0.1) + the chosen NLL, equal chosen lengths",
        where_fn(ORPOTrainer.odds_ratio_loss),
        "preferences.orpo_loss",
        "orpo",
        {"lam": 0.1},
        run_orpo,
        pref_cases(equal=True),
        tol=TOL_F32[0],
        tol_why=TOL_F32[1],
    )
    pair(
        "TRL",
        "ORPOTrainer.odds_ratio_loss(beta=0.1) + the chosen NLL, unequal chosen lengths",
        where_fn(ORPOTrainer.odds_ratio_loss),
        "preferences.orpo_loss",
        "orpo",
        {"lam": 0.1},
        run_orpo,
        pref_cases(),
        tol=TOL_F32[0],
        tol_why=TOL_F32[1],
        diff="trl_orpo_nll",
    )


def trl_dpo_loss(DPOTrainer, loss_type, beta, lc, lr, inp, **extra):
    """DPOTrainer._compute_loss, unbound: a stand-in `self` (the attributes it reads) and a stand-in model whose
    `log_probs` are the given per-token log-probs where the labels are real and 0 where they are -100, as the
    fused LM head returns them; the reference log-probs are precomputed (`precompute_ref_logps=True`). `extra`
    sets further attributes (label_smoothing, f_divergence_type, f_alpha_divergence_coef, args)."""
    P = lc.shape[0]
    cm = np.concatenate([inp["mask_c"], inp["mask_r"]])  # (2P, T)
    comp = np.concatenate([np.zeros((2 * P, 1)), cm], axis=1)  # (2P, T + 1): one prompt token
    logps = torch.cat([lc, lr]) * tt(cm)

    def model(**kw):
        z = torch.zeros(2 * P, T)
        return types.SimpleNamespace(log_probs=logps, entropy=z, mean_logits=z, is_top1=z.bool())

    s = types.SimpleNamespace(
        model=types.SimpleNamespace(training=True),
        accelerator=_Accel(),
        aux_loss_enabled=False,
        ld_alpha=None,
        precompute_ref_logps=True,
        f_divergence_type="reverse_kl",
        loss_types=[loss_type],
        loss_weights=[1.0],
        beta=beta,
        use_weighting=False,
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
        _total_train_tokens=0,
        _tp_size=1,
    )
    for k, v in extra.items():
        setattr(s, k, v)
    inputs = {
        "input_ids": torch.zeros((2 * P, T + 1), dtype=torch.long),
        "attention_mask": torch.ones((2 * P, T + 1), dtype=torch.long),
        "completion_mask": torch.tensor(comp, dtype=torch.long),
        "ref_chosen_logps": tt(inp["seq_ref_c"]),
        "ref_rejected_logps": tt(inp["seq_ref_r"]),
    }
    return DPOTrainer._compute_loss(s, model, inputs, return_outputs=False)


def trl_kto_loss(KTOTrainer, beta, wd, wu, calc, lp, inp):
    """KTOTrainer._compute_loss, unbound, with a stand-in `self` and model (as for DPO): the model returns the
    given per-token log-probs (0 where the labels are -100), or the mismatched pairs' sequence log-probs
    `kl_logp` when called on the KL batch; the reference log-probs are precomputed."""
    Bk = lp.shape[0]
    comp = np.concatenate([np.zeros((Bk, 1)), inp["mask"]], axis=1)
    kl_ids = torch.zeros((Bk, 2), dtype=torch.long)

    def model(**kw):
        z = torch.zeros(Bk, T)
        if kw["input_ids"] is kl_ids:
            return types.SimpleNamespace(log_probs=tt(inp["kl_logp"])[:, None])
        return types.SimpleNamespace(log_probs=lp * tt(inp["mask"]), entropy=z, mean_logits=z)

    s = types.SimpleNamespace(
        model=types.SimpleNamespace(training=True),
        accelerator=_Accel(),
        aux_loss_enabled=False,
        precompute_ref_logps=True,
        calculate_KL=calc,
        loss_type="kto",
        beta=beta,
        desirable_weight=wd,
        undesirable_weight=wu,
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
        _total_train_tokens=0,
        _tp_size=1,
    )
    s._compute_kl_logps = lambda m, b: KTOTrainer._compute_kl_logps(s, m, b)
    batch = {
        "input_ids": torch.zeros((Bk, T + 1), dtype=torch.long),
        "attention_mask": torch.ones((Bk, T + 1), dtype=torch.long),
        "completion_mask": torch.tensor(comp, dtype=torch.long),
        "label": torch.tensor(inp["desirable"] > 0),
        "ref_logps": tt(inp["seq_ref"]),
        "ref_KL_logps": tt(inp["kl_ref"]),
        "KL_input_ids": kl_ids,
        "KL_attention_mask": torch.ones((Bk, 2), dtype=torch.long),
        "KL_completion_mask": torch.ones((Bk, 2), dtype=torch.long),
    }
    loss = KTOTrainer._compute_loss(s, model, batch, return_outputs=False)
    return loss, s._metrics["train"]["kl"][-1]


def extracted_trl_online_dpo(logprobs, ref_logprobs, completion_mask, rewards, loss_type, beta):
    """trl/experimental/online_dpo/online_dpo_trainer.py (OnlineDPOTrainer.training_step, from
    `first_half, second_half = rewards.split(batch_size)` to `loss = losses.mean()`): rows 0..P-1 and P..2P-1
    are the two completions of each prompt."""
    batch_size = logprobs.shape[0] // 2
    first_half, second_half = rewards.split(batch_size)
    mask = first_half >= second_half
    batch_range = torch.arange(batch_size)
    chosen_indices = batch_range + (~mask * batch_size)
    rejected_indices = batch_range + (mask * batch_size)
    cr_indices = torch.cat((chosen_indices, rejected_indices), dim=0)
    cr_logprobs = logprobs[cr_indices]
    cr_ref_logprobs = ref_logprobs[cr_indices]
    padding_mask = ~completion_mask.bool()
    cr_padding_mask = padding_mask[cr_indices]
    cr_logprobs_sum = (cr_logprobs * ~cr_padding_mask).sum(1)
    cr_ref_logprobs_sum = (cr_ref_logprobs * ~cr_padding_mask).sum(1)
    chosen_logprobs_sum, rejected_logprobs_sum = torch.split(cr_logprobs_sum, batch_size)
    chosen_ref_logprobs_sum, rejected_ref_logprobs_sum = torch.split(cr_ref_logprobs_sum, batch_size)
    logits = (chosen_logprobs_sum - rejected_logprobs_sum) - (chosen_ref_logprobs_sum - rejected_ref_logprobs_sum)
    if loss_type == "sigmoid":
        losses = -F.logsigmoid(beta * logits)
    else:
        losses = (logits - 1 / (2 * beta)) ** 2
    return losses.mean()


def extracted_trl_num_items(mask):
    """trl/trainer/grpo_trainer.py (_generate_and_score_completions, the line
    `num_items_in_batch = self.accelerator.gather(loss_mask.sum()).sum()`), one process."""
    return float(np.sum(mask))


def extracted_trl_advantages(rewards, scale_rewards):
    """trl/trainer/grpo_trainer.py (_generate_and_score_completions, multi_objective_aggregation=
    "sum_then_normalize", from `mean_grouped_rewards = torch.nanmean(`); `rewards` is (N, K)."""
    from trl.trainer.utils import nanstd

    N, num_generations = rewards.shape
    rewards = rewards.reshape(-1)
    mean_grouped_rewards = torch.nanmean(rewards.view(-1, num_generations), dim=1)
    mean_grouped_rewards = mean_grouped_rewards.repeat_interleave(num_generations, dim=0)
    if scale_rewards in ["group", "none"]:
        std_rewards = nanstd(rewards.view(-1, num_generations), dim=1)
        std_rewards = std_rewards.repeat_interleave(num_generations, dim=0)
    else:
        std_rewards = nanstd(rewards).expand_as(rewards)
    advantages = rewards - mean_grouped_rewards
    if scale_rewards != "none":
        advantages = advantages / (std_rewards + 1e-4)
    return advantages.view(N, num_generations)


def extracted_trl_rloo(rewards, old_per_token_logps, ref_per_token_logps, completion_mask, beta, num_generations):
    """trl/trainer/rloo_trainer.py (_generate_and_score_completions, from `if self.beta != 0.0:` to
    `advantages = rewards - baselines`), every reward scorable, normalize_advantages=False."""
    per_token_kl = old_per_token_logps - ref_per_token_logps
    kl = (per_token_kl * completion_mask).sum(-1)
    rewards = rewards - beta * kl
    grouped_rewards = rewards.view(-1, num_generations)
    scorable_counts = (~torch.isnan(grouped_rewards)).sum(dim=1, keepdim=True)
    grouped_sum = torch.nansum(grouped_rewards, dim=1, keepdim=True)
    baselines = (grouped_sum - grouped_rewards) / (scorable_counts - 1)
    baselines = baselines.view(-1)
    return (rewards - baselines).view(-1, num_generations)


def extracted_trl_mask_truncated(tokens, completion_mask, eos_token_ids, pad_token_id):
    """trl/trainer/grpo_trainer.py (_generate_and_score_completions, under `if self.mask_truncated_completions:`);
    completion_ids_list holds each row's real tokens."""
    L = completion_mask.sum(1).long().tolist()
    completion_ids_list = [list(tokens[b, : L[b]].astype(int)) for b in range(len(L))]
    eos_and_pad = [*eos_token_ids, pad_token_id]
    is_truncated = torch.tensor([len(ids) > 0 and ids[-1] not in eos_and_pad for ids in completion_ids_list])
    return completion_mask * (~is_truncated).unsqueeze(1).int()


# ================================================================================================ write
# ================================================================================ the objectives of 2025-26
def objective_pairs():
    """SAPO, DPPO, GMPO, VESPO, LUSPO, token-sum, pass@k, GDPO, the optimal token baseline and the
    sequence-ratio bias-corrected KL; appended after every other pair, so the earlier pairs keep
    their ids and bytes."""
    import verl.trainer.ppo.core_algos as ca
    from trl.trainer import grpo_trainer as gt
    from trl.trainer.grpo_trainer import GRPOTrainer
    from verl.trainer.config import AlgoConfig
    from verl.workers.config import ActorConfig

    def cfg(low=0.2, high=0.2, c=3.0):
        return ActorConfig(
            strategy="fsdp",
            clip_ratio=0.2,
            clip_ratio_low=low,
            clip_ratio_high=high,
            clip_ratio_c=c,
            ppo_micro_batch_size_per_gpu=1,
            rollout_n=K,
        )

    def run(inp):
        lp = tt(inp["logp"], True)
        return val_grad(ca.agg_loss(-adv_bt(inp) * lp, tt(inp["mask"]), "token-sum"), lp)

    pair(
        "verl",
        "agg_loss('token-sum')",
        where_fn(ca.agg_loss),
        "reinforce.reinforce_loss",
        "reinforce_loss",
        {"agg": "token_sum"},
        run,
        cases(PAD + HOLES + EMPTY, ("mask", "logp", "adv")),
    )

    def run(inp):
        lp = tt(inp["logp"], True)
        loss, _ = ca.compute_policy_loss_sapo(
            tt(inp["logp_old"]), lp, adv_bt(inp), tt(inp["mask"]), "seq-mean-token-mean", cfg()
        )
        return val_grad(loss, lp)

    pair(
        "verl",
        "compute_policy_loss_sapo(tau_pos=1.0, tau_neg=1.05)",
        where_fn(ca.compute_policy_loss_sapo),
        "trust.sapo_loss",
        "sapo",
        {"tau_pos": 1.0, "tau_neg": 1.05, "agg": "seq_mean_token_mean"},
        run,
        cases(PAD + HOLES, TOK),
        tol=TOL_EPS[0],
        tol_why=TOL_EPS[1],
    )
    for name, fn, div in [
        ("dppo_tv", ca.compute_policy_loss_dppo_tv, "tv"),
        ("dppo_kl", ca.compute_policy_loss_dppo_kl, "kl"),
    ]:
        for low, high in [(0.2, 0.2), (0.05, 0.1)]:

            def run(inp, fn=fn, low=low, high=high):
                lp = tt(inp["logp"], True)
                loss, _ = fn(tt(inp["logp_old"]), lp, adv_bt(inp), tt(inp["mask"]), "token-mean", cfg(low, high))
                return val_grad(loss, lp)

            pair(
                "verl",
                f"compute_policy_loss_{name}(clip_ratio_low={low}, clip_ratio_high={high}, clip_ratio_c=3.0)",
                where_fn(fn),
                "trust.dppo_loss",
                "dppo",
                {"divergence": div, "delta": low, "delta_high": high, "c": 3.0, "agg": "token_mean"},
                run,
                cases(PAD + HOLES + EMPTY, TOK),
            )
    for low, high in [(0.2, 0.2), (0.2, 0.4)]:

        def run(inp, low=low, high=high):
            lp = tt(inp["logp"], True)
            loss, _ = ca.compute_policy_loss_geo_mean(
                tt(inp["logp_old"]), lp, adv_bt(inp), tt(inp["mask"]), "token-mean", cfg(low, high)
            )
            return val_grad(loss, lp)

        pair(
            "verl",
            f"compute_policy_loss_geo_mean(clip_ratio_low={low}, clip_ratio_high={high})",
            where_fn(ca.compute_policy_loss_geo_mean),
            "trust.gmpo_loss",
            "gmpo",
            {"eps": low, "eps_high": high},
            run,
            cases(PAD + HOLES + EMPTY, TOK),
            tol=TOL_EPS[0],
            tol_why=TOL_EPS[1],
        )

    def passk_run(norm):
        def run(inp):
            r = inp["rewards"]
            N, Kg = r.shape
            scores = np.zeros((N * Kg, T))
            scores[:, 0] = r.ravel()
            a, _ = ca.compute_grpo_passk_outcome_advantage(
                token_level_rewards=tt(scores),
                response_mask=tt(np.ones((N * Kg, T))),
                index=np.repeat(np.arange(N), Kg),
                epsilon=1e-6,
                config=AlgoConfig(norm_adv_by_std_in_grpo=norm),
            )
            return val(a[:, 0].reshape(N, Kg))

        return run

    for Kg in (2, 4):
        for norm in (False, True):
            pair(
                "verl",
                f"compute_grpo_passk_outcome_advantage(norm_adv_by_std_in_grpo={norm}), K={Kg}",
                where_fn(ca.compute_grpo_passk_outcome_advantage),
                "targets.passk_advantages",
                "passk",
                {"k": Kg, "std_eps": 1e-6 if norm else None},
                passk_run(norm),
                reward_cases(Kg),
            )

    def run(inp):
        B_, T_ = inp["mask"].shape
        L = inp["mask"].sum(1).astype(int)
        scores = np.zeros((B_, T_))
        scores[np.arange(B_), L - 1] = inp["rewards"]
        a, _ = ca.compute_optimal_token_baseline_advantage(
            token_level_rewards=tt(scores),
            response_mask=tt(inp["mask"]),
            index=np.repeat(np.arange(B_ // 4), 4),
            old_log_probs=tt(inp["logp_old"]),
            sum_pi_squared=tt(inp["sum_pi_sq"]),
        )
        return val(a)

    pair(
        "verl",
        "compute_optimal_token_baseline_advantage(handle_zero_tail=True)",
        where_fn(ca.compute_optimal_token_baseline_advantage),
        "tokenbaseline.otb_advantages",
        "otb",
        {"K": 4},
        run,
        otb_cases(),
    )

    # TRL: the loss types of 1.16.0 this library had not covered, and the sequence-ratio KL
    loss_where = where_fn(GRPOTrainer._compute_loss)
    toks = TOK + ("logp_ref", "hull")
    grid = [
        ({"loss_type": "sapo"}, "sapo", {"tau_pos": 1.0, "tau_neg": 1.05, "agg": "seq_mean_token_mean"}),
        (
            {"loss_type": "sapo", "sapo_temperature_pos": 0.5, "sapo_temperature_neg": 2.0},
            "sapo",
            {"tau_pos": 0.5, "tau_neg": 2.0, "agg": "seq_mean_token_mean"},
        ),
        ({"loss_type": "vespo"}, "vespo", {"agg": "token_mean"}),
        (
            {"loss_type": "vespo", "vespo_k_pos": 1.0, "vespo_lambda_pos": 1.5},
            "vespo",
            {"k_pos": 1.0, "lam_pos": 1.5, "agg": "token_mean"},
        ),
        ({"loss_type": "luspo", "importance_sampling_level": "sequence"}, "luspo", {"eps": 0.2}),
        (
            {
                "loss_type": "grpo",
                "importance_sampling_level": "sequence",
                "beta": 0.04,
                "use_bias_correction_kl": True,
            },
            "gspo_kl_is_seq",
            {"eps": 0.2, "beta": 0.04},
        ),
    ]
    minis = {
        "sapo": "trust.sapo_loss",
        "vespo": "trust.vespo_loss",
        "luspo": "seqclip.luspo_surrogate",
        "gspo_kl_is_seq": "seqclip.gspo_surrogate + beta klsequence.kl_penalty_is_sequence",
    }
    for kw, replay, conf in grid:

        def run(inp, kw=kw):
            lp = tt(inp["logp"], True)
            return val_grad(trl_loss(trl_self(**kw), lp, inp), lp)

        name = f"GRPOTrainer._compute_loss({', '.join(f'{k}={v!r}' for k, v in kw.items())})"
        pair("TRL", name, loss_where, minis[replay], replay, conf, run, cases(PAD + EMPTY + HOLES, toks))

    def run(inp):
        return val(extracted_trl_gdpo(tt(inp["rewards3"]), tt(np.array([1.0, 0.5])), inp["rewards3"].shape[1]))

    pair(
        "TRL",
        "GRPOTrainer advantages (multi_objective_aggregation='normalize_then_sum', reward_weights=[1.0, 0.5])",
        where_text(gt, 'elif self.multi_objective_aggregation == "normalize_then_sum":'),
        "multireward.gdpo",
        "gdpo",
        {"weights": [1.0, 0.5], "std_eps": 1e-4, "ddof": 1, "batch_eps": 1e-4},
        run,
        gdpo_cases(),
        extracted=True,
    )


def otb_cases():
    """Groups of 4 right-padded responses (a unique longest in group 0), the sampled tokens'
    log-probs and each state's sum of squared probabilities from a Dirichlet table."""
    out = []
    for s in range(3):
        rng = np.random.default_rng(60 + s)
        Bo = 12
        L = rng.integers(1, T + 1, Bo)
        L[:4] = [2, T, 3, 2]
        mask = (np.arange(T) < L[:, None]).astype(float)
        probs = rng.dirichlet(np.ones(5), size=(Bo, T))
        tok = rng.integers(0, 5, (Bo, T))
        lp = np.log(np.take_along_axis(probs, tok[..., None], -1)[..., 0]) * mask
        rewards = rng.integers(0, 2, Bo).astype(float) + (s == 2) * rng.normal(0.0, 0.3, Bo)
        c = {"mask": mask, "logp_old": lp, "sum_pi_sq": (probs**2).sum(-1), "rewards": rewards}
        out.append((f"seed{s}", "pad", c))
    return out


def gdpo_cases():
    """(N, K, 2) rewards: correctness (0/1) and a format score; a group where correctness is constant."""
    out = []
    for s in range(3):
        rng = np.random.default_rng(70 + s)
        r = np.stack([rng.integers(0, 2, (3, 4)).astype(float), np.round(rng.uniform(0, 1, (3, 4)), 2)], axis=2)
        if s == 2:
            r[1, :, 0] = 1.0
        out.append((f"seed{s}", "pad", {"rewards3": r}))
    return out


def extracted_trl_gdpo(rewards3, reward_weights, num_generations):
    """trl/trainer/grpo_trainer.py (_generate_and_score_completions, multi_objective_aggregation=
    "normalize_then_sum", from `grouped = rewards_per_func.view(`); `rewards3` is (N, K, M)."""
    from trl.trainer.utils import nanstd

    N, Kg, M = rewards3.shape
    rewards_per_func = rewards3.reshape(N * Kg, M)
    grouped = rewards_per_func.view(-1, num_generations, M)
    mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
    std_k = nanstd(grouped, dim=1, keepdim=True) if num_generations > 1 else torch.zeros_like(mean_k)
    reward_k = (grouped - mean_k) / (std_k + 1e-4)
    reward_k = reward_k.view(-1, M)
    rewards = (reward_k * reward_weights.unsqueeze(0)).nansum(dim=1)
    std_rewards = nanstd(rewards).expand_as(rewards) if rewards.numel() > 1 else torch.zeros_like(rewards)
    advantages = (rewards - torch.nanmean(rewards)) / (std_rewards + 1e-4)
    return advantages.view(N, Kg)


def _keep_unchanged(out, index, arrays):
    """Keep the recorded outputs of every pair whose index entry and inputs are unchanged: the float32 paths
    (OpenRLHF's KL, verl's group statistics) differ between runs by up to 2e-7 relative, so a re-run would
    rewrite them."""
    try:
        with open(os.path.join(out, "index.json")) as f:
            old = {e["id"]: e for e in json.load(f)["pairs"]}
        old_arrays = np.load(os.path.join(out, "fixtures.npz"))
    except FileNotFoundError:
        return
    for e in index:
        keys = [k for k in arrays if k.startswith(e["id"] + "|")]
        same_inputs = all(
            k in old_arrays.files and np.array_equal(arrays[k], old_arrays[k]) for k in keys if "|in|" in k
        )
        if json.dumps(old.get(e["id"])) == json.dumps(e) and same_inputs:
            for k in keys:
                arrays[k] = old_arrays[k]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=OUT, help="fixture folder (default: tests/fixtures/conformance)")
    args = p.parse_args()
    t0 = time.time()
    _install_stand_ins()
    versions = {k: importlib.metadata.version(k) for k in ("verl", "openrlhf", "trl", "torch")}
    for k, v in VERSIONS.items():
        if versions[k] != v:
            raise SystemExit(f"{k}: expected version {v}, got {versions[k]}")
    verl_pairs()
    verl_more_pairs()
    openrlhf_pairs()
    trl_pairs()
    objective_pairs()
    sys.modules.setdefault("conformance", sys.modules[__name__])  # the per-framework modules import from here
    from conformance_openrlhf import openrlhf_late_pairs
    from conformance_trl import trl_late_pairs
    from conformance_verl import verl_late_pairs

    verl_late_pairs()
    trl_late_pairs()
    openrlhf_late_pairs()
    arrays, index = {}, []
    for i, pr in enumerate(PAIRS):
        pid = f"p{i:03d}"
        entry = {
            k: pr[k]
            for k in (
                "framework",
                "fw_function",
                "where",
                "minirl",
                "replay",
                "config",
                "extracted",
                "tol",
                "tol_why",
                "diff",
                "note",
            )
        }
        entry["id"], entry["cases"] = pid, []
        for name, kind, inp in pr["cases"]:
            out = pr["run"](inp)
            for k, v in inp.items():
                arrays[f"{pid}|{name}|in|{k}"] = np.asarray(v, dtype=np.float64)
            for k, v in out.items():
                arrays[f"{pid}|{name}|out|{k}"] = np.asarray(v, dtype=np.float64)
            entry["cases"].append({"name": name, "kind": kind, "inputs": sorted(inp), "outputs": sorted(out)})
        index.append(entry)
    _keep_unchanged(args.out, index, arrays)
    os.makedirs(args.out, exist_ok=True)
    np.savez_compressed(os.path.join(args.out, "fixtures.npz"), **arrays)
    meta = {
        "versions": versions,
        "python": sys.version.split()[0],
        "dtype": "float64",
        "stand_ins": [{"module": m, "replaced_by": r, "why": w} for m, r, w in STAND_INS],
        "pairs": index,
    }
    pairs = meta.pop("pairs")
    with open(os.path.join(args.out, "index.json"), "w") as f:  # one pair a line: small, and diffs read well
        text = json.dumps(meta, indent=1)
        f.write(text[:-2] + ',\n "pairs": [\n' + ",\n".join(json.dumps(p) for p in pairs) + "\n ]\n}\n")
    n_cases = sum(len(e["cases"]) for e in index)
    print(f"wrote {len(index)} pairs, {n_cases} cases to {args.out} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
