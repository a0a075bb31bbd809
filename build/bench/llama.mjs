// Times llama.cpp (through node-llama-cpp's prebuilt CPU binaries) the way `laya bench` times
// laya: random prompt ids, prefill in one batch, then greedy decode one token per forward pass;
// fastest of --runs. Prints one JSON object.
//
//   node llama.mjs --model FILE.gguf --threads N --prompt-tokens P --gen-tokens G --runs R
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const opt = { model: "", threads: 2, "prompt-tokens": 128, "gen-tokens": 64, runs: 3 };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, "");
  if (!(k in opt) || i + 1 >= process.argv.length) throw new Error(`usage: --model F --threads N --prompt-tokens P --gen-tokens G --runs R (bad ${process.argv[i]})`);
  opt[k] = k === "model" ? process.argv[i + 1] : Number(process.argv[i + 1]);
}
const P = opt["prompt-tokens"], G = opt["gen-tokens"];

const llama = await getLlama({
  gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
  maxThreads: opt.threads, logLevel: LlamaLogLevel.error, progressLogs: false,
});
const model = await llama.loadModel({ modelPath: opt.model, gpuLayers: 0, useMmap: true });
const context = await model.createContext({
  contextSize: P + G + 8, batchSize: P, sequences: 1,
  threads: { ideal: opt.threads, min: opt.threads },
});
const seq = context.getSequence();
const vocab = model.fileInfo.metadata.tokenizer.ggml.tokens.length;

// The same generator as laya bench is not needed: speed does not depend on which ids.
let s = 12345;
const rand = () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
const prompt = Array.from({ length: P }, () => 3 + Math.floor(rand() * (vocab - 3)));

async function once(p, g) {
  await seq.clearHistory();
  const t0 = process.hrtime.bigint();
  await seq.evaluateWithoutGeneratingNewTokens(p);
  const t1 = process.hrtime.bigint();
  // evaluate() runs its input, then one forward pass per further token; g-1 passes here match
  // the g-1 passes laya runs to generate g tokens.
  let n = 0;
  for await (const tok of seq.evaluate([p[p.length - 1]], { temperature: 0 })) {
    void tok;
    if (++n >= g - 1) break;
  }
  const t2 = process.hrtime.bigint();
  return { prefill: Number(t1 - t0) / 1e9, decode: Number(t2 - t1) / 1e9 };
}

await once(prompt.slice(0, 16), 2); // warm-up: page the mapped weights in
let prefill = 0, decode = 0;
for (let r = 0; r < opt.runs; r++) {
  const t = await once(prompt, G);
  prefill = Math.max(prefill, P / t.prefill);
  decode = Math.max(decode, (G - 1) / t.decode);
}
console.log(JSON.stringify({
  engine: "llama.cpp (node-llama-cpp 3.22.1 prebuilt CPU)",
  threads: opt.threads, prompt_tokens: P, gen_tokens: G, runs: opt.runs,
  prefill_tok_s: prefill, decode_tok_s: decode, decode_ms_per_token: 1000 / decode,
  peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
}));
await context.dispose();
await model.dispose();
await llama.dispose();
