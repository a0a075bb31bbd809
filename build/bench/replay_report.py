"""Prints laya replay JSON reports as a Markdown table (build/bench/replay.sh)."""
import json
import os
import sys

print("| run | chars | requests | shown | wrong | keystrokes saved | pause→visible p50 / p95 / max ms | engine ms/request p50 / mean |")
print("|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
    with open(path) as f:
        r = json.load(f)
    lat, eng = r["latency_ms"], r["engine_ms_per_request"]
    name = os.path.basename(path).removesuffix(".json")
    print(f"| {name} | {r['chars']} | {r['requests']} | {r['suggestions_shown']} | "
          f"{r['wrong_suggestions']} ({100 * r['wrong_share']:.0f}%) | {100 * r['keystrokes_saved']:.1f}% | "
          f"{lat['p50']:.1f} / {lat['p95']:.1f} / {lat['max']:.1f} | {eng['p50']:.1f} / {eng['mean']:.1f} |")
