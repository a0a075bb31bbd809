"""Parity fixtures for the 2026 families: Qwen3, Qwen3.5 (text and multimodal layouts), Gemma 3
(text and multimodal layouts), SmolLM3 and LFM2. Tiny models, briefly trained on Python source
with a tokenizer of each family's pipeline, written in every format Laya loads (families.py),
with transformers references computed in float64 on the weights each format dequantizes to.

Usage: python3 fixtures_2026.py CORPUS_DIR OUT_DIR [family ...]   (GPU machine, a few minutes)
OUT_DIR gets models/<family>/..., tokenizer/tiny-<family>-tokenizer.json and heldout/<family>/
(untrained random models with references, for checks the project does not see).
"""
import json
import os
import random
import sys
import time
import traceback

import numpy as np
import torch
import transformers
from tokenizers import AddedToken
from safetensors.torch import save_file

import export as E
import families as F
import quant as Q
import toks as T
from fixtures import corpus_lines, train_tiny

QWEN35_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")
dev = "cuda" if torch.cuda.is_available() else "cpu"


def cfg_class(model_type):
    return transformers.CONFIG_MAPPING[model_type]


def text_model(cfg_json, eager=False):
    c = cfg_class(cfg_json["model_type"]).from_dict(dict(cfg_json))
    kw = {"attn_implementation": "eager"} if eager else {}
    try:
        return transformers.AutoModelForCausalLM.from_config(c, **kw), c
    except (TypeError, ValueError):
        if eager:
            c._attn_implementation = "eager"
        return transformers.AutoModelForCausalLM.from_config(c), c


def state(model):
    return {k: v.detach().float().cpu().numpy() for k, v in model.state_dict().items()}


def is_tied(model):
    lm = getattr(model, "lm_head", None)
    if lm is None:
        return True
    return lm.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()


def reference_model(cfg_json, deq):
    """A float64 eager model holding exactly the dequantized weights."""
    m, _ = text_model(cfg_json, eager=True)
    m = m.double().eval()
    sd = m.state_dict()
    new = {}
    for k in sd:
        if k not in deq:
            raise KeyError(f"reference: weight {k} missing from the exported state")
        a = deq[k]
        if tuple(a.shape) != tuple(sd[k].shape):
            raise ValueError(f"reference: {k} has shape {a.shape}, model wants {tuple(sd[k].shape)}")
        new[k] = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))
    missing, unexpected = m.load_state_dict(new, strict=False)
    if unexpected:
        raise KeyError(f"reference: unexpected {unexpected}")
    return m


def tc_extras(cfg_obj, sd, mt):
    """Values the GGUF metadata needs, read from transformers' own parsed config and weights."""
    tc = cfg_obj.to_dict()
    rp = getattr(cfg_obj, "rope_parameters", None) or {}
    if mt == "gemma3_text" and "full_attention" in rp:
        rp = rp["full_attention"]
    tc["_rope_theta"] = float(rp.get("rope_theta", tc.get("rope_theta", 10000.0)))
    tc["_partial_rotary"] = float(rp.get("partial_rotary_factor", tc.get("partial_rotary_factor", 1.0)))
    tc["_mrope_section"] = list(rp.get("mrope_section", []))
    if mt == "lfm2":
        tc["_ffn"] = int(sd["model.layers.0.feed_forward.w1.weight"].shape[0])
    return tc


# ---------------------------------------------------------------- tokenizers

def tokenizers_for(lines):
    specs = {}
    tq = T.train_byte_level(lines, 448, ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|fim_prefix|>",
                                         "<|fim_middle|>", "<|fim_suffix|>"], T.QWEN2_PAT, nfc=True)
    # Qwen3 marks <think> and </think> as added tokens that are not special.
    tq.add_tokens([AddedToken("<think>", normalized=False, special=False),
                   AddedToken("</think>", normalized=False, special=False)])
    specs["qwen3"] = (tq, ["gpt2", "qwen2", 0, 0, None, False])
    t5 = T.train_byte_level(lines, 480, ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|fim_prefix|>",
                                         "<|fim_middle|>", "<|fim_suffix|>"], QWEN35_PAT, nfc=True)
    t5.add_tokens([AddedToken("<think>", normalized=False, special=False),
                   AddedToken("</think>", normalized=False, special=False)])
    specs["qwen3_5"] = (t5, ["gpt2", "qwen35", 0, 0, None, False])
    tg = T.train_spm_style(lines, 512, ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"],
                           prepend=False, bos="<bos>", alphabet=64)
    specs["gemma3"] = (tg, ["llama", "default", 2, 1, 3, True])
    ts = T.train_byte_level(lines, 448, ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>"],
                            T.LLAMA3_PAT, nfc=False)
    specs["smollm3"] = (ts, ["gpt2", "smaug-bpe", 0, 1, None, False])
    tl = T.train_byte_level(lines, 448, ["<|pad|>", "<|startoftext|>", "<|endoftext|>", "<|fim_pre|>", "<|fim_mid|>",
                                         "<|fim_suf|>", "<|im_start|>", "<|im_end|>"], T.LLAMA3_PAT, nfc=False,
                            bos="<|startoftext|>")
    specs["lfm2"] = (tl, ["gpt2", "lfm2", 1, 7, None, True])
    return specs


def gguf_tok_kv(tok, args):
    kind, pre, bos, eos, unk, add_bos = args
    kv = T.gguf_vocab_kv(tok, kind, pre, bos, eos, unk, add_bos)
    # The converter types added tokens that are not special as USER_DEFINED (4).
    j = json.loads(tok.to_str())
    user = {a["id"] for a in j["added_tokens"] if not a["special"]}
    out = []
    for key, t, v in kv:
        if key == "tokenizer.ggml.token_type":
            et, items = v
            v = (et, [4 if i in user else x for i, x in enumerate(items)])
        out.append((key, t, v))
    if kind == "llama" and pre == "default":
        out.append(("tokenizer.ggml.add_space_prefix", Q.T_BOOL, False))
    return out


# ---------------------------------------------------------------- configs (published layouts)

def configs(vocab):
    """Each family's config.json in the layout its published checkpoints have."""
    c = {}
    c["qwen3"] = dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", attention_bias=False,
                      attention_dropout=0.0, bos_token_id=0, eos_token_id=0, head_dim=64, hidden_act="silu",
                      hidden_size=256, initializer_range=0.02, intermediate_size=256, max_position_embeddings=512,
                      max_window_layers=2, num_attention_heads=8, num_hidden_layers=2, num_key_value_heads=2,
                      rms_norm_eps=1e-6, rope_scaling=None, rope_theta=1000000.0, sliding_window=None,
                      tie_word_embeddings=True, use_cache=True, use_sliding_window=False,
                      vocab_size=vocab["qwen3"])
    c["smollm3"] = dict(architectures=["SmolLM3ForCausalLM"], model_type="smollm3", attention_bias=False,
                        attention_dropout=0.0, bos_token_id=None, eos_token_id=1, hidden_act="silu",
                        hidden_size=128, initializer_range=0.02, intermediate_size=192,
                        max_position_embeddings=512, max_window_layers=4, mlp_bias=False,
                        no_rope_layer_interval=4, no_rope_layers=[1, 1, 1, 0], num_attention_heads=4,
                        num_hidden_layers=4, num_key_value_heads=2, pad_token_id=None, rms_norm_eps=1e-6,
                        rope_scaling=None, rope_theta=50000.0, sliding_window=None, tie_word_embeddings=True,
                        use_cache=True, use_sliding_window=False, vocab_size=vocab["smollm3"])
    gem = dict(architectures=["Gemma3ForCausalLM"], model_type="gemma3_text", _sliding_window_pattern=6,
               attention_bias=False, attention_dropout=0.0, attn_logit_softcapping=None, bos_token_id=2,
               eos_token_id=1, final_logit_softcapping=None, head_dim=32, hidden_activation="gelu_pytorch_tanh",
               hidden_size=64, initializer_range=0.02, intermediate_size=128,
               layer_types=["sliding_attention"] * 5 + ["full_attention"], max_position_embeddings=512,
               num_attention_heads=2, num_hidden_layers=6, num_key_value_heads=1, pad_token_id=0,
               query_pre_attn_scalar=24, rms_norm_eps=1e-6, rope_local_base_freq=10000.0, rope_scaling=None,
               rope_theta=1000000.0, sliding_window=16, use_bidirectional_attention=False, use_cache=True,
               vocab_size=vocab["gemma3"])
    c["gemma3"] = gem
    c["lfm2"] = dict(architectures=["Lfm2ForCausalLM"], model_type="lfm2", block_auto_adjust_ff_dim=True,
                     block_dim=128, block_ff_dim=192, block_ffn_dim_multiplier=1.0, block_mlp_init_scale=1.0,
                     block_multiple_of=64, block_norm_eps=1e-5, block_out_init_scale=1.0, block_use_swiglu=True,
                     block_use_xavier_init=True, bos_token_id=1, conv_L_cache=3, conv_bias=False, conv_dim=128,
                     conv_dim_out=128, conv_use_xavier_init=True, eos_token_id=7, hidden_size=128,
                     initializer_range=0.02, intermediate_size=192,
                     layer_types=["conv", "conv", "full_attention", "conv"], max_position_embeddings=512,
                     norm_eps=1e-5, num_attention_heads=4, num_heads=4, num_hidden_layers=4,
                     num_key_value_heads=2, pad_token_id=0, rope_theta=1000000.0, tie_embedding=True, full_attn_idxs=[2],
                     use_cache=True, use_pos_enc=True, vocab_size=vocab["lfm2"])
    c["qwen3_5"] = dict(architectures=["Qwen3_5ForCausalLM"], model_type="qwen3_5_text", attention_bias=False,
                        attention_dropout=0.0, bos_token_id=None, eos_token_id=0, head_dim=64, hidden_act="silu",
                        hidden_size=128, initializer_range=0.02, intermediate_size=128,
                        layer_types=["linear_attention"] * 3 + ["full_attention"], linear_conv_kernel_dim=4,
                        linear_key_head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4,
                        linear_value_head_dim=32, max_position_embeddings=512, num_attention_heads=4,
                        num_hidden_layers=4, num_key_value_heads=2, rms_norm_eps=1e-6,
                        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                                         "partial_rotary_factor": 0.25, "mrope_section": [3, 3, 2],
                                         "mrope_interleaved": True},
                        tie_word_embeddings=True, use_cache=True, vocab_size=vocab["qwen3_5"])
    return c


# ---------------------------------------------------------------- multimodal layouts

def gemma3_mm(text_cfg, text_sd):
    """google/gemma-3-4b-pt's layout: language_model.model.*, vision_tower.*, multi_modal_projector.*"""
    tc = dict(text_cfg)
    tc.pop("architectures", None)
    tc["rope_scaling"] = {"rope_type": "linear", "factor": 8.0}
    v = tc["vocab_size"]
    cfg = dict(architectures=["Gemma3ForConditionalGeneration"], model_type="gemma3", text_config=tc,
               vision_config=dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=64,
                                  num_hidden_layers=1, num_attention_heads=2, image_size=32, patch_size=8,
                                  vision_use_head=False),
               mm_tokens_per_image=4, boi_token_index=v + 1, eoi_token_index=v + 2, image_token_index=v + 3,
               initializer_range=0.02)
    mm = transformers.Gemma3ForConditionalGeneration(cfg_class("gemma3").from_dict(dict(cfg)))
    out = {}
    for k, t in mm.state_dict().items():
        if k.startswith("model.language_model."):
            hk = "model." + k[len("model.language_model."):]
            out["language_model." + hk] = torch.from_numpy(text_sd[hk])
        elif k.startswith("model."):
            out[k[len("model."):]] = t.detach().float()
        elif k == "lm_head.weight":
            continue  # tied
        else:
            raise KeyError(f"gemma3 multimodal: unexpected {k}")
    return cfg, tc, out


def qwen35_mm_config(text_cfg):
    """Qwen/Qwen3.5-*'s config.json: the text config nested, a vision config, the MTP layer count."""
    tc = dict(text_cfg)
    tc.pop("architectures", None)
    v = tc["vocab_size"]
    return dict(architectures=["Qwen3_5ForConditionalGeneration"], model_type="qwen3_5", text_config=tc,
                vision_config=dict(model_type="qwen3_5_vision", depth=1, hidden_size=32, intermediate_size=64,
                                   num_heads=2, in_channels=3, patch_size=4, spatial_merge_size=2,
                                   temporal_patch_size=2, out_hidden_size=tc["hidden_size"],
                                   num_position_embeddings=16),
                image_token_id=v + 3, video_token_id=v + 4, vision_start_token_id=v + 1, vision_end_token_id=v + 2,
                tie_word_embeddings=tc["tie_word_embeddings"])


def qwen35_mm(text_cfg, text_sd):
    """Qwen/Qwen3.5-*'s layout: model.language_model.*, model.visual.*, mtp.* (and lm_head when untied)."""
    cfg = qwen35_mm_config(text_cfg)
    tc = cfg["text_config"]
    mm = transformers.Qwen3_5ForConditionalGeneration(cfg_class("qwen3_5").from_dict(json.loads(json.dumps(cfg))))
    out = {}
    for k, t in mm.state_dict().items():
        if k.startswith("model.language_model."):
            out[k] = torch.from_numpy(text_sd["model." + k[len("model.language_model."):]])
        elif k.startswith("model.visual."):
            out[k] = t.detach().float()
        elif k == "lm_head.weight":
            if not tc["tie_word_embeddings"]:
                out[k] = torch.from_numpy(text_sd[k])
        else:
            raise KeyError(f"qwen3.5 multimodal: unexpected {k}")
    # The multi-token-prediction head the published checkpoints carry (transformers ignores it).
    full = [i for i, t in enumerate(tc["layer_types"]) if t == "full_attention"][0]
    g = torch.Generator().manual_seed(5)
    h = tc["hidden_size"]
    mtp = {"mtp.fc.weight": (h, 2 * h), "mtp.pre_fc_norm_embedding.weight": (h,),
           "mtp.pre_fc_norm_hidden.weight": (h,), "mtp.norm.weight": (h,)}
    for k, a in text_sd.items():
        p = f"model.layers.{full}."
        if k.startswith(p):
            mtp["mtp.layers.0." + k[len(p):]] = a.shape
    for k, shape in mtp.items():
        out[k] = torch.randn(*shape, generator=g) * 0.05
    cfg = json.loads(json.dumps(cfg))
    cfg["text_config"].update(mtp_num_hidden_layers=1, mtp_use_dedicated_embeddings=False)
    return cfg, tc, out


def write_mm(dirpath, cfg, tensors, dtype):
    os.makedirs(dirpath, exist_ok=True)
    tt = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[dtype]
    save_file({k: v.to(tt).contiguous() for k, v in tensors.items()}, os.path.join(dirpath, "model.safetensors"),
              metadata={"format": "pt"})
    c = dict(cfg)
    c["torch_dtype"] = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype]
    json.dump(c, open(os.path.join(dirpath, "config.json"), "w"), indent=2)


def check_mm_loads(dirpath, ref, prompt):
    """transformers itself must read the multimodal layout and agree with the text model."""
    try:
        cls = transformers.AutoModelForImageTextToText
        m = cls.from_pretrained(dirpath, dtype=torch.float64).eval()
        with torch.no_grad():
            a = m(input_ids=torch.tensor([prompt])).logits[0, -1]
            b = ref(torch.tensor([prompt])).logits[0, -1]
        print(f"  {os.path.basename(dirpath)}: transformers loads it, last-logit max diff {float((a - b).abs().max()):.2e}",
              flush=True)
    except Exception as e:  # a finding to report, not a reason to drop the fixture
        print(f"  {os.path.basename(dirpath)}: transformers could not load the layout: {type(e).__name__}: {e}",
              flush=True)


# ---------------------------------------------------------------- prompts and references

def prompt_texts(tok, lines, min_tokens, n, rng):
    out = []
    for _ in range(n):
        j = rng.randrange(0, len(lines) - 200)
        text = ""
        while len(tok.encode(text, add_special_tokens=False).ids) < min_tokens:
            text += lines[j]
            j += 1
        out.append(text.rstrip("\n"))
    return out


def cases_for(fmt, path, m, tok, candidates, min_margin=0.02, want=3, steps=16):
    cases, best = [], None
    for text in candidates:
        pids = tok.encode(text, add_special_tokens=True).ids
        g, tops, margins = E.greedy(m, pids, steps)
        case = {"format": fmt, "path": path, "prompt": text, "prompt_ids": pids, "greedy": g, "top": tops,
                "min_margin": min(margins)}
        if min(margins) >= min_margin:
            cases.append(case)
            if len(cases) == want:
                break
        else:
            cut = next(i for i, x in enumerate(margins) if x < min_margin)
            if best is None or cut > len(best["greedy"]):
                best = dict(case, greedy=g[:cut], top=tops[:cut], min_margin=min(margins[:cut] or [1.0]))
    if not cases:
        if best is None or len(best["greedy"]) < 4:
            raise RuntimeError(f"{fmt}: no prompt with a safe greedy margin")
        cases.append(best)
    return cases


FAMILIES = {
    # name: (hf dtype, mlx variants [(dir, bits)], gguf schemes, multimodal writer, min prompt tokens)
    "qwen3": ("BF16", [("mlx4", 4)], ["q4_k"], None, 24),
    "qwen3_5": ("BF16", [("mlx4", 4), ("mlx8", 8)], ["q8_0"], qwen35_mm, 72),
    "gemma3": ("F32", [("mlx4", 4), ("mlx8", 8)], ["q8_0", "f16"], gemma3_mm, 44),
    "smollm3": ("F16", [("mlx4", 4)], ["q8_0"], None, 24),
    "lfm2": ("BF16", [("mlx4", 4), ("mlx8", 8)], ["q8_0"], None, 24),
}


def build(name, cfg_json, tok, tok_args, lines, out, rng):
    hf_dtype, mlx_variants, schemes, mm_writer, min_tokens = FAMILIES[name]
    torch.manual_seed(1)
    model, cobj = text_model(cfg_json)
    mt = cfg_json["model_type"]
    print(f"== {name}: {type(model).__name__}, {sum(p.numel() for p in model.parameters())} parameters; "
          f"config {json.dumps({k: v for k, v in cobj.to_dict().items() if 'rope' in k or 'layer_types' in k or 'window' in k})}",
          flush=True)
    ids = []
    for ln in lines[:12000]:
        ids += tok.encode(ln, add_special_tokens=False).ids
    t0 = time.time()
    model = train_tiny(model, ids, steps=300)
    print(f"  trained in {time.time() - t0:.0f}s", flush=True)
    tied = is_tied(model)
    sd = state(model)
    if tied:
        sd.pop("lm_head.weight", None)
    for k in list(sd):
        if "rotary" in k or "inv_freq" in k:
            del sd[k]
    print(f"  tied {tied}; tensors: " + ", ".join(f"{k}{list(v.shape)}" for k, v in sd.items() if ".layers." not in k or ".layers.0." in k or ".layers.3." in k),
          flush=True)
    tc = tc_extras(cobj, sd, mt)
    mdir = os.path.join(out, "models", name)
    os.makedirs(mdir, exist_ok=True)
    formats = {}  # format -> (path, deq, ref config)

    def guarded(fmt, fn):
        try:
            formats[fmt] = fn()
        except Exception:
            print(f"  {fmt}: FAILED", flush=True)
            traceback.print_exc()

    guarded("hf", lambda: ("hf", E.write_hf(os.path.join(mdir, "hf"), sd, cfg_json, hf_dtype, tied), cfg_json))
    for d, bits in mlx_variants:
        mcfg = cfg_json
        if mm_writer is qwen35_mm:
            # mlx-lm converts the published multimodal checkpoint: its config, language weights only.
            mcfg = qwen35_mm_config(cfg_json)
        guarded(d, lambda d=d, bits=bits, mcfg=mcfg: (d, F.write_mlx(os.path.join(mdir, d), mt, sd, mcfg, bits, 64, tied),
                                                       cfg_json))
    for sch in schemes:
        ref_cfg = cfg_json
        if mt == "gemma3_text":
            # llama.cpp scales gemma3 queries by 1/sqrt(head_dim) and has no key for
            # query_pre_attn_scalar: the GGUF reference is what a GGUF reader can compute.
            ref_cfg = dict(cfg_json, query_pre_attn_scalar=cfg_json["head_dim"])
        guarded(sch, lambda sch=sch, ref_cfg=ref_cfg: (
            f"{sch}.gguf", F.write_gguf(os.path.join(mdir, f"{sch}.gguf"), mt, tc, sd, sch, tied,
                                        gguf_tok_kv(tok, tok_args), f"laya-fixture-{name}"), ref_cfg))
    if mm_writer is not None:
        def mm():
            cfg, tcfg, tensors = mm_writer(cfg_json, sd)
            dpath = os.path.join(mdir, "hf-mm")
            write_mm(dpath, cfg, tensors, "BF16")
            deq = {}
            for k, v in sd.items():
                deq[k] = torch.from_numpy(v).to(torch.bfloat16).to(torch.float64).numpy()
            if tied:
                deq["lm_head.weight"] = deq["model.embed_tokens.weight"]
            return "hf-mm", deq, dict(tcfg, architectures=cfg_json["architectures"])
        guarded("hf-mm", mm)
    for d in ["hf", "hf-mm"] + [d for d, _ in mlx_variants]:
        p = os.path.join(mdir, d)
        if os.path.isdir(p):
            tok.save(os.path.join(p, "tokenizer.json"))
            json.dump({"add_bos_token": tok_args[5]}, open(os.path.join(p, "tokenizer_config.json"), "w"))
    candidates = prompt_texts(tok, lines[20000:], min_tokens, 10, rng)
    cases = []
    for fmt, (path, deq, rcfg) in formats.items():
        try:
            m = reference_model(rcfg, deq)
            if fmt == "hf-mm":
                check_mm_loads(os.path.join(mdir, path), m, tok.encode(candidates[0], add_special_tokens=True).ids)
            got = cases_for(fmt, path, m, tok, candidates)
            cases += got
            print(f"  {fmt}: {len(got)} prompts of {[len(c['prompt_ids']) for c in got]} tokens, "
                  f"{[len(c['greedy']) for c in got]} steps", flush=True)
        except Exception:
            print(f"  {fmt}: reference FAILED", flush=True)
            traceback.print_exc()
    json.dump({"model": name, "cases": cases}, open(os.path.join(mdir, "reference.json"), "w"))
    sizes = {}
    for dp, _, fs in os.walk(mdir):
        for f in fs:
            sizes[os.path.relpath(os.path.join(dp, f), mdir)] = os.path.getsize(os.path.join(dp, f))
    print(f"  {name}: {sum(sizes.values()) / 1e6:.2f} MB: {sizes}", flush=True)
    return model, cobj


def heldout(name, cfg_json, tok, lines, out, rng):
    """An untrained model with larger weights, in the text-only HF layout, with its reference."""
    torch.manual_seed(1000 + len(name))
    c = dict(cfg_json, initializer_range=0.25)
    model, cobj = text_model(c)
    model = model.float().eval()
    with torch.no_grad():
        for k, p in model.named_parameters():
            if k.endswith("norm.weight"):
                centred = name in ("gemma3", "qwen3_5") and not k.endswith("linear_attn.norm.weight")
                p.copy_(torch.randn_like(p) * 0.1 + (0.0 if centred else 1.0))
    tied = is_tied(model)
    sd = state(model)
    if tied:
        sd.pop("lm_head.weight", None)
    d = os.path.join(out, "heldout", name)
    deq = E.write_hf(os.path.join(d, "hf"), sd, c, "F32", tied)
    tok.save(os.path.join(d, "hf", "tokenizer.json"))
    m = reference_model(c, deq)
    cands = prompt_texts(tok, lines[30000:], FAMILIES[name][4], 6, rng)
    cases = cases_for("hf", "hf", m, tok, cands, want=2)
    json.dump({"model": name, "cases": cases}, open(os.path.join(d, "reference.json"), "w"))
    print(f"  heldout {name}: {len(cases)} prompts", flush=True)


def main(corpus, out, only):
    random.seed(0)
    rng = random.Random(7)
    print("transformers", transformers.__version__, "torch", torch.__version__, "device", dev, flush=True)
    lines = corpus_lines(corpus)
    random.shuffle(lines)
    toks = tokenizers_for(lines[:20000])
    tokdir = os.path.join(out, "tokenizer")
    os.makedirs(tokdir, exist_ok=True)
    cfgs = configs({k: v[0].get_vocab_size() for k, v in toks.items()})
    for name in only or list(FAMILIES):
        tok, args = toks[name]
        tok.save(os.path.join(tokdir, f"tiny-{name}-tokenizer.json"))
        try:
            build(name, cfgs[name], tok, args, lines, out, rng)
        except Exception:
            print(f"== {name}: FAILED", flush=True)
            traceback.print_exc()
        try:
            heldout(name, cfgs[name], tok, lines, out, rng)
        except Exception:
            print(f"  heldout {name}: FAILED", flush=True)
            traceback.print_exc()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
