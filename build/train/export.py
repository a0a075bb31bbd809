"""Writing a trained HF Llama/Qwen2 model in the formats Laya loads, and computing PyTorch
reference outputs on exactly the weights each format dequantizes to."""
import json
import os

import numpy as np
import torch
from safetensors.torch import save_file

import quant as Q

LINEARS = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]


def hf_config(cfg):
    """config.json in the classic layout users' files have (rope_theta, rope_scaling)."""
    return {k: v for k, v in cfg.items() if v is not None}


def state(model):
    return {k: v.detach().float().cpu().numpy() for k, v in model.state_dict().items()}


def write_hf(dirpath, sd, cfg, dtype, tied):
    os.makedirs(dirpath, exist_ok=True)
    tt = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[dtype]
    out, deq = {}, {}
    for k, v in sd.items():
        if tied and k == "lm_head.weight":
            continue
        t = torch.from_numpy(v).to(tt).contiguous()
        out[k] = t
        deq[k] = t.to(torch.float64).numpy()
    if tied:
        deq["lm_head.weight"] = deq["model.embed_tokens.weight"]
    save_file(out, os.path.join(dirpath, "model.safetensors"), metadata={"format": "pt"})
    c = dict(cfg)
    c["torch_dtype"] = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype]
    json.dump(hf_config(c), open(os.path.join(dirpath, "config.json"), "w"), indent=2)
    return deq


def quant_targets(sd, tied):
    names = ["model.embed_tokens"] + ([] if tied else ["lm_head"])
    layers = sorted({int(k.split(".")[2]) for k in sd if k.startswith("model.layers.")})
    for i in layers:
        names += [f"model.layers.{i}.{l}" for l in LINEARS]
    return names


def write_mlx(dirpath, sd, cfg, bits, group, tied, overrides=None):
    """MLX affine: <p>.weight uint32 codes, <p>.scales/<p>.biases F16; others F16."""
    os.makedirs(dirpath, exist_ok=True)
    overrides = overrides or {}
    out, deq = {}, {}
    targets = set(quant_targets(sd, tied))
    for k, v in sd.items():
        if tied and k == "lm_head.weight":
            continue
        p = k[:-len(".weight")] if k.endswith(".weight") else None
        if p in targets:
            b, g = overrides.get(p, (bits, group))
            packed, s, bb = Q.mlx_quantize(v, b, g)
            out[p + ".weight"] = torch.from_numpy(packed.view(np.int32)).view(torch.uint32)
            out[p + ".scales"] = torch.from_numpy(s)
            out[p + ".biases"] = torch.from_numpy(bb)
            deq[k] = Q.mlx_dequantize(packed, s, bb, b, g)
        else:
            h = torch.from_numpy(v).to(torch.float16)
            out[k] = h
            deq[k] = h.to(torch.float64).numpy()
    if tied:
        deq["lm_head.weight"] = deq["model.embed_tokens.weight"]
    save_file(out, os.path.join(dirpath, "model.safetensors"), metadata={"format": "mlx"})
    c = dict(cfg)
    qc = {"group_size": group, "bits": bits}
    for p, (b, g) in overrides.items():
        qc[p] = {"group_size": g, "bits": b}
    c["quantization"] = qc
    c["quantization_config"] = qc
    c["torch_dtype"] = "float16"
    json.dump(hf_config(c), open(os.path.join(dirpath, "config.json"), "w"), indent=2)
    return deq


GGUF_NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
              "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
              "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm",
              "post_attention_layernorm": "ffn_norm"}


def gguf_name(k):
    if k == "model.embed_tokens.weight":
        return "token_embd.weight"
    if k == "model.norm.weight":
        return "output_norm.weight"
    if k == "lm_head.weight":
        return "output.weight"
    parts = k.split(".")
    i = parts[2]
    mod = ".".join(parts[3:-1])
    return f"blk.{i}.{GGUF_NAMES[mod]}.{parts[-1]}"


def write_gguf(path, sd, cfg, arch, scheme, tied, tok_kv, name, rope_factors=None):
    """scheme: 'f16', 'q8_0', 'q4_0', 'q4_k' (Q4_K with Q6_K for attn_v/ffn_down/output, like
    Q4_K_M). Returns the dequantized HF-named state dict (q/k un-permuted back)."""
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    main = {"f16": Q.GGML_F16, "q8_0": Q.GGML_Q8_0, "q4_0": Q.GGML_Q4_0, "q4_k": Q.GGML_Q4_K}[scheme]
    ftype = {"f16": 1, "q8_0": 7, "q4_0": 2, "q4_k": 15}[scheme]
    tensors, deq = [], {}
    for k, v in sd.items():
        if tied and k == "lm_head.weight":
            continue
        w = v
        perm = arch == "llama" and (".q_proj." in k or ".k_proj." in k)
        nh = H if ".q_proj." in k else KV
        if perm:
            w = Q.permute_qk(w, nh)
        if w.ndim == 1:
            gt = Q.GGML_F32
        else:
            gt = main
            if scheme == "q4_k" and (".v_proj." in k or ".down_proj." in k or k == "lm_head.weight"):
                gt = Q.GGML_Q6_K
        raw, d = Q.ggml_encode(w, gt)
        d = d.reshape(w.shape)
        if perm:
            d = Q.unpermute_qk(d, nh)
        deq[k] = d
        tensors.append((gguf_name(k), list(w.shape), gt, raw.tobytes()))
    if rope_factors is not None:
        tensors.append(("rope_freqs.weight", [len(rope_factors)], Q.GGML_F32,
                        np.asarray(rope_factors, dtype=np.float32).tobytes()))
    if tied:
        deq["lm_head.weight"] = deq["model.embed_tokens.weight"]
    a = arch
    kv = [("general.architecture", Q.T_STR, arch), ("general.name", Q.T_STR, name),
          ("general.file_type", Q.T_U32, ftype), ("general.alignment", Q.T_U32, 32),
          (f"{a}.context_length", Q.T_U32, cfg["max_position_embeddings"]),
          (f"{a}.embedding_length", Q.T_U32, cfg["hidden_size"]),
          (f"{a}.block_count", Q.T_U32, cfg["num_hidden_layers"]),
          (f"{a}.feed_forward_length", Q.T_U32, cfg["intermediate_size"]),
          (f"{a}.attention.head_count", Q.T_U32, H),
          (f"{a}.attention.head_count_kv", Q.T_U32, KV),
          (f"{a}.attention.layer_norm_rms_epsilon", Q.T_F32, cfg["rms_norm_eps"]),
          (f"{a}.rope.freq_base", Q.T_F32, cfg["rope_theta"]),
          (f"{a}.rope.dimension_count", Q.T_U32, cfg["head_dim"]),
          (f"{a}.vocab_size", Q.T_U32, cfg["vocab_size"])] + tok_kv
    Q.write_gguf(path, kv, tensors)
    return deq


def load_reference_model(cls_cfg, cls_model, cfg, deq):
    """An HF model (float64, eager attention) holding exactly the dequantized weights."""
    c = cls_cfg.from_dict(dict(cfg))
    c._attn_implementation = "eager"
    m = cls_model(c).double().eval()
    sd = m.state_dict()
    new = {}
    for k in sd:
        if k not in deq:
            if "rotary" in k or "inv_freq" in k:
                continue
            raise KeyError(f"reference: weight {k} missing from the exported state")
        arr = deq[k]
        if tuple(arr.shape) != tuple(sd[k].shape):
            raise ValueError(f"reference: {k} has shape {arr.shape}, model wants {tuple(sd[k].shape)}")
        new[k] = torch.from_numpy(np.ascontiguousarray(arr, dtype=np.float64))
    m.load_state_dict(new, strict=False)
    return m


@torch.no_grad()
def greedy(model, ids, steps, device="cpu"):
    """Greedy ids, top-5 [id, logprob] per step and the top-1/top-2 margin per step."""
    ids = list(ids)
    out, tops, margins = [], [], []
    for _ in range(steps):
        logits = model(torch.tensor([ids], device=device)).logits[0, -1].double()
        lp = torch.log_softmax(logits, -1)
        v, i = torch.topk(lp, 5)
        tops.append([[int(a), float(b)] for a, b in zip(i, v)])
        margins.append(float(v[0] - v[1]))
        nxt = int(i[0])
        out.append(nxt)
        ids.append(nxt)
    return out, tops, margins


@torch.no_grad()
def evaluate(model, ids, window, device="cpu"):
    """The eval protocol of `laya eval`: non-overlapping windows, each from an empty cache."""
    nll, top1, n = 0.0, 0, 0
    for i in range(0, len(ids) - 1, window):
        inp = ids[i:min(i + window, len(ids) - 1)]
        tgt = ids[i + 1:i + 1 + len(inp)]
        logits = model(torch.tensor([inp], device=device)).logits[0].double()
        lp = torch.log_softmax(logits, -1)
        t = torch.tensor(tgt, device=device)
        nll -= float(lp[torch.arange(len(tgt), device=device), t].sum())
        top1 += int((lp.argmax(-1) == t).sum())
        n += len(tgt)
    return {"window": window, "tokens": n, "nll": nll / n, "ppl": float(np.exp(nll / n)), "top1": top1 / n}
