// Laya for VS Code: an inline completion provider that asks the Laya server on this machine.

import * as vscode from "vscode";
import { LayaClient, defaultSocketPath, textWindow } from "./protocol";

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
  context.subscriptions.push(
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
            client: document.uri.toString(),
            app: `vscode:${document.languageId}`,
            max_tokens: cfg.get<number>("maxTokens", 32),
          },
          { signal: abort.signal },
        );
        if (f.canceled || !f.text || token.isCancellationRequested) {
          return undefined;
        }
        return [new vscode.InlineCompletionItem(f.text, new vscode.Range(position, position))];
      } catch {
        return undefined; // no server, or superseded: no suggestion rather than an error popup
      } finally {
        sub.dispose();
      }
    },
  };
  context.subscriptions.push(vscode.languages.registerInlineCompletionItemProvider({ pattern: "**" }, provider));
}

export function deactivate(): void {}
