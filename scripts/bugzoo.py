"""The bug zoo: loss bugs the RL frameworks shipped, re-created in our code, caught by our tests.

    python scripts/bugzoo.py              # every mutant
    python scripts/bugzoo.py --list       # the table only
    python scripts/bugzoo.py NAME ...     # the named mutants
    python scripts/bugzoo.py --check      # only apply every edit (in memory): is the table current?

Each mutant is a real bug from a framework's tracker or history, expressed as a small edit of one
function of our files (one or a few statements replaced). The package and its tests are copied
once into a temporary folder; for each mutant the pristine file is restored, the edit applied, and
the test files that cover the function run there (never in the working tree). A mutant is caught
when a test fails; the first failing test is printed.

An edit is anchored by the function's name and the statements' syntax tree, not by their text:
`apply` finds the function (`name` or `Class.method`), then the one run of consecutive statements
in it (at any depth) whose `ast.dump` equals that of the edit's old statements, and replaces their
lines by the new statements at the same indentation. Spacing, line breaks and comments do not
matter, so a reformat of the file cannot stale the table; a change of the code itself can: an edit
whose statements are not found exactly once in their function is reported STALE (the table must
follow the code), and the script exits 1 unless every mutant is caught.

Standard library only.
"""

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    name: str
    source: str  # the repository and the issue, pull request or commit
    bug: str  # what the framework's code did
    file: str  # our file the edit applies to
    edits: tuple  # ((old statements, new statements), ...), as Python source
    tests: tuple  # the test files that cover the function
    function: str = None  # the function the old statements are in (None: the whole module)


class Stale(ValueError):
    """An edit whose old statements are not found exactly once where the table says."""


def _function(tree, name):
    """The def named `name` (`Class.method` for a method) at the top of a module, or None."""
    scope = tree.body
    node = None
    for part in name.split("."):
        node = next(
            (
                n
                for n in scope
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == part
            ),
            None,
        )
        if node is None:
            return None
        scope = node.body
    return node


def _blocks(node):
    """Every list of statements inside `node` (bodies, else branches, `finally`; handlers and match
    cases are nodes of their own with a body)."""
    for sub in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(sub, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def _dumps(stmts):
    return [ast.dump(s) for s in stmts]


def apply_edit(text, old, new, function=None, where="the file"):
    """`text` with the statements `old` (source) replaced by `new`, inside `function`.

    Raises `Stale` (a ValueError) unless `old` matches exactly one run of statements there.
    """
    first_line = old.strip().splitlines()[0] if old.strip() else old
    try:
        want = _dumps(ast.parse(textwrap.dedent(old)).body)
    except SyntaxError as e:
        raise Stale(
            f"edit text not found once in {where}: {first_line!r} is not whole statements ({e.msg})"
        ) from None
    tree = ast.parse(text)
    scope = tree if function is None else _function(tree, function)
    if not want:
        raise Stale(f"edit text not found once in {where}: the old text holds no statement")
    if scope is None:
        raise Stale(f"edit text not found once in {where}: no function {function!r}")
    hits = []
    for block in _blocks(scope):
        have = _dumps(block)
        hits += [
            block[i : i + len(want)] for i in range(len(have) - len(want) + 1) if have[i : i + len(want)] == want
        ]
    if len(hits) != 1:
        inside = f" (function {function})" if function else ""
        raise Stale(f"edit text not found once in {where}{inside}: {first_line!r} ({len(hits)} matches)")
    first, last = hits[0][0], hits[0][-1]
    lines = text.splitlines(keepends=True)
    if lines[first.lineno - 1][: first.col_offset].strip():
        raise Stale(f"edit text not found once in {where}: {first_line!r} does not start its line")
    body = textwrap.indent(textwrap.dedent(new).strip("\n") + "\n", " " * first.col_offset)
    out = "".join(lines[: first.lineno - 1]) + body + "".join(lines[last.end_lineno :])
    ast.parse(out)  # the mutant must still be Python
    return out


def apply(mutant, text):
    """The text of `mutant.file` (given as `text`) with every edit of the mutant applied."""
    for old, new in mutant.edits:
        text = apply_edit(text, old, new, mutant.function, mutant.file)
    return text


# seqclip's check of the dual-clip constant, whole: an edit replaces whole statements
_C_RAISE = (
    '        raise ValueError(f"{name}: expected a number > 1 (the dual clip caps the loss of an A < 0 "\n'
    '                         f"token at c |A| once rho > c; with c <= 1 it would already cap '
    'tokens "\n'
    '                         f"at rho = 1, where nothing has moved, and zero their gradient), '
    'got {c}")'
)

MUTANTS = (
    Mutant(
        "clip_fraction_sign",
        "huggingface/trl PR #3175",
        "clip fraction counts every ratio outside [1-eps, 1+eps], whatever the sign of A",
        "minirl_lm/pg/clip.py",
        (
            (
                "    _, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)\n"
                "    clipped = surr2 < surr1                                    "
                "# (B, T); at padding rho = 1: never",
                "    rho, surr1, surr2 = branches(logp, logp_old, A, mask, eps, eps_high)\n"
                "    clipped = ((rho < 1.0 - eps) | (rho > 1.0 + eps_high)) & (mask > 0)",
            ),
        ),
        ("tests/pg/test_clip.py",),
        function="clip_fraction",
    ),
    Mutant(
        "singleton_raw_reward",
        "NVIDIA-NeMo/labs-molt PR #8",
        "a group of one response keeps its raw reward as its advantage",
        "minirl_lm/pg/advantages.py",
        (
            (
                "    c = rewards - group_mean(rewards)",
                "    c = rewards if rewards.shape[1] == 1 else rewards - group_mean(rewards)",
            ),
        ),
        ("tests/pg/test_advantages.py",),
        function="advantages",
    ),
    Mutant(
        "equal_rewards_residue",
        "verl-project/verl PR #4597",
        "the group mean of equal non-dyadic rewards is inexact, so r - mean is not 0 and "
        "the standardized advantage divides rounding residue",
        "minirl_lm/pg/advantages.py",
        (("    return np.where(equal, r[:, :1], mean)                     # (N, 1)", "    return mean"),),
        ("tests/pg/test_advantages.py",),
        function="group_mean",
    ),
    Mutant(
        "batch_not_group_statistics",
        "XU-YIJIE/grpo-flat issue #2",
        "the baseline is the mean over the whole batch instead of each prompt's group",
        "minirl_lm/pg/advantages.py",
        (
            (
                "    c = rewards - group_mean(rewards)\n    dof = max(rewards.shape[1] - ddof, 1)",
                "    c = rewards - rewards.mean()\n    dof = max(rewards.shape[1] - ddof, 1)",
            ),
        ),
        ("tests/pg/test_advantages.py",),
        function="standardized",
    ),
    Mutant(
        "kl_estimator_fallthrough",
        "areal-project/AReaL PR #408",
        "k1 falls through to k3 (an if chain without elif: the else of the k2 test overwrites k1)",
        "minirl_lm/pg/kl.py",
        (
            (
                '    if estimator == "k1":\n        return u, mask.copy()',
                '    if estimator == "k1":\n        k, dk = u, mask.copy()',  # no return: k3 overwrites it
            ),
        ),
        ("tests/pg/test_kl.py",),
        function="kl_per_token",
    ),
    Mutant(
        "kl_coefficient_ignored",
        "fw-ai/cookbook PR #379",
        "the KL term is computed and logged but never reaches the loss",
        "minirl_lm/pg/grpo.py",
        (("    return loss_clip + beta * loss_kl, d_clip + beta * d_kl", "    return loss_clip, d_clip"),),
        ("tests/pg/test_grpo.py",),
        function="grpo_loss",
    ),
    Mutant(
        "kl_loss_maximized",
        "verl-project/verl PR #179 (commit a65c915)",
        "the KL loss enters with the wrong sign: the policy is pushed away from pi_ref",
        "minirl_lm/pg/grpo.py",
        (
            (
                "    return loss_clip + beta * loss_kl, d_clip + beta * d_kl",
                "    return loss_clip - beta * loss_kl, d_clip - beta * d_kl",
            ),
        ),
        ("tests/pg/test_grpo.py",),
        function="grpo_loss",
    ),
    Mutant(
        "token_kl_summed_at_the_end",
        "huggingface/trl PR #2575",
        "the 'token-level' KL penalty is the sequence KL: summed and paid at the last token",
        "minirl_lm/values/critic.py",
        (
            (
                "    r = -beta * u  # (B, T) eq. (kl_shaped_reward)\n"
                "    lengths = mask.sum(axis=1).astype(np.int64)  # (B,)\n"
                "    rows = np.flatnonzero(lengths > 0)  # length 0: nothing at all",
                "    lengths = mask.sum(axis=1).astype(np.int64)  # (B,)\n"
                "    rows = np.flatnonzero(lengths > 0)  # length 0: nothing at all\n"
                "    r = np.zeros_like(mask)\n"
                "    r[rows, lengths[rows] - 1] = -beta * u.sum(axis=1)[rows]",
            ),
        ),
        ("tests/values/test_critic.py",),
        function="per_token_rewards",
    ),
    Mutant(
        "gae_reads_masked_values",
        "alibaba/ROLL PR #447",
        "the critic's value at a masked position bootstraps the last real token's TD error",
        "minirl_lm/values/critic.py",
        (
            (
                "    v = values[states] * mask  # (B, T) V(s_t), 0 at padding",
                "    v = values[states]",
            ),
        ),
        ("tests/values/test_critic.py",),
        function="td_errors",
    ),
    Mutant(
        "dual_clip_positive_advantage",
        "thu-ml/tianshou issue #433",
        "the dual clip's floor c A is applied to every token, positive advantages included",
        "minirl_lm/pg/seqclip.py",
        (("    dual = (A < 0) & (c * A > f1)", "    dual = c * A > f1"),),
        ("tests/pg/test_seqclip.py",),
        function="dual_clip_surrogate",
    ),
    Mutant(
        "dual_clip_constant_below_one",
        "opendilab/PPOxFamily issue #95",
        "a dual-clip constant c <= 1 is accepted (it caps tokens at rho = 1, before anything moved)",
        "minirl_lm/pg/seqclip.py",
        (("    if c <= 1.0:\n" + _C_RAISE, "    if c <= 0.0:\n" + _C_RAISE),),
        ("tests/pg/test_seqclip.py",),
        function="_dual_clip_bound",
    ),
    Mutant(
        "accumulation_divides_twice",
        "modelscope/ms-swift issue #10117",
        "a loss already normalized by the whole accumulation window's token count is divided "
        "by the number of accumulation steps again",
        "minirl_lm/pg/offpolicy.py",
        (
            (
                "            w = m / N                                          # global token count",
                "            w = m / N / G",
            ),
        ),
        ("tests/pg/test_offpolicy.py",),
        function="accumulation_weights",
    ),
    Mutant(
        "ipo_summed_not_averaged",
        "huggingface/trl PR #1265",
        "IPO's log-ratios are summed over the response where its length-averaged form was meant",
        "minirl_lm/direct/preferences.py",
        (
            ("    k_c = np.maximum(n_c, 1.0) if average else np.ones_like(n_c)", "    k_c = np.ones_like(n_c)"),
            ("    k_r = np.maximum(n_r, 1.0) if average else np.ones_like(n_r)", "    k_r = np.ones_like(n_r)"),
        ),
        ("tests/direct/test_preferences.py",),
        function="ipo_loss",
    ),
    Mutant(
        "gae_reset_at_observations",
        "verl-project/verl PR #7300 (commit 8a1bf6d5b)",
        "the return and GAE recursions restart at every masked (tool output) position instead "
        "of carrying across it",
        "minirl_lm/multiturn/values.py",
        (
            (
                "    return _recursion(values, rewards, action_mask, gamma, gamma * lam, carry)",
                "    return _recursion(values, rewards, action_mask, gamma, gamma * lam, False)",
            ),
        ),
        ("tests/multiturn/test_values.py",),
        function="gae_actions",
    ),
    Mutant(
        "observation_tokens_trained",
        "huggingface/trl PR #4975",
        "the loss mask ignores the tool mask: environment tokens are trained on as if the policy had written them",
        "minirl_lm/multiturn/env.py",
        (
            (
                "    n = ep.action_mask.sum(axis=1).astype(np.int64)",
                "    n = ep.mask.sum(axis=1).astype(np.int64)",
            ),
            (
                "        pos[b, :n[b]] = np.flatnonzero(ep.action_mask[b])",
                "        pos[b, :n[b]] = np.flatnonzero(ep.mask[b])",
            ),
        ),
        ("tests/multiturn/test_env.py",),
        function="action_view",
    ),
)


def _first_failure(output):
    m = re.search(r"^FAILED (\S+::\S+)", output, re.M)
    if m:
        return m.group(1).split("[")[0]
    m = re.search(r"^ERROR (\S+)", output, re.M)
    return f"{m.group(1)} (error)" if m else None


def run(mutants, keep=False):
    """Run each mutant in a temporary copy of the package; return [(mutant, verdict, detail)]."""
    work = Path(tempfile.mkdtemp(prefix="bugzoo-"))
    results = []
    try:
        for part in ("minirl_lm", "tests", "examples", "scripts"):
            shutil.copytree(ROOT / part, work / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for f in ("pyproject.toml",):
            shutil.copy(ROOT / f, work / f)
        env = dict(os.environ, PYTHONPATH=str(work), NUMBA_CACHE_DIR=str(work / ".numba"))
        for m in mutants:
            target = work / m.file
            pristine = (ROOT / m.file).read_text()
            try:
                text = apply(m, pristine)
            except Stale as e:
                results.append((m, "STALE", str(e)))
                continue
            target.write_text(text)
            try:
                out = subprocess.run(
                    [sys.executable, "-m", "pytest", "-x", "-q", "-rfE", "-p", "no:cacheprovider", *m.tests],
                    cwd=work,
                    env=env,
                    capture_output=True,
                    text=True,
                )
            finally:
                target.write_text(pristine)
            if out.returncode == 0:
                results.append((m, "SURVIVED", ""))
            else:
                results.append((m, "caught", _first_failure(out.stdout) or f"pytest exit {out.returncode}"))
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="run only these mutants")
    parser.add_argument("--list", action="store_true", help="print the table and exit")
    parser.add_argument(
        "--check", action="store_true", help="apply every edit in memory, run no test: exit 1 if one is stale"
    )
    args = parser.parse_args(argv)
    known = {m.name: m for m in MUTANTS}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"NAME: expected one of {sorted(known)}, got {unknown[0]!r}")
    chosen = [known[n] for n in args.names] or list(MUTANTS)
    if args.list:
        for m in chosen:
            print(f"{m.name:28} {m.source:42} {m.file} ({m.function}): {m.bug}")
        return 0
    if args.check:
        stale = 0
        for m in chosen:
            try:
                apply(m, (ROOT / m.file).read_text())
            except Stale as e:
                stale += 1
                print(f"mutant {m.name:28} STALE {e}")
        print(f"bug zoo: {len(chosen)} mutants, {len(chosen) - stale} edits apply, {stale} stale")
        return 1 if stale else 0
    results = run(chosen)
    for m, verdict, detail in results:
        what = f"caught by {detail}" if verdict == "caught" else f"{verdict} {detail}".strip()
        print(f"mutant {m.name:28} ({m.source}): {what}", flush=True)
    n_caught = sum(v == "caught" for _, v, _ in results)
    print(f"bug zoo: {len(results)} mutants, {n_caught} caught")
    return 0 if n_caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
