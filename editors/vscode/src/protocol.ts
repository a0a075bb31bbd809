// The Laya socket protocol (see the Go package server): newline-delimited JSON requests, each
// answered by zero or more {"id","text"} pieces and one final {"id","done":true,...} frame;
// {"cancel": id} abandons a request. This module has no VS Code dependency so that it can be
// tested with node alone.

import { createHash } from "node:crypto";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

/** A completion request as the server takes it (the id is added by LayaClient). */
export interface Request {
  prefix: string;
  suffix?: string;
  /** Session name: requests with the same client share a KV cache; a newer one cancels the older. */
  client?: string;
  app?: string;
  max_tokens?: number;
  temperature?: number;
  top_k?: number;
  top_p?: number;
  stop?: string[];
}

/** One line from the server. */
export interface Frame {
  id?: string | number;
  text: string;
  done?: boolean;
  canceled?: boolean;
  error?: string;
  tokens?: number;
  prompt_tokens?: number;
  reused?: number;
  latency_ms?: number;
  logprob?: number;
  stop?: string;
}

/** Where the server listens, by the same rules as the Go server.DefaultSocketPath. */
export function defaultSocketPath(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  home: string = os.homedir(),
): string {
  if (env.LAYA_SOCKET) {
    return env.LAYA_SOCKET;
  }
  if (platform === "darwin") {
    return path.join(home, "Library", "Application Support", "Laya", "laya.sock");
  }
  if (env.XDG_RUNTIME_DIR) {
    return path.join(env.XDG_RUNTIME_DIR, "laya", "laya.sock");
  }
  return path.join(home, ".cache", "laya", "laya.sock");
}

/** The most bytes the server takes in a session name (Go server.maxName). */
export const maxSessionName = 256;

/**
 * The session name for a document: its URI, or, for a URI longer than the server takes, a
 * SHA-256 of it. The same document always gets the same name, so its KV cache is reused.
 */
export function sessionName(uri: string): string {
  if (Buffer.byteLength(uri, "utf8") <= maxSessionName) {
    return uri;
  }
  return "sha256:" + createHash("sha256").update(uri, "utf8").digest("hex");
}

/**
 * Decides which failed requests to report in the output channel: not aborted ones (the user
 * typed on), and not the same message again until a request has succeeded, so that a server
 * that is down, or an error every request meets, is reported once rather than per keystroke.
 */
export class ErrorLog {
  private last?: string;

  /** The message to report for e, or undefined when it is not to be reported. */
  report(e: unknown): string | undefined {
    if (e instanceof Error && e.name === "AbortError") {
      return undefined;
    }
    const msg = e instanceof Error ? e.message : String(e);
    if (msg === this.last) {
      return undefined;
    }
    this.last = msg;
    return msg;
  }

  /** A request succeeded: the next error is news again. */
  ok(): void {
    this.last = undefined;
  }
}

/** Characters before the caret sent per request, and the step the window start moves in. */
export const prefixChars = 4000;
export const prefixStep = 512;
/** Characters after the caret sent for fill-in-the-middle. */
export const suffixChars = 512;

/**
 * The text around offset to send. The prefix starts at a multiple of prefixStep, so while the
 * user types, consecutive requests begin at the same place and the server reuses its KV cache.
 */
export function textWindow(text: string, offset: number): { prefix: string; suffix: string } {
  const start = Math.max(0, Math.floor((offset - prefixChars) / prefixStep) * prefixStep);
  return { prefix: text.slice(start, offset), suffix: text.slice(offset, offset + suffixChars) };
}

/** Splits decoded text into lines, however the chunks fall; a line longer than maxLine throws. */
export class LineSplitter {
  private buf = "";

  constructor(private readonly maxLine = 16 << 20) {}

  push(chunk: string): string[] {
    this.buf += chunk;
    const lines = this.buf.split("\n");
    this.buf = lines.pop() ?? "";
    if (this.buf.length > this.maxLine) {
      this.buf = "";
      throw new Error(`laya: line longer than ${this.maxLine} characters`);
    }
    return lines.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l)).filter((l) => l.length > 0);
  }
}

/** Options of one LayaClient.complete call. */
export interface CallOptions {
  /** Aborting cancels the request on the server and rejects with an AbortError. */
  signal?: AbortSignal;
  /** Called with each streamed piece of the suggestion. */
  onText?: (text: string) => void;
}

interface Pending {
  resolve: (f: Frame) => void;
  reject: (e: Error) => void;
  onText?: (text: string) => void;
}

function abortError(): Error {
  const e = new Error("laya: request aborted");
  e.name = "AbortError";
  return e;
}

/**
 * A connection to the Laya server, opened on first use and again after it drops. Requests may
 * overlap; frames are matched to them by id.
 */
export class LayaClient {
  private sock?: net.Socket;
  private connecting?: Promise<net.Socket>;
  private readonly pending = new Map<string, Pending>();
  private next = 0;

  constructor(
    readonly socketPath: string,
    private readonly connectTimeoutMs = 1000,
  ) {}

  /** Sends req and resolves with the final frame; an error frame rejects with its message. */
  async complete(req: Request, opts: CallOptions = {}): Promise<Frame> {
    if (opts.signal?.aborted) {
      throw abortError();
    }
    const sock = await this.connect();
    if (opts.signal?.aborted) {
      throw abortError();
    }
    const id = `v${++this.next}`;
    return new Promise<Frame>((resolve, reject) => {
      const onAbort = () => {
        if (this.pending.delete(id)) {
          this.write(sock, { cancel: id });
          reject(abortError());
        }
      };
      const done = () => opts.signal?.removeEventListener("abort", onAbort);
      this.pending.set(id, {
        resolve: (f) => {
          done();
          resolve(f);
        },
        reject: (e) => {
          done();
          reject(e);
        },
        onText: opts.onText,
      });
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      this.write(sock, { ...req, id });
    });
  }

  /** Disconnects; requests in flight reject. */
  close(): void {
    this.sock?.destroy();
    this.drop(new Error("laya: client closed"));
  }

  private write(sock: net.Socket, msg: object): void {
    sock.write(JSON.stringify(msg) + "\n");
  }

  private connect(): Promise<net.Socket> {
    if (this.sock && !this.sock.destroyed) {
      return Promise.resolve(this.sock);
    }
    if (!this.connecting) {
      this.connecting = new Promise<net.Socket>((resolve, reject) => {
        const sock = net.createConnection(this.socketPath);
        const timer = setTimeout(() => {
          sock.destroy();
          reject(new Error(`laya: no answer from ${this.socketPath}`));
        }, this.connectTimeoutMs);
        sock.once("connect", () => {
          clearTimeout(timer);
          this.attach(sock);
          resolve(sock);
        });
        sock.once("error", (e) => {
          clearTimeout(timer);
          reject(new Error(`laya: cannot connect to ${this.socketPath}: ${e.message}`));
        });
      }).finally(() => {
        this.connecting = undefined;
      });
    }
    return this.connecting;
  }

  private attach(sock: net.Socket): void {
    this.sock = sock;
    sock.setEncoding("utf8");
    const lines = new LineSplitter();
    sock.on("data", (chunk: string) => {
      let got: string[];
      try {
        got = lines.push(chunk);
      } catch (e) {
        sock.destroy(e as Error);
        return;
      }
      for (const line of got) {
        let f: Frame;
        try {
          f = JSON.parse(line) as Frame;
        } catch {
          sock.destroy(new Error("laya: bad frame from server"));
          return;
        }
        this.dispatch(f);
      }
    });
    sock.on("error", () => {}); // reported through "close"
    sock.on("close", () => {
      if (this.sock === sock) {
        this.sock = undefined;
      }
      this.drop(new Error("laya: connection to the server closed"));
    });
  }

  private dispatch(f: Frame): void {
    const key = String(f.id);
    const p = this.pending.get(key);
    if (!p) {
      return; // aborted, or an error about a line without an id
    }
    if (!f.done) {
      p.onText?.(f.text);
      return;
    }
    this.pending.delete(key);
    if (f.error) {
      p.reject(new Error(`laya: ${f.error}`));
    } else {
      p.resolve(f);
    }
  }

  private drop(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) {
      p.reject(err);
    }
  }
}
