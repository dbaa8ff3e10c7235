"""The block scan of :mod:`receval.kernels.model` in torch, for factors on a GPU.

The same algorithm as :func:`receval.kernels.model.scan_block`, on the scores' device: mask
the excluded items (or keep the per-user candidates), count for every truth item the
candidates scoring above it and tied with it (one comparison pass per column of a padded
matrix of the users' truth scores), and select each user's top K with ties in catalog order
(``torch.topk`` gives the K-th score; the items above it, then the first items at it in
column order, are kept and sorted stably). Only the counts and the top-K lists come back to
the CPU, where :func:`receval.kernels.model.rank_from_counts` computes the metrics, so the
numbers equal the CPU path's whenever the scores do.

torch is optional: it is imported inside the functions, which run only for torch factors
(so that this module imports, and its doctests collect, without torch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_TIED_BATCH = 256  # truth rows whose tie order is counted at once


def _block_pairs(
    users: np.ndarray, off: np.ndarray, cols: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The (block row, column) pairs of a per-user CSR, for the block's ``users``."""
    lo = off[users]
    cnt = off[users + 1] - lo
    rows = np.repeat(np.arange(users.shape[0], dtype=np.int64), cnt)
    start = np.repeat(lo - np.concatenate(([0], np.cumsum(cnt)[:-1])), cnt)
    idx = start + np.arange(rows.shape[0], dtype=np.int64)
    return rows, cols[idx]


def scan_block_torch(
    scores: Any,
    users: np.ndarray,
    layout: tuple[Any, ...],
    want_first: bool,
    want_trec: bool,
    k_top: int,
    outputs: tuple[np.ndarray, ...],
) -> None:
    """Fill ``outputs`` (as :func:`receval.kernels.model.scan_block`) for one block of
    ``scores`` (a torch tensor, users x scored columns; it is overwritten)."""
    import torch

    t_off, t_col, t_cand, ex_off, ex_col, pc_off, pc_col, per_user, tie_key = layout[:9]
    key_col = layout[10]  # the columns in tie-key order (the top K's order of equal scores)
    t_score, above, tied, first_before, trec_before, n_cand, top_col, top_score, top_n = outputs
    dev = scores.device
    n_rows, n_cols = scores.shape
    neg_inf = float("-inf")

    # truth rows of the block and their scores (before any masking)
    t_lo, t_hi = t_off[users], t_off[users + 1]
    t_cnt = t_hi - t_lo
    t_brow = np.repeat(np.arange(n_rows, dtype=np.int64), t_cnt)
    t_rows = np.repeat(t_lo - np.concatenate(([0], np.cumsum(t_cnt)[:-1])), t_cnt)
    t_rows = t_rows + np.arange(t_brow.shape[0], dtype=np.int64)
    cols = t_col[t_rows]
    known = cols >= 0
    if known.any():
        got = scores[_dev(t_brow[known], dev), _dev(cols[known], dev)]
        t_score[t_rows[known]] = got.double().cpu().numpy()

    # the candidates: every column minus the excluded ones, or the listed ones
    if per_user:
        p_rows, p_cols = _block_pairs(users, pc_off, pc_col)
        masked = torch.full_like(scores, neg_inf)
        pr, pcols = _dev(p_rows, dev), _dev(p_cols, dev)
        masked[pr, pcols] = scores[pr, pcols]
        counts = np.bincount(p_rows, minlength=n_rows)
        del scores
    else:
        e_rows, e_cols = _block_pairs(users, ex_off, ex_col)
        masked = scores
        if e_rows.size:
            masked[_dev(e_rows, dev), _dev(e_cols, dev)] = neg_inf
        counts = n_cols - np.bincount(e_rows, minlength=n_rows)
    n_cand[users] = counts

    # above / tied counts: a padded (block rows x max truth) matrix of candidate truth scores
    cand = t_cand[t_rows]
    c_rows, c_brow, c_cols = t_rows[cand], t_brow[cand], cols[cand]
    if c_rows.size:
        first = np.concatenate(([0], np.flatnonzero(np.diff(c_brow)) + 1))
        run_start = np.repeat(first, np.diff(np.append(first, c_brow.size)))
        slot = np.arange(c_brow.size) - run_start
        width = int(slot.max()) + 1
        truth = torch.full((n_rows, width), float("inf"), dtype=masked.dtype, device=dev)
        br, sl = _dev(c_brow, dev), _dev(slot, dev)
        truth[br, sl] = masked[br, _dev(c_cols, dev)]
        n_above = torch.empty((n_rows, width), dtype=torch.int64, device=dev)
        n_tied = torch.empty((n_rows, width), dtype=torch.int64, device=dev)
        for c in range(width):
            ref = truth[:, c : c + 1]
            n_above[:, c] = (masked > ref).sum(dim=1)
            n_tied[:, c] = (masked == ref).sum(dim=1)
        got_above = n_above[br, sl].cpu().numpy()
        got_tied = n_tied[br, sl].cpu().numpy()
        above[c_rows] = got_above
        tied[c_rows] = got_tied
        first_before[c_rows] = 0
        trec_before[c_rows] = 0
        if want_first or want_trec:
            _tie_order(masked, c_rows, c_brow, c_cols, got_tied, tie_key, want_first, want_trec,
                       first_before, trec_before)  # fmt: skip

    # each user's top K, equal scores in tie-key order (columns permuted into that order)
    if k_top > 0:
        k = min(k_top, n_cols)
        in_order = bool((key_col == np.arange(n_cols)).all())
        perm = None if in_order else _dev(key_col, dev)
        if perm is not None:
            masked = masked[:, perm]
        kth = torch.topk(masked, k, dim=1).values[:, k - 1 : k]
        above_kth = masked > kth
        at_kth = masked == kth
        room = k - above_kth.sum(dim=1, keepdim=True)
        take = above_kth | (at_kth & (torch.cumsum(at_kth, dim=1) <= room))
        idx = take.nonzero()[:, 1].reshape(n_rows, k)  # row-major: columns ascending
        vals = masked.gather(1, idx)
        order = torch.sort(vals, dim=1, descending=True, stable=True).indices
        idx = idx.gather(1, order)
        top_col[users, :k] = (idx if perm is None else perm[idx]).cpu().numpy()
        top_score[users, :k] = vals.gather(1, order).double().cpu().numpy()
        top_n[users] = np.minimum(counts, k)


def _tie_order(
    masked: Any,
    c_rows: np.ndarray,
    c_brow: np.ndarray,
    c_cols: np.ndarray,
    n_tied: np.ndarray,
    tie_key: np.ndarray,
    want_first: bool,
    want_trec: bool,
    first_before: np.ndarray,
    trec_before: np.ndarray,
) -> None:
    """For truth rows tied with another candidate: the tied candidates that precede them in
    catalog order (columns below) or in trec_eval's order (a higher tie key)."""
    import torch

    dev = masked.device
    tied_rows = np.flatnonzero(n_tied > 1)
    columns = torch.arange(masked.shape[1], device=dev)
    keys = torch.as_tensor(np.array(tie_key), device=dev) if want_trec else None
    for lo in range(0, tied_rows.size, _TIED_BATCH):
        sel = tied_rows[lo : lo + _TIED_BATCH]
        rows = masked[_dev(c_brow[sel], dev)]
        col = _dev(c_cols[sel], dev)[:, None]
        same = rows == rows.gather(1, col)
        if want_first:
            first_before[c_rows[sel]] = (same & (columns[None, :] < col)).sum(dim=1).cpu().numpy()
        if want_trec and keys is not None:
            later = keys[None, :] > keys[col]
            trec_before[c_rows[sel]] = (same & later).sum(dim=1).cpu().numpy()


def _dev(values: np.ndarray, device: Any) -> Any:
    import torch

    return torch.as_tensor(np.ascontiguousarray(values, dtype=np.int64), device=device)
