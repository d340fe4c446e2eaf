"""OpenRLHF pairs recorded after the objectives of 2025-26 (`scripts/conformance.py` runs them last, so every
earlier pair keeps its id): the reward model's pairwise loss with a margin.

Imported by `scripts/conformance.py` (which installs the stand-ins first); the helpers come from there.
"""

import numpy as np
from conformance import pair, pref_cases, tt, val_grad, where_fn


def openrlhf_late_pairs():
    import openrlhf.models.loss as ol

    def run(inp):
        c, r = tt(inp["seq_c"], True), tt(inp["seq_r"], True)
        return val_grad(ol.PairWiseLoss()(c, r, tt(inp["margin"])), c, r)

    cs = []
    for name, kind, c in pref_cases():
        c = {k: c[k] for k in ("seq_c", "seq_r")}
        c["margin"] = np.round(np.random.default_rng(150 + len(cs)).uniform(0, 1, len(c["seq_c"])), 2)
        cs.append((name, kind, c))
    pair(
        "OpenRLHF",
        "PairWiseLoss(margin) (--model.margin_loss_enable)",
        where_fn(ol.PairWiseLoss.forward),
        "reward.bt.bt_margin_loss",
        "bt_margin",
        {"center": 0.0},
        run,
        cs,
        note="the rewards of the chosen and rejected responses are the seq_c, seq_r arrays",
    )
