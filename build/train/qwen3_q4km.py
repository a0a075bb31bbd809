"""The Qwen3 fixture's q4_k_m.gguf: its HF weights with the tensor types llama.cpp's Q4_K_M gives
a tied model (token_embd, which is also the output matrix, in Q6_K; attn_v and ffn_down Q6_K; the
rest Q4_K), and references from a float64 Qwen3 forward pass written here with numpy, which must
first reproduce the transformers references of the hf format.

Usage: python3 qwen3_q4km.py FIXTURE_DIR   (testdata/models/qwen3; needs numpy only)
"""
import json
import os
import struct
import sys

import numpy as np

import families as F
import gguf_mtp

FORMAT, FILE = "q4_k_m", "q4_k_m.gguf"


def read_safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        lo, hi = v["data_offsets"]
        raw = np.frombuffer(b[8 + n + lo:8 + n + hi], dtype=np.uint8)
        if v["dtype"] == "BF16":
            a = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        elif v["dtype"] == "F32":
            a = raw.view(np.float32)
        else:
            raise SystemExit(f"{path}: {k} has dtype {v['dtype']}")
        out[k] = a.reshape(v["shape"]).astype(np.float64)
    return out


def rmsnorm(x, w, eps):
    # transformers normalizes in float32 and scales in the weights' dtype (float64 here).
    x32 = x.astype(np.float32)
    var = (x32 * x32).mean(-1, keepdims=True)
    return w * (x32 / np.sqrt(var + np.float32(eps))).astype(np.float64)


def forward(w, c, ids):
    """Logits of the last position: Qwen3 (q/k RMSNorm per head, rotate-half RoPE, GQA, SwiGLU)."""
    H, KV, hd, eps = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["rms_norm_eps"]
    T = len(ids)
    x = w["model.embed_tokens.weight"][ids]
    inv = 1.0 / (c["rope_theta"] ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))

    def rope(t):  # t [T, heads, hd]
        rot = np.concatenate([-t[..., hd // 2:], t[..., :hd // 2]], -1)
        return t * cos[:, None, :] + rot * sin[:, None, :]

    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rmsnorm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, H, hd)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(T, KV, hd)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(T, KV, hd)
        q = rope(rmsnorm(q, w[p + "self_attn.q_norm.weight"], eps))
        k = rope(rmsnorm(k, w[p + "self_attn.k_norm.weight"], eps))
        out = np.empty((T, H, hd))
        for hh in range(H):
            kv = hh // (H // KV)
            s = q[:, hh] @ k[:, kv].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            out[:, hh] = (s / s.sum(-1, keepdims=True)) @ v[:, kv]
        x = x + out.reshape(T, H * hd) @ w[p + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    x = rmsnorm(x[-1:], w["model.norm.weight"], eps)
    return (x @ w["lm_head.weight"].T)[0]


def greedy(w, c, ids, steps):
    ids = list(ids)
    out, tops, margins = [], [], []
    for _ in range(steps):
        z = forward(w, c, ids)
        lp = z - z.max() - np.log(np.exp(z - z.max()).sum())
        order = np.argsort(-lp, kind="stable")[:5]
        tops.append([[int(i), float(lp[i])] for i in order])
        margins.append(float(lp[order[0]] - lp[order[1]]))
        out.append(int(order[0]))
        ids.append(int(order[0]))
    return out, tops, margins


def main(d):
    c = json.load(open(os.path.join(d, "hf", "config.json")))
    ref = json.load(open(os.path.join(d, "reference.json")))
    hf = read_safetensors(os.path.join(d, "hf", "model.safetensors"))
    hf["lm_head.weight"] = hf["model.embed_tokens.weight"]
    worst = 0.0
    for case in [x for x in ref["cases"] if x["format"] == "hf"]:
        g, tops, _ = greedy(hf, c, case["prompt_ids"], len(case["greedy"]))
        if g != case["greedy"]:
            raise SystemExit(f"numpy forward: greedy {g}, transformers {case['greedy']}")
        for mine, theirs in zip(tops, case["top"]):
            have = dict((i, lp) for i, lp in mine)
            worst = max([worst] + [abs(have[i] - lp) for i, lp in theirs if i in have])
    if worst > 1e-5:
        raise SystemExit(f"numpy forward differs from transformers by {worst:.2e}")
    print(f"numpy forward reproduces the hf references (largest logprob difference {worst:.1e})")
    kv, _, _ = gguf_mtp.read_gguf(os.path.join(d, "q4_k.gguf"))
    tok_kv = [x for x in kv if x[0].startswith("tokenizer.")]
    tc = dict(c, _rope_theta=c["rope_theta"])
    sd = {k: v.astype(np.float32) for k, v in hf.items() if k != "lm_head.weight"}
    deq = F.write_gguf(os.path.join(d, FILE), "qwen3", tc, sd, FORMAT, True, tok_kv, "laya-fixture-qwen3")
    cases = []
    for case in [x for x in ref["cases"] if x["format"] == "q4_k"]:
        g, tops, margins = greedy(deq, c, case["prompt_ids"], len(case["greedy"]))
        if min(margins) < 0.02:
            cut = next(i for i, m in enumerate(margins) if m < 0.02)
            g, tops, margins = g[:cut], tops[:cut], margins[:cut] or [1.0]
        if len(g) >= 4:
            cases.append(dict(case, format=FORMAT, path=FILE, greedy=g, top=tops, min_margin=min(margins)))
    if not cases:
        raise SystemExit("no q4_k_m case with a safe greedy margin")
    ref["cases"] = [x for x in ref["cases"] if x["format"] != FORMAT] + cases
    json.dump(ref, open(os.path.join(d, "reference.json"), "w"))
    print(f"{FILE}: {len(cases)} cases, {[len(x['greedy']) for x in cases]} steps")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
