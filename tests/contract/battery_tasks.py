"""The bad-input battery's table, part tasks: the chapter's toy (minirl_lm/tasks.py). See battery.py."""

from battery_data import TOY_POLICY, F, const

from minirl_lm import tasks

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
]
