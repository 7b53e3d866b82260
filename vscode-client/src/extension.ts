// VS Code client for the horovodize language server.
//
// Starts `<interpreter> -m horovodize serve` over stdio and wires up the
// commands, settings and the status bar item that shows the training-loop
// kind of the active Python file. Diagnostics, quick fixes and hovers come
// straight from the server through vscode-languageclient.

import * as cp from 'child_process';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  RequestType,
  ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';

const SECTION = 'horovodize';
const SERVER_CONVERT_COMMAND = 'horovodize.convertFile';

interface FileInfoParams {
  uri: string;
}

type LoopKind = 'GradientTape' | 'Keras fit' | 'Estimator' | 'mixed' | 'none';

interface FileInfo {
  loopKind: LoopKind;
  distributed: boolean;
}

const FileInfoRequest = new RequestType<FileInfoParams, FileInfo | null, void>('horovodize/fileInfo');

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;
let statusItem: vscode.StatusBarItem;
let starting: Promise<void> | undefined;
let statusSeq = 0;
let statusTimer: NodeJS.Timeout | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('Horovodize');
  statusItem = vscode.window.createStatusBarItem('horovodize.status', vscode.StatusBarAlignment.Right, 100);
  statusItem.name = 'Horovodize';
  context.subscriptions.push(output, statusItem);

  context.subscriptions.push(
    vscode.commands.registerCommand('horovodize.makeDistributed', makeDistributed),
    vscode.commands.registerCommand('horovodize.restartServer', () => restart()),
    vscode.commands.registerCommand('horovodize.showOutput', () => output.show(true)),
    vscode.window.onDidChangeActiveTextEditor(() => scheduleStatusUpdate(0)),
    vscode.languages.onDidChangeDiagnostics((e) => {
      const active = vscode.window.activeTextEditor?.document.uri.toString();
      if (active && e.uris.some((u) => u.toString() === active)) {
        scheduleStatusUpdate(150);
      }
    }),
    vscode.workspace.onDidChangeConfiguration(onConfigurationChanged),
    { dispose: () => void stopClient() },
  );

  await start();
}

export async function deactivate(): Promise<void> {
  await stopClient();
}

// ---------------------------------------------------------------- settings

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION, workspaceResource());
}

function workspaceResource(): vscode.Uri | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  if (doc && vscode.workspace.getWorkspaceFolder(doc.uri)) {
    return doc.uri;
  }
  return vscode.workspace.workspaceFolders?.[0]?.uri;
}

function selectedRules(): string[] {
  return (config().get<string[]>('select') ?? []).filter((s) => typeof s === 'string' && s.length > 0);
}

function expandVariables(value: string): string {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
  let v = value.replace(/\$\{workspaceFolder\}/g, folder).replace(/\$\{userHome\}/g, os.homedir());
  if (v === '~' || v.startsWith('~/')) {
    v = path.join(os.homedir(), v.slice(1));
  }
  if (folder && v.length > 0 && !path.isAbsolute(v) && (v.includes('/') || v.includes('\\'))) {
    v = path.join(folder, v);
  }
  return v;
}

/** `horovodize.interpreter`, else the Python extension's interpreter, else `python3`. */
async function resolveInterpreter(): Promise<{ path: string; source: string }> {
  const configured = (config().get<string>('interpreter') ?? '').trim();
  if (configured) {
    return { path: expandVariables(configured), source: 'setting horovodize.interpreter' };
  }
  const fromPython = await pythonExtensionInterpreter();
  if (fromPython) {
    return { path: fromPython, source: 'Python extension' };
  }
  return { path: 'python3', source: 'default' };
}

async function pythonExtensionInterpreter(): Promise<string | undefined> {
  try {
    const ext = vscode.extensions.getExtension('ms-python.python');
    if (!ext) {
      return undefined;
    }
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const api: any = ext.isActive ? ext.exports : await ext.activate();
    const resource = workspaceResource();
    const env = api?.environments?.getActiveEnvironmentPath?.(resource);
    if (env && typeof env.path === 'string' && env.path.length > 0) {
      return env.path;
    }
    const details = api?.settings?.getExecutionDetails?.(resource);
    const cmd = details?.execCommand;
    if (Array.isArray(cmd) && typeof cmd[0] === 'string' && cmd[0].length > 0) {
      return cmd[0];
    }
  } catch (err) {
    output.appendLine(`Could not query the Python extension for its interpreter: ${String(err)}`);
  }
  return undefined;
}

function checkImportable(interpreter: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    cp.execFile(
      interpreter,
      ['-c', 'import horovodize'],
      { timeout: 30000, cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
      (err, _stdout, stderr) => {
        if (!err) {
          resolve(undefined);
          return;
        }
        const detail = (stderr || '').trim().split('\n').slice(-1)[0] || err.message;
        resolve(detail);
      },
    );
  });
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:@%+=-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

async function reportNotImportable(interpreter: string, detail: string): Promise<void> {
  const install = 'Install horovodize';
  const settings = 'Open settings';
  const choice = await vscode.window.showErrorMessage(
    `Horovodize: the package 'horovodize' cannot be imported with ${interpreter} (${detail}). ` +
      'Install it into that interpreter or set "horovodize.interpreter".',
    install,
    settings,
  );
  if (choice === install) {
    const term = vscode.window.createTerminal({ name: 'Install horovodize' });
    term.show();
    term.sendText(`${shellQuote(interpreter)} -m pip install horovodize`);
  } else if (choice === settings) {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'horovodize.interpreter');
  }
}

// ---------------------------------------------------------------- lifecycle

async function start(): Promise<void> {
  if (starting) {
    return starting;
  }
  starting = doStart().finally(() => {
    starting = undefined;
  });
  return starting;
}

async function doStart(): Promise<void> {
  const interpreter = await resolveInterpreter();
  const serverArgs = (config().get<string[]>('serverArgs') ?? []).filter((s) => typeof s === 'string');
  output.appendLine(`Interpreter: ${interpreter.path} (${interpreter.source})`);

  const problem = await checkImportable(interpreter.path);
  if (problem !== undefined) {
    output.appendLine(`'import horovodize' failed with ${interpreter.path}: ${problem}`);
    setStatusError('horovodize is not installed for the selected interpreter');
    void reportNotImportable(interpreter.path, problem);
    return;
  }

  const serverOptions: ServerOptions = {
    command: interpreter.path,
    args: ['-m', 'horovodize', 'serve', ...serverArgs],
    transport: TransportKind.stdio,
    options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'python' },
      { scheme: 'untitled', language: 'python' },
    ],
    initializationOptions: { select: selectedRules() },
    outputChannel: output,
    traceOutputChannel: output,
  };

  output.appendLine(`Starting: ${interpreter.path} ${serverOptions.args?.join(' ')}`);
  const c = new LanguageClient(SECTION, 'Horovodize', serverOptions, clientOptions);
  c.onDidChangeState((e) => {
    if (e.newState === State.Stopped) {
      setStatusError('server stopped');
    } else if (e.newState === State.Running) {
      scheduleStatusUpdate(0);
    }
  });
  client = c;
  try {
    await c.start();
  } catch (err) {
    output.appendLine(`Failed to start the horovodize server: ${String(err)}`);
    setStatusError('server failed to start');
    void vscode.window
      .showErrorMessage(`Horovodize: the language server failed to start (${String(err)}).`, 'Show output')
      .then((choice) => {
        if (choice) {
          output.show(true);
        }
      });
    return;
  }
  scheduleStatusUpdate(0);
}

async function stopClient(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) {
    try {
      await c.stop(5000);
    } catch (err) {
      output.appendLine(`Error while stopping the server: ${String(err)}`);
    }
  }
}

async function restart(): Promise<void> {
  if (starting) {
    await starting;
  }
  output.appendLine('Restarting the horovodize server.');
  await stopClient();
  await start();
}

async function onConfigurationChanged(e: vscode.ConfigurationChangeEvent): Promise<void> {
  // `select` travels in initializationOptions, so a change of it (like one of the
  // interpreter or the server arguments) restarts the server. Tracing is applied by
  // vscode-languageclient itself.
  if (
    e.affectsConfiguration(`${SECTION}.interpreter`) ||
    e.affectsConfiguration(`${SECTION}.serverArgs`) ||
    e.affectsConfiguration(`${SECTION}.select`)
  ) {
    await restart();
  }
}

// ---------------------------------------------------------------- commands

async function runningClient(): Promise<LanguageClient | undefined> {
  if (starting) {
    await starting;
  }
  if (!client) {
    await start();
  }
  return client && client.isRunning() ? client : undefined;
}

async function makeDistributed(uri?: vscode.Uri): Promise<void> {
  const target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
  if (!target) {
    void vscode.window.showWarningMessage('Horovodize: open a Python file first.');
    return;
  }
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === target.toString());
  if (doc && doc.languageId !== 'python') {
    void vscode.window.showWarningMessage('Horovodize: the active file is not a Python file.');
    return;
  }
  const c = await runningClient();
  if (!c) {
    void vscode.window.showErrorMessage('Horovodize: the language server is not running.', 'Show output').then((choice) => {
      if (choice) {
        output.show(true);
      }
    });
    return;
  }
  try {
    await c.sendRequest(ExecuteCommandRequest.type, {
      command: SERVER_CONVERT_COMMAND,
      arguments: [target.toString()],
    });
  } catch (err) {
    output.appendLine(`${SERVER_CONVERT_COMMAND} failed: ${String(err)}`);
    void vscode.window.showErrorMessage(`Horovodize: conversion failed (${errorMessage(err)}).`);
  }
  scheduleStatusUpdate(200);
}

function errorMessage(err: unknown): string {
  if (err && typeof err === 'object' && 'message' in err) {
    return String((err as { message: unknown }).message);
  }
  return String(err);
}

// ---------------------------------------------------------------- status bar

function scheduleStatusUpdate(delayMs: number): void {
  if (statusTimer) {
    clearTimeout(statusTimer);
  }
  statusTimer = setTimeout(() => {
    statusTimer = undefined;
    void updateStatus();
  }, delayMs);
}

function setStatusError(reason: string): void {
  statusItem.text = '$(rocket) Horovod: $(error)';
  statusItem.tooltip = `Horovodize: ${reason}. Click to show the output.`;
  statusItem.command = 'horovodize.showOutput';
  statusItem.show();
}

async function updateStatus(): Promise<void> {
  const seq = ++statusSeq;
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== 'python') {
    statusItem.hide();
    return;
  }
  const c = client;
  if (!c || !c.isRunning()) {
    return;
  }
  const uri = editor.document.uri.toString();
  let info: FileInfo | null;
  try {
    info = await c.sendRequest(FileInfoRequest, { uri });
  } catch (err) {
    if (seq === statusSeq) {
      output.appendLine(`horovodize/fileInfo failed: ${errorMessage(err)}`);
      statusItem.text = '$(rocket) Horovod: ?';
      statusItem.tooltip = `Horovodize: could not query the file (${errorMessage(err)})`;
      statusItem.command = 'horovodize.showOutput';
      statusItem.show();
    }
    return;
  }
  if (seq !== statusSeq || vscode.window.activeTextEditor?.document.uri.toString() !== uri) {
    return;
  }
  if (!info) {
    statusItem.hide();
    return;
  }
  if (info.loopKind === 'none') {
    statusItem.text = '$(rocket) Horovod: no training loop';
    statusItem.tooltip = 'Horovodize: no TensorFlow training loop detected in this file.';
    statusItem.command = 'horovodize.showOutput';
  } else {
    const mode = info.distributed ? 'distributed' : 'single-GPU';
    statusItem.text = `$(rocket) Horovod: ${info.loopKind} (${mode})`;
    if (info.distributed) {
      statusItem.tooltip = `Horovodize: ${info.loopKind} training loop, already Horovod-distributed.`;
      statusItem.command = 'horovodize.showOutput';
    } else {
      statusItem.tooltip = `Horovodize: single-GPU ${info.loopKind} training loop. Click to make it Horovod-distributed.`;
      statusItem.command = 'horovodize.makeDistributed';
    }
  }
  statusItem.show();
}
