"""The RL loops of examples/network.py, each estimator from the library and nothing of its own:
GRPO and RLOO (`grpo_loss` with the group baselines of `advantages`), PPO with the value head on
the same trunk (`per_token_rewards`, `td_errors`, `gae`, `clipped_surrogate`,
`clipped_value_loss`), online DPO with the verifier as the judge (`dpo_loss`, `token_grad`).

Every loop samples B = N K responses a step (online DPO: B / 2 pairs) from the prompts of (a, b),
scores them with the verifier and takes `mu` AdamW steps on the batch; pi_old is the sampler.
With ``log`` (a list), every 10th step appends (step, held-out accuracy on ``held``, mean reward,
KL to pi_ref and entropy of the batch's responses, clip fraction of the last epoch): no draw, so
the run is the same with or without it."""

import numpy as np
from _network_task import T, accuracy, prompts, verifier

from minirl_lm.direct.dpo import dpo_loss, token_grad
from minirl_lm.nn.adamw import AdamW
from minirl_lm.nn.generate import generate
from minirl_lm.pg.advantages import advantages
from minirl_lm.pg.clip import clip_fraction, clipped_surrogate
from minirl_lm.pg.grpo import grpo_loss
from minirl_lm.values.critic import clipped_value_loss, gae, per_token_rewards, td_errors

EPS = 0.2  # the clip range of every clipped loss here


def _batch(model, a, b, N, K, rng):
    """N prompts, K responses each, prompt-major: (x, y, mask, R)."""
    i = np.repeat(rng.integers(0, a.size, N), K)  # row n*K + k
    x = prompts(a[i], b[i])
    y, mask, _ = generate(model, x, T, rng)
    return x, y, mask, verifier(a[i], b[i], y)  # R (N K,)


def _log(log, held, model, step, R, logp_old, logp_ref, clipped):
    if log is not None and (step % 10 == 9 or step == 0):
        lp = logp_old.sum(1)  # (B,) the batch's sequence log-probs under pi_old
        kl, ent = float((lp - logp_ref.sum(1)).mean()), float(-lp.mean())
        log.append((step + 1, accuracy(model, *held), float(R.mean()), kl, ent, clipped))


def group(model, ref, a, b, estimator, steps, N, K, mu, lr, beta, rng, log=None, held=None):
    """GRPO (standardized group advantage) or RLOO (leave-one-out), the clipped loss of
    `grpo_loss` with its k3 KL to pi_ref."""
    opt = AdamW(model.params, lr=lr)
    baseline = {"grpo": "standardized", "rloo": "loo"}[estimator]
    for step in range(steps):
        x, y, mask, R = _batch(model, a, b, N, K, rng)
        adv = advantages(R.reshape(N, K), baseline).ravel()  # (N K,)
        logp_old, logp_ref = model.logp(x, y, mask)[0], ref.logp(x, y, mask)[0]
        for epoch in range(mu):
            logp = logp_old if epoch == 0 else model.logp(x, y, mask)[0]
            _, g = grpo_loss(logp, logp_old, logp_ref, adv, mask, eps=EPS, beta=beta)
            opt.step(model.backward(x, y, mask, g))
        _log(log, held, model, step, R, logp_old, logp_ref, clip_fraction(logp, logp_old, adv, mask, EPS))
    return model


def ppo(model, ref, a, b, steps, N, K, mu, lr, beta, rng, log=None, held=None, lam=0.95, vf_coef=0.5, clip_v=0.2):
    """PPO with the critic on the policy's trunk: the KL to pi_ref in the per-token reward, GAE
    (gamma = 1) on the value head's v(s_t), advantages whitened over the batch's tokens (as verl
    and OpenRLHF do), the clipped surrogate plus ``vf_coef`` times the clipped value loss toward
    the GAE returns A + v_old, one backward for both."""
    opt = AdamW(model.params, lr=lr)
    for step in range(steps):
        x, y, mask, R = _batch(model, a, b, N, K, rng)
        logp_old, v_old = model.logp_values(x, y, mask)  # (B, T), (B, T)
        logp_ref = ref.logp(x, y, mask)[0]
        r = per_token_rewards(R, logp_old, logp_ref, mask, beta)  # (B, T) eq. (kl_shaped_reward)
        states = np.arange(mask.size).reshape(mask.shape)  # each (b, t) its own state: v is per row
        A = gae(td_errors(v_old.ravel(), states, r, mask), mask, 1.0, lam)  # (B, T) eq. (gae)
        G = A + v_old  # (B, T) the critic's targets
        m, n = (A * mask).sum() / mask.sum(), mask.sum()
        A = (A - m) / np.sqrt(((A - m) ** 2 * mask).sum() / n + 1e-8) * mask  # whitened
        for epoch in range(mu):
            logp, v = (logp_old, v_old) if epoch == 0 else model.logp_values(x, y, mask)
            _, g = clipped_surrogate(logp, logp_old, A, mask, eps=EPS)
            _, dv = clipped_value_loss(v, v_old, G, mask, clip_v)
            opt.step(model.backward(x, y, mask, g, vf_coef * dv))
        _log(log, held, model, step, R, logp_old, logp_ref, clip_fraction(logp, logp_old, A, mask, EPS))
    return model


def online_dpo(model, ref, a, b, steps, N, K, mu, lr, beta, rng, log=None, held=None):
    """Online DPO: N K / 2 prompts, two responses each from the current policy; the verifier
    picks the chosen one; a tie (both right or both wrong) is skipped; the mean DPO loss over the
    other pairs, eq. (dpo), pi_ref the SFT model."""
    opt = AdamW(model.params, lr=lr)
    for step in range(steps):
        x, y, mask, R = _batch(model, a, b, N * K // 2, 2, rng)  # rows 2i, 2i + 1
        Ra, Rb = R[0::2], R[1::2]  # (pairs,)
        first = np.flatnonzero(Ra > Rb)
        second = np.flatnonzero(Rb > Ra)
        c = np.concatenate([2 * first, 2 * second + 1])  # rows of the chosen
        r = np.concatenate([2 * first + 1, 2 * second])  # rows of the rejected
        logp_old, logp_ref = model.logp(x, y, mask)[0], ref.logp(x, y, mask)[0]
        for epoch in range(mu if c.size else 0):
            seq = (logp_old if epoch == 0 else model.logp(x, y, mask)[0]).sum(1)  # (B,)
            seq_ref = logp_ref.sum(1)  # (B,)
            _, (dc, dr) = dpo_loss(seq[c], seq[r], seq_ref[c], seq_ref[r], beta)
            dseq = np.zeros(R.size)  # (B,) rows of skipped pairs: no gradient
            dseq[c], dseq[r] = dc, dr
            opt.step(model.backward(x, y, mask, token_grad(dseq, mask)))
        _log(log, held, model, step, R, logp_old, logp_ref, float("nan"))
    return model
