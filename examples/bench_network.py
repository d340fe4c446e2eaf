"""The network beside the same model in PyTorch (CPU, eager), one thread each, in one run.

Two operations of the RL loop of `examples/network.py`, on the same weights (ours copied into
PyTorch) and the same batch, float64 in both:

- **train step**: the forward and backward of a batch, `model.backward(prompt, tokens, mask, C)`
  (which runs its own forward) against PyTorch's forward, `loss = sum(C * logp)` and
  `loss.backward()` (autograd);
- **rollout**: T tokens drawn with a key/value cache, `nn.generate.generate` against the same
  loop in PyTorch under `torch.no_grad()`, from the same uniforms.

Before timing, the two are checked to agree: the loss and every parameter's gradient to 1e-12
relative (the largest absolute difference over the largest entry), and the rollout's tokens
exactly with their log-probs to 1e-12 (`AGREE`). The PyTorch model is what a user writes: `F.rms_norm`,
`F.scaled_dot_product_attention(is_causal=True)`, `F.gelu(approximate="tanh")`,
`log_softmax` and `gather`. Both run on one thread (`torch.set_num_threads(1)`; OMP, OpenBLAS,
MKL and Numba at 1, set before NumPy loads: the section runs this file as a child process).
Times are medians of interleaved rounds of CPU time (`time.process_time`: a busy neighbour
inflates it less than wall time); the ratio is
PyTorch's time over ours (above 1: ours is faster). Then a profile of our train step
(`cProfile`, taken in the same run) says where the time goes: each layer's forward and
backward with everything it calls, the rest, and the share of the matrix products.

    $ python examples/bench_network.py             # d = 64 and d = 256
    $ python examples/bench_network.py --quick     # fewer rounds
    $ python examples/bench_network.py --record docs/records/network_bench.json
    $ python examples/bench_network.py --show      # print the kept record (the page "Performance")
    $ python examples/benchmark.py --sections network
"""

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import time

# Set on some machines for older OpenBLAS builds; they slow this NumPy's matrix products (about
# 1.7x at d = 256 here), so the run drops them (and checks its results against PyTorch's).
PINNED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
if __name__ == "__main__":  # a run of its own, before NumPy loads (a child of benchmark.py starts fresh);
    for _k in ONE_THREAD:  # imported (by a test), it leaves the importer's threads alone: Numba
        os.environ[_k] = "1"  # reads NUMBA_NUM_THREADS again at each compile, and refuses a change

import numpy as np  # noqa: E402

from minirl_lm.nn.generate import generate  # noqa: E402
from minirl_lm.nn.model import Transformer  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # examples/_cli.py, beside this file
import _record  # noqa: E402
from _cli import quiet_pipe  # noqa: E402

try:
    import torch
    import torch.nn.functional as tF
except ImportError:  # optional: never a dependency
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = os.path.join(os.path.dirname(HERE), "docs", "records", "network_bench.json")
EPS = 1e-5  # RMSNorm's eps, as nn/block.py
SHAPE = dict(V=12, P=6, T=3, B=128, n_layer=2, head_size=32)  # examples/network.py's batch: N K = 128
WIDTHS = (64, 256)
AGREE = 1e-12  # the relative difference allowed between ours and PyTorch (float64 both)
GOALS = {64: 1.0, 256: 1 / 1.5}  # PyTorch / ours at least this: faster at d = 64, within 1.5x at 256
LINES = []


def say(line=""):
    LINES.append(line)
    print(line, flush=True)


def setup(d, seed=0):
    """Our model and a batch: (model, prompt (B, P), tokens (B, T), mask (B, T), C (B, T))."""
    s = SHAPE
    rng = np.random.default_rng(seed)
    model = Transformer(s["V"], d, d // s["head_size"], s["n_layer"], s["P"] + s["T"] - 1, rng, init_scale=0.1)
    prompt = rng.integers(0, s["V"], (s["B"], s["P"]))
    tokens = rng.integers(0, s["V"], (s["B"], s["T"]))
    mask = np.ones((s["B"], s["T"]))
    mask[::4, -1] = 0.0  # a quarter of the rows one token shorter
    return model, prompt, tokens, mask, rng.normal(size=(s["B"], s["T"]))


# ---------------------------------------------------------------- the same model in PyTorch


def torch_params(model):
    return {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in model.params.items()}


def torch_block(p, layer, z, H, cache=None, pos=0):
    """One pre-norm block on z (B, L, d); with ``cache`` (K, V), the new positions' keys and
    values are written at pos and attention reads positions 0 .. pos + L - 1."""
    B, L, d = z.shape
    x = tF.rms_norm(z, (d,), p[f"h{layer}.ln1"], EPS)
    q, k, v = (x @ p[f"h{layer}.qkv"]).split(d, dim=-1)  # (B, L, d) each
    q, k, v = (t.view(B, L, H, d // H).transpose(1, 2) for t in (q, k, v))  # (B, H, L, e)
    if cache is not None:
        cache[0][:, :, pos : pos + L], cache[1][:, :, pos : pos + L] = k, v
        k, v = cache[0][:, :, : pos + L], cache[1][:, :, : pos + L]
    o = tF.scaled_dot_product_attention(q, k, v, is_causal=pos == 0)  # one new position sees all
    z = z + o.transpose(1, 2).reshape(B, L, d) @ p[f"h{layer}.proj"]
    x = tF.rms_norm(z, (d,), p[f"h{layer}.ln2"], EPS)
    return z + tF.gelu(x @ p[f"h{layer}.fc"], approximate="tanh") @ p[f"h{layer}.out"]


def torch_logp(p, prompt, tokens, mask, n_layer, H):
    P, L = prompt.shape[1], prompt.shape[1] + tokens.shape[1] - 1
    seq = torch.cat([prompt, tokens[:, :-1]], dim=1)  # (B, P + T - 1)
    z = p["wte"][seq] + p["wpe"][:L]
    for layer in range(n_layer):
        z = torch_block(p, layer, z, H)
    h = tF.rms_norm(z, (z.shape[-1],), p["lnf"], EPS)[:, P - 1 :]  # (B, T, d)
    logp = torch.log_softmax(h @ p["head"].T, dim=-1)  # (B, T, V)
    return logp.gather(-1, tokens[..., None])[..., 0] * mask  # (B, T)


def torch_step(p, prompt, tokens, mask, C, n_layer, H):
    for t in p.values():
        t.grad = None
    loss = (C * torch_logp(p, prompt, tokens, mask, n_layer, H)).sum()
    loss.backward()
    return loss


def torch_generate(p, prompt, T, U, n_layer, H):
    """The rollout of nn.generate with the uniforms U (T, B): tokens (B, T) and their log-probs."""
    with torch.no_grad():
        (B, P), d = prompt.shape, p["wte"].shape[1]
        cache = [torch.zeros(2, B, H, P + T - 1, d // H, dtype=torch.float64) for _ in range(n_layer)]
        tokens, logps = [], []
        x, pos = prompt, 0
        for t in range(T):
            z = p["wte"][x] + p["wpe"][pos : pos + x.shape[1]]
            for layer in range(n_layer):
                z = torch_block(p, layer, z, H, cache[layer], pos)
            h = tF.rms_norm(z[:, -1], (d,), p["lnf"], EPS)  # (B, d)
            logpi = torch.log_softmax(h @ p["head"].T, dim=-1)  # (B, V)
            F = torch.cumsum(logpi.exp(), dim=-1)
            y = torch.clamp((F <= U[t][:, None]).sum(-1), max=logpi.shape[1] - 1)  # inversion
            tokens.append(y)
            logps.append(logpi.gather(-1, y[:, None])[:, 0])
            pos += x.shape[1]
            x = y[:, None]
        return torch.stack(tokens, 1), torch.stack(logps, 1)


# ---------------------------------------------------------------- agreement, timing, profile


def rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def check(d):
    """Loss, gradients and rollout of ours against PyTorch's: the largest relative difference."""
    model, prompt, tokens, mask, C = setup(d)
    H, n = d // SHAPE["head_size"], SHAPE["n_layer"]
    grads = model.backward(prompt, tokens, mask, C)
    loss = float((C * model.logp(prompt, tokens, mask)[0]).sum())
    p = torch_params(model)
    tt = [torch.from_numpy(x) for x in (prompt, tokens, mask, C)]
    tloss = float(torch_step(p, *tt, n, H).detach())
    worst = max([abs(loss - tloss) / abs(tloss)] + [rel(grads[k], p[k].grad.numpy()) for k in grads])
    ours = generate(model, prompt, SHAPE["T"], np.random.default_rng(1))
    U = torch.from_numpy(_uniforms(1))
    ty, tlp = torch_generate(p, tt[0], SHAPE["T"], U, n, H)
    same = bool(np.array_equal(ours[0], ty.numpy()))
    return worst, same, rel(ours[2], tlp.numpy())


def _uniforms(seed):
    """The uniforms nn.generate draws with default_rng(seed): T vectors of B, in order."""
    rng = np.random.default_rng(seed)
    return np.stack([rng.random(SHAPE["B"]) for _ in range(SHAPE["T"])])  # (T, B)


def timings(d, rounds, min_time):
    """Median seconds of each (operation, side), the rounds interleaving the four."""
    model, prompt, tokens, mask, C = setup(d)
    H, n = d // SHAPE["head_size"], SHAPE["n_layer"]
    p = torch_params(model)
    tt = [torch.from_numpy(x) for x in (prompt, tokens, mask, C)]
    U = torch.from_numpy(_uniforms(1))
    calls = {
        ("train step", "ours"): lambda: model.backward(prompt, tokens, mask, C),
        ("train step", "torch"): lambda: torch_step(p, *tt, n, H),
        ("rollout", "ours"): lambda: generate(model, prompt, SHAPE["T"], np.random.default_rng(1)),
        ("rollout", "torch"): lambda: torch_generate(p, tt[0], SHAPE["T"], U, n, H),
    }
    reps = {}
    for k, f in calls.items():  # warm up and calibrate
        f()
        t0 = time.process_time()
        f()
        reps[k] = max(1, int(min_time / max(time.process_time() - t0, 1e-6)))
    samples = {k: [] for k in calls}
    for _ in range(rounds):
        for k, f in calls.items():
            t0 = time.process_time()
            for _ in range(reps[k]):
                f()
            samples[k].append((time.process_time() - t0) / reps[k])
    return {k: float(np.median(v)) for k, v in samples.items()}


# Where a train step's time goes: (label, [(file, function)]) whose cumulative times are summed.
PARTS = [
    ("attention forward", [("attention.py", "attention_forward")]),
    ("attention backward", [("attention.py", "attention_backward")]),
    ("MLP forward", [("mlp.py", "mlp_forward")]),
    ("MLP backward", [("mlp.py", "mlp_backward")]),
    ("RMSNorm forward and backward", [("norm.py", "rmsnorm_forward"), ("norm.py", "rmsnorm_backward")]),
    ("embeddings forward and backward", [("embed.py", "embed_forward"), ("embed.py", "embed_backward")]),
    ("LM head (bigvocab)", [("bigvocab.py", "chunked_loss_grad")]),
]
PRODUCTS = [("matmul.py", "matmul"), ("matmul.py", "weight_grad")]  # the (B L, k) x (k, n) products


def profile(d, reps=30):
    """Our train step under cProfile: {label: share of the step}, each layer's forward and
    backward (their cumulative time), the rest, and the share in nn/matmul.py's products."""
    model, prompt, tokens, mask, C = setup(d)
    model.backward(prompt, tokens, mask, C)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(reps):
        model.backward(prompt, tokens, mask, C)
    pr.disable()
    st = pstats.Stats(pr).stats  # {(file, line, name): (calls, ncalls, tottime, cumtime, callers)}
    total = sum(v[2] for v in st.values())

    def cum(keys, col=3):
        return sum(v[col] for (f, _, n), v in st.items() if (os.path.basename(f), n) in keys) / total

    shares = {label: cum(keys) for label, keys in PARTS}
    missing = [label for label, keys in PARTS if not any((os.path.basename(f), n) in keys for f, _, n in st)]
    if missing:  # a layer renamed: its row would read 0 % and the rest swallow it
        raise RuntimeError(f"profile: no function of {missing} ran under cProfile; update PARTS")
    shares["the rest (checks, Python, copies)"] = 1.0 - sum(shares.values())
    shares["of all: the matrix products of nn/matmul.py"] = cum(PRODUCTS, col=2)
    return shares


def run_section(args):
    """Entry point of ``examples/benchmark.py --sections network``: this file in a child process
    (one thread each, set before NumPy loads)."""
    print(
        "\n## The network beside PyTorch (CPU eager, one thread, float64): python examples/bench_network.py\n",
        flush=True,  # before the child's lines
    )
    cmd = [sys.executable, os.path.join(HERE, "bench_network.py")] + (["--quick"] if args.quick else [])
    env = {k: v for k, v in os.environ.items() if k not in PINNED}
    subprocess.run(cmd, check=True, env={**env, **{k: "1" for k in ONE_THREAD}})


def run(quick):
    if torch is None:
        say("network: skipped (PyTorch is not installed: pip install torch==2.13.0, CPU)")
        return
    torch.set_num_threads(1)
    s = SHAPE
    say(
        f"V = {s['V']}, {s['n_layer']} blocks, heads of {s['head_size']}, B = {s['B']} rows of P = {s['P']} "
        f"prompt and T = {s['T']} response tokens; torch {torch.__version__}, numpy {np.__version__}, "
        f"1 thread each, float64; OpenBLAS's kernel its own choice ({', '.join(PINNED)} unset)"
    )
    rounds, min_time = (3, 0.05) if quick else (7, 0.2)
    ratios = {}
    for d in WIDTHS:
        worst, same, lp = check(d)
        ok = worst < AGREE and same and lp < AGREE
        say(
            f"d = {d}: ours and PyTorch agree: loss and gradients to {worst:.1e} relative, rollout tokens "
            f"{'identical' if same else 'DIFFERENT'}, their log-probs to {lp:.1e}"
        )
        if not ok:
            raise SystemExit(f"network bench: ours and PyTorch disagree at d = {d}; no timing")
        t = timings(d, rounds, min_time)
        for op in ("train step", "rollout"):
            ratio = ratios[(op, d)] = t[(op, "torch")] / t[(op, "ours")]
            verdict = "met" if ratio >= GOALS[d] else f"missed by {GOALS[d] / ratio:.2f}x"
            say(
                f"d = {d} {op:<10}: ours {t[(op, 'ours')] * 1e3:7.2f} ms, "
                f"PyTorch {t[(op, 'torch')] * 1e3:7.2f} ms, "
                f"PyTorch / ours {ratio:.2f} (goal >= {GOALS[d]:.2f}: {verdict})"
            )
    say("PyTorch / ours, side by side (above 1: ours is faster):")
    say(f"  {'':<11}" + "".join(f"{f'd = {d}':>10}" for d in WIDTHS))
    for op in ("train step", "rollout"):
        say(f"  {op:<11}" + "".join(f"{ratios[(op, d)]:>10.2f}" for d in WIDTHS))
    shares = {d: profile(d) for d in WIDTHS}
    say("where our train step's time goes (cProfile, this run; a layer's forward or backward with what it calls):")
    say(f"  {'':<45}" + "".join(f"{f'd = {d}':>10}" for d in WIDTHS))
    for label in shares[WIDTHS[0]]:
        say(f"  {label:<45}" + "".join(f"{shares[d][label]:>10.1%}" for d in WIDTHS))


def show(path):
    with open(path) as f:
        rec = json.load(f)
    print(_record.describe(rec["machine"]))
    print(f"reproduces: {rec.get('reproduces', _record.TIMING)}")
    print(f"$ {rec['command']}")
    print("\n".join(rec["lines"]))


def main(argv=None):
    quiet_pipe()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer and shorter rounds (seconds)")
    p.add_argument("--record", metavar="PATH", help="also write the run (and the machine) to a JSON record")
    p.add_argument("--show", action="store_true", help="print the kept record (docs/records/network_bench.json)")
    args = p.parse_args(argv)
    if args.show:
        if not os.path.isfile(RECORD):
            p.error(f"--show: expected a record at {RECORD} (write one with --record)")
        return show(RECORD)
    if args.record and not os.path.isdir(os.path.dirname(os.path.abspath(args.record))):
        p.error(f"--record: expected a file in an existing folder, got {args.record!r}")
    if any(k in os.environ for k in PINNED):  # NumPy already loaded with them: run again without
        env = {k: v for k, v in os.environ.items() if k not in PINNED}
        argv = sys.argv[1:] if argv is None else list(argv)
        raise SystemExit(subprocess.run([sys.executable, os.path.abspath(__file__)] + argv, env=env).returncode)
    info = _record.stamp() if args.record else None
    run(args.quick)
    if args.record:
        cmd = "python examples/bench_network.py" + (" --quick" if args.quick else "")
        with open(args.record, "w") as f:
            json.dump({"command": cmd, "machine": info, "reproduces": _record.TIMING, "lines": LINES}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
