"""examples/distill.py as a program: one line per distiller and student in the page's form, the
kept answers, the claims, the --quick run and the sloppy teacher. The distillers and their fixed
points are tested as library functions in tests/distill/."""

import os
import re
import sys
from pathlib import Path

import example_runs  # each example command once per session, forked warm (tests/conftest.py)
import pytest

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^distill (\S+) student (FULL|LIMITED): TV to teacher ([-+0-9.e]+), success ([0-9.]+)$")


def run(*args):
    env = dict(os.environ, MINIRL_CLAIMS="1")
    return example_runs.run(
        [sys.executable, str(ROOT / "examples" / "distill.py"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=env,
    )


# started when the session starts (tests/conftest.py); the tests below then read their results
EXAMPLE_RUNS = [
    ([sys.executable, str(ROOT / "examples" / "distill.py"), *a], {"MINIRL_CLAIMS": "1"})
    for a in (("--quick",), ("--quick", "--grader", "sloppy"), ("--keep", "0"))
]


def rows(out):
    return {(m[1], m[2]): (float(m[3]), float(m[4])) for m in map(LINE.match, out.splitlines()) if m}


@pytest.fixture(scope="module")
def quick():
    proc = run("--quick")
    assert proc.returncode == 0, proc.stderr
    return proc


def test_quick_lines_and_claims(quick):
    r = rows(quick.stdout)
    names = ("forward_kl", "reverse_kl", "gkd_0.5")
    assert set(r) == {(n, s) for n in names for s in ("FULL", "LIMITED")}
    for n in names:
        assert r[n, "FULL"][0] < 1e-8 and r[n, "FULL"][1] == pytest.approx(0.5, abs=1e-3)
        assert r[n, "LIMITED"][0] > 0.5
    assert r["reverse_kl", "LIMITED"][1] > r["forward_kl", "LIMITED"][1]
    assert "keeps reverse_kl: 2 answers at >= 0.05 ('4', '12')" in quick.stdout
    assert "keeps forward_kl: 8 answers" in quick.stdout
    assert "reverse KL's limited student keeps fewer answers" in quick.stderr  # MINIRL_CLAIMS=1


def test_sloppy_teacher_turns_the_order():
    proc = run("--quick", "--grader", "sloppy")
    assert proc.returncode == 0, proc.stderr
    r = rows(proc.stdout)
    assert r["reverse_kl", "LIMITED"][1] < r["forward_kl", "LIMITED"][1]
    assert "keeps reverse_kl: 1 answer at >= 0.05 ('one of 4, 12, 64 or 81')" in proc.stdout
    assert re.search(r"^- perplexity against beta_JSD \(sloppy teacher\): .*: monotone", proc.stdout, re.M)


def test_the_jsd_order_per_teacher(quick):
    line = re.search(r"^- perplexity against beta_JSD \(gold teacher\): (.*): not monotone$", quick.stdout, re.M)
    ppl = [float(c.split(" at ")[0]) for c in line[1].split(", ")]
    assert len(ppl) == 3 and ppl[1] > max(ppl[0], ppl[2])  # JSD at 0.5 above both KLs


def test_multi_token_gradients_and_fixed_points(quick):
    num = r"([-+0-9.e]+)"
    grads = re.findall(
        rf"^multi-token (FULL|DEPTH) at the uniform student: \|grad seq KL\| {num}; to-go reward: max diff "
        rf"to it {num}; per-token reward: \|g\| {num}, max diff {num}, \|diff\| {num}, cosine {num}$",
        quick.stdout,
        re.M,
    )
    assert [g[0] for g in grads] == ["FULL", "DEPTH"]
    for _, seq, togo, tok, diff, ndiff, cos in grads:
        assert float(togo) < 1e-8 and float(diff) > 1e-2 and float(ndiff) > 1e-2 and float(cos) < 0.999
        assert float(seq) > 0 and float(tok) > 0
    ends = re.search(
        rf"^multi-token DEPTH fixed points: per-token reward seq KL {num}, max \|grad seq KL\| there {num}; "
        rf"to-go reward seq KL {num}, max \|grad seq KL\| there {num}$",
        quick.stdout,
        re.M,
    )
    k_tok, g_tok, k_togo, g_togo = map(float, ends.groups())
    assert k_tok > k_togo and g_tok > 1e-2 and g_togo < 1e-8


@pytest.mark.docs_extra
def test_full_run_and_plot(tmp_path):
    path = tmp_path / "d.svg"
    proc = run("--gkd-betas", "0,0.5,1", "--plot", str(path))
    assert proc.returncode == 0, proc.stderr
    r = rows(proc.stdout)
    # GKD's ends are the KLs on the student's states; on one token, the same fixed points
    assert r["gkd_0", "LIMITED"] == pytest.approx(r["forward_kl", "LIMITED"], abs=1e-3)
    assert r["gkd_1", "LIMITED"] == pytest.approx(r["reverse_kl", "LIMITED"], abs=1e-3)
    assert path.read_text().lstrip().startswith("<?xml")


def test_bad_flag_is_a_usage_error():
    proc = run("--keep", "0")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--keep" in proc.stderr
