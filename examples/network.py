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
import subprocess
import sys
import time

if __name__ == "__main__":  # a run of its own (imported, it leaves the importer's settings alone)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core: threads only add overhead at this size
import numpy as np  # noqa: E402

from minirl_lm.nn.adamw import AdamW  # noqa: E402
from minirl_lm.nn.model import Transformer  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _network_rl  # noqa: E402
from _claims import stated  # noqa: E402
from _cli import integer, plot_path, quiet_pipe, real, record_path  # noqa: E402
from _network_task import EQ, PLUS, P, T, V, accuracy, answers, digits, kl_entropy, prompts, split, verifier  # noqa: E402, F401
from _record import NUMBERS, describe, stamp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = "docs/records/network.txt"  # the full run, written by --record docs/records/network.txt
CURVES = "docs/records/network_curves.json"  # its RL curves, written beside it
ESTIMATORS = ("grpo", "rloo", "ppo", "online_dpo")


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


def run(seed, args):
    """One seed: SFT, then each estimator from the same SFT model. Returns the figures."""
    rng = np.random.default_rng(seed)
    (a, b), (ha, hb) = split(rng, args.held)
    wrong = rng.random(a.size) < args.wrong  # drawn once: the flawed demonstrations
    demos = np.where(wrong[:, None], answers(a, b, carry=False), answers(a, b))  # (N, 3)
    model = Transformer(V, args.d, args.heads, args.layers, P + T - 1, rng, init_scale=0.1, value_head=True)
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
        lr, beta = args.lr[est], args.beta[est]
        kw = dict(rng=rng, log=out[est + " curve"], held=(ha, hb))
        if est in ("grpo", "rloo"):
            _network_rl.group(
                m, ref, a[pool], b[pool], est, args.rl_steps, args.N, args.K, args.mu, lr, beta, **kw
            )
        else:
            loop = getattr(_network_rl, est)
            loop(m, ref, a[pool], b[pool], args.rl_steps, args.N, args.K, args.mu, lr, beta, **kw)
        kl, ent = kl_entropy(m, ref, ha, hb, rng)
        out[est] = accuracy(m, ha, hb)
        out[est + " kl"], out[est + " entropy"] = kl, ent
        out[est + " unseen"] = accuracy(m, ha[unseen], hb[unseen])
        if est != "online_dpo":  # the clip fraction at the last epoch's start, mean over the logged steps
            out[est + " clip"] = float(np.mean([c[5] for c in out[est + " curve"]]))
        if est == "ppo":  # the critic: v(s_1) of each held-out prompt against its exact success
            y = answers(ha, hb)
            lp, v = m.logp_values(prompts(ha, hb), y, np.ones(y.shape))
            success = np.exp(lp.sum(1))  # (held,) pi(y* | x)
            out["ppo v corr"] = float(np.corrcoef(v[:, 0], success)[0, 1])
            out["ppo v mean"], out["ppo success"] = float(v[:, 0].mean()), float(success.mean())
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
    if "ppo v corr" in r:
        lines.append(
            f"network rl ppo value head: v(s_1) against pi(y*|x) on held-out problems: correlation "
            f"{r['ppo v corr']:.2f}, means {r['ppo v mean']:.3f} and {r['ppo success']:.3f}"
        )
    clips = [f"{est} {r[est + ' clip']:.3f}" for est in args.estimators if est + " clip" in r]
    if clips:
        lines.append("network rl clip fraction (mean over the logged steps): " + ", ".join(clips))
    return lines


def plot(path, curves):
    """Held-out accuracy, reward, KL to the SFT model, entropy and the clip fraction (none for
    online DPO) against RL steps: one colour per estimator, one line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 5, figsize=(15, 3.0))
    names = ("held-out accuracy", "batch reward", "KL to sft (batch)", "entropy (batch, nats)", "clip fraction")
    for colour, (est, runs) in zip(("C0", "C1", "C2", "C3"), curves.items()):
        for i, log in enumerate(runs):
            c = np.array(log, dtype=float)  # (points, 6): step, accuracy, reward, KL, entropy, clip fraction
            for j, ax in enumerate(axes):
                ax.plot(c[:, 0], c[:, j + 1], color=colour, lw=1, label=est if i == 0 else None)
    for ax, name in zip(axes, names):
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("RL step")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path)


def full_run_summary(path=RECORD):
    """Lines quoting the committed full run's mean (docs/records/network.txt), read, not typed."""
    try:
        with open(os.path.join(ROOT, path)) as f:
            text = f.read().splitlines()
    except OSError:
        return [f"(no record of the full run at {path})"]
    cmd = text[0].lstrip("$ ").strip() if text else path
    when = text[1].split(":")[0] if len(text) > 1 and text[1].startswith("recorded ") else ""  # date, commit
    head = f"{cmd}, {when}" if when else cmd
    block = next((i for i, line in enumerate(text) if line.startswith("mean over ")), None)
    if block is None:
        return [f"(the record {path} has no mean over seeds)"]
    body = []
    for line in text[block + 1 :]:
        if not line.startswith("  "):
            break
        if ": held-out accuracy " in line or "network rl unseen" in line:
            body.append("  full run: " + line.strip())
    return [f"the full run ({head}), {text[block].rstrip(':')}, from {path}:"] + body


def run_label(args):
    """Which run this is, for every label that names it."""
    if args.quick:
        return "quick run, smoke-sized"
    if (args.seeds, args.rl_steps, args.wrong, tuple(args.estimators)) == (3, 100, 0.5, ESTIMATORS):
        return "full run"
    seeds = f"{args.seeds} seed" + ("s" if args.seeds > 1 else "")
    return f"a run of {seeds}, {args.rl_steps} RL steps, --wrong {args.wrong:g}, not the page's full run"


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="a small run for tests and the docs build (seconds)")
    p.add_argument("--seeds", type=integer(1, 10), default=3, help="seeds 0 .. seeds-1 (default 3)")
    p.add_argument("--wrong", type=real(0.0, 1.0), default=0.5, help="fraction of demonstrations without carries")
    p.add_argument("--rl-steps", type=integer(1, 10000), default=100, help="RL steps per estimator")
    p.add_argument(
        "--estimators", nargs="+", choices=ESTIMATORS, default=ESTIMATORS, help="which RL runs (default all)"
    )
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
    args.lr = {"grpo": 3e-4, "rloo": 3e-4, "ppo": 3e-4, "online_dpo": 3e-4}  # AdamW's step size
    args.beta = {"grpo": 0.04, "rloo": 0.04, "ppo": 0.04, "online_dpo": 0.1}  # KL (PPO: in the reward); DPO's beta
    if args.quick:
        args.seeds, args.sft_steps, args.rl_steps = 1, 100, 5
    label = run_label(args)
    meta = stamp() if args.record else None  # the machine at the start of the run
    lines = []

    def emit(line):
        print(line, flush=True)
        lines.append(line)

    if args.quick:  # a smoke test: say so, and what a full run reaches
        emit(
            f"--quick: a smoke-sized run of the addition-with-carries task ({args.sft_steps} SFT steps, "
            f"{args.rl_steps} RL steps, one seed): it checks that the code runs; its accuracies say nothing "
            f"about the method"
        )
        for line in full_run_summary():
            emit(line)
        emit("this quick run:")
    t0 = time.process_time()
    runs = []
    for seed in range(args.seeds):
        runs.append(run(seed, args))
        emit(f"seed {seed} ({label}):" if args.quick or label != "full run" else f"seed {seed}:")
        for line in report(runs[-1], args):
            emit("  " + line)
    if args.seeds > 1:
        mean = {k: float(np.mean([r[k] for r in runs])) for k in runs[0] if "curve" not in k}
        emit(f"mean over {args.seeds} seeds:")
        for line in report(mean, args):
            emit("  " + line)
        emit("range (min - max) over the seeds:")
        keys = ["demos", "sft", "sft unseen"] + [e + x for e in args.estimators for x in ("", " unseen", " kl")]
        for k in keys + (["ppo v corr"] if "ppo" in args.estimators else []):
            lo, hi = min(r[k] for r in runs), max(r[k] for r in runs)
            emit(f"  {k:<17} {lo:.3f} - {hi:.3f}")
    emit(f"CPU time {time.process_time() - t0:.0f} s ({label})")
    if not args.quick:  # the page's sentences, checked on every seed
        for est in args.estimators:
            emit(
                stated(
                    all(r[est] > max(r["sft"] + 0.1, r["demos"]) for r in runs),
                    f"{est} ends above the SFT model by more than 0.1 and above the demonstrations' own accuracy, "
                    f"on every seed",
                )
            )
            emit(
                stated(
                    all(r[est + " unseen"] > r["sft unseen"] for r in runs),
                    f"{est} raises the accuracy on the problems RL never sampled, on every seed",
                )
            )
        if "ppo" in args.estimators:  # the page's reading of the critic
            emit(
                stated(
                    all(r["ppo v mean"] < r["ppo success"] for r in runs),
                    "ppo's critic ends below the policy's mean exact success on the held-out prompts "
                    "(it trails the rising reward), on every seed",
                )
            )
            emit(
                stated(
                    all(r["ppo v corr"] < 0.2 for r in runs),
                    "ppo's critic does not rank the prompts: the correlation of v(s_1) with their exact "
                    "success is below 0.2, on every seed",
                )
            )
    curves = {est: [r[est + " curve"] for r in runs] for est in args.estimators}
    if args.record:  # the run, where it ran, how closely it reproduces, and the quick form's lines
        quick = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--quick"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        quick = quick[quick.index("this quick run:") + 1 :]
        with open(args.record, "w") as f:
            f.write(f"$ python examples/network.py\n{describe(meta)}\nreproduces: {NUMBERS}\n")
            f.write("\n".join(lines) + "\n$ python examples/network.py --quick  (this quick run:)\n")
            f.write("\n".join(quick) + "\n")
        with open(os.path.splitext(args.record)[0] + "_curves.json", "w") as f:
            json.dump(curves, f)
    if args.plot:
        plot(args.plot, curves)


if __name__ == "__main__":
    main()
