#!/usr/bin/env bash
# One call on the GPU machine: parity fixtures and tokenizer references (in the background, on
# CPU), and the laya-code training run (GPU), all within one 10-minute command. Results go to
# $OUT as tarball pieces of at most 15 MB.
# Needs: python3 with torch, transformers, tokenizers, safetensors; .carry/gostd.tar.xz (a tar
# of the Go standard library's .go files from this machine's Go installation).
set -uo pipefail
T0=$(date +%s)
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true
python3 -c 'import torch, transformers, tokenizers, safetensors; print("torch", torch.__version__, "transformers", transformers.__version__, "tokenizers", tokenizers.__version__, "cuda", torch.cuda.is_available())'
STD=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
W=/tmp/laya-work; rm -rf $W; mkdir -p $W/go $W/fx/tokenizer $W/laya
tar -xJf ../../.carry/gostd.tar.xz -C $W/go
TD=../../testdata/tokenizer
(
  OMP_NUM_THREADS=4 python3 fixtures.py "$STD" $W/fx > $W/fixtures.log 2>&1 && echo fixtures ok >> $W/fixtures.log
  python3 tokrefs.py $W/fx/tokenizer "$STD" llama2=$TD/llama2-tokenizer.json qwen2.5=$TD/qwen2.5-tokenizer.json \
    tiny-llama=$W/fx/tokenizer/tiny-llama-tokenizer.json tiny-llama3=$W/fx/tokenizer/tiny-llama3-tokenizer.json \
    tiny-qwen2=$W/fx/tokenizer/tiny-qwen2-tokenizer.json >> $W/fixtures.log 2>&1
  tar -C $W/fx -czf $W/fx.tgz . && split -b 15M $W/fx.tgz $OUT/fx.tgz.
  echo "fixtures packed $(date +%s)" >> $W/fixtures.log
) &
FX=$!
python3 train.py --go $W/go/src --out $W/laya --deadline $((T0 + ${TRAIN_UNTIL:-400})) --limit ${LIMIT:-160000000} 2>&1 | tee $OUT/train.log
python3 tokrefs.py $W/laya "$STD" laya-code=$W/laya/laya-code/tokenizer.json 2>&1 | tee -a $OUT/train.log
cp $W/laya/hf-cases-laya-code.jsonl $W/laya/laya-code/ 2>/dev/null
tar -C $W/laya -czf $W/laya.tgz laya-code && split -b 15M $W/laya.tgz $OUT/laya.tgz.
wait $FX
cp $W/fixtures.log $OUT/
ls -la $OUT; echo "total $(( $(date +%s) - T0 ))s"
