r"""The notation check: every symbol of every formula on the site is defined in docs/notation.md,
with the meaning it has there or one its page declares.

    python scripts/notation_lint.py            # every page under docs/
    python scripts/notation_lint.py --verbose  # also list each page's symbols

CI runs it (``.ci/run``). It reads every formula of every page (``\(...\)``, ``\[...\]``,
``$$...$$`` and ``\begin{env} ... \end{env}`` blocks; fenced code blocks and inline code are
skipped, so formulas printed by a build-time run are not seen), extracts the symbols, and fails
(exit status 1) on

- an **undefined** symbol: one that is in none of notation.md's global tables (every table whose
  last column is "in the code") and in no row of the page-local table (last column "where") that
  names the page by a link, ``[text](page.md)``; notation.md itself may use every row;
- a **clash**, a symbol with two meanings on one page. The meanings live in notation.md, one per
  row, so a clash is found there:
  1. two global rows both define the same symbol written bare, with no index (``q(s, a)`` and
     ``q(y \mid x)``: a symbol with two meanings on every page). A row that defines an indexed
     instance elaborates, it does not clash (``R_k`` beside ``R(x, y)``); the Indices table's
     letters are bound variables and clash with nothing (``b`` the row beside ``b(x)``);
  2. a page-local row defines a symbol a global row also defines (the page would read the local
     meaning, the notation page the global one), or two page-local rows naming the same page do;
  3. a page applies a symbol as a function, ``s(y)``, whose letter notation.md never applies
     (it writes ``s_t``, a state): a function of a response is not the state it shares a letter
     with. A parenthesis whose contents have a top-level ``+`` or ``-`` is a product, not an
     application (``\beta(\rho - z_0)``).
  A row *defines* the head symbol (the first one) of each formula of its symbol cell, unless the
  formula opens with an operator (``\lvert y \rvert``, ``\log \pi_\theta(y \mid x)``: notations
  built from symbols defined elsewhere).

and it fails on an **undeclared per-page meaning**: a symbol of the global tables that a page
writes in a way notation.md never does, which reads as another meaning. Compared with how the
global tables (symbol and meaning cells) write that symbol, plus the page-local rows naming the
page:

  a. an index letter that carries a meaning: a subscript letter that is no index anywhere in
     notation.md (not in the Indices table, not written as an index, not a named subscript such as
     ``y_c``): ``z_p`` (p a pair), ``u_p``, ``y_a``;
  b. a per-token symbol (the tables index it by ``t`` only, ``r_t``, ``G_t``, ``\delta_t``) indexed
     by other letters alone: ``r_k`` (a reward per turn), ``G_{n,v}`` (a gradient);
  c. a digit subscript on a symbol the tables never index: ``\lambda_2`` (``y_1`` is ``y`` at
     time 1, ``\lambda_2`` is not GAE's ``\lambda``); a digit never falls back onto an index
     letter (``k_2`` is not ``k``);
  d. an application whose signature the tables never write: a different number of arguments
     before the bar (``q(y)``, ``q(a \mid s)`` against ``q(s, a)``; ``p(s, a)`` against
     ``p(s' \mid s, a)``). Dropping the conditioning (``\pi(y)`` for ``\pi(y \mid x)``) or, with no
     bar on either side, an argument the table has (``R(y)`` for ``R(x, y)``) is the same symbol;
  e. an equation that gives a symbol the table defines by an equation (``m = \max_v z_v``) a value
     built from none of the symbols of its row, or of those symbols' rows: ``m = \max(M, 1)``.

A page **declares** its own meanings in one block near its top, which the reader sees:

    !!! note "Notation on this page"

        Symbols this page uses with another meaning than the [notation](notation.md) table gives them:

        - \(z_p\), \(w_p\): the subscript \(p\) is a pair: ...
        - \(\lambda_2\): the ridge coefficient, not GAE's \(\lambda\)

Each formula before an item's first colon declares its head symbol, written as the page writes
it: ``z_p`` allows ``z`` indexed by p on that page, ``p(s, a)`` the signature (2), ``n_+`` defines
a new symbol; a declared symbol also passes rule 3 and (e). Code spans before the colon
(```E[g]```) name what a run prints: the lint reads the Markdown only, not the pages the build
produces, so what an example prints is declared by hand and not checked.

What the per-page rules cannot see: a letter reused bare with a new meaning (``n`` as a count,
``G`` in ``1/G``), and an indexed form whose letter has an index meaning elsewhere (``p_y`` for a
response law): declare those by reading, or record them in a page-local row, which rule 2 checks.

What counts as one symbol (the normalization):

- a **base**: a Latin letter (``x``, ``R``), ``\ell``, a Greek letter, or one letter under a font
  command (``\mathcal{L}``); multi-letter words (``\text{KL}``, ``\mathrm{mask}``,
  ``\operatorname{clip}``) and TeX operators (``\log``, ``\sum``, ``\max``) are words, not
  symbols;
- its **decorations**: ``\hat``, ``\tilde``, ``\bar``, ``\overline``, ... make a new symbol
  (``\hat\omega`` is not ``\omega``), and so does a difference ``\Delta R``; primes do not
  (``s'`` is another state);
- its **named subscripts and superscripts**, which are part of the name: a word (``\text{ref}``,
  ``\mathrm{ref}`` and ``\text{ref}`` are the same), ``\min``/``\max``, a capital letter
  (``w_D``; but ``R_K``, with K a defined symbol, is R at index K), a Greek letter or a symbol
  (``\pi_\theta``, ``\pi_{\theta_\text{old}}``, ``v^\pi``), a digit (``k_1``; ``\mu_0``), ``*``.
  So ``\pi_{\text{ref}}``, ``c_{\min}`` and ``\ell_{\text{ref}}`` are three symbols, none of them
  ``\pi``, ``c`` or ``\ell``;
- **index subscripts** are dropped from the name: lower-case letters and expressions of them
  (``\ell_{b,t}``, ``\ell_t``, ``y_{<t}``, ``s_{t+1}``, ``x_{nK+k}`` are ``\ell``, ``y``, ``s``,
  ``x``), but the letters inside them are symbols in their own right and must be defined (the
  index letters b, t, k, ... have their own table). A lower-case letter that is not an index
  letter and that notation.md writes as the subscript of that symbol in a symbol cell is a name
  (``V_c``, ``y_c``, ``y_r``, ``c_s``). A symbol with a digit subscript that is not defined falls
  back to its base (``y_1`` is ``y``, ``s_1`` is ``s``);
- superscripts that are powers (``u^2``, ``\gamma^{j-t}``, ``e^{R/\beta}``) are dropped, their
  contents checked; ``e`` with a superscript is Euler's number;
- standard mathematics needs no row: ``\mathbb{E}``, ``\mathbb{R}``, ``\mathbb{1}``,
  ``\nabla``, ``\partial``, ``\infty`` (``STANDARD`` below).

Standard library only, no NumPy: it runs in well under a second. The last line of the output is
``notation: P pages, S symbols, U undefined, C clashes, D undeclared per-page meanings``; S counts
the distinct (page, symbol) pairs, D the distinct (page, symbol, reason) findings.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

GREEK = set(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi "
    "pi varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega "
    "Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split()
)
LETTERLIKE = GREEK | {"ell", "imath", "jmath"}
FONTS = {"mathcal", "mathbb", "mathrm", "mathbf", "boldsymbol", "mathsf", "mathscr", "mathfrak", "bm"}
WORDS = {"text", "mathrm", "textrm", "operatorname", "textit", "textbf", "mathit", "texttt", "mbox"}
DECORATIONS = {
    "hat",
    "widehat",
    "tilde",
    "widetilde",
    "bar",
    "overline",
    "check",
    "vec",
    "dot",
    "ddot",
    "breve",
    "acute",
    "grave",
    "mathring",
}
# Commands whose arguments are not mathematics to read.
SKIP_ARG = {"tag": 1, "label": 1, "begin": 1, "end": 1, "color": 1, "hspace": 1, "vspace": 1, "ref": 1}
STANDARD = {r"\mathbb{E}", r"\mathbb{R}", r"\mathbb{1}", r"\mathbb{N}", r"\mathbb{Z}", r"\mathbb{P}"}
# Set by read_notation: the index letters (the "Indices" table) and the symbols notation.md writes
# with a lower-case letter subscript that is not an index letter (V_c, y_c, c_s): that letter is
# part of the name.
INDEX_LETTERS = set()
LITERAL = set()
NAMED_OPS = {"min", "max", "star", "top", "prime", "ast"}
INDEX_OK = re.compile(r"^[a-z0-9+\-<>=|,.' ]*$")

TOKEN = re.compile(r"\\[A-Za-z]+\*?|\\.|[A-Za-z]|[0-9]|\s+|.", re.S)


# --------------------------------------------------------------------------------------------
# Pages: the formulas outside code
# --------------------------------------------------------------------------------------------


def strip_code(text):
    """The page with fenced code blocks and inline code spans blanked (line numbers kept)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
            continue
        if fence is not None:
            if line.strip().startswith(fence[0] * len(fence)) and line.strip().strip(fence[0]) == "":
                fence = None
            out.append("")
            continue
        out.append(re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", line))
    return "\n".join(out)


MATH = re.compile(
    r"\$\$(?P<dd>.+?)\$\$"
    r"|\\\[(?P<sq>.+?)\\\]"
    r"|\\\((?P<rd>.+?)\\\)"
    r"|(?P<env>\\begin\{(?P<name>[a-z]+\*?)\}.+?\\end\{(?P=name)\})",
    re.S,
)


def formulas(text):
    """Every formula of a markdown text, as TeX source, in page order."""
    body = strip_code(text)
    found = []
    for m in MATH.finditer(body):
        tex = m.group("dd") or m.group("sq") or m.group("rd") or m.group("env")
        # inside a table cell a "|" is written "\|"; inside a formula it is TeX's \| (a norm)
        found.append(tex)
    return found


# --------------------------------------------------------------------------------------------
# TeX: a small reader, enough to find the symbols
# --------------------------------------------------------------------------------------------


def tokenize(tex):
    return [t for t in TOKEN.findall(tex) if not t.isspace()]


def read_group(toks, i):
    """The tokens of the argument starting at toks[i] (a {group} or one token); the next index."""
    while i < len(toks) and toks[i] == " ":
        i += 1
    if i >= len(toks):
        return [], i
    if toks[i] == "{":
        depth, j = 1, i + 1
        while j < len(toks) and depth:
            depth += {"{": 1, "}": -1}.get(toks[j], 0)
            j += 1
        return toks[i + 1 : j - 1], j
    if toks[i].startswith("\\") and toks[i][1:] in DECORATIONS | FONTS | WORDS:
        inner, j = read_group(toks, i + 1)
        return [toks[i], "{", *inner, "}"], j
    return [toks[i]], i + 1


def raw(toks):
    return "".join(t if not t.startswith("\\") or len(t) == 2 else t + " " for t in toks).strip()


class Use:
    """One occurrence of a symbol: its key; whether it is applied as a function, and how (its
    signature, ``sig``: the number of arguments, ``"2"`` for ``q(s, a)``, or the numbers before and
    after the bar, ``"1|2"`` for ``p(s' \\mid s, a)``); whether it carries an index subscript, and the
    lower-case letters of its index subscripts (``letters``: ``{"b", "t"}`` for ``\\ell_{b,t}``)."""

    __slots__ = ("key", "base", "applied", "indexed", "sig", "letters", "args")

    def __init__(self, key, base, applied, indexed=False, sig=None, letters=frozenset(), args=frozenset()):
        self.key, self.base, self.applied, self.indexed = key, base, applied, indexed
        self.sig, self.letters, self.args = sig, frozenset(letters), frozenset(args)


def name_part(toks, base=None):
    """A sub- or superscript part that is part of the name, normalized; None for an index."""
    if not toks:
        return None
    head = toks[0]
    if head.startswith("\\") and head[1:] in WORDS:
        # \mathrm{IPO}\text{-avg}: the words of the part, joined
        words, i = [], 0
        while i < len(toks) and toks[i].startswith("\\") and toks[i][1:] in WORDS:
            inner, i = read_group(toks, i + 1)
            words.append(re.sub(r"\\[A-Za-z]+\s*|[{}]", "", raw(inner)))
        return "".join(words)
    if head.startswith("\\") and head[1:] in NAMED_OPS:
        return head[1:]
    if toks == ["*"]:
        return "*"
    if toks in (["+"], ["-"]):
        return toks[0]  # n_+: a name (the positive ones), not an index
    if len(toks) == 1 and re.fullmatch(r"[A-Z]", head):
        return head
    if len(toks) == 1 and (base, head) in LITERAL:
        return head
    if all(t.isdigit() for t in toks):
        return "".join(toks)
    if head.startswith("\\") and (head[1:] in LETTERLIKE or head[1:] in FONTS | DECORATIONS):
        uses = symbols_of(toks)
        if len(uses) == 1:
            return uses[0].key
    if INDEX_OK.match(raw(toks)) or any(re.fullmatch(r"[a-z]", t) for t in toks):
        return None
    uses = symbols_of(toks)
    return uses[0].key if len(uses) == 1 else None


def index_letters_of(part):
    """The lower-case letters of an index subscript, outside a length (``s_{\\lvert y \\rvert + 1}``
    is indexed by a number, not by y)."""
    out, inside = set(), False
    for t in part:
        if t in ("|", "\\lvert", "\\rvert", "\\vert"):
            inside = not inside if t in ("|", "\\vert") else t == "\\lvert"
        elif not inside and re.fullmatch(r"[a-z]", t):
            out.add(t)
    return out


def split_commas(toks):
    parts, cur, depth = [], [], 0
    for t in toks:
        depth += {"{": 1, "}": -1}.get(t, 0)
        if t == "," and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    parts.append(cur)
    return [p for p in parts if p]


def symbols_of(toks, out=None):
    """The symbols of a token list, in order, as Use records (index letters included)."""
    out = [] if out is None else out
    i = 0
    while i < len(toks):
        t = toks[i]
        base = None
        if t.startswith("\\") and len(t) > 2:
            cmd = t[1:].rstrip("*")
            if cmd in SKIP_ARG:
                _, i = read_group(toks, i + 1)
                continue
            if cmd in WORDS:
                _, i = read_group(toks, i + 1)
                continue
            if cmd in FONTS:
                inner, j = read_group(toks, i + 1)
                letters = raw(inner)
                if re.fullmatch(r"[A-Za-z0-9]", letters):
                    base, i = f"\\{cmd}{{{letters}}}", j
                else:
                    i = j
                    continue
            elif cmd in DECORATIONS:
                inner, j = read_group(toks, i + 1)
                uses = symbols_of(inner)
                if len(uses) == 1:
                    base, i = f"\\{cmd}{{{uses[0].key}}}", j
                else:
                    out.extend(uses)
                    i = j
                    continue
            elif cmd == "Delta" and i + 1 < len(toks) and is_symbol_start(toks[i + 1]):
                # \Delta R, \Delta \ell_{\text{ref}}: a difference, one symbol
                inner, j = read_group(toks, i + 1)
                uses = symbols_of(inner)
                base, i = f"\\Delta{{{uses[0].key}}}", j
            elif cmd in LETTERLIKE:
                base, i = t, i + 1
            else:
                # an operator (\sum, \log, \max, ...): its limits are read, never applied
                i += 1
                while i < len(toks) and toks[i] in ("_", "^"):
                    arg, i = read_group(toks, i + 1)
                    symbols_of(arg, out)
                continue
        elif re.fullmatch(r"[A-Za-z]", t):
            base, i = t, i + 1
        else:
            i += 1
            continue
        # sub- and superscripts, primes; the symbols of an index come after the symbol itself
        subs, sups, power, inner_uses, indexed, letters = [], [], False, [], False, set()
        while i < len(toks) and toks[i] in ("_", "^", "'"):
            if toks[i] == "'":
                i += 1
                continue
            kind = toks[i]
            arg, i = read_group(toks, i + 1)
            if kind == "_":
                for part in split_commas(arg):
                    named = name_part(part, base)
                    if named is None:
                        indexed = True
                        letters.update(index_letters_of(part))
                        symbols_of(part, inner_uses)
                    else:
                        subs.append(named)
            else:
                named = name_part(arg) if arg and arg[0] != "-" else None
                if named in ("*", "star", "ast") or (named and named not in ("top",) and not named.isdigit()):
                    sups.append("*" if named in ("star", "ast") else named)
                else:
                    power = True
                    symbols_of(arg, inner_uses)
        if base == "e" and power and not subs:
            out.extend(inner_uses)
            continue  # Euler's number
        key = base
        if subs:
            key += "_{" + ",".join(subs) + "}"
        if sups:
            key += "^{" + ",".join(sups) + "}"
        sig, args = signature_at(toks, i)
        out.append(Use(key, base, sig is not None, indexed, sig, letters, args))
        out.extend(inner_uses)
    return out


def is_symbol_start(tok):
    if re.fullmatch(r"[A-Za-z]", tok):
        return True
    return tok.startswith("\\") and tok[1:] in LETTERLIKE | FONTS | DECORATIONS


def signature_at(toks, i):
    """If toks[i] opens the argument list of a function, "(" whose contents have no top-level
    + or - (``s(y)`` applies s; ``\\beta(\\rho - z_0)`` multiplies), its signature: the number of
    arguments (``"2"`` for ``(s, a)``), or the numbers before and after a ``\\mid`` (``"1|2"`` for
    ``(s' \\mid s, a)``), and the bases of its arguments (``{"x", "y"}`` for ``(x, y_t)``); (None,
    ()) when it does not."""
    if i < len(toks) and toks[i] == "\\left":
        i += 1
    if i >= len(toks) or toks[i] != "(":
        return None, ()
    depth, counts = 0, [1]
    for j in range(i, len(toks)):
        t = toks[j]
        depth += {"(": 1, ")": -1, "{": 1, "}": -1}.get(t, 0)
        if depth == 0:
            break
        if depth == 1 and t in ("+", "-"):
            return None, ()
        if depth == 1 and t == ",":
            counts[-1] += 1
        if depth == 1 and t == "\\mid":
            counts.append(1)
    args = set()
    for part in split_commas([t if t != "\\mid" else "," for t in toks[i + 1 : j]]):
        uses = symbols_of(part)
        if uses:
            args.add(uses[0].base)
    return "|".join(str(c) for c in counts), args


def uses_of(tex):
    return symbols_of(tokenize(tex))


# --------------------------------------------------------------------------------------------
# notation.md: the tables
# --------------------------------------------------------------------------------------------


class Row:
    """One row of a notation table: the symbols it defines, where it applies, its text."""

    def __init__(self, line, cells, pages, defines):
        self.line, self.cells, self.pages, self.defines = line, cells, pages, defines
        self.keys = {k for k, _ in defines}
        self.index = False  # a row of the Indices table

    def where(self):
        return "global" if self.pages is None else ", ".join(sorted(self.pages))


def split_row(line):
    cells, cur, depth, i = [], "", 0, 0
    s = line.strip().strip("|")
    while i < len(s):
        if s.startswith("\\(", i):
            depth += 1
        elif s.startswith("\\)", i):
            depth -= 1
        if s[i] == "|" and depth == 0 and (i == 0 or s[i - 1] != "\\"):
            cells.append(cur.strip())
            cur = ""
        else:
            cur += s[i]
        i += 1
    cells.append(cur.strip())
    return cells


def defined_by(cell):
    """The symbols a symbol cell defines, as (key, bare): bare when written with no index."""
    defines = []
    for tex in formulas(cell):
        uses = uses_of(tex)
        toks = tokenize(tex)
        if not uses or (toks and toks[0].startswith("\\") and toks[0][1:] in OPENERS):
            continue
        head = (uses[0].key, not uses[0].indexed)
        if head not in defines:
            defines.append(head)
    return defines


OPENERS = {"lvert", "log", "operatorname", "mathrm", "text", "sum", "exp", "mathbb", "lVert", "left"}


def read_notation(path):
    """Global rows and page-local rows of notation.md (and INDEX_LETTERS, LITERAL from it)."""
    text = path.read_text()
    INDEX_LETTERS.clear()
    LITERAL.clear()
    cells = [split_row(line)[0] for line in text.split("\n") if line.startswith("|")]
    heading = ""
    for line in text.split("\n"):
        if line.startswith("#"):
            heading = line.strip("# ").lower()
        elif line.startswith("|") and heading == "indices":
            INDEX_LETTERS.update(re.findall(r"\\\(([a-z])\\\)", split_row(line)[0]))
    for cell in cells:
        for tex in formulas(cell):
            for m in re.finditer(r"(\\[A-Za-z]+|[A-Za-z])_\{?([a-z])\b(?![,+\-])", tex):
                if m.group(2) not in INDEX_LETTERS:
                    LITERAL.add(m.groups())
    rows, header = [], None
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("#"):
            heading = line.strip("# ").lower()
        if not line.startswith("|"):
            header = None
            continue
        cells = split_row(line)
        if header is None:
            header = [c.lower() for c in cells]
            continue
        if set(line) <= set("|-: "):
            continue
        if header[0] != "symbol":
            continue
        if header[-1] == "where":
            pages = set(re.findall(r"\]\(([A-Za-z0-9_]+)\.md", cells[-1]))
        else:
            pages = None
        rows.append(Row(n, cells, pages, defined_by(cells[0])))
        rows[-1].index = heading == "indices"
    return rows


# --------------------------------------------------------------------------------------------
# The check
# --------------------------------------------------------------------------------------------


def lookup(key, table):
    if key in table:
        return key
    stripped = re.sub(r"_\{[0-9,]+\}$", "", key)
    # y_1 is y at time 1; k_2 is not the index letter k (a digit does not index an index)
    if stripped in table and not (table[stripped] and all(r.index for r in table[stripped])):
        return stripped
    # R_K, y_K: a capital that is itself a defined symbol (the group size) is an index
    m = re.fullmatch(r"(.+)_\{([A-Z])\}", key)
    if m and m.group(2) in table and m.group(1) in table:
        return m.group(1)
    return None


class Forms:
    r"""How the tables write one symbol: bare or indexed, with which index letters, applied with
    which signatures (and argument letters); the symbols of its row (``vocab``) and whether the
    row defines it by an equation (``eq``, ``m = \max_v z_v``)."""

    __slots__ = ("bare", "indexed", "letters", "sigs", "vocab", "eq")

    def __init__(self):
        self.bare, self.indexed, self.eq = False, False, False
        self.letters, self.sigs, self.vocab = set(), set(), set()

    def add(self, u):
        if u.indexed:
            self.indexed = True
            self.letters |= u.letters
        if u.sig is not None:
            self.sigs.add((u.sig, u.args))
        if not u.indexed and u.sig is None:
            self.bare = True

    def merge(self, other):
        self.bare, self.indexed = self.bare or other.bare, self.indexed or other.indexed
        self.letters |= other.letters
        self.sigs |= other.sigs
        self.vocab |= other.vocab
        self.eq = self.eq or other.eq
        return self


def forms_of_rows(rows):
    """key -> Forms, over every formula of the rows' cells; a row's vocabulary is every symbol of
    its cells, given to each symbol it defines."""
    forms = {}
    for r in rows:
        vocab = set()
        for cell in r.cells:
            for tex in formulas(cell):
                for u in uses_of(tex):
                    forms.setdefault(u.key, Forms()).add(u)
                    vocab.add(u.key)
        for k in r.keys:
            forms.setdefault(k, Forms()).vocab |= vocab - {k}
        for tex in formulas(r.cells[0]):
            for lhs, _ in equations(tex):
                left = symbols_of(lhs)
                if len(left) == 1 and left[0].key in r.keys:
                    forms[left[0].key].eq = True
    return forms


DECLARATION = re.compile(r'^(?:!!!|\?\?\?\+?)\s+\w+\s+"Notation on this page"\s*$', re.I)


def declarations(text):
    r"""The page's own declarations: the block ``!!! note "Notation on this page"``, one list item
    per meaning, ``- \(z_p\), \(w_p\): what they are on this page``. Returns (line, heads): the
    line of the block (None without one) and, per formula before an item's first colon, its head
    symbol's Use (the symbol declared, with the index letters and the signature it is written
    with). Code spans before the colon name what a run prints (``E[g]``): the reader sees them, the
    lint cannot check them."""
    lines = text.split("\n")
    heads, at = [], None
    for n, line in enumerate(lines):
        if DECLARATION.match(line):
            at = n + 1
            break
    if at is None:
        return None, heads
    for line in lines[at:]:
        if line.strip() and not line.startswith("    "):
            break
        m = re.match(r"^\s+[-*]\s+(.*)$", line)
        if not m:
            continue
        item = m.group(1)
        # the names: the text before the first colon outside a formula
        cut = re.sub(r"\\\(.*?\\\)", lambda f: "x" * len(f.group(0)), item).find(":")
        names = item if cut < 0 else item[:cut]
        for tex in re.findall(r"\\\((.+?)\\\)", names):
            uses = uses_of(tex)
            if uses:
                heads.append(uses[0])
    return at, heads


def equations(tex):
    r"""(lhs, rhs) token lists of each equation of a formula: segments split at ``\\``, ``\quad``,
    and top-level commas, each with a top-level ``=``."""
    toks, segs, cur, depth = tokenize(tex), [], [], 0
    for t in toks:
        depth += {"{": 1, "}": -1, "(": 1, ")": -1, "[": 1, "]": -1}.get(t, 0)
        if depth == 0 and t in ("\\\\", "\\quad", "\\qquad", ",", ";", "\\text", "\\tag"):
            segs.append(cur)
            cur = []
        elif t != "&":
            cur.append(t)
    segs.append(cur)
    found = []
    for seg in segs:
        depth = 0
        for n, t in enumerate(seg):
            depth += {"{": 1, "}": -1, "(": 1, ")": -1}.get(t, 0)
            if t == "=" and depth == 0:
                found.append((seg[:n], seg[n + 1 :]))
                break
    return found


TIME = {"t", "j"}


def meanings(u, found, forms, index_letters):
    """The ways use ``u`` (of the table's symbol ``found``) departs from how notation.md writes
    it, as a list of reasons (empty: it reads as the table's symbol). ``forms`` already holds the
    page-local rows and the page's own declarations; ``index_letters`` are the letters notation.md
    writes as an index anywhere."""
    f = forms.get(found)
    if f is None:
        return []
    why = []
    if found != u.key and re.search(r"_\{[0-9,]+\}$", u.key) and not f.indexed:
        why.append(f"a digit subscript on {found}, which notation.md never indexes")
    if u.indexed:
        known = ", ".join(sorted(f.letters)) or "nothing"
        odd = sorted(u.letters - index_letters - f.letters - {"i", "j"})
        if odd:
            why.append(f"indexed by {', '.join(odd)}, which notation.md never uses as an index")
        elif f.letters and f.letters <= TIME and u.letters and not u.letters & TIME and u.letters - f.letters:
            why.append(f"a per-token symbol indexed by {', '.join(sorted(u.letters))} (notation.md: by {known})")
    if u.sig is not None and f.sigs:
        head = u.sig.split("|")[0]
        fits = any(
            sig.split("|")[0] == head or ("|" not in u.sig + sig and u.args <= args) for sig, args in f.sigs
        )
        if not fits:
            table = "; ".join(sorted(f"({sig})" for sig, _ in f.sigs))
            why.append(f"applied to ({u.sig}) arguments; notation.md applies {found} to {table}")
    return why


def check(docs=DOCS, verbose=False, out=sys.stdout):
    notation = docs / "notation.md"
    rows = read_notation(notation)
    applies = {}  # base -> whether notation.md ever applies a symbol of that base as a function
    for tex in formulas(notation.read_text()):
        for u in uses_of(tex):
            applies[u.base] = applies.get(u.base, False) or u.applied
    global_rows, local_rows = [r for r in rows if r.pages is None], [r for r in rows if r.pages is not None]
    global_forms = forms_of_rows(global_rows)
    # the letters with an index meaning: the Indices table's, those notation.md writes as an index
    # anywhere, and the lower-case names it gives subscripts (y_c, y_r, c_s)
    index_letters = INDEX_LETTERS | {n for _, n in LITERAL}
    index_letters |= set().union(*(f.letters for f in global_forms.values()))
    clashes, undeclared = [], []

    by_key, bare = {}, {}
    for r in global_rows:
        for k, is_bare in r.defines:
            is_bare = is_bare and not r.index
            if r not in by_key.setdefault(k, []):
                by_key[k].append(r)
            if is_bare and r not in bare.setdefault(k, []):
                bare[k].append(r)
    for k, rs in bare.items():
        if len(rs) > 1:
            lines = ", ".join(str(r.line) for r in rs)
            clashes.append(("notation", k, f"defined by two global rows (notation.md lines {lines})"))

    pages = sorted(p for p in docs.glob("*.md"))
    n_symbols = 0
    undefined = []
    for page in pages:
        stem = page.stem
        text = page.read_text()
        table = {k: list(rs) for k, rs in by_key.items()}
        mine = [r for r in local_rows if stem == "notation" or stem in r.pages]
        for r in mine:
            for k in r.keys:
                table.setdefault(k, []).append(r)
        if stem != "notation":
            for k, rs in table.items():
                local = [r for r in rs if r.pages is not None]
                if local and len(rs) > 1:
                    lines = ", ".join(f"{r.line} ({r.where()})" for r in rs)
                    clashes.append((stem, k, f"two meanings in notation.md (lines {lines})"))
        # the forms of the tables, then of the page-local rows for this page, then its declarations
        forms = {k: Forms().merge(f) for k, f in global_forms.items()}
        for k, f in forms_of_rows(mine).items():
            forms.setdefault(k, Forms()).merge(f)
        _, heads = declarations(text)
        declared = {u.key for u in heads}
        for u in heads:
            table.setdefault(u.key, [])
            forms.setdefault(u.key, Forms()).add(u)
        seen, departs = {}, {}
        for tex in formulas(text):
            for u in uses_of(tex):
                if u.base in STANDARD:
                    continue
                seen.setdefault(u.key, [False, tex, u.base])
                if u.applied:
                    seen[u.key][:] = [True, tex, u.base]
                found = lookup(u.key, table)
                if found is not None and stem != "notation":
                    for why in meanings(u, found, forms, index_letters):
                        departs.setdefault((u.key, why), tex)
            if stem == "notation":
                continue
            # an equation that gives a table symbol a value built from none of its row's symbols
            for lhs, rhs in equations(tex):
                left, right = symbols_of(lhs), symbols_of(rhs)
                if len(left) != 1 or not right or left[0].key in declared:
                    continue
                f = global_forms.get(left[0].key)
                if f is None or not f.eq or not f.vocab or left[0].key not in by_key:
                    continue
                # the row's symbols, and those of the rows of its symbols (k_1 = u: u's row)
                vocab = f.vocab.union(*(global_forms[k].vocab for k in f.vocab if k in global_forms))
                if not {r.key for r in right} & vocab:
                    departs.setdefault((left[0].key, f"redefined as {short(raw(rhs), 40)}"), tex)
        undeclared.extend((stem, key, why, tex) for (key, why), tex in departs.items())
        n_symbols += len(seen)
        for key, (applied, tex, applied_base) in sorted(seen.items()):
            found = lookup(key, table)
            if found is None:
                undefined.append((stem, key, tex))
                continue
            if applied and stem != "notation" and key not in declared:
                if not applies.get(applied_base, False):
                    clashes.append(
                        (stem, key, f"applied as a function, \\({short(tex)}\\); notation.md writes it as a value")
                    )
        if verbose:
            print(f"{stem}: {' '.join(sorted(seen))}", file=out)

    for stem, key, tex in undefined:
        print(f"{stem}: undefined {key}   in \\({short(tex)}\\)", file=out)
    for stem, key, why in clashes:
        print(f"{stem}: clash {key}: {why}", file=out)
    for stem, key, why, tex in undeclared:
        print(f"{stem}: undeclared {key}: {why}   in \\({short(tex)}\\)", file=out)
    print(
        f"notation: {len(pages)} pages, {n_symbols} symbols, {len(undefined)} undefined, {len(clashes)} clashes, "
        f"{len(undeclared)} undeclared per-page meanings",
        file=out,
    )
    return 1 if undefined or clashes or undeclared else 0


def short(tex, n=70):
    tex = " ".join(tex.split())
    return tex if len(tex) <= n else tex[: n - 3] + "..."


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs folder (default: docs/)")
    parser.add_argument("--verbose", action="store_true", help="list each page's symbols")
    args = parser.parse_args(argv)
    if not (args.docs / "notation.md").is_file():
        parser.error(f"--docs: expected a folder with notation.md, got {args.docs}")
    return check(args.docs, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
