"""scripts/mutation_score.py: the per-file score read from mutmut's records, on a made-up record.

The records are written by hand here, so every count and percentage is known in advance.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import mutation_score  # noqa: E402


def _write(tmp_path, records, equivalents):
    meta = tmp_path / "mutants" / "minirl_lm"
    meta.mkdir(parents=True)
    for fname, codes in records.items():
        (meta / f"{fname}.meta").write_text(json.dumps({"exit_code_by_key": codes}))
    eq = tmp_path / "equivalents.md"
    eq.write_text(equivalents)
    return meta, eq


def _run(meta, eq):
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "mutation_score.py"),
            "--meta",
            str(meta),
            "--equivalents",
            str(eq),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


RECORDS = {
    "a.py": {
        "m.a.x_f__mutmut_1": 1,
        "m.a.x_f__mutmut_2": 3,
        "m.a.x_f__mutmut_3": 36,
        "m.a.x_f__mutmut_4": 0,
        "m.a.x_g__mutmut_1": 0,
        "m.a.x_g__mutmut_2": -15,
    },
    "b.py": {"m.b.x_h__mutmut_1": 1, "m.b.x_h__mutmut_2": None},
}
EQUIV = (
    "## a.py\n\n| `x_f__mutmut_4` | `a` -> `b` | why |\n| `x_g__mutmut_1`, `_9` | `c` -> `d` | why |\n"
    "## b.py\n\n| `x_f__mutmut_4` | `a` -> `b` | no such survivor in b.py |\n"
)


def test_equivalents_are_read_with_their_bare_suffixes():
    names = mutation_score.equivalents_from_text(EQUIV)
    assert names == {
        ("a.py", "x_f__mutmut_4"),
        ("a.py", "x_g__mutmut_1"),
        ("a.py", "x_g__mutmut_9"),
        ("b.py", "x_f__mutmut_4"),
    }


def test_counts_and_score_by_hand(tmp_path):
    meta, eq = _write(tmp_path, RECORDS, EQUIV)
    rows, unexplained, stale = mutation_score.score(mutation_score.load(meta), mutation_score.equivalents(eq))
    # a.py: killed 1, 3 and the timeout 36; 4 and g_1 equivalent; g_2 ended by SIGTERM
    assert rows == [
        ("a.py", {"mutants": 6, "killed": 3, "survived": 0, "equivalent": 2, "no verdict": 1}),
        ("b.py", {"mutants": 2, "killed": 1, "survived": 0, "equivalent": 0, "no verdict": 1}),
    ]
    # listed, but no such survivor (b.py has no mutant x_f__mutmut_4)
    assert unexplained == [] and stale == [("a.py", "x_g__mutmut_9"), ("b.py", "x_f__mutmut_4")]


def test_the_printed_table_and_exit_codes(tmp_path):
    meta, eq = _write(tmp_path, RECORDS, EQUIV)
    out = _run(meta, eq)
    lines = out.stdout.splitlines()
    # a.py: 3 killed of 6 - 2 equivalent - 1 without verdict = 3 judged: 100.0 %
    assert lines[1].split() == ["a.py", "6", "3", "0", "2", "1", "100.0", "%"]
    assert lines[3].split() == ["total", "8", "4", "0", "2", "2", "100.0", "%"]
    assert "1 mutants ended by SIGTERM (exit -15)" in out.stdout
    assert "STALE equivalent (no longer a survivor): a.py x_g__mutmut_9" in out.stdout
    assert out.returncode == 1  # a stale entry fails the run
    eq.write_text("## a.py\n| `x_f__mutmut_4` | `a` -> `b` | why |\n")  # g_1: a plain survivor
    out = _run(meta, eq)
    # a.py: 3 killed of 6 - 1 - 1 = 4 judged: 75.0 %
    assert out.stdout.splitlines()[1].split() == ["a.py", "6", "3", "1", "1", "1", "75.0", "%"]
    assert "SURVIVED (not listed as equivalent): m.a.x_g__mutmut_1" in out.stdout
    assert out.returncode == 1


def test_a_clean_record_exits_0(tmp_path):
    meta, eq = _write(
        tmp_path,
        {"a.py": {"m.a.x_f__mutmut_1": 1, "m.a.x_f__mutmut_2": 0}},
        "## a.py\n| `x_f__mutmut_2` | `a` -> `b` | why |\n",
    )
    out = _run(meta, eq)
    assert out.returncode == 0 and out.stdout.splitlines()[-1].split()[-2:] == ["100.0", "%"]


def test_a_missing_folder_is_a_usage_error(tmp_path):
    out = _run(tmp_path / "nowhere", tmp_path / "eq.md")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--meta: expected a folder of mutmut .meta files" in out.stderr
    (tmp_path / "empty").mkdir()
    out = _run(tmp_path / "empty", tmp_path / "eq.md")
    assert out.returncode == 2 and "--meta: no *.py.meta file in" in out.stderr


def test_files_in_part_folders_are_named_by_their_path(tmp_path):
    meta, eq = _write(
        tmp_path,
        {},
        "## pg/kl.py\n| `x_f__mutmut_2` | `a` -> `b` | why |\n"
        "## `core/checks.py`\n| `x_g__mutmut_1` | `a` -> `b` | why |\n",
    )
    (meta / "pg").mkdir()
    (meta / "pg" / "kl.py.meta").write_text(
        json.dumps({"exit_code_by_key": {"minirl_lm.pg.kl.x_f__mutmut_1": 1, "minirl_lm.pg.kl.x_f__mutmut_2": 0}})
    )
    assert mutation_score.load(meta) == {
        "pg/kl.py": {"minirl_lm.pg.kl.x_f__mutmut_1": 1, "minirl_lm.pg.kl.x_f__mutmut_2": 0}
    }
    assert mutation_score.equivalents(eq) == {("pg/kl.py", "x_f__mutmut_2"), ("core/checks.py", "x_g__mutmut_1")}
    rows, unexplained, stale = mutation_score.score(mutation_score.load(meta), mutation_score.equivalents(eq))
    assert rows == [("pg/kl.py", {"mutants": 2, "killed": 1, "survived": 0, "equivalent": 1, "no verdict": 0})]
    assert unexplained == [] and stale == [("core/checks.py", "x_g__mutmut_1")]  # no record of checks.py


def test_own_selection_is_the_module_file_and_its_importers_files():
    assert mutation_score.own_test_file("minirl_lm/pg/kl.py") == "tests/pg/test_kl.py"
    assert mutation_score.own_test_file("minirl_lm/tasks.py") == "tests/test_tasks.py"
    assert "minirl_lm/pg/grpo.py" in mutation_score.importers("minirl_lm/pg/kl.py")
    assert "minirl_lm/pg/kl.py" not in mutation_score.importers("minirl_lm/pg/kl.py")
    tests = mutation_score.own_tests("minirl_lm/pg/kl.py")
    assert tests[0] == "tests/pg/test_kl.py" and "tests/pg/test_grpo.py" in tests
    assert "tests/pg/test_clip.py" not in tests  # clip does not import kl
    assert all((ROOT / t).is_file() for t in tests)


def test_own_selection_rewrites_only_the_two_lists():
    text = (ROOT / "pyproject.toml").read_text()
    out = mutation_score.with_selection(
        text, ["minirl_lm/pg/kl.py"], ["tests/pg/test_kl.py", "tests/pg/test_grpo.py"]
    )
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    conf = tomllib.loads(out)["tool"]["mutmut"]
    assert conf["only_mutate"] == ["minirl_lm/pg/kl.py"]
    assert conf["pytest_add_cli_args_test_selection"] == ["tests/pg/test_kl.py", "tests/pg/test_grpo.py"]
    before = tomllib.loads(text)
    after = tomllib.loads(out)
    for d in (before, after):
        del d["tool"]["mutmut"]["only_mutate"], d["tool"]["mutmut"]["pytest_add_cli_args_test_selection"]
    assert before == after


def test_the_configured_paths_exist():
    # the mutation configuration follows the layout: every file it mutates or selects is there
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    missing = [
        p
        for p in conf["only_mutate"] + conf["pytest_add_cli_args_test_selection"] + conf["also_copy"]
        if not (ROOT / p).exists()
    ]
    assert not missing
    for name in ("seqclip", "offpolicy", "entropy", "shaping", "preferences", "boundary"):
        assert any(p.endswith(f"/{name}.py") for p in conf["only_mutate"]), name


def test_own_mode_rejects_a_file_outside_the_library():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "mutation_score.py"), "--own", "setup.py"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--own: expected a library file such as minirl_lm/pg/kl.py, got 'setup.py'" in out.stderr
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "mutation_score.py"), "--own-tests", "minirl_lm/pg/kl.py"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and out.stdout.splitlines()[0] == "tests/pg/test_kl.py"


def test_own_copy_applies_decorators_after_the_def_and_keeps_the_signature_unmutated():
    # mutmut skips a decorated function: the scratch copy applies the decorators after the def
    text = (
        "import functools\n\n\n"
        "@functools.lru_cache(maxsize=None)\n"
        "@functools.wraps(print)\n"
        "def f(\n    x,\n    y=2,  # why\n) -> int:\n"
        '    """doc"""\n    return x + y\n\n\n'
        "def g(x):\n    return x\n"
    )
    out = mutation_score.undecorated(text)
    assert out == (
        "import functools\n\n\n"
        "def f(x, y=2) -> int:  # pragma: no mutate\n"
        '    """doc"""\n    return x + y\n'
        "f = (lambda f: (functools.lru_cache(maxsize=None))((functools.wraps(print))(f)))(f)\n\n\n"
        "def g(x):\n    return x\n"
    )
    # a decorator calling a function of the file is applied at each call, after the mutant is set
    lazy = mutation_score.undecorated(
        "def rule(n):\n    return n\n\n\n@declare(rule(1))\ndef h(x):\n    return x\n"
    )
    assert lazy.endswith(
        "h = (lambda f: (lambda declare: __import__('functools').update_wrapper("
        "lambda *a, **k: declare()(*a, **k), declare()))(lambda: (declare(rule(1)))(f)))(h)\n"
    )
    calls = []
    space = {"declare": lambda n: calls.append(n) or (lambda f: f)}
    exec(lazy, space)
    assert space["h"](3) == 3 and space["h"].__name__ == "h" and calls == [1, 1]
    assert mutation_score.undecorated("def g(x):\n    return x\n") == "def g(x):\n    return x\n"
    assert mutation_score.ZOO_RELOAD[0] in (ROOT / "pyproject.toml").read_text()


def test_the_zoo_test_is_deselected_only_when_the_mutated_file_is_one_the_zoo_edits():
    files = mutation_score.zoo_files()
    assert "minirl_lm/pg/clip.py" in files and "minirl_lm/multiturn/env.py" in files
    assert "minirl_lm/grade.py" not in files and all((ROOT / f).is_file() for f in files)


def test_own_copy_applies_a_method_s_declaration_after_its_def_inside_the_class():
    text = (
        "class A:\n"
        "    @declare(1)\n"
        "    def step(self, g=2):\n"
        "        return g\n\n"
        "    @property\n"
        "    def n(self):\n"
        "        return 0\n"
    )
    out = mutation_score.undecorated(text)
    assert out == (
        "class A:\n"
        "    def step(self, g=2):  # pragma: no mutate\n"
        "        return g\n"
        "    step = (lambda f: (declare(1))(f))(step)\n\n"
        "    @property\n"
        "    def n(self):\n"
        "        return 0\n"
    )
    calls = []
    space = {"declare": lambda n: lambda f: calls.append(n) or f}
    exec(out, space)
    assert space["A"]().step(3) == 3 and space["A"]().n == 0 and calls == [1]


def test_a_method_s_mutants_are_read_as_equivalents_too():
    text = "## core/policy.py\n\n| `xǁTabularPolicyǁ_sample__mutmut_4`, `_5` | a size | the same tokens |\n"
    assert mutation_score.equivalents_from_text(text) == {
        ("core/policy.py", "xǁTabularPolicyǁ_sample__mutmut_4"),
        ("core/policy.py", "xǁTabularPolicyǁ_sample__mutmut_5"),
    }


def test_the_memory_cap_turns_an_unbounded_allocation_into_a_memory_error():
    def run(n):  # allocate n float64 (untouched) under a cap of 2 GiB
        grab = f"import numpy as np\ntry:\n    np.empty({n})\nexcept MemoryError:\n    print('MemoryError')\n"
        cap = mutation_score.address_space_cap(2.0)
        return subprocess.run(
            [sys.executable, "-c", grab], capture_output=True, text=True, timeout=60, preexec_fn=cap
        )

    assert run(2**31).stdout == "MemoryError\n"  # 16 GiB asked, 2 allowed
    assert run(2**24).stdout == ""  # 128 MiB fits
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "mutation_score.py"),
            "--memory",
            "0.1",
            "--own-tests",
            "minirl_lm/pg/kl.py",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "--memory: expected GiB between 0.5 and 1024, got 0.1" in out.stderr


def test_alone_gives_the_file_its_own_test_file_only():
    script = [sys.executable, str(ROOT / "scripts" / "mutation_score.py"), "--own-tests", "minirl_lm/boundary.py"]
    every = subprocess.run(script, capture_output=True, text=True, timeout=60).stdout.split()
    alone = subprocess.run(script + ["--alone"], capture_output=True, text=True, timeout=60).stdout.split()
    assert alone == ["tests/test_boundary.py"] and every[0] == "tests/test_boundary.py" and len(every) > 40
    kernels = mutation_score.own_tests("minirl_lm/kernels/__init__.py")  # a part's front door: all its tests
    assert "tests/kernels/test_dense.py" in kernels and kernels[0] == "tests/kernels/test_kernels.py"


def test_a_mutant_no_test_reaches_is_a_survivor(tmp_path):
    # mutmut's exit code 33, "no tests": counted as "no verdict" it would leave the score; it is
    # a mutant no test kills
    meta, eq = _write(tmp_path, {"c.py": {"m.c.x_h__mutmut_1": 33, "m.c.x_h__mutmut_2": 1}}, "")
    rows, unexplained, _ = mutation_score.score(mutation_score.load(meta), mutation_score.equivalents(eq))
    assert rows == [("c.py", {"mutants": 2, "killed": 1, "survived": 1, "equivalent": 0, "no verdict": 0})]
    assert unexplained == ["m.c.x_h__mutmut_1"]


def test_own_copy_leaves_a_numba_kernel_decorated():
    # mutmut skips a decorated function, and Numba could not compile its trampoline anyway
    for deco in ("@njit", "@njit(cache=True)", "@numba.jit(nopython=True)", "@vectorize(['f8(f8)'])"):
        text = f"{deco}\ndef k(x):\n    return x\n"
        assert mutation_score.undecorated(text) == text, deco
    declared = mutation_score.undecorated("@boundary(x=K)\ndef f(x):\n    return x\n")
    assert declared.startswith("def f(x):  # pragma: no mutate\n")  # a declaration is still moved
