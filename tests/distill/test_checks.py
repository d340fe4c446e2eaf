"""distill/checks.py: the bundles of objectives.py, samples.py and student.py return their
arguments checked (float64, the shapes the math trusts) and reject the rest naming the argument;
every message is also exercised through the public functions (tests/distill/test_*.py) and the
bad-input battery."""

import numpy as np

from minirl_lm.core.mdp import TokenMDP
from minirl_lm.distill import checks as DC
from quiet import raises


def test_logits_args_returns_float64_and_checks_beta_and_temperature():
    z = np.zeros((1, 2, 3), np.float32)
    zs, zt, mask, beta, tau = DC.logits_args(z, z, [[1, 0]], 0.5, 2)
    assert zs.dtype == np.float64 and mask.tolist() == [[1.0, 0.0]] and beta == 0.5 and tau == 2.0
    assert DC.logits_args(z, z, [[1, 1]])[3] is None  # no beta asked
    assert raises(TypeError, lambda: DC.logits_args(z, z, [[1, 1]], None)).startswith("beta: ")
    assert raises(ValueError, lambda: DC.logits_args(z, z, [[1, 1]], -0.1)).startswith("beta: ")
    assert raises(ValueError, lambda: DC.logits_args(np.zeros((1, 0, 3)), z, [[1, 1]])).startswith(
        "student_logits:"
    )


def test_reward_and_nll_args():
    logp, lt, mask, to_go = DC.reward_args([[-1, -2]], [[-1.0, -1.0]], [[1, 1]], np.bool_(True))
    assert logp.dtype == np.float64 and to_go is True
    assert raises(ValueError, lambda: DC.nll_args([[-1.0]], [[1, 1]])).startswith("mask: ")


def test_tied_and_backward_args():
    theta, tie = DC.tied_args([[0, 1]], [0, 0, 0])
    assert theta.dtype == np.float64 and tie.dtype == np.int64
    assert raises(ValueError, lambda: DC.tied_args([[0.0, 1.0]], np.zeros(0, np.int64))).startswith("tie: ")
    assert raises(ValueError, lambda: DC.backward_args(np.zeros((2, 2)), [0, 0], 0)).startswith("G: ")
    assert raises(TypeError, lambda: DC.backward_args(np.zeros((2, 2)), [0, 0], True)).startswith("G: ")


def test_exact_and_fixed_args():
    mdp = TokenMDP(["a"], V=2, eos=None, max_len=1)  # S = 1
    args = DC.fixed_args("gkd", [[0.0, 0.0]], [0], [[0.5, 0.5]], mdp, 0.5, 1.0, 3, 1e-9, ("gkd",))
    assert args[0] == "gkd" and args[-3:] == (1.0, 3, 1e-9)
    lazy = TokenMDP(["a"], V=2, eos=None, max_len=1, ids="lazy", capacity=4)
    msg = raises(ValueError, lambda: DC.exact_args("gkd", [[0.0, 0.0]], [0], [[0.5, 0.5]], lazy, 0.5, ("gkd",)))
    assert msg.startswith("mdp: ")
    assert raises(
        ValueError, lambda: DC.fixed_args("gkd", [[0.0, 0.0]], [0], [[0.5, 0.5]], mdp, 0.5, 1.0, 0, 1.0, ("gkd",))
    ).startswith("max_steps: ")
    assert raises(
        ValueError, lambda: DC.fixed_args("gkd", [[0.0, 0.0]], [0], [[0.5, 0.5]], mdp, 0.5, 1.0, 3, 0.0, ("gkd",))
    ).startswith("tol: ")
