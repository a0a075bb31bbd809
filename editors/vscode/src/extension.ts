// Laya for VS Code: an inline completion provider that asks the Laya server on this machine.

import * as vscode from "vscode";
import { ErrorLog, LayaClient, defaultSocketPath, sessionName, textWindow } from "./protocol";

function newClient(): LayaClient {
  const configured = vscode.workspace.getConfiguration("laya").get<string>("socketPath");
  return new LayaClient(configured || defaultSocketPath());
}

function sleep(ms: number, token: vscode.CancellationToken): Promise<boolean> {
  return new Promise((resolve) => {
    if (ms <= 0) {
      resolve(!token.isCancellationRequested);
      return;
    }
    const timer = setTimeout(() => {
      sub.dispose();
      resolve(!token.isCancellationRequested);
    }, ms);
    const sub = token.onCancellationRequested(() => {
      clearTimeout(timer);
      sub.dispose();
      resolve(false);
    });
  });
}

export function activate(context: vscode.ExtensionContext): void {
  let client = newClient();
  const output = vscode.window.createOutputChannel("Laya");
  const errors = new ErrorLog();
  context.subscriptions.push(
    output,
    { dispose: () => client.close() },
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("laya.socketPath")) {
        client.close();
        client = newClient();
      }
    }),
  );

  const provider: vscode.InlineCompletionItemProvider = {
    async provideInlineCompletionItems(document, position, _context, token) {
      const cfg = vscode.workspace.getConfiguration("laya");
      if (!cfg.get<boolean>("enable", true)) {
        return undefined;
      }
      if (!(await sleep(cfg.get<number>("debounceMs", 60), token))) {
        return undefined;
      }
      const { prefix, suffix } = textWindow(document.getText(), document.offsetAt(position));
      const abort = new AbortController();
      const sub = token.onCancellationRequested(() => abort.abort());
      try {
        const f = await client.complete(
          {
            prefix,
            suffix,
            client: sessionName(document.uri.toString()),
            app: `vscode:${document.languageId}`,
            max_tokens: cfg.get<number>("maxTokens", 32),
          },
          { signal: abort.signal },
        );
        errors.ok();
        if (f.canceled || !f.text || token.isCancellationRequested) {
          return undefined;
        }
        return [new vscode.InlineCompletionItem(f.text, new vscode.Range(position, position))];
      } catch (e) {
        // No suggestion rather than an error popup; what went wrong goes to the output channel.
        const msg = errors.report(e);
        if (msg !== undefined) {
          output.appendLine(`${new Date().toISOString()} ${msg}`);
        }
        return undefined;
      } finally {
        sub.dispose();
      }
    },
  };
  context.subscriptions.push(vscode.languages.registerInlineCompletionItemProvider({ pattern: "**" }, provider));
}

export function deactivate(): void {}
