import { test } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import {
  ErrorLog,
  LayaClient,
  LineSplitter,
  defaultSocketPath,
  maxSessionName,
  prefixChars,
  sessionName,
  textWindow,
} from "../src/protocol";

// A fake server speaking the protocol: it answers "<prefix>" one character per piece, in
// writes that split lines and multi-byte characters; "fail" gets an error frame, "slow" pieces
// every 5 ms until canceled, "hangup" a closed connection; a client name over 256 bytes is
// refused as the Go server refuses it. It records every message.
async function fakeServer(): Promise<{ path: string; got: any[]; close: () => Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "laya-"));
  const sock = path.join(dir, "s.sock");
  const got: any[] = [];
  const conns = new Set<net.Socket>();
  const server = net.createServer((c) => {
    conns.add(c);
    c.on("close", () => conns.delete(c));
    const lines = new LineSplitter();
    const slow = new Map<string, NodeJS.Timeout>();
    // Bytes, not strings, so that writes may cut a UTF-8 sequence.
    const send = (frames: object[]) => {
      const bytes = Buffer.from(frames.map((f) => JSON.stringify(f) + "\n").join(""));
      for (let i = 0; i < bytes.length; i += 7) {
        c.write(bytes.subarray(i, i + 7));
      }
    };
    c.on("data", (chunk) => {
      for (const line of lines.push(chunk.toString("utf8"))) {
        const m = JSON.parse(line);
        got.push(m);
        if (m.cancel !== undefined) {
          clearInterval(slow.get(m.cancel));
          send([{ id: m.cancel, text: "", done: true, canceled: true }]);
        } else if (m.client !== undefined && Buffer.byteLength(m.client) > 256) {
          send([{ id: m.id, text: "", done: true, error: "client is limited to 256 bytes" }]);
        } else if (m.prefix === "fail") {
          send([{ id: m.id, text: "", done: true, error: "model exploded" }]);
        } else if (m.prefix === "hangup") {
          c.destroy();
        } else if (m.prefix === "slow") {
          slow.set(m.id, setInterval(() => send([{ id: m.id, text: "." }]), 5));
        } else {
          const text = `<${m.prefix}>`;
          send([...[...text].map((ch) => ({ id: m.id, text: ch })), { id: m.id, text, done: true, tokens: text.length }]);
        }
      }
    });
  });
  await new Promise<void>((r) => server.listen(sock, r));
  return {
    path: sock,
    got,
    close: () =>
      new Promise<void>((r) => {
        for (const c of conns) c.destroy();
        server.close(() => r());
      }),
  };
}

test("round trip streams pieces and resolves with the final frame", async () => {
  const srv = await fakeServer();
  const c = new LayaClient(srv.path);
  let streamed = "";
  const f = await c.complete({ prefix: "héllo ✓", suffix: "x", client: "doc" }, { onText: (t) => (streamed += t) });
  assert.equal(f.text, "<héllo ✓>");
  assert.equal(streamed, f.text);
  assert.equal(f.done, true);
  assert.deepEqual(srv.got[0], { prefix: "héllo ✓", suffix: "x", client: "doc", id: "v1" });
  c.close();
  await srv.close();
});

test("concurrent requests are matched by id", async () => {
  const srv = await fakeServer();
  const c = new LayaClient(srv.path);
  const prefixes = Array.from({ length: 50 }, (_, i) => `p${i}`);
  const streamed = new Map<string, string>();
  const results = await Promise.all(
    prefixes.map((p) => c.complete({ prefix: p }, { onText: (t) => streamed.set(p, (streamed.get(p) ?? "") + t) })),
  );
  results.forEach((f, i) => {
    assert.equal(f.text, `<${prefixes[i]}>`);
    assert.equal(streamed.get(prefixes[i]), f.text);
  });
  c.close();
  await srv.close();
});

test("aborting sends a cancel and rejects", async () => {
  const srv = await fakeServer();
  const c = new LayaClient(srv.path);
  const abort = new AbortController();
  let pieces = 0;
  const p = c.complete({ prefix: "slow" }, { signal: abort.signal, onText: () => ++pieces === 2 && abort.abort() });
  await assert.rejects(p, { name: "AbortError" });
  await new Promise((r) => setTimeout(r, 30));
  assert.deepEqual(srv.got.at(-1), { cancel: srv.got[0].id });
  // The connection stays usable.
  assert.equal((await c.complete({ prefix: "after" })).text, "<after>");
  // An already aborted signal sends nothing.
  await assert.rejects(c.complete({ prefix: "never" }, { signal: AbortSignal.abort() }), { name: "AbortError" });
  assert.equal(srv.got.filter((m) => m.prefix === "never").length, 0);
  c.close();
  await srv.close();
});

test("error frames and lost connections reject; the client reconnects", async () => {
  const srv = await fakeServer();
  const c = new LayaClient(srv.path);
  await assert.rejects(c.complete({ prefix: "fail" }), /model exploded/);
  await assert.rejects(c.complete({ prefix: "hangup" }), /connection to the server closed/);
  assert.equal((await c.complete({ prefix: "back" })).text, "<back>");
  c.close();
  await srv.close();
  await assert.rejects(c.complete({ prefix: "gone" }), /cannot connect/);
});

test("line splitter handles any chunking and bounds line length", () => {
  const frames = ['{"id":"a","text":"x"}', '{"id":"b","text":"y"}', '{"id":"c","text":"z","done":true}'];
  const stream = frames.join("\r\n") + "\n";
  for (let size = 1; size <= stream.length; size++) {
    const s = new LineSplitter();
    const out: string[] = [];
    for (let i = 0; i < stream.length; i += size) out.push(...s.push(stream.slice(i, i + size)));
    assert.deepEqual(out, frames);
  }
  assert.throws(() => new LineSplitter(10).push("x".repeat(11)), /longer than 10/);
});

test("text window starts at a stable place", () => {
  const text = "a".repeat(20000);
  const starts = new Set<number>();
  for (let off = 0; off <= text.length; off++) {
    const { prefix, suffix } = textWindow(text, off);
    assert.ok(prefix.length <= prefixChars + 512 && prefix.length >= Math.min(off, prefixChars));
    assert.equal(suffix.length, Math.min(512, text.length - off));
    starts.add(off - prefix.length);
  }
  // One start per step of the window, not one per keystroke.
  assert.ok(starts.size <= Math.ceil(text.length / 512) + 1, `${starts.size} distinct starts`);
});

test("default socket path follows the server's rules", () => {
  assert.equal(defaultSocketPath({ LAYA_SOCKET: "/x.sock" }, "darwin", "/Users/u"), "/x.sock");
  assert.equal(defaultSocketPath({}, "darwin", "/Users/u"), "/Users/u/Library/Application Support/Laya/laya.sock");
  assert.equal(defaultSocketPath({ XDG_RUNTIME_DIR: "/run/user/1" }, "linux", "/home/u"), "/run/user/1/laya/laya.sock");
  assert.equal(defaultSocketPath({}, "linux", "/home/u"), "/home/u/.cache/laya/laya.sock");
});

test("long document URIs get session names the server takes", async () => {
  const short = "file:///home/me/x.py";
  assert.equal(sessionName(short), short);
  const long = "file:///home/me/" + "déjà/".repeat(60) + "x.py"; // multi-byte: bytes, not characters, count
  const other = long.replace("x.py", "y.py");
  for (const uri of [long, other, "untitled:" + "✓".repeat(86)]) {
    assert.ok(Buffer.byteLength(sessionName(uri)) <= maxSessionName, uri);
  }
  assert.equal(sessionName(long), sessionName(long), "the same document must keep its session");
  assert.notEqual(sessionName(long), sessionName(other));

  const srv = await fakeServer();
  const c = new LayaClient(srv.path);
  await assert.rejects(c.complete({ prefix: "p", client: long }), /client is limited/);
  assert.equal((await c.complete({ prefix: "p", client: sessionName(long) })).text, "<p>");
  c.close();
  await srv.close();
});

test("the error log reports each failure once, and none for aborts", () => {
  const log = new ErrorLog();
  const aborted = new Error("laya: request aborted");
  aborted.name = "AbortError";
  assert.equal(log.report(aborted), undefined);
  assert.equal(log.report(new Error("laya: client is limited to 256 bytes")), "laya: client is limited to 256 bytes");
  assert.equal(log.report(new Error("laya: client is limited to 256 bytes")), undefined);
  assert.equal(log.report(new Error("laya: cannot connect to /s.sock")), "laya: cannot connect to /s.sock");
  log.ok();
  assert.equal(log.report(new Error("laya: cannot connect to /s.sock")), "laya: cannot connect to /s.sock");
});
