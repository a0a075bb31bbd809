"""Reference tokenizations from HuggingFace tokenizers for many strings: whitespace runs, code,
emoji and ZWJ sequences, CJK, NFD input, special-token text; with and without special tokens.

Usage: python3 tokrefs.py OUT_DIR NAME=tokenizer.json ...
"""
import json
import os
import random
import sys
import unicodedata

from tokenizers import Tokenizer

FIXED = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "a  b", "a   b  ", "trailing   ", "   leading",
    "\t\tindented\n\t\tcode", "    def f(x):\n        return x * 2\n", "if (a && b) { return c; }",
    "for i := 0; i < len(xs); i++ {\n\tsum += xs[i]\n}", "fn main() { println!(\"hi\"); }",
    "SELECT * FROM users WHERE id = 42;", "x=1;y=2\nz = x+y", "<div class=\"a\">hi</div>",
    "Hello world", "Hello World", " Hello World!", "Hello, world! How are you?", "I'm don't YOU'LL we've",
    "12345678901234567890", "3.14159 2.71828 1e-10", "$1,000,000.00", "100% (approx.)",
    "👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️‍🔥", "🇯🇵🇺🇸", "emoji 😀 in text 🚀!",
    "你好世界", "日本語のテキストです。", "한국어 문장입니다", "混合 text 和 English",
    "e\u0301", "Cafe\u0301 au lait", "A\u030a", "n\u0303o", "\u1100\u1161\u11a8",
    "ﬁ ligature ①②③ ｆｕｌｌ", "Ελληνικά", "Русский текст", "עברית", "العربية", "ไทย", "हिन्दी",
    "zero\u200bwidth", "nbsp\u00a0here", "tab\tand\u3000ideographic space", "\u2028line sep",
    "<s>", "</s>", "<unk>", "<s>hello</s>", "text <s> inside", "<|endoftext|>", "a<|endoftext|>b",
    "<|im_start|>user\nhi<|im_end|>", "<|fim_prefix|>def f(<|fim_suffix|>)<|fim_middle|>",
    "<fim_prefix>x = <fim_suffix>\n<fim_middle>", "<|begin_of_text|>Hi", "<0x41>", "▁▁already▁metaspace",
    "Ġweird Ċ bytes", "ied 4 ½ months", "Führer", "\x00\x01 control", "\x7f\x1b[0m",
    "a" * 300, "ab " * 100, " " * 40, "\n" * 12, "=" * 50, "-" * 33 + ">",
]


def random_strings(rng, n):
    pools = ["abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " \t\n  ",
             "()[]{}<>.,;:!?'\"`~@#$%^&*-_=+/\\|", "äöüßéèêçñøåæœ", "你好世界中文日本語", "😀🚀👍🏽❤️\u200d",
             "\u0301\u0308\u0303", "ﬁ①ｆ"]
    out = []
    for _ in range(n):
        k = rng.randint(1, 40)
        s = "".join(rng.choice(rng.choice(pools)) for _ in range(k))
        out.append(s)
    for _ in range(n // 2):
        k = rng.randint(1, 12)
        cps = []
        while len(cps) < k:
            c = rng.randint(0x20, 0x2FFFF)
            if 0xD800 <= c <= 0xDFFF:
                continue
            cps.append(chr(c))
        out.append("".join(cps))
    return out


def code_lines(root, rng, n):
    lines = []
    for dp, _, fs in os.walk(root):
        for f in fs:
            if f.endswith(".py") and rng.random() < 0.05:
                try:
                    lines += open(os.path.join(dp, f), encoding="utf-8").read().splitlines(keepends=True)
                except (UnicodeDecodeError, OSError):
                    pass
        if len(lines) > 50000:
            break
    rng.shuffle(lines)
    chunks = []
    for i in range(n):
        k = rng.randint(1, 6)
        chunks.append("".join(lines[i * 6:i * 6 + k]))
    return chunks


def main(out, corpus, pairs):
    rng = random.Random(1234)
    texts = FIXED + [unicodedata.normalize("NFD", s) for s in FIXED[40:60]] + random_strings(rng, 300) + code_lines(corpus, rng, 300)
    for pair in pairs:
        name, path = pair.split("=", 1)
        tok = Tokenizer.from_file(path)
        with open(os.path.join(out, f"hf-cases-{name}.jsonl"), "w") as f:
            for t in texts:
                for add in (False, True):
                    ids = tok.encode(t, add_special_tokens=add).ids
                    f.write(json.dumps({"text": t, "add_special": add, "ids": ids,
                                        "decoded": tok.decode(ids, skip_special_tokens=False)}, ensure_ascii=False) + "\n")
        print(f"tokrefs: {name}: {2 * len(texts)} cases", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
