"""The network part: a small decoder-only transformer whose every gradient is derived by hand.

One layer family a file, forward and backward side by side (`embed`, `norm`, `attention`, `mlp`,
`block`), the model that maps token ids to token log-probs and `dloss/dlogp` back to parameter
gradients exactly as `TabularPolicy` does (`model`), an AdamW step (`adamw`) and generation with a
key/value cache (`generate`). The boundary is `checks`. Nothing here knows about RL.
"""
