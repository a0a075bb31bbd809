"""Trains laya-code, Laya's bundled demo and test model: a small Llama (GQA) on permissively
licensed source code, with a Llama-style byte-fallback BPE tokenizer and fill-in-the-middle
training, exported in MLX 4-bit with reference outputs and held-out metrics.

Usage (GPU machine, PyTorch + transformers + tokenizers, no network):
  python3 train.py --go GO_SRC_DIR --out OUT_DIR --deadline UNIX_TIME
"""
import argparse
import hashlib
import json
import math
import os
import random
import site
import sysconfig
import time

import numpy as np
import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM

import export as E
import toks as T

SPECIALS = ["<unk>", "<s>", "</s>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<pad>"]
BOS, EOS, FIM_P, FIM_S, FIM_M = 1, 2, 3, 4, 5
# Third-party packages whose licenses are permissive (BSD, MIT, Apache-2.0, PSF).
PY_PACKAGES = ["numpy", "scipy", "pandas", "sklearn", "sympy", "networkx", "requests", "urllib3", "click",
               "rich", "jinja2", "markupsafe", "attr", "attrs", "packaging", "pygments", "yaml", "transformers",
               "torch", "httpx", "anyio", "h11", "idna", "six", "dateutil", "pluggy", "_pytest", "typer",
               "setuptools", "wheel", "matplotlib", "flask", "werkzeug", "click", "tokenizers", "safetensors"]
PROMPTS = ["def fibonacci(n):", "for i := 0; i < len(xs); ", "import numpy as np\n", "func main() {\n",
           "class Stack:\n    def __init__(self):\n", "def read_file(path):\n    with open(path) as f:\n",
           "if err != nil {\n", "    for i in range(len(", "package main\n\nimport (\n", "def __repr__(self):\n",
           "func (s *Server) Close() error {\n", "# Return the sum of a list\ndef total(xs):\n"]


def collect(go_src, limit):
    """(path, text, source) for every file, Python and Go interleaved, up to limit bytes."""
    roots = [("python-stdlib", sysconfig.get_paths()["stdlib"], ".py", [])]
    for sp in site.getsitepackages():
        for p in PY_PACKAGES:
            if os.path.isdir(os.path.join(sp, p)):
                roots.append((f"pypi:{p}", os.path.join(sp, p), ".py", []))
    roots.append(("go-stdlib", go_src, ".go", []))
    per_root = []
    for name, root, ext, _ in roots:
        files = []
        for dp, dns, fs in os.walk(root):
            dns[:] = [d for d in dns if d not in ("site-packages", "testdata", "__pycache__", "vendor")]
            for f in fs:
                if f.endswith(ext):
                    files.append(os.path.join(dp, f))
        files.sort()
        per_root.append((name, files))
    rng = random.Random(0)
    allf = [(n, f) for n, fs in per_root for f in fs]
    rng.shuffle(allf)
    docs, total, used = [], 0, {}
    for n, f in allf:
        try:
            t = open(f, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        if not (64 <= len(t) <= 400_000):
            continue
        docs.append((f, t, n))
        used[n] = used.get(n, 0) + 1
        total += len(t)
        if total >= limit:
            break
    return docs, used, total


def fim_pieces(ids, rng, rate, maxlen=1000):
    out = []
    for s in range(0, len(ids), maxlen):
        a = ids[s:s + maxlen]
        last = s + maxlen >= len(ids)
        if len(a) >= 16 and rng.random() < rate:
            i, j = sorted(rng.sample(range(1, len(a)), 2))
            out += [BOS, FIM_P] + a[:i] + [FIM_S] + a[j:] + [FIM_M] + a[i:j] + [EOS]
        else:
            out += ([BOS] if s == 0 else []) + a + ([EOS] if last else [])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline", type=float, required=True)
    ap.add_argument("--limit", type=int, default=160_000_000)
    args = ap.parse_args()
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    docs, used, total = collect(args.go, args.limit)
    held = [d for d in docs if int(hashlib.sha1(d[0].encode()).hexdigest(), 16) % 100 == 0]
    train = [d for d in docs if int(hashlib.sha1(d[0].encode()).hexdigest(), 16) % 100 != 0]
    print(f"corpus: {len(docs)} files, {total/1e6:.1f} MB, held out {len(held)} files; {time.time()-t0:.0f}s", flush=True)

    rng = random.Random(1)
    sample, n = [], 0
    for _, t, _ in rng.sample(train, len(train)):
        sample.append(t)
        n += len(t)
        if n > 24_000_000:
            break
    tok = T.train_spm_style(sample, 12288, SPECIALS, prepend=False, pattern=T.LAYA_PAT)
    assert [tok.token_to_id(s) for s in SPECIALS[:6]] == [0, 1, 2, 3, 4, 5], "special token ids moved"
    tok.save(os.path.join(args.out, "tokenizer.json"))
    print(f"tokenizer: {tok.get_vocab_size()} tokens; {time.time()-t0:.0f}s", flush=True)

    enc = tok.encode_batch([t for _, t, _ in train], add_special_tokens=False)
    stream = []
    for e in enc:
        stream += fim_pieces(e.ids, rng, 0.3)
    data = torch.tensor(np.asarray(stream, dtype=np.int32), dtype=torch.long, device="cuda")
    print(f"train tokens: {len(data)/1e6:.1f}M ({total/len(data):.2f} bytes/token); {time.time()-t0:.0f}s", flush=True)

    cfg = dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=tok.get_vocab_size(),
               hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
               num_key_value_heads=4, head_dim=64, max_position_embeddings=1024, rms_norm_eps=1e-5,
               rope_theta=10000.0, tie_word_embeddings=True, bos_token_id=BOS, eos_token_id=EOS,
               hidden_act="silu", attention_bias=False, mlp_bias=False)
    c = LlamaConfig.from_dict(dict(cfg))
    c._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = LlamaForCausalLM(c).cuda()
    nparams = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    B, L, warm = 64, 1024, 150
    step, total_steps, losses = 0, None, []
    train_start = time.time()
    while True:
        now = time.time()
        if total_steps is None and step == 30:
            per = (now - train_start) / 30
            total_steps = 30 + int((args.deadline - now) / per)
            print(f"step time {per*1000:.0f} ms -> {total_steps} steps", flush=True)
        if total_steps is not None and step >= total_steps or now > args.deadline:
            break
        T_ = total_steps or 10_000
        lr = 2e-3 * min(1.0, (step + 1) / warm) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, step / T_))))
        for g in opt.param_groups:
            g["lr"] = lr
        ix = torch.randint(0, len(data) - L - 1, (B,), device="cuda")
        off = torch.arange(L + 1, device="cuda")
        chunk = data[ix[:, None] + off[None, :]]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(chunk[:, :-1]).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0:
            print(f"step {step} loss {loss.item():.3f} lr {lr:.2e}; {time.time()-t0:.0f}s", flush=True)
        losses.append(loss.item())
        step += 1
    train_secs = time.time() - train_start
    print(f"trained {step} steps ({step*B*L/1e6:.0f}M tokens) in {train_secs:.0f}s", flush=True)

    model = model.float().eval()
    sd = E.state(model)
    mdir = os.path.join(args.out, "laya-code")
    deq = E.write_mlx(mdir, sd, cfg, 4, 64, tied=True)
    tok.save(os.path.join(mdir, "tokenizer.json"))
    json.dump({"add_bos_token": True, "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
              open(os.path.join(mdir, "tokenizer_config.json"), "w"))
    ref = E.load_reference_model(LlamaConfig, LlamaForCausalLM, cfg, deq).cuda()

    # Held-out text shipped with the model, and its metrics on the shipped (dequantized) weights.
    hrng = random.Random(2)
    parts, size = [], 0
    for _, t, _ in hrng.sample(held, len(held)):
        t = t[:12000]
        parts.append(t)
        size += len(t)
        if size > 40000:
            break
    heldout = "\n".join(parts)
    open(os.path.join(mdir, "heldout.txt"), "w").write(heldout)
    hid = tok.encode(heldout, add_special_tokens=True).ids
    ev = E.evaluate(ref, hid, 512, device="cuda")
    json.dump(ev, open(os.path.join(mdir, "eval.json"), "w"), indent=2)
    print("eval (shipped 4-bit weights, heldout.txt):", ev, flush=True)

    # Bigger held-out evaluation for the model card: full precision vs shipped 4-bit.
    big = tok.encode("\n".join(t for _, t, _ in held)[:1_000_000], add_special_tokens=True).ids
    ev_fp = E.evaluate(model.cuda(), big, 1024, device="cuda")
    ev_q = E.evaluate(ref, big, 1024, device="cuda")
    print("held-out full precision:", ev_fp, "4-bit:", ev_q, flush=True)

    cases = []
    for p in PROMPTS:
        pids = tok.encode(p, add_special_tokens=True).ids
        g, tops, margins = E.greedy(ref, pids, 24, device="cuda")
        cut = next((i for i, m in enumerate(margins) if m < 0.02), len(margins))
        if cut >= 6:
            cases.append({"format": "mlx4", "path": ".", "prompt": p, "prompt_ids": pids, "greedy": g[:cut],
                          "top": tops[:cut], "min_margin": min(margins[:cut]),
                          "text": tok.decode(g[:cut], skip_special_tokens=False)})
        print(f"prompt {p!r}: {tok.decode(g)!r} (safe steps {cut})", flush=True)
    json.dump({"model": "laya-code", "cases": cases}, open(os.path.join(mdir, "reference.json"), "w"))
    info = {"params": nparams, "steps": step, "batch_tokens": B * L, "train_seconds": round(train_secs),
            "train_tokens": step * B * L, "corpus_files": len(docs), "corpus_bytes": total, "sources": used,
            "heldout_files": len(held), "final_train_loss": float(np.mean(losses[-50:])),
            "heldout_full_precision": ev_fp, "heldout_4bit": ev_q, "heldout_txt_4bit": ev,
            "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    json.dump(info, open(os.path.join(mdir, "training.json"), "w"), indent=2)
    print(json.dumps(info), flush=True)


if __name__ == "__main__":
    main()
