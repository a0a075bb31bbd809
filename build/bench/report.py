"""Prints the `make bench` table: laya (GGUF Q4_0, MLX 4-bit; default precision and plain int8)
next to llama.cpp (GGUF Q4_0), with the ratios and the targets of issue 4.
Argument: the directory holding run.sh's result-<config>.<round>.json files. Each configuration
is reported by its fastest prefill and its fastest decode round, and its largest RSS. The floor of
a decode is the bytes a token reads over the bandwidth measured right after that decode, for as
long as it ran (laya bench does this; llama.cpp's round takes the mean of the two laya runs around
it), so that both sides of the ratio see the same moment of a shared machine."""
import glob
import json
import os
import sys


def rounds(directory, config):
    runs = {}
    for path in glob.glob(os.path.join(directory, f"result-{config}.*.json")):
        with open(path) as f:
            runs[int(path.rsplit(".", 2)[-2])] = json.load(f)
    if not runs:
        sys.exit(f"report: no results for {config} in {directory}")
    return runs


def best(runs):
    fastest = max(runs, key=lambda k: runs[k]["decode_tok_s"])
    r = dict(runs[fastest])
    r["round"] = fastest
    r["prefill_tok_s"] = max(x["prefill_tok_s"] for x in runs.values())
    r["decode_ms_per_token"] = 1000 / r["decode_tok_s"]
    r["peak_rss_bytes"] = max(x["peak_rss_bytes"] for x in runs.values())
    r["runs"] = len(runs)
    return r


def floor(r, bytes_per_token, bw, peak):
    r["bandwidth_gb_s"], r["peak_bandwidth_gb_s"] = bw, peak
    r["floor_ms_per_token"] = bytes_per_token / (bw * 1e9) * 1000
    r["decode_over_floor"] = r["decode_ms_per_token"] / r["floor_ms_per_token"]
    r["decode_over_peak_floor"] = r["decode_ms_per_token"] / (bytes_per_token / (peak * 1e9) * 1000)


def main(directory):
    names = ("laya-gguf", "laya-mlx", "laya-gguf-int8", "laya-mlx-int8")
    all_runs = {c: rounds(directory, c) for c in names + ("llama",)}
    gguf, mlx, gguf8, mlx8, llama = (best(all_runs[c]) for c in names + ("llama",))
    laya_runs = [x for c in names for x in all_runs[c].values()]
    peak = max(x["peak_bandwidth_gb_s"] for x in laya_runs)
    for r in (gguf, mlx, gguf8, mlx8):
        floor(r, r["bytes_per_token"], r["bandwidth_gb_s"], peak)
    # llama.cpp ran between laya's GGUF and MLX runs of its round.
    k = llama["round"]
    around = [all_runs[c][k]["bandwidth_gb_s"] for c in ("laya-gguf", "laya-mlx") if k in all_runs[c]]
    floor(llama, gguf["bytes_per_token"], sum(around) / len(around), peak)
    rss_file = lambda r: r["peak_rss_bytes"] / gguf["file_bytes"]
    cpu = os.uname().machine
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    bws = [x["bandwidth_gb_s"] for x in laya_runs]
    print(f"machine: {cpu}, {os.cpu_count()} CPUs; {gguf['threads']} threads; "
          f"{gguf['prompt_tokens']} prompt tokens, {gguf['gen_tokens']} generated; fastest of {gguf['runs']} alternating rounds")
    print(f"memory bandwidth (measured after each decode, as long as it ran): {min(bws):.1f}-{max(bws):.1f} GB/s; "
          f"fastest single pass {peak:.1f} GB/s\n")
    print(f"{'':28}{'prefill tok/s':>14}{'decode tok/s':>14}{'ms/token':>10}{'peak RSS MiB':>14}{'RSS/file':>10}"
          f"{'GB/s':>7}{'floor ms':>10}{'x floor':>9}{'x peak':>8}")
    rows = [("laya, GGUF Q4_0", gguf), ("laya, MLX 4-bit", mlx), ("laya int8, GGUF Q4_0", gguf8),
            ("laya int8, MLX 4-bit", mlx8), ("llama.cpp, GGUF Q4_0", llama)]
    for name, r in rows:
        print(f"{name:28}{r['prefill_tok_s']:14.1f}{r['decode_tok_s']:14.2f}{r['decode_ms_per_token']:10.2f}"
              f"{r['peak_rss_bytes'] / 2**20:14.1f}{r.get('rss_over_file', rss_file(r)):10.2f}{r['bandwidth_gb_s']:7.1f}"
              f"{r['floor_ms_per_token']:10.2f}{r['decode_over_floor']:9.2f}{r['decode_over_peak_floor']:8.2f}")
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
