"""Sparse products over the reachable (row, column) pairs of the conditional TEL passes.

The conditional passes (:mod:`banditree.models.tel.function`) keep lists of reachable
pairs, e.g. (sample, node) or (sample * m + tree, leaf).  Every product they need is
one of three sparse kernels over such a list, so the work is proportional to the
number of pairs and no unreachable pair is ever touched:

* :func:`sampled_dot`: ``<a[r_j], b[c_j]>`` for every pair (SDDMM, CSR kernel);
* :func:`pair_matmul`: ``sum_j v_j b[c_j]`` into row ``r_j`` (CSR @ dense);
* :func:`pair_matmul_transposed`: ``sum_j v_j a[r_j]`` into row ``c_j`` (COO @ dense).

The first two need the pairs sorted by row (the conditional passes keep them in
sample-major order); the third takes them in any order.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor

#: torch's one-time notice that CSR tensors are a beta feature (not an error here).
_BETA_NOTICE = "Sparse CSR tensor support is in beta state"


def _csr(rows: Tensor, cols: Tensor, values: Tensor, shape: tuple[int, int]) -> Tensor:
    """CSR matrix from pairs sorted by row (columns ascending within a row not required)."""
    crow = rows.new_zeros(shape[0] + 1)
    torch.cumsum(torch.bincount(rows, minlength=shape[0]), 0, out=crow[1:])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_BETA_NOTICE)
        return torch.sparse_csr_tensor(crow, cols, values, shape, check_invariants=False)


def sampled_dot(rows: Tensor, cols: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """``<a[rows[j]], b[cols[j]]>`` for every pair ``j``: ``(P,)``.

    Shape: ``rows``, ``cols`` ``(P,)`` sorted by row; ``a`` ``(R, q)``, ``b`` ``(C, q)``.
    """
    pattern = _csr(rows, cols, a.new_zeros(rows.numel()), (a.shape[0], b.shape[0]))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_BETA_NOTICE)
        product = torch.sparse.sampled_addmm(pattern, a, b.t(), beta=0.0)
    return product.values()


def pair_matmul(rows: Tensor, cols: Tensor, values: Tensor, b: Tensor, n_rows: int) -> Tensor:
    """``out[r] = sum_{j: rows[j] = r} values[j] b[cols[j]]``: ``(n_rows, q)``.

    Shape: ``rows``, ``cols``, ``values`` ``(P,)`` sorted by row; ``b`` ``(C, q)``.
    """
    if rows.numel() == 0:
        return b.new_zeros(n_rows, b.shape[1])
    return _csr(rows, cols, values, (n_rows, b.shape[0])) @ b


def pair_matmul_transposed(
    rows: Tensor, cols: Tensor, values: Tensor, a: Tensor, n_cols: int
) -> Tensor:
    """``out[c] = sum_{j: cols[j] = c} values[j] a[rows[j]]``: ``(n_cols, q)``.

    Shape: ``rows``, ``cols``, ``values`` ``(P,)`` in any order; ``a`` ``(R, q)``.
    """
    if rows.numel() == 0:
        return a.new_zeros(n_cols, a.shape[1])
    matrix = torch.sparse_coo_tensor(
        torch.stack((cols, rows)), values, (n_cols, a.shape[0]), check_invariants=False
    )
    return torch.sparse.mm(matrix, a)
