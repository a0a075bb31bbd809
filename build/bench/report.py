"""Prints the `make bench` table: laya (GGUF Q4_0, MLX 4-bit; default precision and plain int8)
next to llama.cpp (GGUF Q4_0), with the ratios and the targets of issue 4.
Argument: the directory holding run.sh's result-<config>.<round>.json files; each configuration
is reported by its fastest round (prefill and decode separately) and its largest RSS."""
import glob
import json
import os
import platform
import sys


def best(directory, config):
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, f"result-{config}.*.json"))):
        with open(path) as f:
            runs.append(json.load(f))
    if not runs:
        sys.exit(f"report: no results for {config} in {directory}")
    r = dict(runs[0])
    r["prefill_tok_s"] = max(x["prefill_tok_s"] for x in runs)
    r["decode_tok_s"] = max(x["decode_tok_s"] for x in runs)
    r["decode_ms_per_token"] = 1000 / r["decode_tok_s"]
    r["peak_rss_bytes"] = max(x["peak_rss_bytes"] for x in runs)
    r["runs"] = len(runs)
    if "bandwidth_gb_s" in r:
        # The floor uses the best bandwidth seen: the machine's, not a contended moment's.
        r["bandwidth_gb_s"] = max(x["bandwidth_gb_s"] for x in runs)
        r["floor_ms_per_token"] = r["bytes_per_token"] / (r["bandwidth_gb_s"] * 1e9) * 1000
        r["decode_over_floor"] = r["decode_ms_per_token"] / r["floor_ms_per_token"]
        r["rss_over_file"] = r["peak_rss_bytes"] / r["file_bytes"]
    return r


def main(directory):
    llama, gguf, mlx, gguf8, mlx8 = (best(directory, c) for c in
                                     ("llama", "laya-gguf", "laya-mlx", "laya-gguf-int8", "laya-mlx-int8"))
    bw = max(r["bandwidth_gb_s"] for r in (gguf, mlx, gguf8, mlx8))
    for r in (gguf, mlx, gguf8, mlx8):
        r["bandwidth_gb_s"] = bw
        r["floor_ms_per_token"] = r["bytes_per_token"] / (bw * 1e9) * 1000
        r["decode_over_floor"] = r["decode_ms_per_token"] / r["floor_ms_per_token"]
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"machine: {cpu}, {os.cpu_count()} CPUs; {gguf['threads']} threads; "
          f"{gguf['prompt_tokens']} prompt tokens, {gguf['gen_tokens']} generated; fastest of {gguf['runs']} alternating rounds")
    print(f"memory bandwidth (measured): {gguf['bandwidth_gb_s']:.1f} GB/s\n")
    head = f"{'':28}{'prefill tok/s':>14}{'decode tok/s':>14}{'ms/token':>10}{'peak RSS MiB':>14}{'RSS/file':>10}{'floor ms':>10}{'x floor':>9}"
    print(head)
    rows = [("laya, GGUF Q4_0", gguf), ("laya, MLX 4-bit", mlx), ("laya int8, GGUF Q4_0", gguf8),
            ("laya int8, MLX 4-bit", mlx8), ("llama.cpp, GGUF Q4_0", llama)]
    for name, r in rows:
        floor = r.get("floor_ms_per_token", gguf["floor_ms_per_token"])
        rss_file = r.get("rss_over_file", r["peak_rss_bytes"] / gguf["file_bytes"])
        print(f"{name:28}{r['prefill_tok_s']:14.1f}{r['decode_tok_s']:14.2f}{r['decode_ms_per_token']:10.2f}"
              f"{r['peak_rss_bytes'] / 2**20:14.1f}{rss_file:10.2f}{floor:10.2f}{r['decode_ms_per_token'] / floor:9.2f}")
    print("\nratios against llama.cpp (targets: decode >= 1.0, prefill >= 0.8; decode <= 1.5x floor; RSS <= 1.15x file)")
    ok = True
    for name, r in rows[:4]:
        d = r["decode_tok_s"] / llama["decode_tok_s"]
        p = r["prefill_tok_s"] / llama["prefill_tok_s"]
        checks = [d >= 1.0, p >= 0.8, r["decode_over_floor"] <= 1.5, r["rss_over_file"] <= 1.15]
        ok = ok and all(checks)
        marks = ["ok" if c else "MISS" for c in checks]
        print(f"  {name:26} decode {d:5.2f}x ({marks[0]})  prefill {p:5.2f}x ({marks[1]})  "
              f"floor {r['decode_over_floor']:4.2f}x ({marks[2]})  RSS {r['rss_over_file']:4.2f}x ({marks[3]})")
    print("\nall targets met" if ok else "\nsome targets missed (on a shared machine, rerun when it is idle)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: report.py BENCH_DIR")
    main(*sys.argv[1:])
