r"""Which bump weights each estimator cube meets, grouped into cube *types* (exact risks, classification).

The exact risk of a cube classifier (:mod:`labeldp_sim.papers.table1.argmax_law`) needs,
for every estimator cube B_r of side 1/G_est, the weights W_rk = ∫_{B_r ∩ bump k} g
of the bumps it meets.  Cubes with the same multiset of weights are one *type*
with a count.  Two constructions, both exact:

**From the overlaps** (any bump set, any profile): one type per relevant cube,
the rows of :meth:`~.geometry.BumpProfile.overlaps`.  Its cost is the number of
relevant cubes, (G_est/G)^d per bump when the estimator is finer.

**Product bump sets, linear-edge profile** φ(u) = (½ − ‖u‖∞)₊^β.  When the bump
cubes are S_0 × … × S_{d−1} (the (47) count m = C_M G^(d−1) spreads one bump
per G/C_M cubes of the last axis, so S_i is every cube for i < d − 1), an
estimator cube is a product of one estimator interval per axis, and the bumps
it meets are the products of the *pieces* (bump interval ∩ estimator interval,
in the bump's coordinate u ∈ [−½, ½]) of its intervals.  Intervals with the same
multiset of pieces (each piece up to u → −u, which leaves every box integral
unchanged) are one *axis class*; types are tuples of classes.  Their number
grows like (G_est/G)^d, so types are enumerated by their *leader*: on a box,
an axis j whose |u_j| never exceeds M = max_i min|u_i| (the largest of the
axes' smallest |u|, attained on axis i*) never attains ‖u‖∞, so

    ∫_box φ = Π_{j inactive} width_j · ∫_{box_A} (½ − ‖u_A‖∞)^β,

A the other (*active*) axes, whose |u|-ranges all contain M.  An inactive
interval lies inside one bump, so its width is G/G_est; a type is fixed by its
active classes and the *number* of its inactive axes, and counted by products of
cumulative class counts.  Enumerating (leader class, active classes) costs
about d · (number of classes) · (classes whose range contains M) instead of
(number of classes)^d.  Positions are integers in units of 1/(2 G_est) in u
(1/(G·G_est) in x): pieces are grouped exactly, without rounding.
"""

from __future__ import annotations

import numpy as np

from labeldp_sim.papers.table1.families.geometry import linf_box_integral

__all__ = ["product_axes", "axis_classes", "product_types", "overlap_types", "TypeTable"]


class TypeTable:
    """Cube types as CSR lists: ``counts[t]`` cubes each meet the bumps of weights
    ``W[ptr[t]:ptr[t+1]]`` (``mult`` bumps of each weight)."""

    def __init__(self, counts, ptr, W, mult):
        self.counts, self.ptr, self.W, self.mult = counts, ptr, W, mult

    def __len__(self):
        return len(self.counts)


def product_axes(d, G, bumps):
    """The per-axis bump coordinates S_i if the bump cubes are S_0 × … × S_{d−1}, else None."""
    multi = np.array(np.unravel_index(np.asarray(bumps, dtype=np.int64), (G,) * d))
    axes = [np.unique(multi[i]) for i in range(d)]
    return axes if int(np.prod([len(a) for a in axes])) == multi.shape[1] else None


def _ragged_arange(counts):
    """0..c−1 for each c in counts, concatenated."""
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(counts.sum()) - starts


def axis_classes(G, G_est, S, shifts=1):
    """The estimator intervals of one axis that meet the bumps S, grouped into classes.

    With ``shifts`` = n > 1 the estimator's partition is shifted by j/(n G_est), j uniform on
    0 … n − 1, wrapping round the unit interval (a torus: the last interval takes the piece of
    [0, 1) before the first boundary); the classes are those of all n shifted partitions together,
    each interval counting 1/n (``mult`` is then fractional): the law of a uniformly shifted partition.

    Returns (pieces, classes): ``pieces`` (P, 2) canonical integer pieces (a, b),
    u = a/(2 n G_est) … b/(2 n G_est); ``classes`` a dict of arrays: ``ptr``, ``piece``,
    ``pmult`` (CSR: the distinct pieces of each class and how many), ``mult`` (how
    many intervals), ``lo``, ``hi`` (min and max |u| over the class's pieces, same units).
    """
    S = np.asarray(S, dtype=np.int64)
    n = int(shifts)
    B = n * G_est  # positions in units of 1/(n G G_est): bump k is [k B, (k + 1) B), intervals n G long
    es, ks, los, his = [], [], [], []
    for j in range(n):
        offset = j * G
        start = (S * B - offset) // (n * G)
        stop = -((-((S + 1) * B - offset)) // (n * G))
        k = np.repeat(S, stop - start)
        e = np.repeat(start, stop - start) + _ragged_arange(stop - start)
        lo = np.maximum(e * n * G + offset, k * B)
        hi = np.minimum((e + 1) * n * G + offset, (k + 1) * B)
        es.append(e % G_est + j * G_est)  # e = −1 is the wrapped end of interval G_est − 1
        ks.append(k)
        los.append(lo)
        his.append(hi)
    e, k, lo, hi = (np.concatenate(a) for a in (es, ks, los, his))
    keep = hi > lo
    e, k, lo, hi = e[keep], k[keep], lo[keep], hi[keep]
    a, b = 2 * lo - (2 * k + 1) * B, 2 * hi - (2 * k + 1) * B
    flip = -b < a
    a, b = np.where(flip, -b, a), np.where(flip, -a, b)
    span = 2 * B + 1
    keys, piece_id = np.unique((a + B) * span + (b + B), return_inverse=True)
    pieces = np.stack([keys // span - B, keys % span - B], axis=1)
    order = np.argsort(e, kind="stable")
    e, piece_id = e[order], piece_id.ravel()[order]
    first = np.flatnonzero(np.r_[True, e[1:] != e[:-1]])
    n_per = np.diff(np.r_[first, len(e)])
    # an interval's class: its multiset of pieces.  Single-piece intervals (most) are grouped by
    # piece in one pass; the few with several pieces (a bump boundary inside) by their sorted tuple.
    single = n_per == 1
    s_mult = np.bincount(piece_id[first[single]], minlength=len(pieces))
    s_piece = np.flatnonzero(s_mult)
    s_mult = s_mult[s_piece]
    multi = {}
    for i in np.flatnonzero(~single):
        sig = tuple(sorted(int(p) for p in piece_id[first[i]:first[i] + n_per[i]]))
        multi[sig] = multi.get(sig, 0) + 1
    ptr, piece, pmult, mult = [np.arange(len(s_piece) + 1)], [s_piece], [np.ones(len(s_piece), np.int64)], [s_mult]
    for sig, count in multi.items():
        ids, counts = np.unique(np.array(sig), return_counts=True)
        ptr.append(ptr[-1][-1] + np.cumsum([len(ids)]))
        piece.append(ids)
        pmult.append(counts)
        mult.append([count])
    ptr, piece = np.concatenate(ptr), np.concatenate(piece).astype(np.int64)
    pmult, mult = np.concatenate(pmult).astype(np.int64), np.concatenate(mult).astype(float) / n
    n_classes = len(mult)
    pa, pb = pieces[:, 0], pieces[:, 1]
    pmin = np.where(pa * pb < 0, 0, np.minimum(np.abs(pa), np.abs(pb)))
    pmax = np.maximum(np.abs(pa), np.abs(pb))
    owner = np.repeat(np.arange(n_classes), np.diff(ptr))
    c_lo = np.full(n_classes, np.iinfo(np.int64).max)
    c_hi = np.zeros(n_classes, dtype=np.int64)
    np.minimum.at(c_lo, owner, pmin[piece])
    np.maximum.at(c_hi, owner, pmax[piece])
    return pieces, {"ptr": ptr, "piece": piece, "pmult": pmult, "mult": mult, "lo": c_lo, "hi": c_hi}


def _stab(M, lo, hi, strict_lo):
    """Pairs (leader, class) with lo < M < hi (lo ≤ M if not ``strict_lo``) — interval stabbing."""
    order = np.argsort(M, kind="stable")
    Ms = M[order]
    first = np.searchsorted(Ms, lo, side="right" if strict_lo else "left")
    last = np.searchsorted(Ms, hi, side="left")
    n = np.maximum(last - first, 0)
    cls = np.repeat(np.arange(len(lo)), n)
    leader = order[np.repeat(first, n) + _ragged_arange(n)]
    return leader, cls


def product_types(d, G, G_est, axes, beta, shifts=1) -> TypeTable:
    """Types of the product bump set ``axes`` under the linear-edge profile (module docstring).

    The weights are ∫_box φ in the bump's coordinates (scale by L h^β h^d for W).  With ``shifts``
    = n > 1 the estimator's partition is shifted on every axis independently and uniformly by one
    of n steps of 1/(n G_est) (:func:`axis_classes`); a type's count is a product of its axes'
    class counts, so the counts over the n^d shifts average axis by axis: the counts are then the
    expected numbers of cubes of each type, and the measure the shift-averaged one.
    """
    # axes with the same bump coordinates (often every axis: the whole bump set) have the same classes
    by_coordinates = {}
    for S in axes:
        key = np.asarray(S, dtype=np.int64).tobytes()
        if key not in by_coordinates:
            by_coordinates[key] = axis_classes(G, G_est, S, shifts)
    per_axis = [by_coordinates[np.asarray(S, dtype=np.int64).tobytes()] for S in axes]
    pieces = [p for p, _ in per_axis]
    classes = [c for _, c in per_axis]
    rows_cls, rows_count = [], []
    for lead in range(d):
        L = classes[lead]
        M = L["lo"]
        # table: leader class, then per axis the class (−1: inactive); count so far
        table = {"lead": np.arange(len(M)), "count": L["mult"].astype(float)}
        cols = {lead: np.arange(len(M))}
        for j in range(d):
            if j == lead:
                continue
            C = classes[j]
            order = np.argsort(C["hi"], kind="stable")
            cum = np.r_[0, np.cumsum(C["mult"][order])]
            inactive = cum[np.searchsorted(C["hi"][order], M, side="right")].astype(float)
            pl, pc = _stab(M, C["lo"], C["hi"], strict_lo=j > lead)
            # join: each row either takes an active class (pairs of its leader) or stays inactive
            sort = np.argsort(pl, kind="stable")
            pl, pc = pl[sort], pc[sort]
            starts = np.searchsorted(pl, np.arange(len(M)))
            n_act = np.searchsorted(pl, np.arange(len(M)), side="right") - starts
            lead_of_row = table["lead"]
            reps = n_act[lead_of_row]
            rows = np.repeat(np.arange(len(lead_of_row)), reps)
            act_cls = pc[np.repeat(starts[lead_of_row], reps) + _ragged_arange(reps)]
            keep_in = inactive[lead_of_row] > 0
            new_rows = np.r_[np.flatnonzero(keep_in), rows]
            new_cls = np.r_[np.full(int(keep_in.sum()), -1), act_cls]
            factor = np.r_[inactive[lead_of_row][keep_in], C["mult"][act_cls].astype(float)]
            table = {"lead": lead_of_row[new_rows], "count": table["count"][new_rows] * factor}
            cols = {a: c[new_rows] for a, c in cols.items()}
            cols[j] = new_cls
        rows_cls.append(np.stack([cols[a] for a in range(d)], axis=1))
        rows_count.append(table["count"])
    type_cls = np.concatenate(rows_cls)
    counts = np.concatenate(rows_count)
    # φ is symmetric in the axes: axes with the same bump coordinates have the same classes, and a
    # type's weights do not depend on the order of its classes among them (one type, counts added)
    groups = _same_axes(axes)
    type_cls, inv = _unique_rows(type_cls, groups, max(len(c["mult"]) for c in classes))
    counts = np.bincount(inv, weights=counts, minlength=len(type_cls))
    return _expand_boxes(d, G, G_est, pieces, classes, type_cls, counts, beta, groups, int(shifts))


def _unique_rows(rows, groups, top):
    """Distinct rows of small integers ≥ −1, each sorted within ``groups`` first, and the inverse."""
    rows = rows.copy()
    for group in groups:
        rows[:, group] = np.sort(rows[:, group], axis=1)
    code = np.zeros(len(rows), dtype=np.int64)
    for j in range(rows.shape[1]):
        code = code * (top + 2) + rows[:, j] + 1
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return rows[first], inv.ravel()


def _same_axes(axes):
    """Groups (of two or more) of axes with identical bump coordinates."""
    groups = {}
    for i, S in enumerate(axes):
        groups.setdefault(S.tobytes(), []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def _expand_boxes(d, G, G_est, pieces, classes, type_cls, counts, beta, groups=(), shifts=1) -> TypeTable:
    """Each type's bumps: products of its active classes' pieces, their box integrals."""
    n = len(counts)
    box_type, box_mult = np.arange(n), np.ones(n)
    box_piece = np.full((n, d), -1, dtype=np.int64)
    for j in range(d):
        C = classes[j]
        cls = type_cls[box_type, j]
        active = cls >= 0
        reps = np.where(active, np.diff(C["ptr"])[np.maximum(cls, 0)], 1)
        src = np.repeat(np.arange(len(box_type)), reps)
        offs = _ragged_arange(reps)
        box_type, box_mult, box_piece = box_type[src], box_mult[src], box_piece[src]
        act = active[src]
        idx = C["ptr"][np.maximum(cls[src], 0)] + offs
        box_piece[act, j] = C["piece"][idx[act]]
        box_mult = box_mult * np.where(act, C["pmult"][idx], 1)
    # a box's integral does not depend on the order of its pieces among axes with the same bumps
    uniq, inv = _unique_rows(box_piece, groups, max(len(p) for p in pieces))
    W_uniq = np.empty(len(uniq))
    width = G / G_est  # an inactive interval lies inside one bump
    code = (uniq >= 0) @ (1 << np.arange(d))
    for pat in np.unique(code):
        rows = np.flatnonzero(code == pat)
        ax = np.flatnonzero((pat >> np.arange(d)) & 1)
        a = np.stack([pieces[j][uniq[rows, j], 0] for j in ax], axis=1) / (2.0 * shifts * G_est)
        b = np.stack([pieces[j][uniq[rows, j], 1] for j in ax], axis=1) / (2.0 * shifts * G_est)
        W_uniq[rows] = _box_integral(a, b, beta) * width ** (d - len(ax))
    W = W_uniq[inv]
    ptr = np.r_[0, np.cumsum(np.bincount(box_type, minlength=n))]  # box_type is sorted: rows expand in place
    return TypeTable(counts, ptr, W, box_mult)


def _box_integral(a, b, beta):
    """∫ over the boxes Π [a_i, b_i] of (½ − ‖u‖∞)^β; one axis in closed form,
    :func:`edge_power_integral`.

    For β = 1 and several axes: ∫_box φ = ∫_0^½ Π_i A_i(r) dr, A_i(r) = |[a_i, b_i] ∩ [−r, r]|
    (:func:`~.geometry.linf_box_integral`), a polynomial of degree d between the sorted |a_i|, |b_i|:
    Gauss–Legendre with ⌈(d+1)/2⌉ nodes per piece is exact there (and cheaper than the general form).
    """
    if a.shape[1] > 1:
        return linf_box_integral(a, b, beta) if beta != 1.0 else _linear_box_integral(a, b)

    return edge_power_integral(a[:, 0], b[:, 0], beta)


def _power_gap(near, width, power):
    """near^p − (near − width)^p for near ≥ width ≥ 0 (p = ``power``), as −near^p expm1(p log1p(−width/near)).

    The difference of two nearly equal powers (a short piece far from the bump's edge) keeps its
    relative precision: ``width`` is the piece's length itself, not a difference of rounded ends.
    """
    near, width = np.asarray(near, dtype=float), np.asarray(width, dtype=float)
    safe = np.where(near > 0, near, 1.0)
    ratio = np.minimum(width / safe, 1.0)
    with np.errstate(divide="ignore"):  # the piece reaches the edge: log1p(−1) = −inf, expm1(−inf) = −1
        gap = -safe ** power * np.expm1(power * np.log1p(-ratio))
    return np.where(near > 0, gap, 0.0)


def edge_power_integral(a, b, beta):
    """∫_a^b (½ − |u|)^β du for −½ ≤ a ≤ b ≤ ½: each side of 0 a :func:`_power_gap` over β + 1.

    (The antiderivative sign(u)(½^(β+1) − (½ − |u|)^(β+1))/(β+1) at both ends would subtract
    nearly equal numbers for a piece of length ≪ 1 near u = 0: ε/length of its value.)
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    right_lo, right_hi = np.maximum(a, 0.0), np.maximum(b, 0.0)   # the part in [0, ½]
    left_lo, left_hi = np.maximum(-b, 0.0), np.maximum(-a, 0.0)   # the part in [−½, 0], mirrored
    p = beta + 1
    return (_power_gap(0.5 - right_lo, right_hi - right_lo, p) + _power_gap(0.5 - left_lo, left_hi - left_lo, p)) / p


def _linear_box_integral(a, b, chunk=1 << 16):
    """∫_0^½ Π_i |[a_i, b_i] ∩ [−r, r]| dr for boxes (P, d): exact Gauss–Legendre between breakpoints."""
    P, d = a.shape
    x, w = np.polynomial.legendre.leggauss((d + 2) // 2)
    out = np.empty(P)
    for lo in range(0, P, chunk):
        aa, bb = a[lo:lo + chunk], b[lo:lo + chunk]
        br = np.sort(np.concatenate([np.abs(aa), np.abs(bb), np.zeros((len(aa), 1)), np.full((len(aa), 1), 0.5)],
                                    axis=1), axis=1).clip(0.0, 0.5)
        mid, half = 0.5 * (br[:, 1:] + br[:, :-1]), 0.5 * (br[:, 1:] - br[:, :-1])   # (p, S)
        r = (mid[:, :, None] + half[:, :, None] * x[None, None, :]).reshape(len(aa), -1)  # (p, S·n)
        prod = np.ones_like(r)
        for i in range(d):
            prod *= np.clip(np.minimum(bb[:, i:i + 1], r) - np.maximum(aa[:, i:i + 1], -r), 0.0, None)
        out[lo:lo + chunk] = (prod * (half[:, :, None] * w[None, None, :]).reshape(len(aa), -1)).sum(axis=1)
    return out


def overlap_types(cells, W) -> TypeTable:
    """One type per relevant cube, from the sparse overlaps (rows: cubes, columns: bumps)."""
    W = W.tocsr()
    return TypeTable(np.ones(W.shape[0]), W.indptr.astype(np.int64), np.asarray(W.data, float),
                     np.ones(len(W.data)))
