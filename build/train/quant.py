"""Quantizers and their exact dequantizers for the formats Laya loads, plus a GGUF v3 writer.

Written from the format specifications (ggml block layouts, MLX affine quantization); the
dequantizers define the weights a reference model runs on, so the engine must reproduce them
bit for bit in float32.
"""
import struct

import numpy as np

F16 = np.float16


def f16(x):
    return np.asarray(x, dtype=np.float32).astype(F16)


# ---------------------------------------------------------------- MLX affine

def mlx_quantize(w, bits, group):
    """w: [rows, cols] float -> (packed uint32 [rows, cols*bits/32], scales f16, biases f16)."""
    w = np.asarray(w, dtype=np.float32)
    rows, cols = w.shape
    assert cols % group == 0 and (cols * bits) % 32 == 0
    g = w.reshape(rows, cols // group, group)
    wmin, wmax = g.min(-1), g.max(-1)
    nb = (1 << bits) - 1
    scale = np.maximum((wmax - wmin) / nb, 1e-7)
    # Like MLX, anchor the group at the edge with the larger magnitude; the scale is negative when
    # that edge is the maximum, so negative scales occur and must be handled by the engine.
    neg = np.abs(wmin) > np.abs(wmax)
    scale = np.where(neg, scale, -scale)
    edge = np.where(neg, wmin, wmax)
    s16, b16 = f16(scale), f16(edge)
    s32, b32 = s16.astype(np.float32), b16.astype(np.float32)
    s32 = np.where(s32 == 0, np.float32(1e-7), s32)
    q = np.clip(np.rint((g - b32[..., None]) / s32[..., None]), 0, nb).astype(np.uint32)
    q = q.reshape(rows, cols)
    per = 32 // bits
    q = q.reshape(rows, cols // per, per)
    packed = np.zeros((rows, cols // per), dtype=np.uint32)
    for i in range(per):
        packed |= q[:, :, i] << np.uint32(bits * i)
    return packed, s16, b16


def mlx_dequantize(packed, scales, biases, bits, group):
    rows = packed.shape[0]
    per = 32 // bits
    mask = np.uint32((1 << bits) - 1)
    q = np.stack([(packed >> np.uint32(bits * i)) & mask for i in range(per)], axis=-1)
    q = q.reshape(rows, -1).astype(np.float64)
    cols = q.shape[1]
    s = np.repeat(scales.astype(np.float64), group, axis=1)
    b = np.repeat(biases.astype(np.float64), group, axis=1)
    assert s.shape[1] == cols
    return s * q + b


# ---------------------------------------------------------------- GGML blocks

GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0, GGML_Q4_K, GGML_Q6_K = 0, 1, 2, 8, 12, 14


def q8_0(w):
    rows, cols = w.shape
    b = w.reshape(rows, cols // 32, 32).astype(np.float32)
    amax = np.abs(b).max(-1)
    d = amax / 127
    idd = np.where(d > 0, 1 / np.where(d > 0, d, 1), 0)
    q = np.rint(b * idd[..., None]).astype(np.int8)
    d16 = f16(d)
    out = np.zeros((rows, cols // 32, 34), dtype=np.uint8)
    out[..., 0:2] = d16.view(np.uint8).reshape(rows, cols // 32, 2)
    out[..., 2:] = q.view(np.uint8)
    deq = d16.astype(np.float64)[..., None] * q.astype(np.float64)
    return out.reshape(rows, -1), deq.reshape(rows, cols)


def q4_0(w):
    rows, cols = w.shape
    b = w.reshape(rows, cols // 32, 32).astype(np.float32)
    idx = np.abs(b).argmax(-1)
    mx = np.take_along_axis(b, idx[..., None], -1)[..., 0]
    d = mx / -8
    idd = np.where(d != 0, 1 / np.where(d != 0, d, 1), 0)
    q = np.minimum(15, np.trunc(b * idd[..., None] + 8.5)).astype(np.int32)
    q = np.clip(q, 0, 15).astype(np.uint8)
    d16 = f16(d)
    out = np.zeros((rows, cols // 32, 18), dtype=np.uint8)
    out[..., 0:2] = d16.view(np.uint8).reshape(rows, cols // 32, 2)
    out[..., 2:] = q[..., :16] | (q[..., 16:] << 4)
    deq = d16.astype(np.float64)[..., None] * (q.astype(np.float64) - 8)
    return out.reshape(rows, -1), deq.reshape(rows, cols)


def q4_k(w):
    """Q4_K super-blocks of 256: 8 sub-blocks of 32 with 6-bit scales and mins."""
    rows, cols = w.shape
    nb = cols // 256
    x = w.reshape(rows, nb, 8, 32).astype(np.float32)
    mn = np.minimum(x.min(-1), 0)
    mx = x.max(-1)
    sc = (mx - mn) / 15
    mval = -mn
    d = sc.max(-1) / 63
    dmin = mval.max(-1) / 63
    d16, dmin16 = f16(d), f16(dmin)
    d32, dm32 = d16.astype(np.float32), dmin16.astype(np.float32)
    ls = np.clip(np.rint(sc / np.where(d32 > 0, d32, 1)[..., None]), 0, 63).astype(np.uint8)
    lm = np.clip(np.rint(mval / np.where(dm32 > 0, dm32, 1)[..., None]), 0, 63).astype(np.uint8)
    eff_s = d32[..., None] * ls
    eff_m = dm32[..., None] * lm
    q = np.clip(np.rint((x + eff_m[..., None]) / np.where(eff_s > 0, eff_s, 1)[..., None]), 0, 15)
    q = np.where(eff_s[..., None] > 0, q, 0).astype(np.uint8)
    scales = np.zeros((rows, nb, 12), dtype=np.uint8)
    for j in range(4):
        scales[..., j] = ls[..., j] | ((ls[..., j + 4] >> 4) << 6)
        scales[..., j + 4] = lm[..., j] | ((lm[..., j + 4] >> 4) << 6)
        scales[..., j + 8] = (ls[..., j + 4] & 0xF) | ((lm[..., j + 4] & 0xF) << 4)
    qs = np.zeros((rows, nb, 128), dtype=np.uint8)
    for j in range(4):
        qs[..., 32 * j:32 * j + 32] = q[:, :, 2 * j, :] | (q[:, :, 2 * j + 1, :] << 4)
    out = np.zeros((rows, nb, 144), dtype=np.uint8)
    out[..., 0:2] = d16.view(np.uint8).reshape(rows, nb, 2)
    out[..., 2:4] = dmin16.view(np.uint8).reshape(rows, nb, 2)
    out[..., 4:16] = scales
    out[..., 16:] = qs
    return out.reshape(rows, -1), q4_k_dequant(out.reshape(rows, -1), cols)


def _scale_min_k4(j, s):
    if j < 4:
        return s[..., j] & 63, s[..., j + 4] & 63
    return ((s[..., j + 4] & 0xF) | ((s[..., j - 4] >> 6) << 4),
            (s[..., j + 4] >> 4) | ((s[..., j] >> 6) << 4))


def q4_k_dequant(raw, cols):
    """Straight from the block layout, independent of the quantizer above."""
    rows = raw.shape[0]
    nb = cols // 256
    b = raw.reshape(rows, nb, 144)
    d = b[..., 0:2].copy().view(F16)[..., 0].astype(np.float64)
    dmin = b[..., 2:4].copy().view(F16)[..., 0].astype(np.float64)
    s = b[..., 4:16]
    qs = b[..., 16:]
    y = np.zeros((rows, nb, 256))
    for j in range(4):
        sc1, m1 = _scale_min_k4(2 * j, s)
        sc2, m2 = _scale_min_k4(2 * j + 1, s)
        q = qs[..., 32 * j:32 * j + 32]
        y[..., 64 * j:64 * j + 32] = (d * sc1)[..., None] * (q & 0xF) - (dmin * m1)[..., None]
        y[..., 64 * j + 32:64 * j + 64] = (d * sc2)[..., None] * (q >> 4) - (dmin * m2)[..., None]
    return y.reshape(rows, cols)


def q6_k(w):
    """Q6_K super-blocks of 256: 16 sub-blocks of 16 with int8 scales."""
    rows, cols = w.shape
    nb = cols // 256
    x = w.reshape(rows, nb, 16, 16).astype(np.float32)
    amax = np.abs(x).max(-1)
    sc = amax / 31
    d = sc.max(-1) / 127
    d16 = f16(d)
    d32 = d16.astype(np.float32)
    ls = np.clip(np.rint(sc / np.where(d32 > 0, d32, 1)[..., None]), -128, 127).astype(np.int8)
    eff = d32[..., None] * ls
    q = np.clip(np.rint(x / np.where(eff != 0, eff, 1)[..., None]), -32, 31)
    q = (np.where(eff[..., None] != 0, q, 0) + 32).astype(np.uint8).reshape(rows, nb, 256)
    ql = np.zeros((rows, nb, 128), dtype=np.uint8)
    qh = np.zeros((rows, nb, 64), dtype=np.uint8)
    for h in range(2):
        e = q[..., 128 * h:128 * h + 128]
        q1, q2, q3, q4 = e[..., 0:32], e[..., 32:64], e[..., 64:96], e[..., 96:128]
        ql[..., 64 * h:64 * h + 32] = (q1 & 0xF) | ((q3 & 0xF) << 4)
        ql[..., 64 * h + 32:64 * h + 64] = (q2 & 0xF) | ((q4 & 0xF) << 4)
        qh[..., 32 * h:32 * h + 32] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)
    out = np.zeros((rows, nb, 210), dtype=np.uint8)
    out[..., 0:128] = ql
    out[..., 128:192] = qh
    out[..., 192:208] = ls.view(np.uint8)
    out[..., 208:210] = d16.view(np.uint8).reshape(rows, nb, 2)
    return out.reshape(rows, -1), q6_k_dequant(out.reshape(rows, -1), cols)


def q6_k_dequant(raw, cols):
    rows = raw.shape[0]
    nb = cols // 256
    b = raw.reshape(rows, nb, 210)
    ql, qh = b[..., 0:128].astype(np.int32), b[..., 128:192].astype(np.int32)
    sc = b[..., 192:208].copy().view(np.int8).astype(np.float64)
    d = b[..., 208:210].copy().view(F16)[..., 0].astype(np.float64)
    y = np.zeros((rows, nb, 256))
    for h in range(2):
        L, H = ql[..., 64 * h:64 * h + 64], qh[..., 32 * h:32 * h + 32]
        for l in range(32):
            isc = 8 * h + l // 16
            q1 = ((L[..., l] & 0xF) | (((H[..., l] >> 0) & 3) << 4)) - 32
            q2 = ((L[..., l + 32] & 0xF) | (((H[..., l] >> 2) & 3) << 4)) - 32
            q3 = ((L[..., l] >> 4) | (((H[..., l] >> 4) & 3) << 4)) - 32
            q4 = ((L[..., l + 32] >> 4) | (((H[..., l] >> 6) & 3) << 4)) - 32
            base = 128 * h + l
            y[..., base] = d * sc[..., isc] * q1
            y[..., base + 32] = d * sc[..., isc + 2] * q2
            y[..., base + 64] = d * sc[..., isc + 4] * q3
            y[..., base + 96] = d * sc[..., isc + 6] * q4
    return y.reshape(rows, cols)


def ggml_encode(w, gtype):
    """Return (raw bytes [rows, rowbytes] uint8, dequantized float64 [rows, cols])."""
    w = np.asarray(w, dtype=np.float32)
    if w.ndim == 1:
        w = w[None, :]
    if gtype == GGML_F32:
        return w.view(np.uint8), w.astype(np.float64)
    if gtype == GGML_F16:
        h = f16(w)
        return h.view(np.uint8), h.astype(np.float64)
    return {GGML_Q8_0: q8_0, GGML_Q4_0: q4_0, GGML_Q4_K: q4_k, GGML_Q6_K: q6_k}[gtype](w)


# ---------------------------------------------------------------- GGUF writer

T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)


def _s(x):
    b = x.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _val(t, v):
    if t == T_STR:
        return _s(v)
    if t == T_BOOL:
        return struct.pack("<?", v)
    return struct.pack("<" + {T_U8: "B", T_I8: "b", T_U16: "H", T_I16: "h", T_U32: "I", T_I32: "i",
                              T_F32: "f", T_U64: "Q", T_I64: "q", T_F64: "d"}[t], v)


def write_gguf(path, kv, tensors, alignment=32):
    """kv: list of (key, type, value) with arrays as (key, T_ARR, (elem_type, list)).
    tensors: list of (name, shape_rowmajor, ggml_type, raw uint8 bytes)."""
    out = bytearray()
    out += b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, t, v in kv:
        out += _s(key) + struct.pack("<I", t)
        if t == T_ARR:
            et, items = v
            out += struct.pack("<IQ", et, len(items))
            for it in items:
                out += _val(et, it)
        else:
            out += _val(t, v)
    offset = 0
    offsets = []
    for name, shape, gt, raw in tensors:
        offsets.append(offset)
        offset += len(raw)
        offset = (offset + alignment - 1) // alignment * alignment
    for (name, shape, gt, raw), off in zip(tensors, offsets):
        ne = list(reversed(shape))  # ggml: innermost dimension first
        out += _s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", gt, off)
    out += b"\0" * ((-len(out)) % alignment)
    data_start = len(out)
    for (name, shape, gt, raw), off in zip(tensors, offsets):
        out += b"\0" * (data_start + off - len(out))
        out += bytes(raw)
    out += b"\0" * ((-len(out)) % alignment)
    with open(path, "wb") as f:
        f.write(out)


def permute_qk(w, n_head):
    """llama.cpp's converter permutation of q/k rows, for interleaved RoPE."""
    w = np.asarray(w)
    r = w.shape[0]
    return w.reshape(n_head, 2, r // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute_qk(w, n_head):
    w = np.asarray(w)
    r = w.shape[0]
    return w.reshape(n_head, r // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
