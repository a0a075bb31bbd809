// Reference tokenization with HuggingFace tokenizers (the npm package "tokenizers", Rust
// bindings). Usage: node hf-reference.js TOKENIZER_JSON < lines of {"text","add_special"}
// Prints {"ids":[...],"decoded":...,"decoded_skip":...} per line. Used by TestAgainstHFNode.
const { Tokenizer } = require("tokenizers");
const readline = require("readline");

async function main() {
  const tk = Tokenizer.fromFile(process.argv[2]);
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line) continue;
    const c = JSON.parse(line);
    const enc = await tk.encode(c.text, null, { addSpecialTokens: c.add_special });
    const ids = enc.getIds();
    const decoded = await tk.decode(ids, false);
    const decodedSkip = await tk.decode(ids, true);
    process.stdout.write(JSON.stringify({ ids, decoded, decoded_skip: decodedSkip }) + "\n");
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
