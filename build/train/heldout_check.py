"""Compare `laya generate` with a reference.json written by fixtures.py or fixtures_2026.py: the
greedy ids exactly and each reference top-5 logprob within 1e-3 (3e-3 for 4-bit formats, whose
activations the CPU backend quantizes). For models the project's tests do not see, such as the
untrained held-out models fixtures_2026.py writes under heldout/<family>/.

Usage: python3 heldout_check.py LAYA_BINARY MODEL_DIR [MODEL_DIR ...]
Exits 1 when any case differs. Needs only the standard library.
"""
import json
import os
import subprocess
import sys

FOUR_BIT = {"mlx4", "q4_0", "q4_k"}


def run_case(laya, model_dir, case):
    cmd = [laya, "generate", "--model", os.path.join(model_dir, case["path"]),
           "--prompt-ids", ",".join(str(i) for i in case["prompt_ids"]),
           "--max-tokens", str(len(case["greedy"])), "--temperature", "0", "--logprobs", "5", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return [f"laya failed ({out.returncode}): {out.stderr.strip()[-400:]}"]
    got = json.loads(out.stdout)
    tol = 3e-3 if case["format"] in FOUR_BIT else 1e-3
    problems = []
    steps = got.get("steps", [])
    ids = got.get("ids", [])
    n = min(len(ids), len(case["greedy"]))
    if ids[:n] != case["greedy"][:n]:
        problems.append(f"greedy {ids}, reference {case['greedy']}")
    elif len(ids) < len(case["greedy"]):
        problems.append(f"stopped ({got.get('stop')}) after {len(ids)} of {len(case['greedy'])} tokens; "
                        f"the reference continues with {case['greedy'][len(ids):]}")
    worst = 0.0
    for i, (want, step) in enumerate(zip(case["top"], steps)):
        have = {int(t[0]): float(t[1]) for t in step.get("top", [])}
        for tid, lp in want:
            if tid not in have:
                # Near-equal entries at the bottom of the top 5 may swap with a sixth.
                if lp > min(have.values(), default=0.0) + tol:
                    problems.append(f"step {i}: token {tid} ({lp:.5f}) missing from laya's top 5 {sorted(have.items())}")
                continue
            d = abs(have[tid] - lp)
            worst = max(worst, d)
            if d > tol:
                problems.append(f"step {i}: token {tid} logprob {have[tid]:.5f}, reference {lp:.5f}")
    return problems, worst


def main(laya, dirs):
    bad = 0
    for d in dirs:
        ref = json.load(open(os.path.join(d, "reference.json")))
        for k, case in enumerate(ref["cases"]):
            res = run_case(laya, d, case)
            problems, worst = res if isinstance(res, tuple) else (res, float("nan"))
            status = "ok" if not problems else "DIFFERS"
            print(f"{ref['model']}/{case['format']}/{k}: {status}, {len(case['prompt_ids'])} prompt tokens, "
                  f"{len(case['greedy'])} steps, largest logprob difference {worst:.2e}")
            for p in problems[:5]:
                print("    " + p)
            bad += bool(problems)
    print(f"{bad} case(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
