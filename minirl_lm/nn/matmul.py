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
