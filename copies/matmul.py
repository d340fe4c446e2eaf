# minirl_lm 0.1.0: a self-contained copy of minirl_lm/nn/matmul.py (needs NumPy only).
# The minirl_lm code it uses is inlined below, each part under a comment naming its source file.
# Regenerate it in a clone of minirl_lm: python scripts/standalone.py minirl_lm/nn/matmul.py -o DIR
# Files named below (tests/, examples/, docs/, scripts/) are files of the minirl_lm repository,
# and a page named below (the page "...") is a page of the minirl_lm documentation site.
#
# MIT License
#
# Copyright (c) 2026 the minirl_lm authors
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.

r"""The two matrix products of every layer, shaped so that each is one BLAS call.

    y = x W                    x (..., k), W (k, n) -> (..., n)                 eq. (matmul)
    dW = sum over rows of x^T dy                    -> (k, n)                   eq. (matmul_grad)

NumPy runs a (B, L, k) @ (k, n) product as B small ones; `matmul` runs it as one (B L, k) @ (k, n)
product (the reshape is a view of a C-contiguous x). `weight_grad` sums over every leading axis
in one product; OpenBLAS is faster when the product's output is wider than tall, so a tall
gradient (k > n, the MLP's down projection) is computed as (dy^T x)^T and returned as that
transposed view (Fortran order: the same numbers bit for bit, no copy).

The layers call these on arrays their own entries have read: no checks here.
"""


__all__ = ["matmul", "weight_grad"]


def matmul(x, W):
    """(..., k) @ (k, n) as one 2-D product.

    Args:
        x: (..., k), C-contiguous in its leading axes (else the reshape copies).
        W: (k, n), any strides BLAS takes (a transposed view is read as such, not copied).

    Returns:
        (..., n).
    """
    return (x.reshape(-1, x.shape[-1]) @ W).reshape(x.shape[:-1] + (W.shape[1],))


def weight_grad(x, dy):
    """The weight's gradient of `matmul`: x^T dy summed over every leading axis.

    Args:
        x: (..., k) the product's input.
        dy: (..., n) the gradient in its output.

    Returns:
        (k, n): C-contiguous when k <= n, otherwise a transposed (Fortran-order) view.
    """
    x2, dy2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    return x2.T @ dy2 if x2.shape[1] <= dy2.shape[1] else (dy2.T @ x2).T
