"""The network part: a small decoder-only transformer whose every gradient is derived by hand.

One layer family a file, forward and backward side by side (`embed`, `norm`, `attention`, `mlp`,
`block`), the model that maps token ids to token log-probs and `dloss/dlogp` back to parameter
gradients exactly as `TabularPolicy` does (`model`), an AdamW step (`adamw`) and generation with a
key/value cache (`generate`). The layers' matrix products are `matmul`'s; what the layers share
(the activations' kind, the caches) is `layer`'s. Each public function declares its arguments
(`minirl_lm.boundary`); the other layers and the model call the bodies, `f.core`, on what they
already read, so a batch is checked once. Nothing here knows about RL.
"""
