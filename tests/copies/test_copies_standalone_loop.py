"""The copies in a user's own training loop: the copies of grpo, policy and mdp are written into an
empty folder with scripts/standalone.py, and a user's script runs them in a process where
`minirl_lm` and `numba` cannot be imported (a `sitecustomize` on PYTHONPATH makes both imports
raise ImportError): `grpo_step` with the copied `TabularPolicy`, on the copied `TokenMDP` and on
an environment the user wrote; and a loop of the user's own (their log-softmax, their backward)
around the copied `grpo_loss`, with a mask that has holes (tool tokens inside a response)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BLOCK = """
import importlib.abc
import sys


class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("minirl_lm", "numba"):
            raise ImportError(f"{name} is blocked beside the standalone copies")
        return None


sys.meta_path.insert(0, _Blocked())
"""

COMMON = """
import json
import numpy as np

for name in ("minirl_lm", "numba"):
    try:
        __import__(name)
    except ImportError:
        pass
    else:
        raise SystemExit(f"{name} was importable")
import grpo, mdp, policy  # the copies, from this folder
assert all(m.__file__.startswith(FOLDER) for m in (grpo, mdp, policy))
"""

STEP = """
out = {}
# grpo_step with the copied policy on the copied TokenMDP
env = mdp.TokenMDP(["a", "b"], V=3, eos=2, max_len=3, ids="lazy", capacity=64)
pol = policy.TabularPolicy(np.zeros((64, 3)))
ref = pol.copy()
rng = np.random.default_rng(0)
r = grpo.grpo_step(pol, ref, env, lambda x, y: float(y[0] == 0), rng, K=4, mu=2, lr=0.5)
out["tokenmdp"] = [r["loss"], float(np.abs(pol.theta).max())]
cp = env.checkpoint()
try:
    grpo.grpo_step(pol, ref, env, lambda x, y: float("nan"), rng, K=4)
except ValueError as e:
    out["refused"] = [str(e), env.checkpoint() == cp]


class Bandit:
    # a user's environment: one state per prompt, one token per response, no TokenMDP
    S, V = 2, 4

    def rollout(self, policy, K, rng):
        states = np.repeat(np.arange(self.S), K)[:, None]  # (B, 1) prompt-major
        tokens = policy.sample(states, rng)  # (B, 1)
        return type("Batch", (), dict(states=states, tokens=tokens, mask=np.ones(states.shape)))

    def score(self, grader, rollout):
        return [grader(int(s), int(y)) for s, y in zip(rollout.states[:, 0], rollout.tokens[:, 0])]


pol = policy.TabularPolicy(np.zeros((2, 4)))
ref = pol.copy()
best = []
for step in range(50):
    r = grpo.grpo_step(pol, ref, Bandit(), lambda s, y: float(y == s + 1), rng, K=8, lr=0.5, beta=0.0)
    best.append(float(np.mean([pol.probs()[s, s + 1] for s in range(2)])))
out["bandit"] = best
print(json.dumps(out))
"""

HOLES = """
# a user's loop: their own logits table and log-softmax, the copied grpo_loss, their own backward
rng = np.random.default_rng(1)
S, V, B, T = 3, 5, 4, 6
theta = np.zeros((S, V))
states = rng.integers(0, S, (B, T))
tokens = rng.integers(0, V, (B, T))
mask = np.array([[1, 1, 0, 0, 1, 1], [1, 0, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0], [0, 1, 1, 1, 1, 1]], float)
adv = np.array([1.0, -1.0, 0.5, -0.5])


def log_probs(theta):
    z = theta - theta.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def logp_of(theta):
    return log_probs(theta)[states, tokens] * mask


def backward(theta, g):  # dloss/dtheta from dloss/dlogp: onehot(y) - pi(. | s), row by row
    d = np.zeros_like(theta)
    p = np.exp(log_probs(theta))
    for b in range(B):
        for t in range(T):
            d[states[b, t]] -= g[b, t] * p[states[b, t]]
            d[states[b, t], tokens[b, t]] += g[b, t]
    return d


logp_ref = logp_of(theta)
out = {"losses": []}
for it in range(3):
    logp_old = logp_of(theta)
    for epoch in range(2):
        loss, g = grpo.grpo_loss(logp_of(theta), logp_old, logp_ref, adv, mask, agg="seq_mean_token_mean")
        out["losses"].append(float(loss))
        out.setdefault("grad_at_holes", 0.0)
        out["grad_at_holes"] = max(out["grad_at_holes"], float(np.abs(g[mask == 0]).max()))
        theta -= 0.5 * backward(theta, g)
# compaction: the rows with their holes removed give the same loss and, scattered back, the same gradient
lp, lo, lr_ = logp_of(theta), logp_old, logp_ref
order = np.argsort(1 - mask, axis=1, kind="stable")  # real tokens first, in their order
take = lambda x: np.take_along_axis(x, order, axis=1)
loss_h, g_h = grpo.grpo_loss(lp, lo, lr_, adv, mask, agg="seq_mean_token_mean")
loss_c, g_c = grpo.grpo_loss(take(lp), take(lo), take(lr_), adv, take(mask), agg="seq_mean_token_mean")
back = np.zeros_like(g_c)
np.put_along_axis(back, order, g_c, axis=1)
# the loss sums the same terms in another order: equal to 1e-12 relative; the gradient bitwise
out["compaction"] = [bool(abs(loss_h - loss_c) <= 1e-12 * abs(loss_c)), bool(np.array_equal(g_h, back))]
print(json.dumps(out))
"""


def _run(tmp_path, body):
    """Write the copies and the blocker, run the user's script with NumPy alone; its JSON."""
    folder = tmp_path / "copies"
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(BLOCK)
    made = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "standalone.py"), "grpo", "policy", "mdp", "-o", str(folder)],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    (folder / "user.py").write_text(f"FOLDER = {str(folder)!r}\n" + COMMON + body)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{block}:{folder}"}
    got = subprocess.run([sys.executable, "user.py"], cwd=folder, env=env, capture_output=True, text=True)
    assert got.returncode == 0, got.stderr[-3000:]
    return json.loads(got.stdout)


def test_grpo_step_runs_from_the_copies_on_a_users_environment(tmp_path):
    out = _run(tmp_path, STEP)
    losses, theta_max = out["tokenmdp"]
    assert len(losses) == 2 and theta_max > 0  # two epochs, the table moved
    message, unchanged = out["refused"]
    assert message.startswith("grader: expected a finite number") and unchanged  # lazy ids taken back
    best = out["bandit"]
    assert best[0] > 0.25 and best[-1] > 0.9  # the user's bandit learns its best token (1/4 at the start)


# The copied grpo_loss with holes in the mask (tool outputs inside a response): trained on the
# policy's tokens only, gradient exactly 0 at the holes.
def test_a_users_training_loop_with_hole_masks_runs_on_the_copies(tmp_path):
    out = _run(tmp_path, HOLES)
    assert len(out["losses"]) == 6 and out["grad_at_holes"] == 0.0
    same_loss, same_grad = out["compaction"]
    assert same_loss, "the loss of the rows with holes differs from the compacted rows' loss"
    assert same_grad, "the gradient of the rows with holes differs from the compacted rows' (scattered back)"


def test_the_copier_takes_the_numpy_path_and_says_what_a_refused_file_needs():
    sys.path.insert(0, str(ROOT / "scripts"))
    import standalone

    text = standalone.build("policy")
    assert "kernels" not in "".join(l for l in text.splitlines() if l.lstrip().startswith(("from ", "import ")))
    assert re.search(r"^# part \d+: from minirl_lm/core/_tabular.py -+$", text, re.M)  # the NumPy twin inlined
    for name, why in [
        (
            "bigvocab",
            "minirl_lm/scale/bigvocab.py needs Numba: it imports the Numba kernels (`from minirl_lm.kernels",
        ),
        (
            "kernels.exp",
            "minirl_lm/kernels/exp.py needs Numba (`from numba import njit` in minirl_lm/kernels/exp.py)",
        ),
    ]:
        with pytest.raises(standalone.StandaloneError) as e:
            standalone.build(name)
        assert str(e.value).startswith(why)
