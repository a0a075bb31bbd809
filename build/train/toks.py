"""Tokenizer builders (HuggingFace tokenizers) and their GGUF metadata, as llama.cpp's converter
writes it."""
import json

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

import quant as Q

LLAMA3_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# Laya's code tokenizer: metaspace words, runs of spaces (indentation) as their own pieces.
LAYA_PAT = r"▁?[\p{L}_]+|▁?\p{N}+|▁?[^▁\s\p{L}\p{N}_]+|▁+|\n+|\s+"

BYTE_TOKENS = [f"<0x{i:02X}>" for i in range(256)]


def _with_byte_tokens(tok, specials):
    """Put <0xXX> byte-fallback pieces right after the specials, as SentencePiece models do (the
    trainer cannot add them as ordinary vocabulary)."""
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    learned = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1]) if t not in specials]
    new = {}
    for t in list(specials) + BYTE_TOKENS + learned:
        if t not in new:
            new[t] = len(new)
    j["model"]["vocab"] = new
    for a in j["added_tokens"]:
        a["id"] = new[a["content"]]
    return Tokenizer.from_str(json.dumps(j))


def train_spm_style(lines, vocab_size, specials, prepend, pattern=None, bos="<s>", alphabet=160):
    """Llama-2 style: ▁ for spaces, BPE with byte fallback, <s> added in front."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    norm = [normalizers.Replace(" ", "▁")]
    if prepend:
        norm.insert(0, normalizers.Prepend("▁"))
    tok.normalizer = normalizers.Sequence(norm)
    if pattern:
        tok.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    dec = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    if prepend:
        dec.append(decoders.Strip(" ", 1, 0))
    tok.decoder = decoders.Sequence(dec)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - 256, special_tokens=list(specials),
                                  limit_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(lines, trainer=trainer)
    tok = _with_byte_tokens(tok, specials)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))])
    return tok


def train_byte_level(lines, vocab_size, specials, pattern, nfc, bos=None):
    tok = Tokenizer(models.BPE())
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(specials),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(lines, trainer=trainer)
    if bos:
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                          special_tokens=[(bos, tok.token_to_id(bos))])])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def gguf_vocab_kv(tok, kind, pre, bos, eos, unk, add_bos):
    """tokenizer.ggml.* metadata for a trained tokenizer."""
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    merges = j["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    added = {a["id"]: a for a in j["added_tokens"]}
    n = len(vocab) + len([a for a in added if a >= len(vocab)])
    tokens = [""] * n
    for t, i in vocab.items():
        tokens[i] = t
    for i, a in added.items():
        tokens[i] = a["content"]
    types = []
    for i, t in enumerate(tokens):
        if i in added and added[i]["special"]:
            types.append(2 if t == "<unk>" else 3)
        elif kind == "llama" and t in BYTE_TOKENS:
            types.append(6)
        else:
            types.append(1)
    kv = [("tokenizer.ggml.model", Q.T_STR, kind), ("tokenizer.ggml.pre", Q.T_STR, pre),
          ("tokenizer.ggml.tokens", Q.T_ARR, (Q.T_STR, tokens)),
          ("tokenizer.ggml.token_type", Q.T_ARR, (Q.T_I32, types))]
    if kind == "llama":
        # SentencePiece merges by piece score: a piece made by merge r scores -r, so the highest
        # score is the earliest merge, as in BPE.
        rank = {}
        for r, m in enumerate(merges):
            a, b = m.split(" ", 1)
            rank.setdefault(a + b, r)
        scores = [float(-rank[t] - 1) if t in rank else 0.0 for t in tokens]
        kv.append(("tokenizer.ggml.scores", Q.T_ARR, (Q.T_F32, scores)))
    else:
        kv.append(("tokenizer.ggml.merges", Q.T_ARR, (Q.T_STR, merges)))
    for key, v in (("bos_token_id", bos), ("eos_token_id", eos), ("unknown_token_id", unk)):
        if v is not None:
            kv.append(("tokenizer.ggml." + key, Q.T_U32, v))
    kv.append(("tokenizer.ggml.add_bos_token", Q.T_BOOL, add_bos))
    kv.append(("tokenizer.ggml.add_eos_token", Q.T_BOOL, False))
    return kv
