"""From the table to a network: SFT on flawed demonstrations, then RL with a verifier.

The task is two-digit addition at the character level: the prompt is `ab+cd=` (six tokens, both
operands zero-padded), the response the three digits of the sum written units first (`07+35=`
-> `240`, i.e. 042 reversed: each digit then depends on digits already written), checked exactly
by a verifier (reward 1 iff all three digits are right). V = 12 (ten digits, `+`, `=`).

1. SFT. The demonstrations are flawed on purpose: a fraction `--wrong` of them (drawn once)
   forgets every carry (digit-wise sums mod 10), so they are right only when nothing carries.
   The model (`minirl_lm.nn.model.Transformer`) is trained by maximum likelihood on them, so it
   learns the flaw with the skill: a systematic error, not noise.
2. RL from the SFT model, each estimator from the library and nothing of its own: GRPO
   (`pg.grpo.grpo_loss`: the group-standardized advantage, the clipped ratio over `mu` epochs,
   the k3 KL to the frozen SFT model), then RLOO (the leave-one-out advantage of
   `pg.advantages`, the same clipped loss). RL samples its prompts only from problems whose first
   operand is below 50.
3. Evaluation on held-out problems (never in SFT's data nor RL's), and separately on the held-out
   problems whose first operand is 50 or more: a kind RL never sampled. A table would not move
   there; the network does, because the carry is one computation shared by every problem.

Accuracy is exact, not sampled: the mean over problems of pi(y*|x), the probability that a
sampled response is the right answer. The KL to the SFT model and the entropy are Monte Carlo,
one sampled response per held-out problem: mean of sum_t (logp - logp_ref), and of -sum_t logp.

    $ python examples/network.py --quick     # seconds: a smaller run, for tests
    $ python examples/network.py             # 3 seeds, the figures of the page
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core: threads only add overhead at this size
import numpy as np  # noqa: E402

from minirl_lm.nn.adamw import AdamW  # noqa: E402
from minirl_lm.nn.generate import generate  # noqa: E402
from minirl_lm.nn.model import Transformer  # noqa: E402
from minirl_lm.pg.advantages import advantages  # noqa: E402
from minirl_lm.pg.grpo import grpo_loss  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _claims import claim  # noqa: E402
from _cli import integer, plot_path, real  # noqa: E402

PLUS, EQ, V, P, T = 10, 11, 12, 6, 3
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = "docs/records/network.txt"  # the full run, written by --record docs/records/network.txt
CURVES = "docs/records/network_curves.json"  # its RL curves, written beside it


def digits(n, width):
    """(N,) ints -> (N, width) digits, most significant first."""
    return np.stack([(n // 10 ** (width - 1 - i)) % 10 for i in range(width)], axis=1)


def prompts(a, b):
    """`ab+cd=` as (N, 6) token ids."""
    n = a.size
    return np.concatenate([digits(a, 2), np.full((n, 1), PLUS), digits(b, 2), np.full((n, 1), EQ)], axis=1)


def answers(a, b, carry=True):
    """The sum's three digits, units first, (N, 3); carry=False: every carry forgotten."""
    if carry:
        return digits(a + b, 3)[:, ::-1].copy()
    units, tens = (a + b) % 10, (a // 10 + b // 10) % 10
    return np.stack([units, tens, np.zeros_like(a)], axis=1)


def verifier(a, b, y):
    """Reward 1.0 iff the response is the exact sum."""
    return (y == answers(a, b)).all(axis=1).astype(np.float64)


def split(rng, n_held):
    """All 10,000 problems, shuffled: (train, held-out), each a pair of (N,) operand arrays."""
    a, b = np.divmod(rng.permutation(10000), 100)
    return (a[n_held:], b[n_held:]), (a[:n_held], b[:n_held])


def accuracy(model, a, b):
    """Exact: mean over problems of pi(y* | x)."""
    y = answers(a, b)
    return float(np.exp(model.logp(prompts(a, b), y, np.ones(y.shape))[1]).mean())


def kl_entropy(model, ref, a, b, rng):
    """Monte Carlo, one response per problem: (KL(pi || pi_ref), entropy) of whole responses."""
    x = prompts(a, b)
    y, mask, logp = generate(model, x, T, rng)
    logp_ref = ref.logp(x, y, mask)[0]
    return float((logp - logp_ref).sum(1).mean()), float(-logp.sum(1).mean())


def sft(model, a, b, demos, steps, batch, lr, rng):
    """Maximum likelihood on the demonstrations: loss = -mean token log-prob."""
    opt = AdamW(model.params, lr=lr, weight_decay=0.0)
    mask = np.ones((batch, T))
    for _ in range(steps):
        i = rng.integers(0, a.size, batch)
        x, y = prompts(a[i], b[i]), demos[i]
        dlogp = -mask / mask.sum()  # d(-mean logp)/dlogp
        opt.step(model.backward(x, y, mask, dlogp))
    return model


def rl(model, ref, a, b, estimator, steps, N, K, mu, lr, beta, rng, log=None, held=None):
    """GRPO or RLOO from the SFT model: each step N prompts, K responses each, mu epochs.
    With ``log`` (a list), every 10th step appends (step, held-out accuracy on ``held``, mean
    reward, KL to pi_ref and entropy of the batch's responses): no draw, the run is unchanged."""
    opt = AdamW(model.params, lr=lr)
    baseline = {"grpo": "standardized", "rloo": "loo"}[estimator]
    for step in range(steps):
        i = np.repeat(rng.integers(0, a.size, N), K)  # prompt-major: row n*K + k
        x = prompts(a[i], b[i])
        y, mask, _ = generate(model, x, T, rng)
        R = verifier(a[i], b[i], y)  # (N K,)
        adv = advantages(R.reshape(N, K), baseline).ravel()  # (N K,)
        logp_old, logp_ref = model.logp(x, y, mask)[0], ref.logp(x, y, mask)[0]
        for epoch in range(mu):
            logp = logp_old if epoch == 0 else model.logp(x, y, mask)[0]  # pi_old is the sampler
            _, g = grpo_loss(logp, logp_old, logp_ref, adv, mask, eps=0.2, beta=beta)
            opt.step(model.backward(x, y, mask, g))
        if log is not None and (step % 10 == 9 or step == 0):
            lp = logp_old.sum(1)  # (N K,) the batch's sequence log-probs under pi_old
            kl, ent = float((lp - logp_ref.sum(1)).mean()), float(-lp.mean())
            log.append((step + 1, accuracy(model, *held), float(R.mean()), kl, ent))
    return model


def run(seed, args):
    """One seed: SFT, then each estimator from the same SFT model. Returns the figures."""
    rng = np.random.default_rng(seed)
    (a, b), (ha, hb) = split(rng, args.held)
    wrong = rng.random(a.size) < args.wrong  # drawn once: the flawed demonstrations
    demos = np.where(wrong[:, None], answers(a, b, carry=False), answers(a, b))  # (N, 3)
    model = Transformer(V, args.d, args.heads, args.layers, P + T - 1, rng, init_scale=0.1)
    sft(model, a, b, demos, args.sft_steps, 64, 3e-3, rng)
    ref = model.copy()  # pi_ref: the SFT model, frozen
    unseen = ha >= 50  # held-out problems of the kind RL never samples
    out = {
        "demos": float((demos == answers(a, b)).all(1).mean()),
        "sft": accuracy(model, ha, hb),
        "sft unseen": accuracy(model, ha[unseen], hb[unseen]),
    }
    pool = a < 50  # RL samples only these
    for est in args.estimators:
        m, out[est + " curve"] = ref.copy(), []
        rl(
            m,
            ref,
            a[pool],
            b[pool],
            est,
            args.rl_steps,
            args.N,
            args.K,
            args.mu,
            args.rl_lr,
            args.beta,
            rng,
            log=out[est + " curve"],
            held=(ha, hb),
        )
        kl, ent = kl_entropy(m, ref, ha, hb, rng)
        out[est] = accuracy(m, ha, hb)
        out[est + " kl"], out[est + " entropy"] = kl, ent
        out[est + " unseen"] = accuracy(m, ha[unseen], hb[unseen])
    return out


def report(r, args):
    """The three line forms, from one seed's figures (or the mean's)."""
    lines = [f"network sft: held-out accuracy {r['sft']:.3f} (demonstrations {r['demos']:.3f} correct)"]
    for est in args.estimators:
        lines.append(
            f"network rl {est}: held-out accuracy {r[est]:.3f} after {args.rl_steps} steps, "
            f"KL to sft {r[est + ' kl']:.3f}, entropy {r[est + ' entropy']:.2f}"
        )
        lines.append(
            f"network rl unseen: accuracy {r['sft unseen']:.2f} -> {r[est + ' unseen']:.2f} "
            f"on problems RL never sampled"
        )
    return lines


def plot(path, curves):
    """Held-out accuracy, reward, KL to the SFT model and entropy against RL steps: one colour per
    estimator, one line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(13, 3.0))
    names = ("held-out accuracy", "batch reward", "KL to sft (batch)", "entropy (batch, nats)")
    for colour, (est, runs) in zip(("C0", "C1", "C2"), curves.items()):
        for i, log in enumerate(runs):
            c = np.array(log)  # (points, 5): step, accuracy, reward, KL, entropy
            for j, ax in enumerate(axes):
                ax.plot(c[:, 0], c[:, j + 1], color=colour, lw=1, label=est if i == 0 else None)
    for ax, name in zip(axes, names):
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("RL step")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path)


def record_path(text):
    """Type: a file path in an existing folder (checked before the run)."""
    if not text or os.path.isdir(text) or not os.path.isdir(os.path.dirname(os.path.abspath(text))):
        raise argparse.ArgumentTypeError(f"expected a file path in an existing folder, got {text!r}")
    return text


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="a small run for tests and the docs build (seconds)")
    p.add_argument("--seeds", type=integer(1, 10), default=3, help="seeds 0 .. seeds-1 (default 3)")
    p.add_argument("--wrong", type=real(0.0, 1.0), default=0.5, help="fraction of demonstrations without carries")
    p.add_argument("--rl-steps", type=integer(1, 10000), default=100, help="RL steps per estimator")
    p.add_argument("--record", type=record_path, metavar="PATH", help="also write the output to PATH")
    p.add_argument("--plot", type=plot_path, metavar="PATH", help="draw the RL curves (with --show: the record's)")
    p.add_argument("--show", action="store_true", help=f"print the recorded full run ({RECORD}) and exit")
    args = p.parse_args(argv)
    if args.show:
        with open(os.path.join(ROOT, RECORD)) as f:
            print(f.read(), end="")
        if args.plot:
            with open(os.path.join(ROOT, CURVES)) as f:
                plot(args.plot, json.load(f))
        return
    args.held, args.d, args.heads, args.layers = 1000, 32, 2, 2
    args.sft_steps, args.N, args.K, args.mu = 600, 16, 8, 2
    args.rl_lr, args.beta, args.estimators = 3e-4, 0.04, ("grpo", "rloo")
    if args.quick:
        args.seeds, args.sft_steps, args.rl_steps, args.estimators = 1, 100, 5, ("grpo",)
    lines = []

    def emit(line):
        print(line, flush=True)
        lines.append(line)

    t0 = time.process_time()
    runs = []
    for seed in range(args.seeds):
        runs.append(run(seed, args))
        emit(f"seed {seed}:")
        for line in report(runs[-1], args):
            emit("  " + line)
    if args.seeds > 1:
        mean = {k: float(np.mean([r[k] for r in runs])) for k in runs[0] if "curve" not in k}
        emit(f"mean over {args.seeds} seeds:")
        for line in report(mean, args):
            emit("  " + line)
        emit("range (min - max) over the seeds:")
        for k in ["demos", "sft", "sft unseen"] + [e + x for e in args.estimators for x in ("", " unseen", " kl")]:
            lo, hi = min(r[k] for r in runs), max(r[k] for r in runs)
            emit(f"  {k:<12} {lo:.3f} - {hi:.3f}")
    emit(f"CPU time {time.process_time() - t0:.0f} s ({'quick' if args.quick else 'full'} run)")
    if not args.quick:  # the page's sentences, checked on every seed
        for est in args.estimators:
            emit(
                claim(
                    all(r[est] > max(r["sft"] + 0.1, r["demos"]) for r in runs),
                    f"{est} ends above the SFT model by more than 0.1 and above the demonstrations' own accuracy, "
                    f"on every seed",
                )
            )
            emit(
                claim(
                    all(r[est + " unseen"] > r["sft unseen"] for r in runs),
                    f"{est} raises the accuracy on the problems RL never sampled, on every seed",
                )
            )
    curves = {est: [r[est + " curve"] for r in runs] for est in args.estimators}
    if args.record:
        with open(args.record, "w") as f:
            f.write(f"$ python examples/network.py  (recorded {time.strftime('%Y-%m-%d', time.gmtime())})\n")
            f.write("\n".join(lines) + "\n")
        with open(os.path.splitext(args.record)[0] + "_curves.json", "w") as f:
            json.dump(curves, f)
    if args.plot:
        plot(args.plot, curves)


if __name__ == "__main__":
    main()
