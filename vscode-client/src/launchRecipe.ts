// "Horovodize: Create launch recipe": the server's `horovodize.launchRecipe` command
// (`horovodize launch --emit KIND`) for the active file: a horovodrun line, a Slurm batch
// script, a Kubeflow MPIJob manifest or a Ray driver, opened as a new untitled document to
// read and save (next to the script, under the name the server suggests).

import * as path from 'path';
import * as vscode from 'vscode';
import { ExecuteCommandRequest, LanguageClient } from 'vscode-languageclient/node';

export const SERVER_LAUNCH_COMMAND = 'horovodize.launchRecipe';

const KINDS: { label: string; emit: string; language: string; detail: string }[] = [
  { label: 'horovodrun', emit: 'horovodrun', language: 'shellscript', detail: 'a shell script with the horovodrun line' },
  { label: 'Slurm', emit: 'slurm', language: 'shellscript', detail: 'an sbatch script: srun, one task per GPU' },
  { label: 'Kubeflow MPIJob', emit: 'mpijob', language: 'yaml', detail: 'a manifest: launcher and workers (needs an image)' },
  { label: 'Ray', emit: 'ray', language: 'python', detail: "a driver with horovod.ray's RayExecutor" },
];

export async function createLaunchRecipe(client: LanguageClient | undefined, uri?: vscode.Uri): Promise<void> {
  const target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
  if (!target || target.scheme !== 'file') {
    void vscode.window.showWarningMessage('Horovodize: open a saved Python file to make its launch recipe.');
    return;
  }
  if (!client) {
    void vscode.window.showErrorMessage('Horovodize: the language server is not running.');
    return;
  }
  const pick = await vscode.window.showQuickPick(KINDS, { placeHolder: `Launch ${path.basename(target.fsPath)} with` });
  if (!pick) {
    return;
  }
  const np = await vscode.window.showInputBox({
    prompt: 'Number of ranks (processes, one per GPU)',
    value: '2',
    validateInput: (v) => (/^[1-9]\d*$/.test(v.trim()) ? undefined : 'a positive integer'),
  });
  if (np === undefined) {
    return;
  }
  const hosts = await vscode.window.showInputBox({
    prompt: 'Hosts as host1:4,host2:4 (empty: this machine)',
    validateInput: (v) => (v.trim() === '' || /^[^:,\s]+:\d+(,[^:,\s]+:\d+)*$/.test(v.trim()) ? undefined : 'HOST:SLOTS,...'),
  });
  if (hosts === undefined) {
    return;
  }
  const args: Record<string, unknown> = { uri: target.toString(), kind: pick.emit, np: Number(np.trim()) };
  if (hosts.trim()) {
    args.hosts = hosts.trim();
  }
  if (pick.emit === 'mpijob') {
    const image = await vscode.window.showInputBox({ prompt: 'Container image with the program, TensorFlow and Horovod' });
    if (!image) {
      return;
    }
    args.image = image.trim();
  }
  try {
    const result = (await client.sendRequest(ExecuteCommandRequest.type, {
      command: SERVER_LAUNCH_COMMAND,
      arguments: [args],
    })) as { text: string; name: string } | null;
    if (!result) {
      return;
    }
    const doc = await vscode.workspace.openTextDocument({ content: result.text, language: pick.language });
    await vscode.window.showTextDocument(doc, { preview: false });
    void vscode.window.showInformationMessage(
      `Horovodize: ${pick.label} recipe for ${path.basename(target.fsPath)}; save it next to the script as ${result.name}.`);
  } catch (err) {
    const message = err && typeof err === 'object' && 'message' in err ? String((err as { message: unknown }).message) : String(err);
    void vscode.window.showErrorMessage(`Horovodize: ${message}`);
  }
}
