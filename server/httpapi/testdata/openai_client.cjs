// Drives Laya's HTTP endpoint with the official openai npm client, the way OpenAI-compatible
// editor plugins do, and prints what it got as one JSON object. LAYA_URL and LAYA_KEY name the
// endpoint; NODE_PATH finds the openai package.
const { OpenAI, AuthenticationError } = require("openai");

async function main() {
  const client = new OpenAI({ baseURL: process.env.LAYA_URL + "/v1", apiKey: process.env.LAYA_KEY, maxRetries: 0 });
  const out = {};

  const c = await client.completions.create({ model: "laya", prompt: "def add(a, b):", suffix: "\n", max_tokens: 8, temperature: 0, stop: ["\n\n"] });
  out.completion = { object: c.object, text: c.choices[0].text, finish: c.choices[0].finish_reason, total: c.usage.total_tokens };

  const stream = await client.completions.create({ model: "laya", prompt: "for i in", max_tokens: 8, stream: true });
  let text = "";
  let finish = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    text += chunk.choices[0].text;
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  out.stream = { text, finish, chunks };

  const models = [];
  for await (const m of client.models.list()) models.push(m.id);
  out.models = models;

  const wrong = new OpenAI({ baseURL: process.env.LAYA_URL + "/v1", apiKey: "wrong", maxRetries: 0 });
  try {
    await wrong.completions.create({ model: "laya", prompt: "x" });
    out.wrongKey = "accepted";
  } catch (e) {
    out.wrongKey = e instanceof AuthenticationError ? "AuthenticationError " + e.status : String(e);
  }

  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e));
  process.exit(1);
});
