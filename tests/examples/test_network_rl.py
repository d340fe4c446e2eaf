"""examples/_network_rl.py: each loop drives the network through the library's objectives. PPO
trains the value head (its gradient reaches the trunk); online DPO skips ties (a batch of ties
changes nothing); every loop logs without drawing (the run is the same with or without a log)."""

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import _network_rl  # noqa: E402
from _network_task import P, T, V  # noqa: E402

from minirl_lm.nn.model import Transformer  # noqa: E402

A, B = np.arange(40) % 50, (np.arange(40) * 7) % 100  # 40 problems
HELD = (np.array([1, 22, 47]), np.array([9, 30, 3]))


def _model():
    return Transformer(V, 8, 2, 1, P + T - 1, np.random.default_rng(0), init_scale=0.3, value_head=True)


def _run(loop, log=None, steps=2, **kw):
    model = _model()
    ref = model.copy()
    args = (model, ref, A, B) + (("grpo",) if loop == "group" else ())
    getattr(_network_rl, loop)(
        *args, steps, 4, 4, 2, 1e-2, 0.04, np.random.default_rng(1), log=log, held=HELD, **kw
    )
    return model, ref


@pytest.fixture
def even_first_digit(monkeypatch):
    """A verifier an untrained model passes half the time: reward 1 iff the first digit is even."""
    monkeypatch.setattr(_network_rl, "verifier", lambda a, b, y: (y[:, 0] % 2 == 0).astype(np.float64))


@pytest.mark.parametrize("loop", ["group", "ppo", "online_dpo"])
def test_each_loop_moves_the_model_and_logs_without_drawing(loop, even_first_digit):
    log = []
    model, ref = _run(loop, log)
    again, _ = _run(loop)
    assert all(np.array_equal(model.params[k], again.params[k]) for k in model.params)
    assert any(not np.array_equal(model.params[k], ref.params[k]) for k in ("head", "wte"))
    assert [row[0] for row in log] == [1] and len(log[0]) == 6


def test_ppo_trains_the_value_head_and_the_others_do_not(even_first_digit):
    model, ref = _run("ppo")
    assert not np.array_equal(model.params["vhead"], ref.params["vhead"])
    for loop in ("group", "online_dpo"):
        other, _ = _run(loop)
        assert (other.params["vhead"] == 0).all() and (other.params["vbias"] == 0).all()


def test_online_dpo_skips_ties(monkeypatch):
    # a verifier nobody passes: every pair is a tie (0, 0), so no step is taken
    monkeypatch.setattr(_network_rl, "verifier", lambda a, b, y: np.zeros(a.size))
    model, ref = _run("online_dpo")
    assert all(np.array_equal(model.params[k], ref.params[k]) for k in model.params)
