"""The house rules of the layout, read from the files themselves (ast, no imports of the library).

- Tests beside their module: `minirl_lm/<part>/<module>.py` is tested in
  `tests/<part>/test_<module>.py`, `minirl_lm/tasks.py` in `tests/test_tasks.py`, the kernels
  package in `tests/kernels/` (its `__init__.py` in `test_kernels.py`); a private module
  (`_name.py`) and a package `__init__.py` that defines nothing need no file of their own.
- Every public function and class of a module is named in its own test file.
- Imports run one way, part by part (RANKS below): a module imports its own part or a part of a
  lower rank, never one of the same rank or above.
- Only `minirl_lm/kernels/` imports numba. (A file is one concept; its length is the concept's.)
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "minirl_lm"
TESTS = ROOT / "tests"

# The order the imports obey, read off the package with ast (0 imports up on the layout's first
# commit): boundary (the engine of the declared boundary, which imports only NumPy) at the
# ground; kernels declare their entries with it;
# the rest of core (mdp, policy,
# logprob, ops) may use the kernels; the objectives (pg, values) use core; direct (DPO and the
# other preference losses) sits above them; multiturn (its values use values.optimum) and scale
# use everything below; exact (the engine of exact expectations: scores on the policy's table,
# groups, the batch kernel, tree recursions) stands on core and kernels beside pg; nn (the
# network: its LM head is scale's bigvocab) sits above scale; select (best-of-N and rejection
# sampling: the tilted optimum of values, the group law of exact) and distill (distillation from a
# teacher: its exact fixed points run through exact) sit beside direct; tasks (the
# chapter's toy: pg.advantages, pg.kl, core.policy) and oracle
# (a user's implementation against any estimator) are the top; reward (reward models: its
# Bradley-Terry data come from direct, its process rewards run on multiturn's environment) sits
# above multiturn; grade (the grader's command line: the oracle and the chapters' exercises) tops them.
RANKS = {
    "boundary": 0,
    "kernels": 1,
    "core": 2,
    "pg": 3,
    "values": 3,
    "exact": 3,
    "direct": 4,
    "select": 4,
    "distill": 4,
    "multiturn": 5,
    "scale": 5,
    "nn": 6,
    "tasks": 6,
    "oracle": 6,
    "reward": 6,
    "grade": 7,
}

# The checking modules: kernels/validate.py (the kernels' jitted checks) and core/validate.py
# (core's kinds); formerly each part's checks.py / validate.py (its
# bundles, one call per public function). Their functions are tested through the public functions
# they serve (each estimator's own tests and the bad-input battery); the rule for them is that
# none is dead (test_every_bundle_serves_its_part).
BOUNDARY = ("checks", "validate")


def _is_boundary(path):
    return path.stem in BOUNDARY


def _modules():
    """Every library file as (path, dotted module name)."""
    out = []
    for path in sorted(LIB.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out.append((path, name))
    return out


def _part(module):
    """The part of a dotted module name: boundary, kernels, core, pg, ..., tasks (None: the package)."""
    p = module.split(".")[1:]
    if not p:
        return None
    return p[0]


def _tree(path):
    return ast.parse(path.read_text(), filename=str(path))


def _public(tree):
    """The public functions and classes a module defines at its top level."""
    return [
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not n.name.startswith("_")
    ]


def _test_files(path):
    """The test file(s) of a library file, or None when it needs none."""
    rel = path.relative_to(LIB)
    if rel.name.startswith("_") and rel.name != "__init__.py":
        return None  # private module
    if rel.name == "__init__.py" and not _public(_tree(path)):
        return None  # a package's docstring only
    if rel.parts[0] == "kernels":
        return [TESTS / "kernels" / ("test_kernels.py" if rel.name == "__init__.py" else f"test_{rel.stem}.py")]
    if len(rel.parts) == 1:
        return [TESTS / f"test_{rel.stem}.py"]  # tasks.py
    return [TESTS / rel.parts[0] / f"test_{rel.stem}.py"]


def _imports(tree, module):
    """The library modules a module imports (anywhere in it, function bodies included)."""
    known = {name for _, name in _modules()}
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("minirl_lm"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from its package
                pkg = module.split(".")[: len(module.split(".")) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            if not base.startswith("minirl_lm"):
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if sub in known else base)
    return out


def _names_used(tree):
    """Every name a test file mentions: names, attributes and imported names."""
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            used.update((a.asname or a.name).split(".")[-1] for a in node.names)
            used.update(a.name.split(".")[-1] for a in node.names)
    return used


def test_the_layout_is_found():
    # the rules below would pass vacuously on an empty or moved package
    modules = [name for _, name in _modules()]
    assert "minirl_lm.boundary" in modules and "minirl_lm.tasks" in modules
    assert {_part(m) for m in modules} - {None} == set(RANKS), modules


def test_every_module_has_its_test_file():
    missing = [
        f"{path.relative_to(ROOT)} -> {files[0].relative_to(ROOT)}"
        for path, _ in _modules()
        if (files := _test_files(path)) and not any(f.is_file() for f in files)
    ]
    assert not missing, "library modules without their test file:\n  " + "\n  ".join(missing)


def test_no_test_file_without_its_module():
    # tests/<part>/test_<module>.py names a module; at the top of tests/ only tasks and the
    # tooling's own tests (this file, the scripts' tests, the built site's)
    expected = {f for path, _ in _modules() for f in (_test_files(path) or [])}
    top = {
        "test_layout.py",
        "test_mutation_score.py",
        "test_bugzoo.py",
        "test_conformance.py",
        "test_notation_lint.py",
        "test_site_html.py",
        "test_quickstart.py",
        "test_build_log.py",
    }
    stray = []
    for f in sorted(TESTS.glob("test_*.py")) + sorted(TESTS.glob("*/test_*.py")):
        if f.parent.name in ("contract", "examples", "copies"):
            continue
        if f not in expected and not (f.parent == TESTS and f.name in top):
            stray.append(str(f.relative_to(ROOT)))
    assert not stray, "test files that belong to no module (fold them into one):\n  " + "\n  ".join(stray)


def test_every_public_name_is_tested_in_its_module_file():
    missing = []
    for path, _ in _modules():
        files = _test_files(path)
        if not files or not any(f.is_file() for f in files) or _is_boundary(path):
            continue  # reported by the test above; the boundary: the rule below
        if path.relative_to(LIB).parts[0] == "kernels":  # the kernels' tests, together
            files = sorted((TESTS / "kernels").glob("test_*.py"))
        used = set().union(*(_names_used(_tree(f)) for f in files if f.is_file()))
        missing += [f"{path.relative_to(ROOT)}: {name}" for name in _public(_tree(path)) if name not in used]
    assert not missing, "public names not referenced in their module's test file:\n  " + "\n  ".join(missing)


def test_every_bundle_serves_its_part():
    # a public function of a boundary module is called by some other library module (no dead
    # check)
    used = set()
    for path, _ in _modules():
        if not _is_boundary(path):
            used |= _names_used(_tree(path))
        else:  # a bundle built on another bundle or primitive serves it too (not itself)
            for node in _tree(path).body:
                used |= _names_used(node) - {getattr(node, "name", None)}
    dead = [
        f"{path.relative_to(ROOT)}: {name}"
        for path, _ in _modules()
        if _is_boundary(path)
        for name in _public(_tree(path))
        if name not in used
    ]
    assert not dead, "boundary functions no library module calls:\n  " + "\n  ".join(dead)


def test_imports_run_one_way():
    up = []
    for path, module in _modules():
        src = _part(module)
        if src is None:
            continue
        for target in sorted(_imports(_tree(path), module)):
            dst = _part(target)
            if dst is None or dst == src:
                continue
            if RANKS[dst] >= RANKS[src]:
                up.append(f"{module} ({src}, rank {RANKS[src]}) imports {target} ({dst}, rank {RANKS[dst]})")
    assert not up, "imports that do not run down:\n  " + "\n  ".join(up)


def test_no_import_cycle_between_modules():
    graph = {module: {t for t in _imports(_tree(path), module) if t != module} for path, module in _modules()}
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for t in sorted(graph.get(m, ())):
            if t.startswith(m + ".") or m.startswith(t + "."):
                continue  # a package and its own modules
            if state.get(t) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack + [m, t]))
            if t not in state:
                visit(t, stack + [m])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_only_the_kernels_import_numba():
    offenders = []
    for path, _ in _modules():
        if path.relative_to(LIB).parts[0] == "kernels":
            continue
        for node in ast.walk(_tree(path)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {n}"
                for n in names
                if n.split(".")[0] in ("numba", "torch", "jax", "autograd")
            ]
    assert not offenders, "\n".join(offenders)


def _listed_modules():
    """The modules a reader is told about: every file that needs a test file of its own."""
    return [(path, name) for path, name in _modules() if _test_files(path)]


def test_the_layout_names_every_module_once():
    """CONTRIBUTING.md's Layout lists every module; README.md points to it (written once)."""
    readme = (ROOT / "README.md").read_text()
    assert "CONTRIBUTING.md#layout" in readme and "\nminirl_lm/\n" not in readme
    text = (ROOT / "CONTRIBUTING.md").read_text()
    layout = text[text.index("## Layout") :]
    layout = layout[: layout.index("\n## ", 4)] if "\n## " in layout[4:] else layout
    missing = [
        str(path.relative_to(ROOT))
        for path, _ in _listed_modules()
        if path.name != "__init__.py" and not path.parent.name == "kernels" and f"{path.name} " not in layout
    ]
    assert not missing, "CONTRIBUTING.md's Layout does not list:\n  " + "\n  ".join(missing)


def test_every_module_is_on_the_api_page():
    documented = set(re.findall(r"^::: (\S+)\s*$", (ROOT / "docs" / "api.md").read_text(), re.M))
    missing = [
        name
        for path, name in _listed_modules()
        if name not in documented
        and not (path.relative_to(LIB).parts[0] == "kernels" and "minirl_lm.kernels" in documented)
        and not _is_boundary(path)  # checking modules: internal
        and not path.stem.startswith("_")  # a private module (core/_state_ids.py)
    ]
    assert not missing, "docs/api.md has no `::: module` for:\n  " + "\n  ".join(missing)


# ---- the rules can fail: each one on a made-up case --------------------------------------------
def test_the_helpers_see_what_the_rules_need():
    tree = ast.parse(
        "import numpy as np\nfrom minirl_lm.core import ops\n"
        "from minirl_lm.pg.reinforce import AGGS\n"
        "def f():\n    from minirl_lm import kernels\n"
        "def _g(): pass\nclass H: pass\n"
    )
    assert _public(tree) == ["f", "H"]
    assert _imports(tree, "minirl_lm.values.critic") == {
        "minirl_lm.core.ops",
        "minirl_lm.pg.reinforce",
        "minirl_lm.kernels",
    }
    assert [
        _part(m)
        for m in (
            "minirl_lm.core.validate",
            "minirl_lm.boundary",
            "minirl_lm.core.ops",
            "minirl_lm.kernels",
            "minirl_lm.pg.clip",
            "minirl_lm.tasks",
        )
    ] == ["core", "boundary", "core", "kernels", "pg", "tasks"]
    used = _names_used(
        ast.parse("from minirl_lm.pg.clip import clip_fraction\nx = clip.clipped_surrogate(1)\n# ppo_loss\n")
    )
    assert {"clip_fraction", "clipped_surrogate"} <= used and "ppo_loss" not in used  # not a comment
    assert _test_files(LIB / "pg" / "clip.py") == [TESTS / "pg" / "test_clip.py"]
    assert _test_files(LIB / "tasks.py") == [TESTS / "test_tasks.py"]
    assert _test_files(LIB / "pg" / "__init__.py") is None


def test_every_snippet_line_of_the_pages_is_one_the_snippets_extension_reads():
    """`--8<-- "path"` exactly: a reformatted `--8 < --"path"` is shown verbatim instead of the file."""
    bad = [
        f"{p.name}:{i}"
        for p in sorted((ROOT / "docs").glob("*.md"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if "8 <" in line or ("--8<--" in line and not re.fullmatch(r'\s*--8<-- "[^"]+"', line))
    ]
    assert not bad, bad
    paths = [
        line.split('"')[1].split(":")[0]
        for p in (ROOT / "docs").glob("*.md")
        for line in p.read_text().splitlines()
        if line.strip().startswith("--8<--")
    ]
    assert paths and all((ROOT / x).is_file() for x in paths)
