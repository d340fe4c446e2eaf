"""Write a self-contained copy of a minirl_lm file: its own code plus the package code it uses.

    python scripts/standalone.py minirl_lm/pg/clip.py -o DIR     # writes DIR/clip.py
    python scripts/standalone.py --all -o DIR                 # every file that can stand alone

A copy holds, top to bottom: the file's docstring; its imports reduced to NumPy and the standard
library; its `__all__` (the file's own, else its public functions and classes); the file's own
code, verbatim but for its `@boundary(...)` declarations; the parts it is assembled from (for
GRPO: the advantages, the clipped ratio and the KL penalty), each under a comment naming the file
it comes from, in the order the file imports them, then any module reached only through them (the
aggregation weights of `core/ops.py`), a part's functions and the engine's with their docstrings
cut to the first sentence (the rest is in the package's file); the checking modules it still
reaches (`core/validate.py`, core's kinds); and last the engine of the declared boundary,
`boundary.py`, once, with only the kinds and relations the copy uses, followed by the
declarations themselves, `f = boundary(...)(f)`, one per declared function (a decorator runs when
its function is defined, so in a copy whose engine comes last the declarations follow it), after
the module-level constants they reuse (an assignment that reads the engine's names, such as
`CLIP = dict(logp=TOKENS, ...)`, is a declaration too).
Only the definitions the file actually reaches are inlined (found by walking the names each
definition uses), so a copy carries no dead helper. Two parts that define the same private name
with different code are told apart by suffixing the later one with its module name.

A file that needs more than NumPy (anything reaching `minirl_lm/kernels/`, which needs Numba)
cannot stand alone and is refused, with a message saying what it needs. The one exception is a
NumPy fallback: a top-level `try:` importing from `minirl_lm.kernels` with an `except
ImportError:` that imports NumPy code instead (`core/policy.py`); the copy takes the fallback.
The output is deterministic: the same sources give the same bytes. This script uses the standard library only.
"""

import argparse
import ast
import atexit
import hashlib
import io
import json
import os
import re
import sys
import tempfile
import textwrap
import tokenize
from pathlib import Path

PKG = "minirl_lm"
ROOT = Path(__file__).resolve().parent.parent
PKG_DIR = ROOT / PKG
ALLOWED = {"numpy"} | set(sys.stdlib_module_names)
# The checking modules (core/validate.py, the engine boundary.py) are inlined after the file's
# own code and its parts: support, not the concept. The engine comes last.
SUPPORT_STEMS = ("checks", "validate", "boundary")
ENGINE = "boundary"
# A copy whose reader needs other words than the package file's docstring (which speaks of the
# package: how to import it, what it imports) opens with these instead.
COPY_DOCS = {
    "oracle": '''"""The grader of minirl_lm, standalone: your implementation against a copy, case by case.

This file is the copy of `minirl_lm/oracle.py`; it needs NumPy only. Its references are the other
standalone copies (or any function of the package, if it is installed): put this file and the
copy you check against beside your code, then

    import oracle
    from clip import clipped_surrogate        # copies/clip.py

    print(oracle.report(oracle.compare(my_clipped_loss, clipped_surrogate)))

`cases(reference, seed)` builds seeded inputs from the reference's signature, one generator per
argument name: garbage of its own in each token array where its mask is 0 (hundreds of nats, so
an exp or a difference taken there before masking overflows to inf or NaN), ratios on both sides
of both clip edges, advantages of both signs and 0, masks right-padded, with holes and with an
empty row, rewards in groups, equal non-dyadic groups, groups of one, per response, per token and
per reward, sequence log-probs, logits, probability tables; every value of a string option, both
values of a bool, and each numeric knob at its default and then, one at a time, off it. Cases the
reference refuses are dropped, but a dual-clip constant 0.9 (yours must refuse it too).
`functools.partial` keywords stay as bound; `only={"agg": [...]}` keeps the listed values.

`compare(fn, reference)` runs both on every case; `report(rows)` prints, per case, which output
differs and by how much, the cases your NotImplementedError skipped, and the count.

What this copy leaves out: the multi-turn environment (a reference that takes `env` or `ep`,
such as `action_view`, is refused with a message), and the patterns and known-bug findings of the
package's grader, `python -m minirl_lm.grade`. To check a pipeline, grade each stage against its
copy: the advantages (`advantages.py`), then the loss fed with the reference's advantages
(`grpo.py`); see the page "Copy a reference implementation".
"""'''
}


def _is_support(m):
    return _stem(m) in SUPPORT_STEMS


class StandaloneError(Exception):
    """A file that cannot be made self-contained (and why)."""


class Module:
    """One parsed file of the package: its top-level definitions and imports by local name."""

    def __init__(self, name, pkg_dir=PKG_DIR):
        path = pkg_dir / f"{_rel(name)}.py"
        if not path.is_file():
            raise StandaloneError(f"{PKG}/{_rel(name)}.py: no such file")
        self.name, self.path = name, path
        self.source = path.read_text()
        self.lines = self.source.splitlines()
        self.tree = ast.parse(self.source, filename=str(path))
        body = self.tree.body
        self.doc = body[0] if body and _is_docstring(body[0]) else None
        self.defs = {}  # name -> top-level node defining it
        self.imports = {}  # local name -> ("ext", statement, top module) | ("pkg", module, name)
        self.import_nodes = []
        self.optional = []  # `try: <Numba imports> except ImportError: <NumPy imports>` blocks
        for node in body:
            if _numba_fallback(node):  # a copy takes the fallback (the copy is NumPy-only)
                self.optional.append(node)
                for sub in node.handlers[0].body:
                    self.import_nodes.append(sub)
                    self._add_import(sub)
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            self.defs[n.id] = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.import_nodes.append(node)
                self._add_import(node)

    def _add_import(self, node):
        for a in node.names:
            if isinstance(node, ast.Import):
                top = a.name.split(".")[0]
                local = a.asname or top
                stmt = f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
            else:
                mod = node.module or ""
                top = mod.split(".")[0]
                local = a.asname or a.name
                stmt = f"from {mod} import {a.name}" + (f" as {a.asname}" if a.asname else "")
            if top != PKG:
                self.imports[local] = ("ext", stmt, top)
                continue
            parts = (node.module or "").split(".") if isinstance(node, ast.ImportFrom) else []
            if parts[1:2] == ["kernels"] or (isinstance(node, ast.ImportFrom) and a.name == "kernels"):
                raise StandaloneError(
                    f"{PKG}/{_rel(self.name)}.py needs Numba: it imports the Numba kernels (`{stmt}`)"
                )
            if len(parts) < 2 or (pkg_file(".".join(parts[1:])) is None):
                # `import minirl_lm.x` or `from minirl_lm.part import module`: a whole module
                raise StandaloneError(
                    f"{PKG}/{_rel(self.name)}.py imports a whole module ({stmt}); "
                    f"only `from {PKG}.PART.MODULE import NAME` can be inlined"
                )
            self.imports[local] = ("pkg", ".".join(parts[1:]), a.name)

    def segment(self, node):
        """The source lines of a top-level node, with its decorators (but a `@boundary(...)`
        declaration) and the comment lines directly above it."""
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
        while start > 0 and self.lines[start - 1].lstrip().startswith("#"):
            start -= 1
        name = getattr(node, "name", None)  # a declaration (a method's too): emitted on its own
        ds = [d for k, d in self.declared().items() if k == name or k.startswith(f"{name}.")]
        skip = {i for d in ds for i in range(d.lineno - 1, d.end_lineno)}
        return [self.lines[i] for i in range(start, node.end_lineno) if i not in skip]

    def imports_ext(self):
        """The local names the file imports from NumPy or the standard library."""
        return {k for k, v in self.imports.items() if v[0] == "ext"}

    def own_code(self):
        """Every line of the file but its docstring, its top-level imports and its declarations."""
        drop = set()
        for node in ([self.doc] if self.doc else []) + self.import_nodes + self.optional + self.constants():
            drop.update(range(node.lineno - 1, node.end_lineno))
        for d in self.declared().values():
            drop.update(range(d.lineno - 1, d.end_lineno))
        return [l for i, l in enumerate(self.lines) if i not in drop]

    def declared(self):
        """{function name: its `@boundary(...)` decorator node} of the file's top-level functions
        and its top-level classes' methods (`"Class.method"`) whose decorator is the engine's
        `boundary` (imported from boundary.py)."""
        if self.imports.get("boundary", ("",))[:2] != ("pkg", ENGINE):
            return {}
        funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
        defs = [(node.name, node) for node in self.tree.body if isinstance(node, funcs)]
        defs += [
            (f"{c.name}.{node.name}", node)
            for c in self.tree.body
            if isinstance(c, ast.ClassDef)
            for node in c.body
            if isinstance(node, funcs)
        ]
        return {
            name: d
            for name, node in defs
            for d in node.decorator_list
            if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "boundary"
        }

    def constants(self):
        """The top-level assignments that read the engine's names or a checking module's (kinds,
        directly or through an earlier such assignment): declarations shared by several
        functions, emitted with them."""
        names = {k for k, v in self.imports.items() if v[0] == "pkg" and (v[1] == ENGINE or _is_support(v[1]))}
        out = []
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and _names(node.value) & names:
                out.append(node)
                names |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        return out

    def declaration(self, name):
        """The declaration of function `name` as the statement `name = boundary(...)(name)`."""
        d = self.declared()[name]
        lines = self.lines[d.lineno - 1 : d.end_lineno]
        indent = d.col_offset - 1  # a method's decorator stands in its class: dedented
        lines = [line[indent:] if not line[:indent].strip() else line for line in lines]
        end = d.end_col_offset - indent
        lines[-1], comment = lines[-1][:end], lines[-1][end:]  # a trailing comment
        lines[0] = lines[0].replace("@boundary(", f"{name} = boundary(", 1)
        if len(lines) == 1 and len(lines[0]) + len(name) > 113:  # one line too long: its arguments below
            head, inner = lines[0].split("(", 1)
            return [f"{head}(", f"    {inner[:-1]}", f")({name}){comment}"]
        return lines[:-1] + [lines[-1] + f"({name}){comment}"]


def _rel(name):
    """`pg.clip` -> `pg/clip`: a module's path inside the package, without `.py`."""
    return name.replace(".", "/")


def _stem(name):
    """`pg.clip` -> `clip`: the file name a copy is written under."""
    return name.rsplit(".", 1)[-1]


def pkg_file(name, pkg_dir=PKG_DIR):
    """The file of the package module `name` (dotted, relative to the package), or None."""
    path = pkg_dir / f"{_rel(name)}.py"
    return path if path.is_file() else None


def resolve(arg, pkg_dir=PKG_DIR):
    """The dotted module name of a command-line FILE: `minirl_lm/pg/clip.py`, `pg/clip` or
    `clip` (a stem that names exactly one file of the package), or None."""
    p = Path(arg)
    if p.suffix == ".py":
        try:
            rel = p.resolve().relative_to(pkg_dir.resolve()).with_suffix("")
        except ValueError:
            return None
        name = ".".join(rel.parts)
        return name if pkg_file(name, pkg_dir) and rel.name != "__init__" else None
    if "/" in arg:
        name = arg.replace("/", ".")
        return name if pkg_file(name, pkg_dir) else None
    hits = [q for q in pkg_dir.rglob(f"{arg}.py") if q.name != "__init__.py"]
    if len(hits) != 1:
        return None
    return ".".join(hits[0].relative_to(pkg_dir).with_suffix("").parts)


def _numba_fallback(node):
    """True for a top-level `try:` that imports from `minirl_lm.kernels` (or numba) and whose one
    `except ImportError:` imports a NumPy fallback: the package takes the kernels when Numba is
    there, a copy the fallback."""
    if not (isinstance(node, ast.Try) and len(node.handlers) == 1 and not node.orelse and not node.finalbody):
        return False
    h = node.handlers[0]
    imports = (ast.Import, ast.ImportFrom)
    kernels = all(
        isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[:2] in ([PKG, "kernels"], ["numba"])
        for n in node.body
    )
    return (
        kernels
        and isinstance(h.type, ast.Name)
        and h.type.id == "ImportError"
        and all(isinstance(n, imports) for n in h.body)
    )


def _is_docstring(node):
    return (
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    )


def _names(node):
    """Every name a node reads (its own definitions' names included; callers discard those)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _shape(node):
    """A definition's code with docstrings removed, to tell equal copies from different ones."""
    node = ast.parse(ast.unparse(node)).body[0]
    for n in ast.walk(node):
        body = getattr(n, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            n.body = body[1:] or [ast.Pass()]
    return ast.dump(node)


def _rename(lines, renames):
    """Rename identifiers (not attributes, not keyword arguments) in a block of source lines."""
    if not renames:
        return lines
    text = "\n".join(lines) + "\n"
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    out = []
    for i, tok in enumerate(toks):
        if tok.type == tokenize.NAME and tok.string in renames:
            prev = next((t for t in reversed(toks[:i]) if t.type not in (tokenize.NL, tokenize.COMMENT)), None)
            nxt = next((t for t in toks[i + 1 :] if t.type not in (tokenize.NL, tokenize.COMMENT)), None)
            is_attr = prev is not None and prev.string == "."
            is_kwarg = nxt is not None and nxt.string == "=" and prev is not None and prev.string in "(,"
            if not (is_attr or is_kwarg):
                tok = tok._replace(string=renames[tok.string])
        out.append(tok)
    return tokenize.untokenize(out).rstrip("\n").split("\n")


def _fingerprint(pkg_dir):
    """Every source file of the package with its modification time and size: a copy built from
    these files is built again only when one of them changes."""
    return tuple(
        (str(p), st.st_mtime_ns, st.st_size) for p in sorted(Path(pkg_dir).rglob("*.py")) for st in [p.stat()]
    )


_built = {}  # (name, pkg_dir, fingerprint) -> (built, the copy's text or the StandaloneError's message)
_on_disk = {}  # the key's state -> {name: [built, text]} read from, and written to, the disk cache
_new_on_disk = set()  # the disk files this process added a copy to: written back at exit


def _disk_file(pkg_dir, fingerprint):
    """The disk cache of the copies of one state of the package's files and of this builder (a
    file in the system's temporary folder): a test session and a docs build after it, or the
    next session, read the copies instead of building them again (two seconds a process)."""
    state = repr((str(pkg_dir), fingerprint, Path(__file__).read_bytes()))
    return Path(tempfile.gettempdir()) / f"minirl-copies-{hashlib.sha256(state.encode()).hexdigest()[:16]}.json"


def _from_disk(path):
    if path not in _on_disk:
        try:
            _on_disk[path] = json.loads(path.read_text())
        except (OSError, ValueError):
            _on_disk[path] = {}
    return _on_disk[path]


@atexit.register
def _save_to_disk():
    for path in _new_on_disk:
        built = _on_disk[path]
        try:  # written whole, then renamed: a reader never sees half a file
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(built))
            os.replace(tmp, path)
        except OSError:
            pass


def build(name, pkg_dir=PKG_DIR):
    """Return the text of the self-contained copy of the package module `name` (dotted,
    relative to the package: `pg.clip` is `minirl_lm/pg/clip.py`; a file stem such as `clip`
    names the one module of that stem). A copy is built once per state of the package's files
    and of this file (the site, its copy page and the tests ask for each copy several times):
    kept in the process, and on disk for the next process."""
    name = resolve(name, pkg_dir) or name
    fingerprint = _fingerprint(pkg_dir)
    key = (name, str(pkg_dir), fingerprint)
    if key not in _built:
        path = _disk_file(pkg_dir, fingerprint)
        disk = _from_disk(path)
        if name not in disk:
            _new_on_disk.add(path)
            try:
                disk[name] = [True, _build(name, pkg_dir)]
            except StandaloneError as e:
                disk[name] = [False, str(e)]
        _built[key] = tuple(disk[name])
    ok, text = _built[key]
    if not ok:
        raise StandaloneError(text)
    return text


def _build(name, pkg_dir):
    modules = {}

    def load(m):
        if m not in modules:
            modules[m] = Module(m, pkg_dir)
        return modules[m]

    target = load(name)
    picked = {}  # module -> set of top-level nodes to inline (by id)
    order = []  # modules in the order they are first reached
    ext = set()  # external import statements needed
    aliases = []  # (module, local, source name) for `from x import a as b`

    def need(mod, wanted):
        """Pull the definitions of `wanted` (names read by code of `mod`) into the copy."""
        for nm in sorted(wanted):
            if nm in mod.imports:
                kind = mod.imports[nm]
                if kind[0] == "ext":
                    if kind[2] not in ALLOWED:
                        what = "Numba" if kind[2] == "numba" else f"`{kind[2]}`"
                        raise StandaloneError(
                            f"{PKG}/{_rel(name)}.py needs {what} (`{kind[1]}` in {PKG}/{_rel(mod.name)}.py); "
                            f"a standalone copy holds NumPy and the standard library only"
                        )
                    ext.add(kind[1])
                else:
                    src = load(kind[1])
                    if kind[2] != nm and (kind[1], nm, kind[2]) not in aliases:
                        aliases.append((kind[1], nm, kind[2]))
                    take(src, kind[2])
            elif nm in mod.defs and mod is not target:
                take(mod, nm)

    def take(mod, nm):
        if nm not in mod.defs and mod.imports.get(nm, ("",))[0] == "pkg":
            return need(mod, {nm})  # a name the module itself imports: follow it
        if nm not in mod.defs:
            raise StandaloneError(f"{PKG}/{_rel(mod.name)}.py has no top-level `{nm}`")
        if mod.name not in order:
            order.append(mod.name)
        node = mod.defs[nm]
        chosen = picked.setdefault(mod.name, {})
        if id(node) in chosen:
            return
        chosen[id(node)] = node
        need(mod, _names(node))

    # the target's own code reads its imports; its own definitions stay in place
    for node in target.tree.body:
        if node is not target.doc and node not in target.import_nodes:
            need(target, _names(node))
    for node in target.import_nodes:  # keep every external import it states
        for a in node.names:
            local = a.asname or (a.name.split(".")[0] if isinstance(node, ast.Import) else a.name)
            if target.imports[local][0] == "ext":
                need(target, {local})

    # parts in the order the file imports them (the order a reader meets them), then any
    # module reached only through a part
    stated = [
        target.imports[a.asname or a.name][1]
        for node in target.import_nodes
        if isinstance(node, ast.ImportFrom)
        for a in node.names
        if target.imports[a.asname or a.name][0] == "pkg"
    ]
    ranked = list(dict.fromkeys(stated + order))
    parts = [m for m in ranked if m in order and not _is_support(m) and m != name]
    support = sorted((m for m in order if _is_support(m)), key=lambda m: (m == ENGINE, m == "core.checks", m))

    # names defined twice with different code: the later module's copy gets a suffix
    seen, renames, skip = {}, {}, set()
    for m in [name] + parts + sorted(support, key=lambda m: m != ENGINE):  # the engine keeps its names
        mod = modules[m]
        nodes = mod.tree.body if m == name else sorted(picked[m].values(), key=lambda n: n.lineno)
        for node in nodes:
            for nm in [k for k, v in mod.defs.items() if v is node]:
                if nm not in seen:
                    seen[nm] = (m, _shape(node))
                elif seen[nm][1] == _shape(node):
                    skip.add((m, id(node)))  # an identical copy: inline it once
                else:
                    renames.setdefault(m, {})[nm] = f"{nm}_{_stem(m)}"

    # emit
    out = header(name)
    if _stem(name) in COPY_DOCS:
        out += COPY_DOCS[_stem(name)].splitlines()
    elif target.doc:
        out += target.lines[target.doc.lineno - 1 : target.doc.end_lineno]
    out += [""]
    std = sorted(s for s in ext if s.split()[1].split(".")[0] != "numpy")
    npy = sorted(s for s in ext if s.split()[1].split(".")[0] == "numpy")
    out += std + ([""] if std and npy else []) + npy

    def section(m, title):  # a part's declarations join `declarations`, emitted after the engine
        mod = modules[m]
        block = ["", "", _rule(f"# {title}: from {PKG}/{_rel(m)}.py")]
        if mod.doc:
            first = ast.get_docstring(mod.tree).strip().splitlines()[0]
            block.append(f"#   {first}")
        if m == ENGINE:
            block += [f"#   {line}" for line in ENGINE_NOTE]
        declared, consts, prev = mod.declared(), mod.constants(), None
        for node in sorted(picked[m].values(), key=lambda n: n.lineno):
            if (m, id(node)) in skip:
                continue
            if node in consts:  # emitted after the engine, before the declarations that read it
                constants.append(_rename(mod.segment(node), renames.get(m, {})))
                continue
            lines = _rename(mod.segment(node), renames.get(m, {}))
            if m != name:  # a part's or the engine's functions keep their first sentence; the rest of
                lines = _summarized(mod, node, lines)  # their documentation is in the package's file
            # assignments on consecutive lines of the file stay together, as they are there
            together = isinstance(node, ast.Assign) and isinstance(prev, ast.Assign)
            block += ([] if together and _adjacent(mod, prev, node) else ["", ""]) + lines
            prev = node
            defined = getattr(node, "name", None)  # its declarations (its methods') go after the engine
            for f in [k for k in declared if k == defined or k.startswith(f"{defined}.")]:
                declarations.extend(["", *_rename(mod.declaration(f), renames.get(m, {}))])
        return block

    own = _rename(target.own_code(), renames.get(name, {}))
    while own and not own[0].strip():
        own.pop(0)
    if "__all__" not in target.defs:  # every copy says what it exports
        public = [n for n, v in target.defs.items() if not n.startswith("_") and hasattr(v, "body")]
        out += ["", "", *_all(public)]
    declarations = [line for f in target.declared() for line in ["", *target.declaration(f)]]
    constants = []  # the parts' shared declarations, then the file's own
    own_constants = [_rename(target.segment(node), renames.get(name, {})) for node in target.constants()]
    # the file's own code first, unless a statement of it reads a part's definition on import
    first = bool(_eager_names(target) - set(target.defs) - set(target.imports_ext()))
    for i, m in enumerate(parts, 1) if first else ():
        out += section(m, f"part {i}")
    if first:
        out += ["", "", _rule(f"# {PKG}/{_rel(name)}.py itself")]
    out += ["", ""] + own
    for i, m in enumerate(parts, 1) if not first else ():
        out += section(m, f"part {i}")
    for m in support:
        out += section(m, "the declared boundary" if m == ENGINE else "input checks")
    constants = [line for block in _defined_first(constants + own_constants) for line in block]
    if declarations or constants:
        out += ["", "", "# the declarations of the functions above (each a decorator in the package; a decorator"]
        out += ["# runs where its function is defined, so in a copy, whose engine comes last, they follow it)"]
        out += ["", *constants, *declarations]
    for src_mod, local, src in aliases:  # the source's name as the copy spells it
        here = renames.get(src_mod, {}).get(src, src)
        out += ["", f"{local} = {here}  # `from {PKG}.{src_mod} import {src} as {local}`"]

    text = "\n".join(out)
    while "\n\n\n\n" in text:
        text = text.replace("\n\n\n\n", "\n\n\n")
    text = text.rstrip() + "\n"
    compile(text, f"{_stem(name)}.py (standalone)", "exec")  # a broken copy never gets written
    return text


def _defined_first(blocks):
    """The constants' source blocks in their order, except that a block reading a name another
    block assigns comes after it (a part's constant may read a constant of a part emitted later)."""
    tree = [ast.parse(textwrap.dedent("\n".join(b))) for b in blocks]
    assigns = [
        {n.id for n in ast.walk(m) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} for m in tree
    ]
    reads = [{n.id for n in ast.walk(m) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} for m in tree]
    out = []
    pending = list(range(len(blocks)))
    while pending:
        ready = [i for i in pending if not any(reads[i] & assigns[j] for j in pending if j != i)]
        i = ready[0] if ready else pending[0]  # a cycle cannot load anyway: keep the order
        out.append(blocks[i])
        pending.remove(i)
    return out


def _rule(title):
    """A section's title line, ruled out to column 96 (the comments under it say what it holds)."""
    return f"{title} {'-' * max(96 - len(title) - 1, 4)}"


# What a copy says of the engine in place of its docstrings (they are in the package's file).
ENGINE_NOTE = (
    "A declared function binds its arguments by keyword, reads each with its kind (a valid form",
    "comes back converted, arrays as fresh float64 copies; anything else raises a TypeError or",
    "ValueError starting with the argument's name), checks the relations, runs the body, and",
    "refuses a non-finite result with one ValueError naming the function. `f.core` is the body.",
)


def _summarized(mod, node, lines):
    """The source `lines` of `node` (a segment of `mod`) with each function's docstring cut to its
    first sentence."""
    out = list(lines)
    at = 0  # the docstrings come in order: each is looked up after the previous one
    for sub in sorted(ast.walk(node), key=lambda n: getattr(n, "lineno", 0)):
        body = getattr(sub, "body", None)
        if not (isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and body and _is_docstring(body[0])):
            continue
        doc = body[0]
        if doc.lineno == doc.end_lineno:
            continue  # one line already
        text = " ".join(ast.get_docstring(sub).split())
        cut = re.search(r"(?<!\beq)(?<!e\.g)(?<!i\.e)\.(\s+[A-Z]|$)", text)  # a sentence's end
        first = text[: cut.start() + 1] if cut else text
        indent = " " * doc.col_offset
        wrapped = textwrap.wrap(first, 100 - len(indent) - 6) or [""]
        wrapped[0] = '"""' + wrapped[0]
        wrapped[-1] += '"""'
        i = out.index(mod.lines[doc.lineno - 1], at)
        out[i : i + doc.end_lineno - doc.lineno + 1] = [indent + w for w in wrapped]
        at = i + len(wrapped)
    return out


def _adjacent(mod, a, b):
    """True if nothing but comments stands between the end of node `a` and node `b` in `mod`."""
    return all(line.lstrip().startswith("#") for line in mod.lines[a.end_lineno : b.lineno - 1])


def _eager_names(mod):
    """The names the file's own top-level statements read when the file is imported: not inside
    a function body, but in a default value, a decorator (its declarations aside), a class body,
    an assignment."""
    declared = set(map(id, mod.declared().values()))
    names = set()
    for node in mod.tree.body:
        if node is mod.doc or node in mod.import_nodes or node in mod.optional or node in mod.constants():
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            eager = [d for d in node.decorator_list if id(d) not in declared]
            eager += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
        elif isinstance(node, ast.ClassDef):
            eager = (
                node.decorator_list
                + node.bases
                + [n for n in node.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            )
        else:
            eager = [node]
        for e in eager:
            names |= _names(e)
    return names


def _all(names):
    """`__all__ = [...]` as lines of at most about 100 columns."""
    lines, line = [], "__all__ = ["
    for n in names:
        item = f'"{n}", '
        if len(line) + len(item) > 100:
            lines.append(line.rstrip())
            line = "    "
        line += item
    return lines + [line.rstrip(", ") + "]"]


def header(name):
    """The comment every copy opens with: what it is, where it comes from, how to regenerate it,
    and the project's MIT notice (which must travel with the code)."""
    version = next(
        line.split('"')[1]
        for line in (ROOT / "pyproject.toml").read_text().splitlines()
        if line.startswith("version")
    )
    notice = (ROOT / "LICENSE").read_text().strip().splitlines()
    return (
        [
            f"# {PKG} {version}: a self-contained copy of {PKG}/{_rel(name)}.py (needs NumPy only).",
            f"# The {PKG} code it uses is inlined below, each part under a comment naming its source file.",
            f"# Regenerate it in a clone of {PKG}: python scripts/standalone.py {PKG}/{_rel(name)}.py -o DIR",
            f"# Files named below (tests/, examples/, docs/, scripts/) are files of the {PKG} repository,",
            f'# and a page named below (the page "...") is a page of the {PKG} documentation site.',
            "#",
        ]
        + [f"# {line}".rstrip() for line in notice]
        + [""]
    )


def copyable(pkg_dir=PKG_DIR):
    """File stems of every package module that can stand alone (the checks excluded); stems are
    unique in the package, so a stem names its module (`dotted` gives the full name)."""
    names = []
    for path in sorted(pkg_dir.rglob("*.py")):
        name = ".".join(path.relative_to(pkg_dir).with_suffix("").parts)
        if path.stem.startswith("_") or _is_support(name):
            continue
        try:
            build(name, pkg_dir)
        except StandaloneError:
            continue
        names.append(_stem(name))
    return names


def dotted(stem, pkg_dir=PKG_DIR):
    """The dotted module name (relative to the package) of a file stem: `clip` -> `pg.clip`."""
    name = resolve(stem, pkg_dir)
    if name is None:
        raise StandaloneError(f"{stem}: not the stem of exactly one file of {PKG}/")
    return name


def write(name, out_dir, pkg_dir=PKG_DIR):
    """Write the copy of module `name` into `out_dir` (created if missing) under its file
    name (`pg.clip` -> `DIR/clip.py`); return its path."""
    name = resolve(name, pkg_dir) or name
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{_stem(name)}.py"
    path.write_text(build(name, pkg_dir))
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "files", nargs="*", metavar="FILE", help=f"files of the package, e.g. {PKG}/pg/clip.py (or just clip)"
    )
    parser.add_argument("--all", action="store_true", help="every file that can stand alone")
    parser.add_argument("-o", "--out", required=True, metavar="DIR", help="output folder")
    args = parser.parse_args(argv)
    if not args.files and not args.all:
        parser.error("FILE: expected at least one file of the package, or --all")
    names = []
    for f in args.files:
        name = resolve(f)
        if name is None:
            parser.error(f"FILE: expected a file of {PKG}/ such as {PKG}/pg/clip.py, got {f!r}")
        names.append(name)
    if args.all:
        names += [n for n in copyable() if n not in names]
    for n in names:
        try:
            path = write(n, args.out)
        except StandaloneError as e:
            parser.error(f"FILE: {e}")
        print(f"{path}: {len(path.read_text().splitlines())} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
