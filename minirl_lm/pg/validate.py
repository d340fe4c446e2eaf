"""The bundles still in use outside the declared boundary: those of the chapter's toy,
`tasks.py`; they go when it declares its arguments with `boundary`. Built on `core/checks.py`;
NumPy only."""

import numbers

import numpy as np

from minirl_lm.core.checks import (
    callable_check,
    choice,
    float_scalar,
    int_scalar,
    real_result,
)


def toy_response(prompt, response, prompts, V):
    """The token id of a one-token ``response`` to one of ``prompts`` (tasks.py's toy)."""
    if not isinstance(prompt, str) or prompt not in prompts:
        raise ValueError(f"prompt: expected one of {list(prompts)}, got {prompt!r}"[:200])
    if isinstance(response, (str, bytes)) or not hasattr(response, "__len__") or len(response) != 1:
        raise ValueError(
            f"response: expected a tuple of one token id (the toy's responses are one token), got {response!r}"[
                :200
            ]
        )
    y = response[0]
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, numbers.Integral):
        raise TypeError(f"response: expected an integer token id, got {y!r}"[:200])
    if not 0 <= y < V:
        raise ValueError(f"response: expected a token id in [0, {V}), got {y}")
    return y


def grader_table(grader, graders, prompts, V, bound=None):
    """The ``(N, V)`` rewards of a grader (a name in ``graders`` or a callable) on every prompt
    and one-token response, each a finite number (``|R| <= bound`` if given)."""
    grader = graders[choice(grader, "grader", set(graders))] if isinstance(grader, str) else grader
    callable_check(grader, "grader", 2, "grader(prompt, response)")
    R = np.array(
        [
            [real_result(grader(x, (y,)), "grader", f" (a finite reward) for {x!r}, {y}") for y in range(V)]
            for x in prompts
        ]
    )
    return R if bound is None else grader_rewards(R, bound)


def grader_rewards(R, bound):
    """A grader's finite rewards ``R`` if every ``|R| <= bound`` (the advantages' domain), else a
    ValueError naming the grader (the rewards are its output, not an argument)."""
    if np.abs(R).max() > bound:
        raise ValueError(
            f"grader: expected rewards |R| <= {bound:g} (the advantages' domain), "
            f"got max |R| = {np.abs(R).max():g}"
        )
    return R


def toy_policy(policy, shape):
    """Raise unless ``policy`` holds a table ``theta`` of ``shape``."""
    got = getattr(getattr(policy, "theta", None), "shape", None)
    if got != shape:
        raise ValueError(
            f"policy: expected a TabularPolicy of shape ({shape[0]}, "
            f"{shape[1]}) for the toy, got {type(policy).__name__} with shape {got}"
        )
    return policy


def train_args(K, n_responses, seed, grader, beta, lr, baseline, record_at):
    """The arguments of tasks.train: ``(K, steps, seed, beta, lr, record_at (a set))``."""
    K = int_scalar(K, "K", low=1)
    n_responses = int_scalar(n_responses, "n_responses", low=K)
    beta = float_scalar(beta, "beta", low=0.0)
    lr = float_scalar(lr, "lr", low=0.0)
    seed = int_scalar(seed, "seed", low=0)
    choice(baseline, "baseline", {"standardized", "mean", "loo"})
    if not (isinstance(grader, str) or callable(grader)):
        raise TypeError(f"grader: expected 'gold', 'sloppy' or a callable, got {type(grader).__name__}")
    if isinstance(record_at, (str, bytes)) or not hasattr(record_at, "__iter__"):
        raise TypeError(f"record_at: expected a collection of step counts, got {type(record_at).__name__}")
    steps = n_responses // K
    record_at = {int_scalar(v, "record_at", low=1, high=steps) for v in record_at}
    if baseline == "loo" and K == 1:
        raise ValueError("baseline: leave-one-out needs K >= 2, got K = 1")
    return K, steps, seed, beta, lr, record_at
