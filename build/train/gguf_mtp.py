"""Append a Qwen3.5 multi-token-prediction block to a GGUF file, as llama.cpp's converter writes
one (conversion/qwen.py, _Qwen35MtpMixin): block_count counts it, nextn_predict_layers says how
many of the last blocks are MTP, and the block holds a full-attention layer plus nextn.eh_proj,
nextn.enorm, nextn.hnorm and nextn.shared_head_norm. A model's forward pass does not use the
block, so the references of the file without it hold for the file with it.

Usage: python3 gguf_mtp.py IN.gguf OUT.gguf REFERENCE.json FORMAT
(adds FORMAT cases to REFERENCE.json: the IN file's cases under OUT's path). Needs numpy.
"""
import json
import os
import struct
import sys

import numpy as np

import quant as Q

BLOCK = {Q.GGML_F32: (1, 4), Q.GGML_F16: (1, 2), Q.GGML_Q8_0: (32, 34), Q.GGML_Q4_K: (256, 144),
         Q.GGML_Q6_K: (256, 210)}
SCALAR = {Q.T_U8: "B", Q.T_I8: "b", Q.T_U16: "H", Q.T_I16: "h", Q.T_U32: "I", Q.T_I32: "i", Q.T_F32: "f",
          Q.T_BOOL: "?", Q.T_U64: "Q", Q.T_I64: "q", Q.T_F64: "d"}


def read_gguf(path):
    """(kv as [(key, type, value)], tensors as [(name, rowmajor shape, type, raw bytes)], alignment)"""
    b = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, b, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = b[pos:pos + n].decode("utf-8")
        pos += n
        return s

    def value(t):
        if t == Q.T_STR:
            return string()
        if t == Q.T_ARR:
            et, n = take("I"), take("Q")
            return (et, [value(et) for _ in range(n)])
        return take(SCALAR[t])

    if b[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    pos = 4
    version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    if version != 3:
        raise SystemExit(f"{path}: GGUF version {version}, want 3")
    kv = []
    for _ in range(n_kv):
        k = string()
        t = take("I")
        kv.append((k, t, value(t)))
    align = next((v for k, t, v in kv if k == "general.alignment"), 32)
    infos = []
    for _ in range(n_tensors):
        name = string()
        ne = [take("Q") for _ in range(take("I"))]
        infos.append((name, ne, take("I"), take("Q")))
    start = (pos + align - 1) // align * align
    tensors = []
    for name, ne, gt, off in infos:
        per, size = BLOCK[gt]
        n = int(np.prod(ne))
        raw = b[start + off:start + off + n // per * size]
        tensors.append((name, list(reversed(ne)), gt, np.frombuffer(raw, dtype=np.uint8)))
    return kv, tensors, align


def main(src, dst, ref_path, fmt):
    kv, tensors, align = read_gguf(src)
    arch = next(v for k, t, v in kv if k == "general.architecture")
    if arch != "qwen35":
        raise SystemExit(f"{src}: architecture {arch}, want qwen35")
    n = next(v for k, t, v in kv if k == f"{arch}.block_count")
    full = next(v for k, t, v in kv if k == f"{arch}.full_attention_interval") - 1
    hidden = next(v for k, t, v in kv if k == f"{arch}.embedding_length")
    rng = np.random.default_rng(5)
    extra = []

    def add(name, shape, gt, scale, center=0.0):
        w = (center + scale * rng.standard_normal(shape)).astype(np.float32)
        raw, _ = Q.ggml_encode(w, gt)
        extra.append((name, list(shape), gt, raw.reshape(-1)))

    # The MTP layer is a full-attention layer: the same tensors as the model's first one.
    for name, shape, gt, _ in tensors:
        if name.startswith(f"blk.{full}."):
            norm = name.endswith("norm.weight")
            add(f"blk.{n}." + name[len(f"blk.{full}."):], shape, gt, 0.05, 1.0 if norm else 0.0)
    add(f"blk.{n}.nextn.eh_proj.weight", (hidden, 2 * hidden), Q.GGML_Q8_0, 0.05)
    for norm in ("enorm", "hnorm", "shared_head_norm"):
        add(f"blk.{n}.nextn.{norm}.weight", (hidden,), Q.GGML_F32, 0.05, 1.0)
    out_kv = []
    for k, t, v in kv:
        out_kv.append((k, t, n + 1 if k == f"{arch}.block_count" else v))
        if k == f"{arch}.block_count":
            out_kv.append((f"{arch}.nextn_predict_layers", Q.T_U32, 1))
    Q.write_gguf(dst, out_kv, tensors + extra, alignment=align)
    ref = json.load(open(ref_path))
    src_path = os.path.basename(src)
    cases = [c for c in ref["cases"] if c["path"] == src_path]
    if not cases:
        raise SystemExit(f"{ref_path}: no cases for {src_path}")
    ref["cases"] = [c for c in ref["cases"] if c["format"] != fmt]
    ref["cases"] += [dict(c, format=fmt, path=os.path.basename(dst)) for c in cases]
    json.dump(ref, open(ref_path, "w"))
    print(f"{dst}: {len(extra)} MTP tensors after {n} blocks; {len(cases)} cases as {fmt}")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
