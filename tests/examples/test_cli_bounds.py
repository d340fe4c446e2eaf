"""Every option of every example at the ends of its range and at one legal value far from its
default: the run ends with exit status 0 (or 2, a usage error, for a combination of counts the
example's check_work refuses), and never with a traceback.

Each value runs beside the example's smallest settings for its other options (`BASE`: --quick,
few steps, few seeds), so that only the value under test is extreme. The runs are in the reader's
mode (MINIRL_CLAIMS_STRICT=0): a page's sentence that does not hold at these settings is a printed
line, not a stop (examples/_claims.py), and the code after it must still run. A value whose run
would take minutes is above the option's bound: the bound is lowered in the example (its help
says why), so the largest legal value is tried here like any other.
"""

import json
import os
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
    "bug_effects.py": ["--only", "clip_fraction"],
    "conformance.py": [],
    "confusions.py": [],
    "distill.py": ["--quick"],
    "dpo.py": ["--pairs", "20", "--steps", "20"],
    "entropy.py": ["--quick", "--seeds", "1", "--steps", "4"],
    "exact.py": [],
    "group_bias.py": ["--K-max", "3", "--mc-groups", "100"],
    "grpo.py": ["--iters", "5", "--agg-seeds", "1", "--agg-iters", "2", "--every", "5"],
    "k_sweep.py": ["--K", "1", "2", "--responses", "64"],
    "kl_estimators.py": ["--iters", "20", "--samples", "100", "--sweep", "0.5"],
    "logprob.py": [],
    "loophole.py": ["--steps", "5", "--K", "4", "--betas", "0.1"],
    "multi_turn.py": ["--iters", "5"],
    "network.py": ["--quick", "--seeds", "1", "--rl-steps", "2", "--estimators", "grpo"],
    "off_policy.py": ["--quick", "--sweep-samples", "100", "--curve-max", "2"],
    "oracle.py": [],
    "preferences.py": ["--quick"],
    "reward_models.py": ["--quick"],
    "token_vs_sequence.py": [],
}
