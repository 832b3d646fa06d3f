r"""Exact per-cube integrals and risks of the learning families (papers/003, SPEC §7).

For a cube estimator constant on the cubes C_1..C_B of the estimator's grid,
everything depends on the family only through five per-cube integrals
(:class:`CubeMoments`): p_k = ∫_{C_k} f, q_k = ∫_{C_k} fη (132),
∫_{C_k} fη₊, ∫_{C_k} fη₋ and ∫_{C_k} fη².  Then, exactly,

.. math::

   R - R^* = \sum_k [\hat q_k < 0]\int_{C_k}\eta_+ f + [\hat q_k \ge 0]\int_{C_k}\eta_- f
   \quad\text{((156) with the tie } \hat q_k = 0 \mapsto +1\text{)},

   \int(\hat\eta-\eta)^2 f = \sum_k \hat\eta_k^2 p_k - 2\hat\eta_k q_k + \int_{C_k}\eta^2 f
   \quad\text{((199), first term exact)}.

Every family's X has the uniform density f ≡ 1 on [0, 1]^d (f_L = 1 in
Assumption 2(c)); the integrals are closed forms (linear, sine) or exact
piecewise-polynomial integrals (:func:`box_radial_integral`, hard instances).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.polynomial import polynomial as P

from labeldp_sim.harness.errors import check

__all__ = ["CubeMoments", "cube_index", "box_radial_integral", "excess_risk", "regression_risk"]


def cube_index(x, B_axis: int) -> np.ndarray:
    """Index of the estimator cube holding each row of x ∈ [0, 1]^d: C-order over (B_1,)*d cubes of side 1/B_1."""
    x = np.asarray(x, dtype=float)
    x = x.reshape(len(x), -1)
    idx = np.clip(np.floor(x * B_axis), 0, B_axis - 1).astype(np.int64)
    return np.ravel_multi_index(tuple(idx.T), (B_axis,) * x.shape[1])


def axis_edges(B_axis):
    return np.arange(B_axis + 1) / B_axis


def box_radial_integral(lo, hi, a0, a1, b0, b1, r0, r1, kind, p, rho=math.inf) -> float:
    r"""∫_{(r0, r1]} g(r) dV(r), exactly, for a box and nested boxes S(r).

    V(r) = Π_i |[lo_i, hi_i] ∩ [a0_i + a1_i r, b0_i + b1_i r]| is the volume of
    the box inside the sublevel set S(r) = {T ≤ r} of a function T whose
    sublevel sets are boxes with affine sides, so ∫_{box ∩ {r0 < T ≤ r1}} g(T) dx
    is this Stieltjes integral.  V is piecewise polynomial of degree d (each
    factor is piecewise affine, with kinks where a side crosses lo_i or hi_i),
    and on each piece the integral against g is a closed form:

    * ``kind="bump"``: g(r) = (½ − r)^p, T = ||u||_∞ (Theorems 10/12's
      φ(u)^{p/β}; S(r) = [−r, r]^d, r ∈ (0, ½]);
    * ``kind="ramp"``: g(r) = min(r, ρ)^p, T = dist_∞(x, [0, A]^d)
      (S(r) = [0, A + r]^d).

    Parameters
    ----------
    lo, hi : array (d,)
        The box.
    a0, a1, b0, b1 : array (d,)
        Sides of S(r): [a0 + a1 r, b0 + b1 r] per axis.
    r0, r1 : float
        Range of T integrated over (the atom at r0 excluded).
    kind : {"bump", "ramp"}
    p : float
        Power, > 0.
    rho : float
        Cap of the ramp.
    """
    lo, hi, a0, a1, b0, b1 = (np.asarray(v, dtype=float) for v in (lo, hi, a0, a1, b0, b1))

    def lengths(r):
        return np.maximum(0.0, np.minimum(hi, b0 + b1 * r) - np.maximum(lo, a0 + a1 * r))

    cand = [r0, r1]
    for c0, c1 in ((a0, a1), (b0, b1)):
        nz = c1 != 0
        for edge in (lo, hi):
            cand.extend(((edge[nz] - c0[nz]) / c1[nz]).tolist())
    if kind == "ramp" and np.isfinite(rho):
        cand.append(rho)
    pts = np.unique(np.clip(np.asarray(cand, dtype=float), r0, r1))
    total = 0.0
    for ra, rb in zip(pts[:-1], pts[1:]):
        if rb <= ra:
            continue
        la, lb = lengths(ra), lengths(rb)
        if not np.any(lb - la):
            continue  # V constant on the piece
        slope = (lb - la) / (rb - ra)
        poly = np.array([1.0])
        for i in range(len(lo)):
            poly = P.polymul(poly, [la[i] - slope[i] * ra, slope[i]])
        if kind == "ramp" and ra >= rho:
            total += rho ** p * (P.polyval(rb, poly) - P.polyval(ra, poly))
            continue
        dv = P.polyder(poly)
        j = np.arange(len(dv)) + p + 1.0
        if kind == "bump":
            # s = ½ − r: ∫_{ra}^{rb} (½ − r)^p V'(r) dr = ∫_{½−rb}^{½−ra} s^p V'(½ − s) ds.
            c = np.polynomial.Polynomial(dv)(np.polynomial.Polynomial([0.5, -1.0])).coef
            c = np.pad(c, (0, len(j) - len(c)))
            sa, sb = max(0.5 - ra, 0.0), max(0.5 - rb, 0.0)
            total += float(np.sum(c * (sa ** j - sb ** j) / j))
        else:
            total += float(np.sum(dv * (rb ** j - ra ** j) / j))
    return total


_MANY_CHUNK = 1 << 15  # boxes integrated at once by box_radial_integral_many: bounds memory, not the result


def box_radial_integral_many(lo, hi, a0, a1, b0, b1, r0, r1, kind, p, rho=math.inf) -> np.ndarray:
    r""":func:`box_radial_integral` for many boxes at once (rows of ``lo``, ``hi``: shape (P, d)), integer p.

    On each piece between breakpoints every side length is affine in r, so V'(r) = Σ_i L_i' Π_{j≠i} L_j(r)
    is a polynomial of degree d − 1 and g(r)V'(r) one of degree p + d − 1 (g = (½ − r)^p, or min(r, ρ)^p
    split at ρ): Gauss–Legendre with ⌈(p + d)/2⌉ nodes integrates it exactly (up to rounding).
    ``a0, a1, b0, b1`` are per-axis arrays (d,) shared by every box.
    """
    check(float(p) == int(p) and p >= 0, "p", p, "an integer >= 0 (box_radial_integral handles the others)")
    lo, hi = np.atleast_2d(np.asarray(lo, dtype=float)), np.atleast_2d(np.asarray(hi, dtype=float))
    a0, a1, b0, b1 = (np.asarray(v, dtype=float) for v in (a0, a1, b0, b1))
    P_, d = lo.shape
    x, w = np.polynomial.legendre.leggauss(max(1, math.ceil((int(p) + d) / 2)))
    out = np.zeros(P_)
    for start in range(0, P_, _MANY_CHUNK):
        L, Hh = lo[start:start + _MANY_CHUNK], hi[start:start + _MANY_CHUNK]
        cand = [np.full((len(L), 1), r0), np.full((len(L), 1), r1)]
        for c0, c1 in ((a0, a1), (b0, b1)):
            nz = c1 != 0
            for edge in (L, Hh):
                cand.append((edge[:, nz] - c0[nz]) / c1[nz])
        if kind == "ramp" and np.isfinite(rho):
            cand.append(np.full((len(L), 1), rho))
        pts = np.sort(np.clip(np.concatenate(cand, axis=1), r0, r1), axis=1)
        ra, rb = pts[:, :-1], pts[:, 1:]  # (k, M) pieces; empty ones add 0
        half = (rb - ra) / 2
        r = (ra + rb)[..., None] / 2 + half[..., None] * x  # (k, M, n) nodes

        def lengths(rr):
            return np.maximum(0.0, np.minimum(Hh[:, None, None, :], b0 + b1 * rr[..., None])
                              - np.maximum(L[:, None, None, :], a0 + a1 * rr[..., None]))

        lens = lengths(r)  # (k, M, n, d)
        slope = (lengths(rb[..., None])[..., 0, :] - lengths(ra[..., None])[..., 0, :]) / np.where(
            rb > ra, rb - ra, 1.0)[..., None]  # (k, M, d): affine on the piece
        dv = np.zeros(r.shape)
        for i in range(d):
            others = np.prod(np.delete(lens, i, axis=-1), axis=-1) if d > 1 else np.ones(r.shape)
            dv += slope[..., i][..., None] * others
        if kind == "bump":
            g = np.maximum(0.5 - r, 0.0) ** p
        else:
            g = np.minimum(r, rho) ** p
        out[start:start + len(L)] = np.sum(half * np.sum(w * g * dv, axis=-1), axis=-1)
    return out


def _bump_antiderivative(u, p):
    r"""∫_{−½}^{u} (½ − |t|)^p dt for u ∈ [−½, ½] (d = 1: the bump's closed form)."""
    u = np.asarray(u, dtype=float)
    left = (0.5 + np.minimum(u, 0.0)) ** (p + 1) / (p + 1)
    right = (0.5 ** (p + 1) - (0.5 - np.maximum(u, 0.0)) ** (p + 1)) / (p + 1)
    return left + right


def _ramp_antiderivative(t, p, rho):
    r"""∫_0^t min(s, ρ)^p ds for t ≥ 0 (d = 1: the ramp's closed form)."""
    t = np.asarray(t, dtype=float)
    below = np.minimum(t, rho) ** (p + 1) / (p + 1)
    return below + rho ** p * np.maximum(t - rho, 0.0)


@lru_cache(maxsize=64)
def bump_overlaps(Be, Bi, d, powers):
    r"""Overlaps of the estimator grid (Be per axis) with the instance's bump grid (Bi per axis).

    Returns (est, inst, w) with w[:, a] = ∫_{C_est ∩ C_inst} φ((x − c)/l)^{powers[a]/β·β} dx in x
    units, i.e. l^d ∫ (½ − ||u||_∞)^{powers[a]} du over the piece (u local coordinates of the bump).
    """
    pts = np.union1d(axis_edges(Be), axis_edges(Bi))
    lo, hi = pts[:-1], pts[1:]
    keep = hi - lo > 1e-15
    lo, hi = lo[keep], hi[keep]
    mid = (lo + hi) / 2
    je = np.clip(np.floor(mid * Be), 0, Be - 1).astype(np.int64)
    ji = np.clip(np.floor(mid * Bi), 0, Bi - 1).astype(np.int64)
    ulo, uhi = np.clip(lo * Bi - ji - 0.5, -0.5, 0.5), np.clip(hi * Bi - ji - 0.5, -0.5, 0.5)
    vol = (1.0 / Bi) ** d
    if d == 1:  # the pieces are intervals: the closed form of the bump's antiderivative, all at once
        w = np.stack([vol * (_bump_antiderivative(uhi, p) - _bump_antiderivative(ulo, p)) for p in powers], axis=1)
        out = je, ji, w
        for a in out:
            a.setflags(write=False)
        return out
    if all(float(p) == int(p) for p in powers):  # every piece at once (the Hölder β = 1 families)
        grids = np.meshgrid(*([np.arange(len(lo))] * d), indexing="ij")
        c = np.stack([g.ravel() for g in grids], axis=1)  # (pieces, d) segment indices, C-order
        est = np.ravel_multi_index(tuple(je[c].T), (Be,) * d)
        inst = np.ravel_multi_index(tuple(ji[c].T), (Bi,) * d)
        zeros, ones = np.zeros(d), np.ones(d)
        # the pieces repeat (the two grids' pattern has period 1/gcd(Be, Bi)): integrate each distinct one once
        seg = np.round(np.stack([ulo, uhi], axis=1), 12)
        _, seg_id = np.unique(seg, axis=0, return_inverse=True)
        _, first, back = np.unique(seg_id.ravel()[c], axis=0, return_index=True, return_inverse=True)
        rep = c[first]
        w = np.stack([vol * box_radial_integral_many(ulo[rep], uhi[rep], zeros, -ones, zeros, ones, 0.0, 0.5,
                                                     "bump", p)[back.ravel()] for p in powers], axis=1)
        out = est, inst, w
        for a in out:
            a.setflags(write=False)
        return out
    segs = range(len(lo))
    est, inst, w = [], [], []
    zeros, ones = np.zeros(d), np.ones(d)
    for combo in itertools.product(segs, repeat=d):
        c = list(combo)
        est.append(np.ravel_multi_index(tuple(je[c]), (Be,) * d))
        inst.append(np.ravel_multi_index(tuple(ji[c]), (Bi,) * d))
        w.append([vol * box_radial_integral(ulo[c], uhi[c], zeros, -ones, zeros, ones, 0.0, 0.5, "bump", p)
                  for p in powers])
    out = np.asarray(est), np.asarray(inst), np.asarray(w)
    for a in out:
        a.setflags(write=False)
    return out


@lru_cache(maxsize=64)
def ramp_moments(Be, d, A, rho, powers):
    r"""Per estimator cube: ∫_{C ∖ [0,A]^d} min(dist_∞(x, [0, A]^d), ρ)^p dx for p in ``powers``."""
    e = axis_edges(Be)
    if d == 1:
        t0, t1 = np.maximum(e[:-1] - A, 0.0), np.maximum(e[1:] - A, 0.0)
        out = np.stack([_ramp_antiderivative(t1, p, rho) - _ramp_antiderivative(t0, p, rho) for p in powers], axis=1)
        out.setflags(write=False)
        return out
    zeros, ones = np.zeros(d), np.ones(d)
    if all(float(p) == int(p) for p in powers):  # every cube at once
        grids = np.meshgrid(*([np.arange(Be)] * d), indexing="ij")
        idx = np.stack([g.ravel() for g in grids], axis=1)
        lo, hi = e[idx], e[idx + 1]
        R = np.max(hi - A, axis=1)
        out = np.zeros((Be ** d, len(powers)))
        live = R > 0
        for j, p in enumerate(powers if live.any() else ()):  # none live: the block covers [0, 1]^d
            # per cube the integral runs over (0, R]; beyond R the sublevel set holds the whole cube (V' = 0)
            out[live, j] = box_radial_integral_many(lo[live], hi[live], zeros, zeros, np.full(d, A), ones, 0.0,
                                                    float(R[live].max()), "ramp", p, rho)
        out.setflags(write=False)
        return out
    out = np.zeros((Be ** d, len(powers)))
    for flat, idx in enumerate(itertools.product(range(Be), repeat=d)):
        idx = np.asarray(idx)
        lo, hi = e[idx], e[idx + 1]
        R = float(np.max(hi - A))
        if R <= 0:
            continue
        out[flat] = [box_radial_integral(lo, hi, zeros, zeros, np.full(d, A), ones, 0.0, R, "ramp", p, rho)
                     for p in powers]
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class CubeMoments:
    r"""Exact per-cube integrals of a family on the estimator's grid (C-order, B = B_1^d cubes).

    Attributes
    ----------
    p : ∫_{C_k} f  (p_k of F.1)
    q : ∫_{C_k} fη  (q_k, (132))
    pos, neg : ∫_{C_k} fη₊ and ∫_{C_k} fη₋ (η = η₊ − η₋)
    sq : ∫_{C_k} fη²
    """

    p: np.ndarray
    q: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    sq: np.ndarray

    @property
    def B(self) -> int:
        return len(self.p)


def excess_risk(q_hat, mom: CubeMoments) -> float:
    r"""Exact R − R* (156) of the cube classifier ĝ = sign(q̂_k) on C_k (139), ties → +1.

    Predicting −1 on C_k costs ∫_{C_k} η₊ f over the Bayes rule, predicting +1
    costs ∫_{C_k} η₋ f: R − R* = Σ_k [q̂_k < 0]∫η₊f + [q̂_k ≥ 0]∫η₋f.
    """
    q_hat = np.asarray(q_hat, dtype=float)[:mom.B]
    return float(np.sum(np.where(q_hat < 0, mom.pos, mom.neg)))


def regression_risk(eta_hat, mom: CubeMoments) -> float:
    r"""Exact ∫(η̂ − η)² f for η̂ ≡ η̂_k on C_k: Σ_k η̂_k² p_k − 2η̂_k q_k + ∫_{C_k} η² f (≥ 0)."""
    e = np.asarray(eta_hat, dtype=float)[:mom.B]
    return max(0.0, float(np.sum(e * e * mom.p - 2 * e * mom.q + mom.sq)))
