// VS Code client for the horovodize language server.
//
// Starts the language server bundled in the extension (bundled/tool/server.py puts
// bundled/libs first on sys.path) with the user's interpreter over stdio, like
// Microsoft's Python-tools extension template and ruff's extension, so installing the
// .vsix is all a user does; `horovodize.importStrategy: fromEnvironment` or
// `horovodize.path` use an installed horovodize instead. Wires up the commands, the
// settings and two status bar items: the training-loop kind of the active Python file,
// and the verdict of the stack doctor the server runs for the interpreter (can its
// TensorFlow / Keras / Horovod run the converted program?). Diagnostics, quick fixes and
// hovers come straight from the server through vscode-languageclient.

import * as cp from 'child_process';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { rehearseFile } from './rehearse';
import { createLaunchRecipe } from './launchRecipe';
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
const SERVER_CONVERT_PROJECT_COMMAND = 'horovodize.convertProject';
const NOTEBOOK_CELLS = { notebook: 'jupyter-notebook', language: 'python' };

interface FileInfoParams {
  uri: string;
}

type LoopKind = 'GradientTape' | 'Keras fit' | 'Estimator' | 'mixed' | 'none';

interface FileInfo {
  loopKind: LoopKind;
  distributed: boolean;
}

const FileInfoRequest = new RequestType<FileInfoParams, FileInfo | null, void>('horovodize/fileInfo');

/** `horovodize doctor --format json` plus the rendered `text` (see server/horovodize/lsp/doctor.py). */
interface DoctorReport {
  python: string;
  verdict: 'ready' | 'not ready' | 'cannot inspect';
  ready: boolean;
  summary: string;
  text: string;
  findings: { severity: string; title: string; fix: string[] }[];
}

const DOCTOR = 'horovodize/doctor';
const DoctorRequest = new RequestType<Record<string, never>, DoctorReport | null, void>(DOCTOR);
const REPORT_URI = vscode.Uri.parse('horovodize-doctor:/Horovod%20stack%20report.txt');

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;
let statusItem: vscode.StatusBarItem;
let stackItem: vscode.StatusBarItem;
let extensionPath = '';
let interpreterInUse: { path: string; source: string } | undefined;
let doctorReport: DoctorReport | undefined;
const reportChanged = new vscode.EventEmitter<vscode.Uri>();
let starting: Promise<void> | undefined;
let statusSeq = 0;
let statusTimer: NodeJS.Timeout | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('Horovodize');
  statusItem = vscode.window.createStatusBarItem('horovodize.status', vscode.StatusBarAlignment.Right, 100);
  statusItem.name = 'Horovodize';
  stackItem = vscode.window.createStatusBarItem('horovodize.stack', vscode.StatusBarAlignment.Right, 99);
  stackItem.name = 'Horovodize: stack doctor';
  stackItem.command = 'horovodize.showDoctorReport';
  extensionPath = context.extensionPath;
  context.subscriptions.push(output, statusItem, stackItem, reportChanged);

  context.subscriptions.push(
    vscode.commands.registerCommand('horovodize.makeDistributed', (uri?: vscode.Uri) => makeDistributed(uri)),
    vscode.commands.registerCommand('horovodize.makeProjectDistributed', (uri?: vscode.Uri) =>
      makeDistributed(uri, SERVER_CONVERT_PROJECT_COMMAND)),
    vscode.commands.registerCommand('horovodize.restartServer', () => restart()),
    vscode.commands.registerCommand('horovodize.showOutput', () => output.show(true)),
    vscode.commands.registerCommand('horovodize.showDoctorReport', showDoctorReport),
    vscode.commands.registerCommand('horovodize.rehearseFile', async (uri?: vscode.Uri) =>
      rehearseFile(await runningClient(), uri)),
    vscode.commands.registerCommand('horovodize.createLaunchRecipe', async (uri?: vscode.Uri) =>
      createLaunchRecipe(await runningClient(), uri)),
    vscode.workspace.registerTextDocumentContentProvider('horovodize-doctor', {
      onDidChange: reportChanged.event,
      provideTextDocumentContent: () => reportText(),
    }),
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

  watchPythonExtension(context);
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

/** `horovodize.interpreter`, else the Python extension's selected interpreter, else `python3`.
 * (An explicit setting wins, as in ruff's extension and the Python-tools template.) */
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
    if (env && api?.environments?.resolveEnvironment) {
      // `path` may be an environment folder (conda); the resolved executable is the interpreter.
      const resolved = await api.environments.resolveEnvironment(env);
      const exe = resolved?.executable?.uri?.fsPath;
      if (typeof exe === 'string' && exe.length > 0) {
        return exe;
      }
    }
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

/** Restart when the interpreter selected in the Python extension changes (no explicit setting). */
function watchPythonExtension(context: vscode.ExtensionContext): void {
  const ext = vscode.extensions.getExtension('ms-python.python');
  if (!ext) {
    return;
  }
  void Promise.resolve(ext.isActive ? ext.exports : ext.activate()).then(
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    (api: any) => {
      const event = api?.environments?.onDidChangeActiveEnvironmentPath;
      if (typeof event === 'function') {
        context.subscriptions.push(
          event(() => {
            if (!(config().get<string>('interpreter') ?? '').trim()) {
              output.appendLine('The Python extension selected another interpreter.');
              void restart();
            }
          }),
        );
      }
    },
    (err: unknown) => output.appendLine(`The Python extension did not activate: ${String(err)}`),
  );
}

/** Runs `interpreter -c code`; undefined on success, else the last stderr line. */
function probe(interpreter: string, code: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    cp.execFile(
      interpreter,
      ['-c', code],
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

const PY310 =
  'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "needs Python >= 3.10, this is %d.%d" % sys.version_info[:2])';

async function reportBadInterpreter(interpreter: string, detail: string, fromEnvironment: boolean): Promise<void> {
  const bundled = 'Use the bundled server';
  const select = 'Select interpreter';
  const settings = 'Open settings';
  const actions = fromEnvironment ? [bundled, settings] : [select, settings];
  const what = fromEnvironment
    ? `the package 'horovodize' cannot be imported with ${interpreter} (${detail}), and "horovodize.importStrategy" is "fromEnvironment"`
    : `cannot start the language server with ${interpreter} (${detail})`;
  const choice = await vscode.window.showErrorMessage(`Horovodize: ${what}.`, ...actions);
  if (choice === bundled) {
    await config().update('importStrategy', 'useBundled', vscode.ConfigurationTarget.Global);
  } else if (choice === select) {
    if (vscode.extensions.getExtension('ms-python.python')) {
      await vscode.commands.executeCommand('python.setInterpreter');
    } else {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'horovodize.interpreter');
    }
  } else if (choice === settings) {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'horovodize.');
  }
}

/** The server command: `horovodize.path`, else the interpreter with the bundled server or its own horovodize. */
async function serverLaunch(
  interpreter: string,
  serverArgs: string[],
): Promise<{ command: string; args: string[] } | undefined> {
  const exe = (config().get<string>('path') ?? '').trim();
  if (exe) {
    output.appendLine(`Server: ${exe} (setting horovodize.path)`);
    return { command: expandVariables(exe), args: ['serve', ...serverArgs] };
  }
  if (config().get<string>('importStrategy') === 'fromEnvironment') {
    const problem = await probe(interpreter, 'import horovodize');
    if (problem !== undefined) {
      output.appendLine(`'import horovodize' failed with ${interpreter}: ${problem}`);
      setStatusError('horovodize is not installed for the selected interpreter');
      void reportBadInterpreter(interpreter, problem, true);
      return undefined;
    }
    output.appendLine(`Server: the horovodize installed in ${interpreter} (importStrategy fromEnvironment)`);
    return { command: interpreter, args: ['-m', 'horovodize', 'serve', ...serverArgs] };
  }
  const problem = await probe(interpreter, PY310);
  if (problem !== undefined) {
    output.appendLine(`${interpreter} cannot run the bundled server: ${problem}`);
    setStatusError(`${interpreter} cannot run the language server`);
    void reportBadInterpreter(interpreter, problem, false);
    return undefined;
  }
  output.appendLine(`Server: bundled (${path.join(extensionPath, 'bundled', 'libs')})`);
  return { command: interpreter, args: [path.join(extensionPath, 'bundled', 'tool', 'server.py'), ...serverArgs] };
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
  interpreterInUse = interpreter;
  doctorReport = undefined;
  reportChanged.fire(REPORT_URI);

  const launch = await serverLaunch(interpreter.path, serverArgs);
  if (!launch) {
    return;
  }
  const serverOptions: ServerOptions = {
    command: launch.command,
    args: launch.args,
    transport: TransportKind.stdio,
    options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'python' },
      { scheme: 'untitled', language: 'python' },
      // Jupyter notebooks' Python cells: synced through the server's notebookDocumentSync
      // (one notebookDocument/* stream per notebook; the cells are one program), while
      // hovers, code actions and pulled diagnostics are asked per cell document.
      NOTEBOOK_CELLS,
    ],
    initializationOptions: {
      select: selectedRules(),
      python: interpreter.path,
      kerasTarget: config().get<string>('kerasTarget', 'tf.keras'),
      scaleLearningRate: config().get<boolean>('scaleLearningRate', true),
      requireLocalFs: config().get<boolean>('requireLocalFs', false),
    },
    outputChannel: output,
    traceOutputChannel: output,
  };

  output.appendLine(`Starting: ${launch.command} ${launch.args.join(' ')}`);
  const c = new LanguageClient(SECTION, 'Horovodize', serverOptions, clientOptions);
  c.onNotification(DOCTOR, (report: DoctorReport) => {
    if (client === c) {
      setDoctorReport(report);
    }
  });
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
  // `select`, `kerasTarget`, `scaleLearningRate` and `requireLocalFs` travel in initializationOptions, so a change of them (like one of the
  // interpreter or the server arguments) restarts the server. Tracing is applied by
  // vscode-languageclient itself.
  if (
    e.affectsConfiguration(`${SECTION}.interpreter`) ||
    e.affectsConfiguration(`${SECTION}.importStrategy`) ||
    e.affectsConfiguration(`${SECTION}.path`) ||
    e.affectsConfiguration(`${SECTION}.serverArgs`) ||
    e.affectsConfiguration(`${SECTION}.select`) ||
    e.affectsConfiguration(`${SECTION}.kerasTarget`) ||
    e.affectsConfiguration(`${SECTION}.scaleLearningRate`) ||
    e.affectsConfiguration(`${SECTION}.requireLocalFs`)
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

// `command`: the server's whole-file conversion, or the program's (the entry script and the
// project modules it imports, one workspace edit across the files).
async function makeDistributed(uri?: vscode.Uri, command: string = SERVER_CONVERT_COMMAND): Promise<void> {
  // In a notebook: the notebook (the server converts all its cells; a cell's uri works too).
  const target =
    uri instanceof vscode.Uri
      ? uri
      : (vscode.window.activeNotebookEditor?.notebook.uri ?? vscode.window.activeTextEditor?.document.uri);
  if (!target) {
    void vscode.window.showWarningMessage('Horovodize: open a Python file or notebook first.');
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
      command,
      arguments: [target.toString()],
    });
  } catch (err) {
    output.appendLine(`${command} failed: ${String(err)}`);
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

// ---------------------------------------------------------------- stack doctor

function setDoctorReport(report: DoctorReport): void {
  doctorReport = report;
  output.appendLine(`Stack doctor: ${report.summary}`);
  reportChanged.fire(REPORT_URI);
  updateStackItem();
}

function reportText(): string {
  const where = interpreterInUse ? `Interpreter: ${interpreterInUse.path} (${interpreterInUse.source})\n\n` : '';
  if (!doctorReport) {
    return `${where}The stack doctor is still running (it loads TensorFlow through horovodrun --check-build).\n`;
  }
  return `${where}${doctorReport.text}`;
}

function updateStackItem(): void {
  const doc = vscode.window.activeTextEditor?.document;
  const relevant = doc && (doc.languageId === 'python' || doc.uri.scheme === REPORT_URI.scheme);
  if (!relevant || !interpreterInUse) {
    stackItem.hide();
    return;
  }
  const who = `${interpreterInUse.path} (${interpreterInUse.source})`;
  if (!doctorReport) {
    stackItem.text = '$(sync~spin) Horovod stack';
    stackItem.tooltip = `Horovodize: checking TensorFlow, Keras and Horovod in ${who}…`;
  } else if (doctorReport.ready) {
    const warnings = doctorReport.findings.filter((f) => f.severity === 'warning').length;
    stackItem.text = warnings ? '$(warning) Horovod stack: ready' : '$(pass) Horovod stack: ready';
    stackItem.tooltip =
      `Horovodize stack doctor for ${who}:\n${doctorReport.summary}` +
      `${warnings ? ` (${warnings} warning(s))` : ''}\nClick for the full report.`;
  } else {
    const icon = doctorReport.verdict === 'cannot inspect' ? 'error' : 'warning';
    stackItem.text = `$(${icon}) Horovod stack: ${doctorReport.verdict}`;
    stackItem.tooltip = `Horovodize stack doctor for ${who}:\n${doctorReport.summary}\nClick for the full report with the fixes.`;
  }
  stackItem.show();
}

async function showDoctorReport(): Promise<void> {
  if (!doctorReport) {
    const c = await runningClient();
    if (c) {
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'Horovodize: checking the stack' },
        async () => {
          try {
            const report = await c.sendRequest(DoctorRequest, {});
            if (report) {
              setDoctorReport(report);
            }
          } catch (err) {
            output.appendLine(`${DOCTOR} failed: ${errorMessage(err)}`);
          }
        },
      );
    }
  }
  const doc = await vscode.workspace.openTextDocument(REPORT_URI);
  await vscode.window.showTextDocument(doc, { preview: false });
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
  updateStackItem();
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
