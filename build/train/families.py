"""How each 2026 family is written in the formats Laya loads, and how every written tensor maps
back to the HF weights a reference model runs on.

One Family per model_type. Written from mlx-lm's models/<family>.py (sanitize and the
quantization predicate of utils.quantize_model) and llama.cpp's converter (conversion/*.py and
gguf-py's tensor_mapping.py); the inverse of each transform is exact, so the reference runs on
the very numbers the engine reads.
"""
import numpy as np

import quant as Q

# Suffixes after "model.layers.N." -> llama.cpp tensor names, per family.
_ATTN = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
         "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
         "self_attn.k_norm": "attn_k_norm"}
_MLP = {"mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}

GGUF_LAYER = {
    "qwen3": dict(_ATTN, **_MLP, input_layernorm="attn_norm", post_attention_layernorm="ffn_norm"),
    "smollm3": dict(_ATTN, **_MLP, input_layernorm="attn_norm", post_attention_layernorm="ffn_norm"),
    "gemma3_text": dict(_ATTN, **_MLP, input_layernorm="attn_norm",
                        post_attention_layernorm="post_attention_norm",
                        pre_feedforward_layernorm="ffn_norm",
                        post_feedforward_layernorm="post_ffw_norm"),
    "lfm2": {"operator_norm": "attn_norm", "ffn_norm": "ffn_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.out_proj": "attn_output", "self_attn.q_layernorm": "attn_q_norm",
             "self_attn.k_layernorm": "attn_k_norm", "conv.conv": "shortconv.conv",
             "conv.in_proj": "shortconv.in_proj", "conv.out_proj": "shortconv.out_proj",
             "feed_forward.w1": "ffn_gate", "feed_forward.w3": "ffn_up", "feed_forward.w2": "ffn_down"},
    "qwen3_5_text": dict(_ATTN, **_MLP, input_layernorm="attn_norm",
                         post_attention_layernorm="post_attention_norm",
                         **{"linear_attn.in_proj_qkv": "attn_qkv", "linear_attn.in_proj_z": "attn_gate",
                            "linear_attn.in_proj_a": "ssm_alpha", "linear_attn.in_proj_b": "ssm_beta",
                            "linear_attn.conv1d": "ssm_conv1d", "linear_attn.norm": "ssm_norm",
                            "linear_attn.out_proj": "ssm_out"}),
}
GGUF_ARCH = {"qwen3": "qwen3", "smollm3": "smollm3", "gemma3_text": "gemma3", "lfm2": "lfm2",
             "qwen3_5_text": "qwen35"}
# Norms stored as (1+w) by the converter (Gemma's and Qwen3.5's zero-centred RMSNorm).
_SHIFTED = {"gemma3_text", "qwen3_5_text"}


def gguf_name(mt, k):
    """The llama.cpp name of HF tensor k ("model.layers.0.self_attn.q_proj.weight")."""
    top = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
           "lm_head.weight": "output.weight", "model.embedding_norm.weight": "token_embd_norm.weight"}
    if k in top:
        return top[k]
    parts = k.split(".")
    if parts[:2] != ["model", "layers"]:
        raise KeyError(f"gguf: no name for {k}")
    i = parts[2]
    if mt == "qwen3_5_text" and parts[-1] == "A_log":
        return f"blk.{i}.ssm_a"
    if mt == "qwen3_5_text" and parts[-1] == "dt_bias":
        return f"blk.{i}.ssm_dt.bias"
    mod = ".".join(parts[3:-1])
    return f"blk.{i}.{GGUF_LAYER[mt][mod]}.{parts[-1]}"


def _norm_shifted(mt, k):
    if mt not in _SHIFTED or not k.endswith("norm.weight"):
        return False
    return not k.endswith("linear_attn.norm.weight")


# ---------------------------------------------------------------- Qwen3.5 V-head order

def reorder_v(x, axis, nk, nvpk, d):
    """llama.cpp's grouped-by-K -> tiled order of the value heads along axis."""
    shape = x.shape
    x = x.reshape(shape[:axis] + (nk, nvpk, d) + shape[axis + 1:])
    return np.swapaxes(x, axis, axis + 1).reshape(shape)


def unreorder_v(x, axis, nk, nvpk, d):
    shape = x.shape
    x = x.reshape(shape[:axis] + (nvpk, nk, d) + shape[axis + 1:])
    return np.swapaxes(x, axis, axis + 1).reshape(shape)


def _qwen35_v(tc, k, w, inverse):
    nk, nv = tc["linear_num_key_heads"], tc["linear_num_value_heads"]
    if nk == nv or ".linear_attn." not in k:
        return w
    dk, dv, r = tc["linear_key_head_dim"], tc["linear_value_head_dim"], nv // nk
    f = unreorder_v if inverse else reorder_v
    if ".in_proj_qkv." in k or ".conv1d." in k:
        qk = 2 * nk * dk
        return np.concatenate([w[:qk], f(w[qk:], 0, nk, r, dv)], axis=0)
    if ".in_proj_z." in k:
        return f(w, 0, nk, r, dv)
    if ".in_proj_a." in k or ".in_proj_b." in k or k.endswith(".A_log") or k.endswith(".dt_bias"):
        return f(w.reshape(w.shape[0], -1), 0, nk, r, 1).reshape(w.shape)
    if ".out_proj." in k:
        return f(w, 1, nk, r, dv)
    return w


def to_gguf(mt, tc, k, w):
    """The converter's transform of HF tensor k (float32 numpy) into what it writes."""
    w = np.asarray(w, dtype=np.float32)
    if mt == "qwen3_5_text":
        w = _qwen35_v(tc, k, w, False)
        if k.endswith(".A_log"):
            w = -np.exp(w.astype(np.float64)).astype(np.float32)
        if ".conv1d." in k:
            w = w.reshape(w.shape[0], -1)
    if mt == "lfm2" and ".conv.conv." in k:
        w = w.reshape(w.shape[0], -1)
    if mt == "smollm3" and (".q_proj." in k or ".k_proj." in k):
        nh = tc["num_attention_heads"] if ".q_proj." in k else tc["num_key_value_heads"]
        w = Q.permute_qk(w, nh)
    if _norm_shifted(mt, k):
        w = (w.astype(np.float64) + 1).astype(np.float32)
    return w


def from_gguf(mt, tc, k, d, hf_shape):
    """Inverse of to_gguf on the dequantized float64 values d."""
    d = np.asarray(d, dtype=np.float64)
    if _norm_shifted(mt, k):
        d = d - 1
    if mt == "smollm3" and (".q_proj." in k or ".k_proj." in k):
        nh = tc["num_attention_heads"] if ".q_proj." in k else tc["num_key_value_heads"]
        d = Q.unpermute_qk(d, nh)
    if mt == "qwen3_5_text":
        if k.endswith(".A_log"):
            d = np.log(-d)
        d = _qwen35_v(tc, k, d.reshape(hf_shape[0], -1) if ".conv1d." in k else d.reshape(hf_shape), True)
    return d.reshape(hf_shape)


def gguf_f32_only(mt, k, w):
    """Tensors the converter always keeps in float32: 1-D ones and the convolution kernels."""
    return w.ndim == 1 or ".conv1d." in k or ".conv.conv." in k


def gguf_kv(mt, tc, tied):
    """Architecture metadata the converter writes for the text config tc."""
    a = GGUF_ARCH[mt]
    U, F, A = Q.T_U32, Q.T_F32, Q.T_ARR
    hd = tc.get("head_dim") or tc["hidden_size"] // tc["num_attention_heads"]
    kv = [(f"{a}.context_length", U, tc["max_position_embeddings"]),
          (f"{a}.embedding_length", U, tc["hidden_size"]),
          (f"{a}.block_count", U, tc["num_hidden_layers"]),
          (f"{a}.attention.head_count", U, tc["num_attention_heads"])]
    eps = tc.get("rms_norm_eps", tc.get("norm_eps"))
    kv.append((f"{a}.attention.layer_norm_rms_epsilon", F, eps))
    if mt == "lfm2":
        kv += [(f"{a}.feed_forward_length", U, tc["_ffn"]),
               (f"{a}.attention.head_count_kv", A,
                (Q.T_U32, [tc["num_key_value_heads"] if t != "conv" else 0 for t in tc["layer_types"]])),
               (f"{a}.rope.freq_base", F, tc["_rope_theta"]),
               (f"{a}.vocab_size", U, tc["vocab_size"]),
               (f"{a}.shortconv.l_cache", U, tc["conv_L_cache"])]
        return kv
    kv += [(f"{a}.feed_forward_length", U, tc["intermediate_size"]),
           (f"{a}.attention.head_count_kv", U, tc["num_key_value_heads"]),
           (f"{a}.rope.freq_base", F, tc["_rope_theta"])]
    if mt == "smollm3":
        kv += [(f"{a}.rope.dimension_count", U, hd), (f"{a}.vocab_size", U, tc["vocab_size"])]
    else:
        kv += [(f"{a}.attention.key_length", U, hd), (f"{a}.attention.value_length", U, hd)]
    if mt == "gemma3_text":
        kv.append((f"{a}.attention.sliding_window", U, tc["sliding_window"]))
    if mt == "qwen3_5_text":
        rd = int(hd * tc["_partial_rotary"])
        sec = list(tc["_mrope_section"]) + [0] * (4 - len(tc["_mrope_section"]))
        kv += [(f"{a}.rope.dimension_count", U, rd),
               (f"{a}.rope.dimension_sections", A, (Q.T_I32, sec)),
               (f"{a}.ssm.conv_kernel", U, tc["linear_conv_kernel_dim"]),
               (f"{a}.ssm.state_size", U, tc["linear_key_head_dim"]),
               (f"{a}.ssm.group_count", U, tc["linear_num_key_heads"]),
               (f"{a}.ssm.time_step_rank", U, tc["linear_num_value_heads"]),
               (f"{a}.ssm.inner_size", U, tc["linear_value_head_dim"] * tc["linear_num_value_heads"]),
               (f"{a}.full_attention_interval", U, 4)]
    return kv


def write_gguf(path, mt, tc, sd, scheme, tied, tok_kv, name):
    """scheme: f16, q8_0, q4_k (Q4_K, with Q6_K for attn_v/ffn_down/output) or q4_k_m (the
    same, and Q6_K for a tied token_embd, which llama.cpp's Q4_K_M treats as the output matrix).
    A 2-D tensor whose rows do not split into the type's blocks falls back to F16, as the
    converter does. Returns the dequantized HF-named state."""
    main = {"f16": Q.GGML_F16, "q8_0": Q.GGML_Q8_0, "q4_k": Q.GGML_Q4_K, "q4_k_m": Q.GGML_Q4_K}[scheme]
    ftype = {"f16": 1, "q8_0": 7, "q4_k": 15, "q4_k_m": 15}[scheme]
    block = {Q.GGML_F16: 1, Q.GGML_Q8_0: 32, Q.GGML_Q4_K: 256, Q.GGML_Q6_K: 256}
    tensors, deq = [], {}
    for k, v in sd.items():
        if tied and k == "lm_head.weight":
            continue
        w = to_gguf(mt, tc, k, v)
        if gguf_f32_only(mt, k, w):
            gt = Q.GGML_F32
        else:
            gt = main
            g = gguf_name(mt, k)
            head = g == "output.weight" or (scheme == "q4_k_m" and tied and g == "token_embd.weight")
            if scheme in ("q4_k", "q4_k_m") and (".attn_v." in g or ".ffn_down." in g or head):
                gt = Q.GGML_Q6_K
            if w.shape[-1] % block[gt]:
                gt = Q.GGML_F16
        raw, d = Q.ggml_encode(w, gt)
        deq[k] = from_gguf(mt, tc, k, d.reshape(w.shape), v.shape)
        tensors.append((gguf_name(mt, k), list(w.shape), gt, raw.tobytes()))
    if tied:
        deq["lm_head.weight"] = deq["model.embed_tokens.weight"]
    kv = [("general.architecture", Q.T_STR, GGUF_ARCH[mt]), ("general.name", Q.T_STR, name),
          ("general.file_type", Q.T_U32, ftype), ("general.alignment", Q.T_U32, 32)]
    Q.write_gguf(path, kv + gguf_kv(mt, tc, tied) + tok_kv, tensors)
    return deq


# ---------------------------------------------------------------- MLX (mlx-lm convert)

def mlx_name(mt, k):
    # mlx-lm's qwen3_5 Model.sanitize puts every language weight under "language_model.".
    return "language_model." + k if mt == "qwen3_5_text" else k


def to_mlx(mt, k, w):
    """sanitize: conv kernels to MLX's [out, k, in/groups]; Qwen3.5's (1+w) norms folded in."""
    w = np.asarray(w, dtype=np.float32)
    if (mt == "lfm2" and ".conv.conv." in k) or (mt == "qwen3_5_text" and ".conv1d." in k):
        w = np.ascontiguousarray(w.transpose(0, 2, 1))
    if mt == "qwen3_5_text" and w.ndim == 1 and any(
            k.endswith(s) for s in (".input_layernorm.weight", ".post_attention_layernorm.weight",
                                    "model.norm.weight", ".q_norm.weight", ".k_norm.weight")):
        w = (w.astype(np.float64) + 1).astype(np.float32)
        return w, True
    return w, False


def write_mlx(dirpath, mt, sd, cfg_json, bits, group, tied):
    """mlx-lm convert -q: every Linear and Embedding whose input width splits into groups is
    quantized (uint32 codes, F16 scales and biases); convolutions, norms and the rest stay F16,
    Qwen3.5's A_log stays F32 (its cast predicate)."""
    import json
    import os

    import torch
    from safetensors.torch import save_file
    os.makedirs(dirpath, exist_ok=True)
    out, deq = {}, {}
    for k, v in sd.items():
        if tied and k == "lm_head.weight":
            continue
        w, shifted = to_mlx(mt, k, v)
        n = mlx_name(mt, k)
        is_mat = w.ndim == 2 and k.endswith(".weight")
        if is_mat and w.shape[1] % group == 0:
            packed, s, b = Q.mlx_quantize(w, bits, group)
            p = n[:-len(".weight")]
            out[p + ".weight"] = torch.from_numpy(packed.view(np.int32)).view(torch.uint32)
            out[p + ".scales"] = torch.from_numpy(s)
            out[p + ".biases"] = torch.from_numpy(b)
            d = Q.mlx_dequantize(packed, s, b, bits, group)
        elif mt == "qwen3_5_text" and k.endswith(".A_log"):
            out[n] = torch.from_numpy(w.copy())
            d = w.astype(np.float64)
        else:
            h = torch.from_numpy(w.copy()).to(torch.float16)
            out[n] = h
            d = h.to(torch.float64).numpy()
        if shifted:
            d = d - 1
        if d.ndim == 3:
            d = d.transpose(0, 2, 1)
        deq[k] = np.ascontiguousarray(d).reshape(v.shape)
    if tied:
        deq["lm_head.weight"] = deq["model.embed_tokens.weight"]
    save_file(out, os.path.join(dirpath, "model.safetensors"), metadata={"format": "mlx"})
    c = dict(cfg_json)
    qc = {"group_size": group, "bits": bits, "mode": "affine"}
    c["quantization"] = qc
    c["quantization_config"] = qc
    json.dump(c, open(os.path.join(dirpath, "config.json"), "w"), indent=2)
    return deq
