"""Standalone copies (scripts/standalone.py): each runs with NumPy alone and equals the package.

For every file that can stand alone, the copy is written into an empty folder; the package's own
tests of that file run once more with a recorder (tests/standalone_record.py) that keeps the
inputs they pass to its public functions and what the package returned or raised; then a
process in which `minirl_lm` and `numba` cannot be imported (tests/standalone_replay.py) makes
every recorded call on the copy and compares: results bit for bit, errors by type and message.
"""

import ast
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import standalone  # noqa: E402

COPYABLE = standalone.copyable()
ESTIMATORS = ["advantages", "reinforce", "clip", "kl", "grpo", "dpo", "optimum", "critic"]

# Public functions that every test calls with objects the copy cannot rebuild without the
# package (a TabularPolicy or a TokenMDP, which live in other copies; an environment holding a
# grader closure defined in a test): no recorded call replays. The copy must still define them (checked), and a
# reader passes their own policy and environment objects.
NEEDS_PACKAGE = {
    "grpo": {"grpo_step"},
    "optimum": {"soft_values", "tilted_optimum_tree", "kl_objective_tree"},
    "preferences": {"online_dpo_step"},
    "oracle": {"compare", "a_function"},  # their arguments are functions: yours and ours
    "prm": {"prm_data"},  # its episodes are the package's Episodes
    "tree": {"allowing_inf"},  # it returns a kind (a closure), which a record cannot hold
    "env": {"ids", "episodes_of"},  # a kind (a closure) and a relation reading a MultiTurnMDP
    "layer": {"cache_of"},  # it returns a kind (a closure), which no record holds
}
# Functions whose every successful call holds such an object (an environment with its reward
# closure, a judge closing over a grader): only their errors replay (the bad-input battery of
# tests/contract/test_hardening.py passes them None, a string, a TokenMDP, ... in place of that object).
RESULT_NEEDS_PACKAGE = {
    "calculator": {"calculator", "calculator_reference"},
    "preferences": {"bradley_terry_judge"},
    "env": {"action_view", "MULTITURN_MDP"},  # the kind returns the environment it reads
    "values": {"policy_values", "soft_optimum", "kl_objective"},
    "tree": {"children"},  # its argument is a TokenMDP
    "student": {"expected_gradient", "fixed_point"},  # distill: their mdp is a TokenMDP
    "oracle": {"cases"},  # a reference function of the package
    "prm": {"fit_prm", "process_rewards", "process_env"},  # a MultiTurnMDP
}
# Copies whose results go through TabularPolicy's log-probs or backward: the copy runs its NumPy
# path (core/_tabular.py), equal to the package's Numba kernels to rounding, not bit for bit (the
# kernels have their own exp). Their results are compared norm-wise to this relative tolerance.
ROUNDING = {"tasks": 1e-12}
NOT_TESTS = re.compile(r"test_(standalone|examples?_|benchmark)")


def _covering_tests(module):
    """The test files that import `minirl_lm.<part>.<module>` (or the module from its part)."""
    part, _, stem = standalone.dotted(module).rpartition(".")
    where = f"minirl_lm.{part}" if part else "minirl_lm"  # tasks.py sits at the top of the package
    pat = re.compile(rf"{re.escape(where)}\.{stem}\b|from {re.escape(where)} import [^\n]*\b{stem}\b")
    return sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("test_*.py")
        if not NOT_TESTS.match(p.name) and pat.search(p.read_text())
    )


def _imports(text):
    """Top-level names of every module a source text imports (nested imports included)."""
    tops = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            tops.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            tops.add((node.module or ".").split(".")[0])
    return tops


def test_every_estimator_file_has_a_copy():
    assert set(ESTIMATORS) <= set(COPYABLE)
    assert "kernels" not in COPYABLE and "bigvocab" not in COPYABLE  # they need Numba
    assert "policy" in COPYABLE  # its NumPy path (core/_tabular.py) stands in for the kernels
    assert not {"checks", "validate"} & set(COPYABLE)  # the boundary: inlined


@pytest.mark.parametrize("module", COPYABLE)
def test_copy_imports_only_numpy_and_the_standard_library(module, tmp_path):
    text = standalone.write(module, tmp_path).read_text()
    assert _imports(text) <= {"numpy"} | set(sys.stdlib_module_names)
    assert standalone.build(module) == text  # deterministic


@pytest.fixture(scope="module")
def records(request, tmp_path_factory):
    """One run of the package's tests of every copyable file, recording their calls: this
    session's own run when it ran all of them before (tests/conftest.py), else a subprocess.
    Returns a folder with one file per module, `<module>.pkl`: the calls of that module only
    (a replay then reads its own calls, not every module's)."""
    files = sorted({f for m in COPYABLE for f in _covering_tests(m)})
    folder = tmp_path_factory.mktemp("records")
    rec = request.config._copies_record
    if rec is not None:
        ran = [str(Path(i.path).relative_to(ROOT)) for i in request.session.items]
        before = set(ran[: ran.index(str(Path(request.node.path).relative_to(ROOT)))])
        if set(files) <= before:
            return _split_records(rec.PUBLIC, rec._records, folder)
    out = folder / "all.pkl"
    env = dict(
        os.environ,
        MINIRL_RECORD_MODULES=",".join(map(standalone.dotted, COPYABLE)),
        MINIRL_RECORD_OUT=str(out),
        PYTHONPATH=os.pathsep.join(
            [str(ROOT / "tests" / "copies"), str(ROOT / "tests"), str(ROOT), os.environ.get("PYTHONPATH", "")]
        ),
    )
    rec = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "standalone_record", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    # a failing test of the package fails on its own; the recording only needs to exist
    assert out.exists(), rec.stdout[-3000:] + rec.stderr[-3000:]
    data = pickle.loads(out.read_bytes())
    return _split_records(data["public"], data["records"], folder)


def _split_records(public, records, folder):
    for module in COPYABLE:
        mine = {k: v for k, v in records.items() if k[0] == module}
        (folder / f"{module}.pkl").write_bytes(pickle.dumps({"public": {module: public[module]}, "records": mine}))
    return folder


def _replay(module, records, folder):
    """Write the copy of `module` into `folder` and replay the recorded calls on it, in a process
    where only NumPy and the standard library import."""
    standalone.write(module, folder)
    return subprocess.run(
        [
            sys.executable,
            "-I",
            str(ROOT / "tests" / "copies" / "standalone_replay.py"),
            str(folder),
            module,
            str(records / f"{module}.pkl"),
            str(ROUNDING.get(module, 0.0)),
        ],
        cwd=folder,
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def replays(records, tmp_path_factory):
    """Every copy's replay, started together on one thread per core (each a process of its own)."""
    root = tmp_path_factory.mktemp("replays")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        futures = {m: pool.submit(_replay, m, records, root / m) for m in COPYABLE}
    return {m: f.result() for m, f in futures.items()}


@pytest.mark.parametrize("module", COPYABLE)
def test_copy_replays_the_packages_tests_bit_for_bit(module, replays):
    assert _covering_tests(module), f"no test file imports minirl_lm.{module}"
    rep = replays[module]
    assert rep.returncode == 0, rep.stderr[-3000:]
    summary = json.loads(rep.stdout)
    assert summary["missing"] == []
    assert summary["mismatches"] == []
    if module in ("mdp", "adamw"):  # their interface is a class: tested by test_*_copy_* below
        return
    replayed = {n for n, (ok, bad) in summary["calls"].items() if ok + bad}
    assert replayed, f"no call to minirl_lm.{module} was replayed"
    assert set(summary["calls"]) - replayed == NEEDS_PACKAGE.get(module, set())
    returned = {n for n, (ok, bad) in summary["calls"].items() if ok}
    assert replayed - returned == RESULT_NEEDS_PACKAGE.get(module, set()), "functions only ever seen raising"


def test_a_copy_is_kept_until_a_package_file_changes_and_read_back_from_disk(tmp_path, monkeypatch):
    pkg = tmp_path / "minirl_lm"
    shutil.copytree(standalone.PKG_DIR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(standalone.tempfile, "gettempdir", lambda: str(tmp_path))  # the disk cache here
    monkeypatch.setattr(standalone, "_built", {})
    monkeypatch.setattr(standalone, "_on_disk", {})
    monkeypatch.setattr(standalone, "_new_on_disk", set())
    first = standalone.build("pg.clip", pkg)
    assert standalone.build("pg.clip", pkg) is first
    standalone._save_to_disk()
    assert len(list(tmp_path.glob("minirl-copies-*.json"))) == 1
    # a new process (empty caches) reads the copy from disk: it builds nothing
    build = standalone._build
    monkeypatch.setattr(standalone, "_built", {})
    monkeypatch.setattr(standalone, "_on_disk", {})
    monkeypatch.setattr(standalone, "_new_on_disk", set())
    monkeypatch.setattr(standalone, "_build", lambda *a: pytest.fail("built again"))
    assert standalone.build("pg.clip", pkg) == first
    assert not standalone._new_on_disk  # read, not written back
    monkeypatch.setattr(standalone, "_build", build)
    clip = pkg / "pg" / "clip.py"
    clip.write_text(clip.read_text() + "\nEXTRA_FOR_THE_TEST = 1\n")
    assert "EXTRA_FOR_THE_TEST = 1" in standalone.build("pg.clip", pkg)  # a changed file: built again


def test_grpo_copy_holds_its_own_code_then_its_parts_in_the_order_it_imports_them():
    text = standalone.build("grpo")
    heads = re.findall(
        r"^# (part \d+|input checks|the declared boundary): from minirl_lm/(?:\w+/)?(\w+)\.py", text, re.M
    )
    assert [m for _, m in heads] == ["ops", "advantages", "clip", "kl", "boundary"]  # no bundle: the engine alone
    assert text.index("\ndef grpo_loss(") < text.index("# part 1: from")  # the file's own code first


def test_clip_copy_ends_with_the_engine_and_the_declarations():
    text = standalone.build("clip")
    engine = text.index("# the declared boundary: from minirl_lm/boundary.py")
    assert text.index("\ndef clipped_surrogate(") < text.index("# part 1: from minirl_lm/core/ops.py") < engine
    assert "@boundary" not in text and text.index("\nclipped_surrogate = boundary(") > engine
    assert '__all__ = ["CLIP", "clipped_surrogate", "clip_fraction"]' in text
    assert "\ndef number(" in text and "\ndef finite(" in text and "\nMAX_LEN = " in text
    assert "\ndef has(" not in text and "\ndef generator(" not in text  # only the kinds it uses
    assert "def float_array(" not in text  # no bundle of core/checks.py: the engine alone


def test_a_declaration_keeps_its_comment_after_the_call_and_shared_kinds_precede_it():
    text = standalone.build("kl")
    assert '\nexact_kl = boundary(p=array("S V")' in text and "returns=None)(exact_kl)  # inf is a KL" in text
    engine = text.index("# the declared boundary: from minirl_lm/boundary.py")
    assert engine < text.index("\nKL = dict(") < text.index("\nkl_per_token = boundary(**KL")


def test_cli_writes_the_copy(tmp_path):
    out = subprocess.run(
        [sys.executable, "scripts/standalone.py", "minirl_lm/pg/clip.py", "-o", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "clip.py").read_text() == standalone.build("clip")


@pytest.mark.parametrize(
    "argv",
    [
        ["minirl_lm/kernels/__init__.py", "-o", "x"],
        ["minirl_lm/nothing.py", "-o", "x"],
        ["README.md", "-o", "x"],
        ["minirl_lm/pg/clip.py"],
        ["-o", "x"],
    ],
)
def test_cli_bad_arguments_are_usage_errors(argv, tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "standalone.py"), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "error:" in out.stderr


def test_adamw_copy_steps_like_the_package(tmp_path):
    """AdamW's interface is a class, which the recorder does not wrap: compare it directly."""
    import pickle

    import numpy as np

    from minirl_lm.nn.adamw import AdamW

    standalone.write("adamw", tmp_path)
    script = """
import pickle, sys
sys.modules["minirl_lm"] = None
sys.modules["numba"] = None
sys.path.insert(0, ".")
import numpy as np
from adamw import AdamW
p = {"w": np.linspace(-1, 1, 6).reshape(2, 3)}
opt = AdamW(p, lr=0.1, weight_decay=0.01)
for k in range(3):
    opt.step({"w": np.cos(np.arange(6.0) + k).reshape(2, 3)})
out = [p["w"]]
try:
    opt.step({"w": np.full((2, 3), np.nan)})
except Exception as e:
    out.append((type(e).__name__, str(e)))
sys.stdout.buffer.write(pickle.dumps(out))
"""
    got = subprocess.run([sys.executable, "-I", "-c", script], cwd=tmp_path, capture_output=True)
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    p = {"w": np.linspace(-1, 1, 6).reshape(2, 3)}
    opt = AdamW(p, lr=0.1, weight_decay=0.01)
    for k in range(3):
        opt.step({"w": np.cos(np.arange(6.0) + k).reshape(2, 3)})
    try:
        opt.step({"w": np.full((2, 3), np.nan)})
    except ValueError as e:
        err = ("ValueError", str(e))
    w, got_err = pickle.loads(got.stdout)
    assert np.array_equal(w, p["w"]) and got_err == err


def test_mdp_copy_enumerates_and_rolls_out_like_the_package(tmp_path):
    """TokenMDP's interface is a class, which the recorder does not wrap: compare it directly."""
    import numpy as np

    from minirl_lm.core.mdp import TokenMDP

    standalone.write("mdp", tmp_path)
    script = """
import pickle, sys
sys.modules["minirl_lm"] = None
sys.modules["numba"] = None
sys.path.insert(0, ".")
from mdp import TokenMDP
m = TokenMDP(("a", "b"), V=4, eos=3, max_len=3)
r = m.all_responses()
out = [m.S, r.states, r.tokens, r.mask, r.prompt, r.lengths, m.step((1,), 2), m.is_terminal((3,))]
for bad in ((("a",), 0, 1), (("a",), 4, 9)):
    try:
        TokenMDP(bad[0], V=bad[1], eos=bad[2])
    except Exception as e:
        out.append((type(e).__name__, str(e)))
sys.stdout.buffer.write(pickle.dumps(out))
"""
    got = subprocess.run([sys.executable, "-I", "-c", script], cwd=tmp_path, capture_output=True)
    assert got.returncode == 0, got.stderr.decode()[-2000:]
    import pickle

    got = pickle.loads(got.stdout)
    m = TokenMDP(("a", "b"), V=4, eos=3, max_len=3)
    r = m.all_responses()
    want = [m.S, r.states, r.tokens, r.mask, r.prompt, r.lengths, m.step((1,), 2), m.is_terminal((3,))]
    for bad in ((("a",), 0, 1), (("a",), 4, 9)):
        try:
            TokenMDP(bad[0], V=bad[1], eos=bad[2])
        except Exception as e:
            want.append((type(e).__name__, str(e)))
    assert len(got) == len(want) == 10
    for a, b in zip(got, want):
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        else:
            assert a == b


def test_the_committed_copies_are_current():
    """copies/ in the repository holds every copy, for a reader who wants one without building the site."""
    folder = ROOT / "copies"
    stale = [
        n
        for n in COPYABLE
        if not (folder / f"{n}.py").is_file() or (folder / f"{n}.py").read_text() != standalone.build(n)
    ]
    extra = sorted(p.stem for p in folder.glob("*.py") if p.stem not in COPYABLE)
    assert not stale and not extra, (
        f"copies/ is stale ({stale}) or holds removed files ({extra}): python scripts/standalone.py --all -o copies"
    )
