"""Every option of every example at the ends of its range and at one legal value far from its
default: the run ends with exit status 0 (or 2, a usage error, for a combination of values the
example refuses after parsing: a check_work product, or two values that do not fit together), and
never with a traceback.

Each value runs beside the example's smallest settings for its other options (`BASE`: --quick,
few steps, few seeds), so that only the value under test is extreme. The runs are in the reader's
mode (MINIRL_CLAIMS_STRICT=0): a page's sentence that does not hold at these settings is a printed
line, not a stop (examples/_claims.py), and the code after it must still run. A value whose run
would take minutes is above the option's bound: the bound is lowered in the example (its help
says why), so the largest legal value is tried here like any other.
"""

import json
import os
import re
import sys
from pathlib import Path

import example_runs  # each command once per session, started early (EXAMPLE_RUNS)
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
READER = {"MINIRL_CLAIMS_STRICT": "0"}  # not the page's run: claims print, they do not stop
BIG_SEED = str(2**64 + 1)  # seed accepts any integer >= 0
TINY = "1e-300"  # the low end of an interval open at 0

# per example: the small settings every case runs beside, and each option's values to try
# (low end, high end, one far from the default; a list value: the option's nargs words)
BASE = {
    "atlas.py": ["--quick"],
    "bench_big_vocab.py": ["--V", "64", "--d", "8", "--N", "16", "--chunks", "8", "16"],
    "bench_exact.py": ["--quick"],
    "bench_network.py": ["--quick"],
    "benchmark.py": ["--quick", "--sections", "adv", "--rounds", "1", "--min-time", "0.001"],
    "best_of_n.py": ["--quick", "--seeds", "1"],
    "bug_effects.py": ["--only", "clip_fraction_sign"],
    "conformance.py": [],
    "confusions.py": [],
    "distill.py": ["--quick"],
    "dpo.py": ["--pairs", "20", "--steps", "20"],
    "entropy.py": ["--quick", "--seeds", "2", "--steps", "4"],
    "exact.py": [],
    "group_bias.py": ["--K-max", "3", "--mc-groups", "100"],
    "grpo.py": ["--iters", "5", "--agg-seeds", "1", "--agg-iters", "2", "--every", "5"],
    "k_sweep.py": ["--K", "1", "2", "--responses", "64"],
    "kl_estimators.py": ["--iters", "20", "--samples", "100", "--sweep", "0.5"],
    "logprob.py": [],
    "loophole.py": ["--steps", "5", "--K", "4", "--betas", "0.1"],
    "multi_turn.py": ["--iters", "5"],
    "network.py": ["--quick", "--seeds", "1", "--rl-steps", "2", "--estimators", "grpo"],
    "off_policy.py": ["--sweep-samples", "100", "--curve-max", "2"],
    "oracle.py": [],
    "preferences.py": ["--quick", "--steps", "5", "--max-iter", "30"],
    "reward_models.py": ["--quick"],
    "token_vs_sequence.py": [],
}


def _o(opt, *values):
    """(option, [value's argv words, ...]) for an option and its values (a list: nargs words)."""
    return opt, [[opt, *(v if isinstance(v, list) else [v])] for v in values]


SIXTY_FOUR = ",".join(str(0.01 + k / 64) for k in range(64))

# per example: each option and the argv words that try it (low end, high end, far from default)
VALUES = {
    "atlas.py": dict(
        [
            _o("--K", "2", "8"),
            _o("--task", "binary", "bandit"),
            _o("--seed", BIG_SEED),
            _o("--plot", "{out}/a.svg"),
        ]
    ),
    "bench_big_vocab.py": dict(
        [
            _o("--V", "1", str(2**19)),
            _o("--d", "1", str(2**16)),
            _o("--N", "1", str(2**15)),
            _o("--chunks", ["1", "1"], [str(2**15), str(2**15)]),
            _o("--dtype", "float64"),
            _o("--seed", BIG_SEED),
        ]
    ),
    "bench_exact.py": {},
    "bench_network.py": {},
    "benchmark.py": dict(
        [
            _o("--rounds", "1", "20"),
            _o("--min-time", TINY, "0.1"),
            # the dense section reads --shapes (the high end, 2^26 logits, is the full run's own shape)
            _o("--shapes", ["1x1", "--sections", "dense"], ["1x1"] * 8 + ["--sections", "dense"]),
            _o("--seed", BIG_SEED),
            _o("--sections", "tabular", "jit"),
            _o("--plot", "{out}/p.svg"),
            _o("--record", "{out}/b.json"),
        ]
    ),
    "best_of_n.py": dict(
        [
            _o("--K", "2", "12"),
            _o("--steps", "8", "5000"),
            _o("--seeds", "200"),
            _o("--seed", BIG_SEED),
            _o("--no-train", []),
            _o("--plot", "{out}/b.svg"),
        ]
    ),
    "bug_effects.py": dict(
        [_o("--only", "observation_tokens_trained"), _o("--seed", BIG_SEED), _o("--plot", "{out}/b.svg")]
    ),
    "conformance.py": dict([_o("--markdown", []), _o("--differences", [])]),
    "confusions.py": {},
    "distill.py": dict(
        [
            _o("--grader", "sloppy"),
            _o("--beta", "0.02", "10"),
            _o("--gkd-betas", "0", "1", ",".join(str(k / 8) for k in range(9))),
            _o("--keep", TINY, "1"),
            _o("--plot", "{out}/d.svg"),
        ]
    ),
    "dpo.py": dict(
        [
            _o("--pairs", "1", str(10**6)),
            _o("--seed", BIG_SEED),
            _o("--beta", "0.01", "100"),
            _o("--lr", TINY, "100"),
            _o("--steps", "1", "20000"),
            _o("--prior-std", "0.01", "1000"),
            _o("--plot", "{out}/d.svg"),
        ]
    ),
    "entropy.py": dict(
        [
            _o("--steps", "1", "40"),
            _o("--toy-steps", "1", "2000"),
            _o("--sampled-steps", "1", "2000"),
            _o("--K", "3", "4"),
            _o("--seeds", "100"),
            _o("--seed", BIG_SEED),
            _o("--plot", "{out}/e.svg"),
        ]
    ),
    "exact.py": dict([_o("--seed", BIG_SEED)]),
    "group_bias.py": dict(
        [
            _o("--K-max", "1", ["64", "--rewards=0,1", "--theta=0,0"]),  # 64: the enumeration of V = 2
            # one word each: argparse would take "-1000000,..." for an option
            ("--rewards", [["--rewards=-1000000,1000000,0,0,0"], ["--rewards", "0,0,0,0,1"]]),
            ("--theta", [["--theta=-50,50,0,0,0"], ["--theta", "50,-50,0,0,0"]]),
            _o("--mc-groups", "2", str(10**6)),
            _o("--seed", BIG_SEED),
            _o("--plot", "{out}/g.svg"),
        ]
    ),
    "grpo.py": dict(
        [
            _o("--seed", BIG_SEED),
            _o("--iters", "1", "2000"),
            _o("--K", "1", "1024"),
            _o("--mu", "1", "100"),
            _o("--lr", TINY, "10"),
            _o("--eps", TINY, "1"),
            _o("--eps-high", TINY, "10"),
            _o("--beta", "0.01", "10", ["10", "--lr", "1"]),  # 10 at the default lr 4: refused
            _o("--prior", "-10", "10"),
            _o("--agg", "seq_sum", "constant"),
            _o("--every", "1", "2000"),
            _o("--agg-seeds", "0", "1000"),
            _o("--agg-iters", "1", "500"),
            _o("--plot", "{out}/g.svg"),
        ]
    ),
    "k_sweep.py": dict(
        [
            _o("--K", "1", "4096", ["1", "2", "4", "8", "16", "32", "64"]),
            _o("--responses", "1", str(10**6)),
            _o("--seed", "0", BIG_SEED),
            _o("--lr", "0", "100"),
            _o("--baseline", "mean", "loo"),
            _o("--plot", "{out}/k.svg"),
        ]
    ),
    "kl_estimators.py": dict(
        [
            _o("--beta", "0.01", "100"),
            _o("--lr", TINY, "1000"),
            _o("--iters", "1", str(10**4)),
            _o("--samples", "2", str(10**7)),
            _o("--seed", BIG_SEED),
            _o("--sweep", "", "0.01", "100", SIXTY_FOUR),
            _o("--plot", "{out}/k.svg"),
        ]
    ),
    "logprob.py": dict([_o("--seed", "0", BIG_SEED)]),
    "loophole.py": dict(
        [
            _o("--betas", "0", "100", ["0"] * 64),
            _o("--K", "1", "4096"),
            _o("--steps", "1", "20000"),
            _o("--seed", BIG_SEED),
            _o("--seeds", "1000"),
            _o("--plot", "{out}/l.svg"),
        ]
    ),
    "multi_turn.py": dict(
        [
            _o("--q", "0", "1"),
            _o("--K", "2", "16"),
            _o("--cost", "0", "10"),
            _o("--beta", "0.001", "1000"),
            _o("--lam", "0", "1"),
            _o("--iters", "1", "2000"),
            _o("--seed", BIG_SEED),
            _o("--plot", "{out}/m.svg"),
            _o("--takeaway", []),
        ]
    ),
    "network.py": dict(
        [
            _o("--seeds", "10"),
            _o("--wrong", "0", "1"),
            _o("--rl-steps", "10000"),
            _o("--estimators", "rloo", "ppo", "online_dpo"),
            _o("--record", "{out}/n.txt"),
            _o("--plot", "{out}/n.svg"),
        ]
    ),
    "off_policy.py": dict(
        [
            _o("--seed", BIG_SEED),
            _o("--levels", "0,1e-300", "0,0.001", ",".join(f"{k / 400:g}" for k in range(64))),
            _o("--c", "1.0000000001", "1e6"),
            _o("--delta", TINY, "1e6"),
            _o("--geo", "1.0000000001", "1e6"),
            _o("--K", "2", "10000"),
            _o("--minibatches", "1", "2"),
            _o("--lr", TINY, "100"),
            _o("--sweep-kl", TINY, "0.3"),
            _o("--sweep-samples", "100000"),
            _o("--max-len", "1", "10"),
            _o("--curve-max", "1", "10"),
            _o("--section", *["estimators", "curve", "sweep", "minibatch", "normalizers"]),
            _o("--section", "takeaway", "conclusions", "caption"),
            _o("--quick", []),
            _o("--plot", "{out}/o.svg"),
        ]
    ),
    "oracle.py": {},
    "preferences.py": dict(
        [
            _o("--beta", "0.05", "100"),
            _o("--gamma", "0", "100"),
            _o("--lam", "0", "100"),
            _o("--z0", "100"),
            _o("--label-smoothing", "0", "0.49999"),
            _o("--max-iter", "1", "100000"),
            _o("--steps", "1", "1000"),
            _o("--pairs", "1", "600"),
            _o("--offline-pairs", "1", "10000"),
            _o("--lr", TINY, "100"),
            _o("--exo-eps", "1e-6", "0.5"),
            _o("--tau", "0.01", "10"),
            _o("--alpha", "0.05", "0.95"),
            _o("--tr-alpha", TINY, "1"),
            _o("--tr-steps", "1", "320"),
            _o("--tr-syncs", "1", "80"),
            _o("--diverge-iter", "2", "2000"),
            _o("--seed", BIG_SEED),
            _o("--no-family", []),
            _o("--takeaway", []),
            _o("--plot", "{out}/p.svg"),
        ]
    ),
    "reward_models.py": dict(
        [
            _o("--beta", "0.01", "100"),
            _o("--q", "0", "1"),
            _o("--cost", "0", "1"),
            _o("--seed", BIG_SEED),
            _o("--plot", "{out}/r.svg"),
        ]
    ),
    "token_vs_sequence.py": dict(
        [
            _o("--seed", BIG_SEED),
            _o("--K", "1", "1024"),
            _o("--scale", "0", "100"),
            _o("--lam", "0", "0.999999"),
            _o("--beta", "0", "100"),
            _o("--gamma", "0", "0.999999"),
            _o("--eps", TINY, "1"),
            _o("--move", "0", "100"),
        ]
    ),
}
# commands that run without the small settings (a record shown, a flag that takes no others)
ALONE = {
    "bench_big_vocab.py": [
        ["--quick", "--V", "64", "--d", "8", "--N", "16"],
        ["--plot", "{out}/v.svg", "--V", "64", "--d", "8", "--N", "16"],
    ],
    "bench_exact.py": [["--show"], ["--quick", "--record", "{out}/e.json"]],
    "bench_network.py": [["--show"], ["--quick", "--record", "{out}/n.json"]],
    "benchmark.py": [["--show"]],
    "confusions.py": [["accumulation"], ["entropy_knob", "clip_vs_bonus"]],
    "network.py": [["--show"]],
    "oracle.py": [[]],
    "k_sweep.py": [["--K", "1", "--responses", "1"], ["--K", "4096", "--responses", "4096"]],
}


def _cases(script):
    base = BASE[script]
    return [base + argv for argvs in VALUES[script].values() for argv in argvs] + ALONE.get(script, [])


# All cases of one script run in one subprocess (the imports are paid once), each as __main__,
# recording its exit code, stderr, stdout and time (the driver of test_cli_errors.py, whose
# stdout and stderr it keeps whole: a traceback is looked for in both).
DRIVER = """
import contextlib, io, json, os, runpy, sys, time, traceback
script, cases = sys.argv[1], json.loads(sys.argv[2])
results = []
for args in cases:
    sys.argv = [script] + args
    err, out = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code
        except BaseException:
            code = "exception"
            traceback.print_exc(file=err)
    results.append([code, err.getvalue(), out.getvalue()[-3000:], time.perf_counter() - t0])
    sys.stderr.write(f"{time.perf_counter() - t0:7.1f} s {code} {' '.join(args)}\\n")
print(json.dumps(results))
"""


def _drive_argv(script):
    return [sys.executable, "-c", DRIVER, str(EXAMPLES / script), json.dumps(_cases(script))]


SCRIPTS = sorted(BASE)
# started when the session starts (tests/conftest.py), two at a time beside the other tests, in a
# session that selects the cli_bounds tests (-m cli_bounds)
EXAMPLE_RUNS_CLI_BOUNDS = [(_drive_argv(s), READER) for s in SCRIPTS if _cases(s)]

_RESULTS = {}


def _results(script):
    if script not in _RESULTS:
        proc = example_runs.run(_drive_argv(script), cwd=ROOT, timeout=1800, env=dict(os.environ, **READER))
        assert proc.returncode == 0, proc.stderr[-3000:]
        _RESULTS[script] = dict(zip(map(tuple, _cases(script)), json.loads(proc.stdout)))
    return _RESULTS[script]


CASES = [(s, argv) for s in SCRIPTS for argv in _cases(s)]


def _id(script, argv):
    text = " ".join(argv[len(BASE[script]) :] if argv[: len(BASE[script])] == BASE[script] else argv)
    return f"{script} {text if len(text) < 60 else text[:60] + '...'}"


@pytest.mark.cli_bounds
@pytest.mark.parametrize("script, argv", CASES, ids=[_id(s, a) for s, a in CASES])
def test_a_legal_value_runs_to_the_end(script, argv):
    code, err, out, seconds = _results(script)[tuple(argv)]
    assert "Traceback" not in err and "Traceback" not in out, err[-3000:]
    if code == 2:  # only the example's own refusal of a combination after parsing: a usage line, no
        # run; not argparse's refusal of the value itself ("error: argument --X: ..."): it is legal
        assert "usage:" in err and "error:" in err and "error: argument " not in err, err[-1000:]
    else:
        assert code in (0, None), (code, err[-2000:])


@pytest.mark.cli_bounds
def test_an_explicit_count_wins_over_quick():
    """--quick sets the defaults of --steps and --seeds; one given on the command line wins (the
    cases above run --quick with --seeds 1 and --steps 8 or 1: they read back as given)."""
    out = _results("best_of_n.py")[tuple(BASE["best_of_n.py"] + ["--steps", "8"])][2]
    steps = re.findall(r"^  +(\d+)   +\d", out, re.M)  # the training table's rows: the recorded steps
    assert "mean over 1 seeds" in out and steps and steps[-1] == "8", out[-1000:]
    out = _results("entropy.py")[tuple(BASE["entropy.py"] + ["--steps", "1"])][2]
    assert "after 1 steps;" in out and "seeds 0..1" in out, out[-1000:]
    import importlib.util

    spec = importlib.util.spec_from_file_location("preferences_cli", EXAMPLES / "preferences.py")
    prefs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prefs)
    assert (prefs.parse_args(["--quick"]).steps, prefs.parse_args(["--quick"]).max_iter) == (60, 300)
    given = prefs.parse_args(["--quick", "--steps", "7", "--max-iter", "9"])
    assert (given.steps, given.max_iter) == (7, 9)
    assert (prefs.parse_args([]).steps, prefs.parse_args([]).max_iter) == (300, 3000)


def test_every_option_of_every_example_is_tried():
    """A new example or option fails here until its values are listed above."""
    assert sorted(VALUES) == sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
    for script in SCRIPTS:
        declared = set(re.findall(r'add_argument\(\s*"(--[\w-]+)"', (EXAMPLES / script).read_text()))
        tried = set(VALUES[script]) | {w for argv in _cases(script) for w in argv if w.startswith("--")}
        internal = {"--child", "--chunk"} if script == "bench_big_vocab.py" else set()
        assert declared - internal <= tried, (script, sorted(declared - internal - tried))


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv", [["k_sweep.py", "--K", "1", "2", "--responses", "64"], ["confusions.py", "accumulation"], ["exact.py"]]
)
def test_a_closed_output_pipe_ends_the_run_quietly(argv):
    """`python examples/X.py | head`: the reader goes away before the run writes; no traceback."""
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLES / argv[0]), *argv[1:]],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, MINIRL_EXAMPLES_SUBPROCESS="1"),
    )
    proc.stdout.close()  # the reader of the pipe is gone
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=300)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err[-2000:]
    assert code in (0, -13), (code, err[-500:])  # -13: ended by SIGPIPE, as `cat` is
