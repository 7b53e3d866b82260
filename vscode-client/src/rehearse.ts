// "Horovodize: Rehearse on 2 CPU ranks": saves the file, runs the server's
// `horovodize.rehearse` command (`horovodize verify` on the saved file; the server reports
// $/progress while the runs take their minutes and publishes a diagnostic, source
// "horovodize-rehearsal", on each line a failed check points to) and shows the check
// table in its own output channel.

import * as vscode from 'vscode';
import { ExecuteCommandRequest, LanguageClient } from 'vscode-languageclient/node';

export const SERVER_REHEARSE_COMMAND = 'horovodize.rehearse';

interface RehearsalResult {
  ok: boolean;
  text: string;
  checks: { check: string; status: string; reason: string; line?: number }[];
}

let channel: vscode.OutputChannel | undefined;

export async function rehearseFile(client: LanguageClient | undefined, uri?: vscode.Uri): Promise<void> {
  const target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
  if (!target || target.scheme !== 'file') {
    void vscode.window.showWarningMessage('Horovodize: open a saved Python file to rehearse.');
    return;
  }
  if (!client) {
    void vscode.window.showErrorMessage('Horovodize: the language server is not running.');
    return;
  }
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === target.toString());
  if (doc && doc.isDirty) {
    await doc.save();
  }
  channel = channel ?? vscode.window.createOutputChannel('Horovodize rehearsal');
  // `horovodize.rehearsalHosts` 2: one rank on each of two simulated hosts (no shared filesystem)
  const hosts = vscode.workspace.getConfiguration('horovodize').get<number>('rehearsalHosts', 1) === 2 ? 2 : 1;
  channel.appendLine(`rehearsing ${target.fsPath} on 2 CPU ranks${hosts === 2 ? ' of 2 simulated hosts' : ''} ...`);
  try {
    const result = (await client.sendRequest(ExecuteCommandRequest.type, {
      command: SERVER_REHEARSE_COMMAND,
      arguments: [{ uri: target.toString(), np: 2, hosts }],
    })) as RehearsalResult | null;
    if (!result) {
      return;
    }
    channel.appendLine(result.text);
    channel.show(true);
    const failed = result.checks.filter((c) => c.status === 'FAIL').length;
    void vscode.window.showInformationMessage(
      result.ok ? 'Horovodize: rehearsal passed.' : `Horovodize: rehearsal: ${failed} check(s) failed.`);
  } catch (err) {
    channel.appendLine(`${SERVER_REHEARSE_COMMAND} failed: ${String(err)}`);
    channel.show(true);
  }
}
