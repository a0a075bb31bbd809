#!/usr/bin/env bash
# One call on the GPU machine: the 2026 families' parity fixtures (fixtures_2026.py, one process
# per family) and HuggingFace tokenizer references for their tiny tokenizers. Results go to $OUT:
# fx2026.tgz.* (models/, tokenizer/) in pieces of at most 15 MB, heldout.tgz and the logs.
set -uo pipefail
T0=$(date +%s)
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true OMP_NUM_THREADS=3
python3 -c 'import torch, transformers, tokenizers, safetensors, numpy; print("torch", torch.__version__, "transformers", transformers.__version__, "tokenizers", tokenizers.__version__, "numpy", numpy.__version__, "cuda", torch.cuda.is_available())'
python3 -c 'import importlib.util as u; print({m: u.find_spec(m) is not None for m in ["gguf", "mlx", "mlx_lm", "sentencepiece", "fla", "causal_conv1d", "kernels"]})'
STD=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
W=/tmp/laya-2026; rm -rf $W; mkdir -p $W/fx
FAMS=${FAMS:-"qwen3 qwen3_5 gemma3 smollm3 lfm2"}
for f in $FAMS; do
  python3 fixtures_2026.py "$STD" $W/fx $f > $W/$f.log 2>&1 &
done
wait
for f in $FAMS; do cat $W/$f.log; done | tee $OUT/fixtures_2026.log
TD=$W/fx/tokenizer
pairs=""
for f in $FAMS; do pairs="$pairs tiny-$f=$TD/tiny-$f-tokenizer.json"; done
python3 tokrefs.py $TD "$STD" $pairs 2>&1 | tee -a $OUT/fixtures_2026.log
tar -C $W/fx -czf $W/fx.tgz models tokenizer && split -b 15M $W/fx.tgz $OUT/fx2026.tgz.
tar -C $W/fx -czf $OUT/heldout.tgz heldout
ls -la $OUT; echo "total $(( $(date +%s) - T0 ))s"
