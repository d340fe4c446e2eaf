"""The exact engine against the examples' own enumeration before it, side by side in one run.

Each line runs one exact computation twice in this process, once through `minirl_lm.exact`
(today's example) and once through the example's code as it was before the engine (commit
f8ae078, loaded by `examples/_before.py` with `git show`), and prints the CPU time of each
(`time.process_time`: a busy neighbour inflates it less than wall time) and the largest
absolute difference of the results:

    exact atlas K=4: engine 12.3 s, before 366.5 s (29.8x), max diff 0.0e+00
    exact atlas K=8: engine 190.0 s (38 rows, every number finite: True; K=4 above)
    exact atlas K=8: of which batch statistics with the KL in the reward (real-valued) 4 rows 150.0 s; ...
    exact off_policy T=8: engine 0.1 s, before 2.0 s (15.4x), max diff 6.2e-16

atlas: every configuration's exact moments and fixed point (the page's table); at K = 8 the
engine alone (the code before it would walk 495^3 joint outcomes per batch-statistic update; the engine
walks them at most where the KL in the reward makes the statistics real-valued, and the next line says
what share of the time those rows take). The difference
is over every number the math determines: E[g], scale, cosine, variance, bias, and the fixed
point of every row with a smooth zero. A row with no smooth zero (the page lists them) stops
after a decaying step, so its last digits are set by rounding; its TV is compared on a line of
its own. off_policy: the lab's exact table (every estimator at every KL level) and Var W at
response length T.

    $ python examples/bench_exact.py             # atlas K = 3, 4, 8; off_policy T = 3, 5, 8 (minutes)
    $ python examples/bench_exact.py --quick     # atlas K = 3; off_policy T = 3, 5
    $ python examples/bench_exact.py --record docs/records/exact.json   # the full run, kept
    $ python examples/bench_exact.py --show      # print the kept run (the page "Performance")
    $ python examples/benchmark.py --sections exact
"""

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _before  # noqa: E402
import _record  # noqa: E402
import atlas  # noqa: E402
import off_policy  # noqa: E402
from _cli import quiet_pipe  # noqa: E402

from minirl_lm.core.mdp import TokenMDP  # noqa: E402
from minirl_lm.core.policy import TabularPolicy  # noqa: E402

LEVELS = (0.0, 0.02, 0.05, 0.1, 0.2)
RECORD = os.path.join(os.path.dirname(HERE), "docs", "records", "exact.json")
LINES = []  # every line printed, for --record


def say(line):
    LINES.append(line)
    print(line, flush=True)


def timed(f):
    t0 = time.process_time()
    out = f()
    return time.process_time() - t0, out


def atlas_rows(mod, K, times=None):
    """Every configuration of the page's table: (E g, [scale, cosine, variance, bias, tv, residual]);
    each row's CPU seconds appended to `times` (a list) when given."""
    task = mod.make_task("main")
    theta = mod.probe(task, 0)
    rows = []
    for cfg in mod.CONFIGS[: getattr(mod, "FIRST_TABLE", len(mod.CONFIGS))]:  # the rows both have
        t0 = time.process_time()
        Eg, _ = mod.moments(cfg, theta, task, K)
        r = mod.measure(cfg, task, K, theta)
        if times is not None:
            times.append(time.process_time() - t0)
        rows.append((Eg, np.array([r["scale"], r["cosine"], r["variance"], r["bias"], r["tv"], r["residual"]])))
    return rows


def atlas_line(K, old):
    t_new, new = timed(lambda: atlas_rows(atlas, K))
    t_old, ref = timed(lambda: atlas_rows(old, K))
    det, rough = 0.0, []
    for (e1, r1), (e0, r0) in zip(new, ref):
        smooth = r0[5] < 1e-6 and r1[5] < 1e-6
        det = max(det, np.abs(e1 - e0).max(), np.abs(r1[:4] - r0[:4]).max(), abs(r1[4] - r0[4]) if smooth else 0.0)
        if not smooth:
            rough.append(abs(r1[4] - r0[4]))
    head = f"exact atlas K={K}: engine {t_new:.1f} s, before {t_old:.1f} s ({t_old / t_new:.1f}x)"
    say(f"{head}, max diff {det:.1e}")
    say(
        f"exact atlas K={K}: {len(rough)} rows with no smooth zero (fixed point set by rounding): "
        f"their fixed point TV differs by at most {max(rough):.1e}"
    )


def atlas_k8_line():
    """The first table at K = 8, TRL's group, on the engine alone: the code before it walked the
    joint outcome of the batch rows, 495^3 = 1.2e8 points per expected update, and is not run.
    Then the time by kind of row: the batch statistics with the KL in the reward (real-valued, no
    grid: where the law of the sums costs more, the engine walks the joint too), the other batch
    statistics (a grid), the rest."""
    each = []
    t, rows = timed(lambda: atlas_rows(atlas, 8, each))
    finite = all(np.isfinite(e).all() and np.isfinite(r).all() for e, r in rows)
    say(f"exact atlas K=8: engine {t:.1f} s ({len(rows)} rows, every number finite: {finite}; K=4 above)")
    cfgs = atlas.CONFIGS[: len(rows)]
    walk = [i for i, c in enumerate(cfgs) if c[0] in atlas.COUPLED_ADVS and c[2] in atlas.FOLDED]
    coupled = [i for i, c in enumerate(cfgs) if atlas.coupled(c)]
    grid = [i for i in coupled if i not in walk]
    rest = [i for i in range(len(rows)) if i not in walk + grid]
    share = lambda ix: f"{len(ix)} rows {sum(each[i] for i in ix):.1f} s"  # noqa: E731
    say(
        f"exact atlas K=8: of which batch statistics with the KL in the reward (real-valued) {share(walk)}; "
        f"other batch statistics {share(grid)}; prompts independent {share(rest)}"
    )


def lab(mod, T):
    """The off-policy lab's exact table at response length T (seed 0, the page's levels)."""

    class Args:
        c, delta, geo = 1.5, 0.1, 1.1

    rng = np.random.default_rng(0)
    mdp = TokenMDP(off_policy.PROMPTS, V=3, eos=off_policy.EOS, max_len=T)
    ex = mod.Exact(mdp, TabularPolicy(rng.normal(size=(mdp.S, mdp.V))))
    taus = [ex.tau_for(level) for level in LEVELS]
    rows = mod.measure(ex, Args, taus)
    keys = sorted(k for k in rows if not any(t in k for t in off_policy.TRUST))  # the rows both have
    return np.array([rows[k] for k in keys]), np.array([ex.var_W(t) for t in taus])


def off_policy_line(T, old):
    t_new, (r1, w1) = timed(lambda: lab(off_policy, T))
    t_old, (r0, w0) = timed(lambda: lab(old, T))
    diff = max(np.abs(r1 - r0).max(), np.abs(w1 - w0).max())
    say(
        f"exact off_policy T={T}: engine {t_new:.2f} s, before {t_old:.2f} s ({t_old / t_new:.1f}x), "
        f"max diff {diff:.1e}"
    )


def run_section(args):
    print("\n## The exact engine against each example's enumeration before it (CPU seconds, one run)\n")
    if not _before.available():
        print(f"exact: skipped (this clone does not have commit {_before.COMMIT}, the code before the engine)")
        return
    old_atlas, old_lab = _before.load("atlas"), _before.load("off_policy")
    for K in (3,) if args.quick else (3, 4):
        atlas_line(K, old_atlas)
    if not args.quick:
        atlas_k8_line()
    for T in (3, 5) if args.quick else (3, 5, 8):
        off_policy_line(T, old_lab)


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
    p.add_argument("--quick", action="store_true", help="atlas K = 3 and off_policy T = 3, 5 only (seconds)")
    p.add_argument("--record", metavar="PATH", help="also write the run (and the machine) to a JSON record")
    p.add_argument("--show", action="store_true", help="print the kept record (docs/records/exact.json)")
    args = p.parse_args(argv)
    if args.show:
        if not os.path.isfile(RECORD):
            p.error(f"--show: expected a record at {RECORD} (write one with --record)")
        return show(RECORD)
    if args.record and not os.path.isdir(os.path.dirname(os.path.abspath(args.record))):
        p.error(f"--record: expected a file in an existing folder, got {args.record!r}")
    info = _record.stamp() if args.record else None
    run_section(args)
    if args.record:
        cmd = "python examples/bench_exact.py" + (" --quick" if args.quick else "")
        with open(args.record, "w") as f:
            json.dump({"command": cmd, "machine": info, "reproduces": _record.TIMING, "lines": LINES}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
