"""The bad-input battery's table, part tasks: the chapter's toy (minirl_lm/tasks.py), and the grader
(oracle.py, grade.py). See battery.py."""

from battery_data import TOY_POLICY, F, const

from minirl_lm import grade, oracle, tasks
from minirl_lm.pg.clip import clipped_surrogate


def _flagged(**kw):
    return oracle.Row("c", 0.0, "returns").flagged(**kw)


_flagged.__name__ = "Row.flagged"
_flagged.__wrapped__ = oracle.Row.flagged

TABLE = [
    # tasks.py
    F(tasks.gold_grader, prompt=("toy_prompt", const("3*4")), response=("toy_response", const((4,)))),
    F(tasks.sloppy_grader, prompt=("toy_prompt", const("3*4")), response=("toy_response", const((8,)))),
    F(tasks.reward_table, grader=("toy_grader", const("gold"))),
    F(tasks.evaluate, policy=("policy", TOY_POLICY)),
    F(
        tasks.train,
        K=("int1", const(2)),
        n_responses=("int1", const(4)),
        seed=("int0", const(0)),
        grader=("toy_grader", const("sloppy")),
        beta=("nonneg", const(0.1)),
        lr=("nonneg", const(1.0)),
        baseline=("option", const("mean")),
        record_at=("record_at", const([1, 2])),
    ),
    # oracle.py, grade.py
    F(oracle.cases, reference=("reference", const(clipped_surrogate)), seed=("int0", const(0))),
    F(
        oracle.compare,
        fn=("reference", const(clipped_surrogate)),
        reference=("reference", const(clipped_surrogate)),
        seed=("int0", const(0)),
        rtol=("nonneg", const(1e-6)),
    ),
    F(oracle.report, rows=("rows", const([])), rtol=("nonneg", const(1e-6)), notes=("lines", const(()))),
    F(_flagged, rtol=("nonneg", const(1e-6))),
    F(
        grade.grade,
        fn=("reference", const(clipped_surrogate)),
        reference=("reference", const(clipped_surrogate)),
        seed=("int0", const(0)),
        rtol=("nonneg", const(1e-6)),
    ),
    F(
        grade.patterns,
        rows=("rows", const([])),
        kwargs=("kwargs_list", const([])),
        reference=("reference", const(clipped_surrogate)),
        rtol=("nonneg", const(1e-6)),
    ),
]
