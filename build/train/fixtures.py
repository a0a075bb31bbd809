"""Parity fixtures: three tiny trained models (Llama with GQA, Llama with llama3 rope scaling and
tied embeddings, Qwen2 with q/k/v biases) in every format Laya loads, with PyTorch/transformers
reference outputs computed on the weights each format dequantizes to.

Usage: python3 fixtures.py CORPUS_DIR OUT_DIR   (runs on the GPU machine, a minute or so)
"""
import json
import os
import random
import shutil
import sys

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

import export as E
import toks as T

torch.manual_seed(0)
random.seed(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"


def corpus_lines(root, limit=3_000_000):
    lines, total = [], 0
    for dp, _, fs in sorted(os.walk(root)):
        for f in sorted(fs):
            if not f.endswith(".py"):
                continue
            try:
                text = open(os.path.join(dp, f), encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            for ln in text.splitlines(keepends=True):
                lines.append(ln)
                total += len(ln)
            if total > limit:
                return lines
    return lines


def train_tiny(model, ids, steps=400, seq=128, batch=32):
    model.to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    data = torch.tensor(ids, device=dev)
    for step in range(steps):
        ix = torch.randint(0, len(data) - seq - 1, (batch,), device=dev)
        x = torch.stack([data[i:i + seq] for i in ix])
        y = torch.stack([data[i + 1:i + seq + 1] for i in ix])
        logits = model(x).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"  trained {steps} steps, loss {loss.item():.3f}", flush=True)
    return model.cpu().float().eval()


def llama3_inv_freq(cfg):
    """transformers' llama3 rope scaling, written out to check what the library did."""
    d, base = cfg["head_dim"], cfg["rope_theta"]
    rs = cfg["rope_scaling"]
    inv = 1.0 / (base ** (np.arange(0, d, 2, dtype=np.float64) / d))
    lo_wl = rs["original_max_position_embeddings"] / rs["low_freq_factor"]
    hi_wl = rs["original_max_position_embeddings"] / rs["high_freq_factor"]
    wl = 2 * np.pi / inv
    out = np.where(wl > lo_wl, inv / rs["factor"], inv)
    smooth = (rs["original_max_position_embeddings"] / wl - rs["low_freq_factor"]) / (rs["high_freq_factor"] - rs["low_freq_factor"])
    mid = (1 - smooth) * out / rs["factor"] + smooth * out
    is_mid = (wl >= hi_wl) & (wl <= lo_wl)
    return np.where(is_mid, mid, out), inv


def main(corpus, out):
    lines = corpus_lines(corpus)
    random.shuffle(lines)
    text_lines = lines[:20000]
    os.makedirs(out, exist_ok=True)
    tokdir = os.path.join(out, "tokenizer")
    os.makedirs(tokdir, exist_ok=True)
    base = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=64, max_position_embeddings=512, hidden_act="silu")
    specs = []
    # llama: Llama-2 style tokenizer, untied head.
    tl = T.train_spm_style(text_lines, 448, ["<unk>", "<s>", "</s>"], prepend=True, alphabet=64)
    specs.append(dict(name="llama", tok=tl, tokname="tiny-llama", arch="llama", dtype="F32", tied=False,
                      cfg=dict(base, architectures=["LlamaForCausalLM"], model_type="llama",
                               vocab_size=tl.get_vocab_size(), rms_norm_eps=1e-5, rope_theta=10000.0,
                               tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
                               attention_bias=False, mlp_bias=False),
                      gguf_tok=T.gguf_vocab_kv(tl, "llama", "default", 1, 2, 0, True),
                      mlx_over={"lm_head": (8, 32)}, gguf_schemes=["f16", "q8_0", "q4_0", "q4_k"], mlx8=True))
    # llama3: byte-level tokenizer with the llama3 regex, rope scaling, tied embeddings.
    t3 = T.train_byte_level(text_lines, 448, ["<|begin_of_text|>", "<|end_of_text|>"], T.LLAMA3_PAT,
                            nfc=False, bos="<|begin_of_text|>")
    specs.append(dict(name="llama3", tok=t3, tokname="tiny-llama3", arch="llama", dtype="BF16", tied=True,
                      cfg=dict(base, architectures=["LlamaForCausalLM"], model_type="llama",
                               vocab_size=t3.get_vocab_size(), rms_norm_eps=1e-5, rope_theta=500000.0,
                               rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                             "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                               tie_word_embeddings=True, bos_token_id=0, eos_token_id=1,
                               attention_bias=False, mlp_bias=False),
                      gguf_tok=T.gguf_vocab_kv(t3, "gpt2", "llama-bpe", 0, 1, None, True),
                      mlx_over={}, gguf_schemes=["q8_0", "q4_k"], mlx8=False))
    # qwen2: byte-level with NFC and the Qwen regex, q/k/v biases, tied.
    tq = T.train_byte_level(text_lines, 448, ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"],
                            T.QWEN2_PAT, nfc=True)
    specs.append(dict(name="qwen2", tok=tq, tokname="tiny-qwen2", arch="qwen2", dtype="F16", tied=True,
                      cfg=dict(base, architectures=["Qwen2ForCausalLM"], model_type="qwen2",
                               vocab_size=tq.get_vocab_size(), rms_norm_eps=1e-6, rope_theta=1000000.0,
                               tie_word_embeddings=True, bos_token_id=0, eos_token_id=0,
                               use_sliding_window=False, sliding_window=None, max_window_layers=2),
                      gguf_tok=T.gguf_vocab_kv(tq, "gpt2", "qwen2", 0, 0, None, False),
                      mlx_over={}, gguf_schemes=["q8_0", "q4_0"], mlx8=False))
    candidates = [ln.rstrip("\n") for ln in lines[20000:20400] if 12 <= len(ln.strip()) <= 60]
    for sp in specs:
        name, cfg, tok = sp["name"], sp["cfg"], sp["tok"]
        print(f"== {name}", flush=True)
        cls_cfg, cls_model = (Qwen2Config, Qwen2ForCausalLM) if sp["arch"] == "qwen2" else (LlamaConfig, LlamaForCausalLM)
        c = cls_cfg.from_dict(dict(cfg))
        model = cls_model(c)
        ids = []
        for ln in text_lines[:12000]:
            ids += tok.encode(ln, add_special_tokens=False).ids
        model = train_tiny(model, ids)
        if sp["name"] == "llama3":
            want, orig = llama3_inv_freq(cfg)
            got = getattr(getattr(model.model, "rotary_emb", None), "inv_freq", None)
            if got is None:
                raise SystemExit("cannot find transformers' rotary inv_freq to check llama3 scaling")
            got = got.double().cpu().numpy()
            print("  llama3 inv_freq max rel diff vs formula:", float(np.abs(got - want).max() / want.max()), flush=True)
            if np.abs(got - want).max() > 1e-6 * want.max():
                raise SystemExit("transformers did not apply llama3 rope scaling as configured")
            sp["rope_factors"] = orig / want
        sd = E.state(model)
        mdir = os.path.join(out, "models", name)
        tok.save(os.path.join(tokdir, f"{sp['tokname']}-tokenizer.json"))
        formats = {}
        formats["hf"] = ("hf", E.write_hf(os.path.join(mdir, "hf"), sd, cfg, sp["dtype"], sp["tied"]))
        formats["mlx4"] = ("mlx4", E.write_mlx(os.path.join(mdir, "mlx4"), sd, cfg, 4, 64, sp["tied"], sp["mlx_over"]))
        if sp["mlx8"]:
            formats["mlx8"] = ("mlx8", E.write_mlx(os.path.join(mdir, "mlx8"), sd, cfg, 8, 32, sp["tied"]))
        for d in ("hf", "mlx4", "mlx8"):
            if os.path.isdir(os.path.join(mdir, d)):
                tok.save(os.path.join(mdir, d, "tokenizer.json"))
                json.dump({"add_bos_token": sp["arch"] == "llama"}, open(os.path.join(mdir, d, "tokenizer_config.json"), "w"))
        for sch in sp["gguf_schemes"]:
            f = f"{sch}.gguf"
            formats[sch] = (f, E.write_gguf(os.path.join(mdir, f), sd, cfg, sp["arch"], sch, sp["tied"],
                                            sp["gguf_tok"], f"laya-fixture-{name}", sp.get("rope_factors")))
        refs = {fmt: E.load_reference_model(cls_cfg, cls_model, cfg, deq) for fmt, (_, deq) in formats.items()}
        cases = []
        for fmt, m in refs.items():
            # Each format gets prompts whose greedy path never has a near-tie, so float32 rounding
            # in the engine cannot flip a choice; failing that, the path is cut before the tie.
            chosen, best = 0, None
            for text in candidates:
                pids = tok.encode(text, add_special_tokens=True).ids
                g, tops, margins = E.greedy(m, pids, 16)
                case = {"format": fmt, "path": formats[fmt][0], "prompt": text, "prompt_ids": pids,
                        "greedy": g, "top": tops, "min_margin": min(margins)}
                if min(margins) >= 0.02:
                    cases.append(case)
                    chosen += 1
                    if chosen == 3:
                        break
                else:
                    cut = next(i for i, x in enumerate(margins) if x < 0.02)
                    if best is None or cut > len(best["greedy"]):
                        best = dict(case, greedy=g[:cut], top=tops[:cut], min_margin=min(margins[:cut] or [1.0]))
            if chosen == 0:
                if best is None or len(best["greedy"]) < 4:
                    raise SystemExit(f"{name}/{fmt}: no prompt with a safe greedy margin")
                cases.append(best)
            print(f"  {fmt}: {max(chosen, 1)} prompts", flush=True)
        json.dump({"model": name, "cases": cases}, open(os.path.join(mdir, "reference.json"), "w"))
    return specs


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
