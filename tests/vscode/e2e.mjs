// Drives code-server (already running, extension installed) in headless Chromium through
// the four user-visible features of the horovodize extension:
//   (a) the HVD100 diagnostic in the Problems panel
//   (b) the hover explanation on a restriction diagnostic
//   (c) the "Make Horovod-distributed" quick fix (Ctrl+.), saved text == `horovodize convert`
//   (d) the command "Horovodize: Make file Horovod-distributed", saved text == `horovodize convert`
//   (e) the stack doctor: the status bar item's verdict and the report document opened by
//       "Horovodize: Show Horovod stack report (doctor)" (interpreter, versions, fixes)
// and saves a screenshot of each step. Scenario "doctor" runs only (e) (after the status
// bar shows the file's loop, i.e. the server runs); scenario "notebook" a notebook's cell
// diagnostic and its whole-notebook conversion (see notebookScenario). Usage: node e2e.mjs CONFIG.json (written by
// test_vscode_e2e.py). Exit code 0 on success; on failure the reason is printed, a
// screenshot is written to config.failureScreenshot and the exit code is 1.

import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const T = { long: 120_000, mid: 30_000, short: 10_000 };
const t0 = Date.now();
const log = (msg) => console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}`);

const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage',
];

class StepError extends Error {}

function fail(msg) {
  throw new StepError(msg);
}

async function poll(what, fn, timeout = T.mid, interval = 250) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      fail(`timed out after ${timeout / 1000}s waiting for ${what}${last instanceof Error ? ` (${last.message})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}

function firstDifference(a, b) {
  const la = a.split('\n');
  const lb = b.split('\n');
  for (let i = 0; i < Math.max(la.length, lb.length); i++) {
    if (la[i] !== lb[i]) {
      return `first difference at line ${i + 1}:\n  editor:   ${JSON.stringify(la[i])}\n  expected: ${JSON.stringify(lb[i])}`;
    }
  }
  return 'texts differ only in line endings';
}

async function shot(page, name) {
  const file = path.join(cfg.screenshots, name);
  await page.screenshot({ path: file });
  log(`screenshot ${file}`);
}

// ------------------------------------------------------------------ workbench helpers

async function dismissNotifications(page) {
  // Close toasts so they neither cover the editor nor steal focus.
  const toasts = page.locator('.notification-toast-container .codicon-notifications-clear, .notification-toast .codicon-close');
  for (let i = 0; i < 5 && (await toasts.count()) > 0; i++) {
    await toasts.first().click({ timeout: 2000 }).catch(() => {});
  }
}

async function runCommand(page, label) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: T.short });
  await input.fill(`>${label}`);
  const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: label }).first();
  await row.waitFor({ state: 'visible', timeout: T.short });
  await input.press('Enter');
}

async function openFile(page, name, { notebook = false } = {}) {
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: T.short });
  await input.fill(name);
  // Pick the row whose label is exactly the file name (not e.g. keras_train.py for train.py).
  const row = page
    .locator('.quick-input-widget .quick-input-list .monaco-list-row')
    .filter({ has: page.locator('.label-name', { hasText: new RegExp(`^${name.replace('.', '\\.')}$`) }) })
    .first();
  await row.waitFor({ state: 'visible', timeout: T.short });
  await row.click();
  await poll(`the editor tab of ${name}`, async () => {
    const label = await page.locator('.tabs-container .tab.active').first().getAttribute('aria-label');
    return label !== null && (label === name || label.startsWith(`${name},`) || label.startsWith(`${name} `));
  });
  if (notebook) return; // (a notebook editor: its cells are waited for by the caller)
  await page.locator('.editor-instance .monaco-editor .view-lines').first().waitFor({ timeout: T.short });
  // Focus the text area so keyboard shortcuts go to the editor.
  await page.locator('.editor-instance .monaco-editor .view-lines').first().click({ position: { x: 5, y: 5 } });
}

async function goTo(page, line, column) {
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: T.short });
  await input.fill(`:${line}:${column}`);
  await input.press('Enter');
  await poll(`the cursor at Ln ${line}, Col ${column}`, async () => {
    const txt = await page.locator('.statusbar-item', { hasText: /^Ln \d+, Col \d+/ }).first().innerText();
    return txt.startsWith(`Ln ${line}, Col ${column}`);
  }, T.short);
}

async function statusText(page, label = 'Horovod:') {
  const item = page.locator('.statusbar-item', { hasText: label }).first();
  return (await item.count()) > 0 ? (await item.innerText()).trim() : '';
}

async function waitStatus(page, re, what) {
  return poll(`the status bar item "${what}" (now: "${await statusText(page)}")`, async () => re.test(await statusText(page)), T.long);
}

async function problems(page) {
  const rows = page.locator('.markers-panel .monaco-list-row');
  const n = await rows.count();
  const out = [];
  for (let i = 0; i < n; i++) {
    const text = (await rows.nth(i).innerText()).replace(/\s+/g, ' ').trim();
    const m = /\[Ln (\d+), Col (\d+)\]/.exec(text);
    out.push({ text, line: m ? Number(m[1]) : undefined, column: m ? Number(m[2]) : undefined });
  }
  return out;
}

async function saveAndCompare(page, name) {
  const { path: file, expected: expectedFile } = cfg.files[name];
  const expected = fs.readFileSync(expectedFile, 'utf8');
  await poll(`${name} to become dirty (the server's workspace/applyEdit)`, async () => (await page.locator('.tabs-container .tab.active.dirty').count()) > 0);
  await page.keyboard.press('Control+S');
  await poll(`${name} to be saved`, async () => (await page.locator('.tabs-container .tab.active.dirty').count()) === 0);
  const saved = await poll(`${name} on disk to equal \`horovodize convert ${name}\``, async () => {
    const text = fs.readFileSync(file, 'utf8');
    return text === expected ? text : false;
  }, T.short).catch(() => {
    const text = fs.readFileSync(file, 'utf8');
    fail(`${name} after the conversion differs from \`horovodize convert ${name}\`; ${firstDifference(text, expected)}\n--- saved file:\n${text}`);
  });
  log(`${name}: saved text equals \`horovodize convert ${name}\` (${saved.split('\n').length} lines)`);
}

// ------------------------------------------------------------------ the scenarios

async function openWorkbench(page) {
  const url = `${cfg.url}/?folder=${encodeURIComponent(cfg.workspace)}`;
  log(`open ${url}`);
  await page.goto(url, { waitUntil: 'domcontentloaded', timeout: T.long });
  await page.locator('.monaco-workbench .part.statusbar').waitFor({ timeout: T.long });
  await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'train.py' }).first().waitFor({ timeout: T.long });
  log('workbench loaded');
}

// (e) the stack doctor's verdict in the status bar, and its full report.
async function doctorStep(page) {
  const want = cfg.doctor;
  await poll(`the status bar item "${want.status}" (now: "${await statusText(page, 'Horovod stack')}")`,
    async () => (await statusText(page, 'Horovod stack')) === want.status, T.long);
  const tooltip = await page.locator('.statusbar-item', { hasText: 'Horovod stack' }).first().getAttribute('aria-label');
  log(`stack status bar item: ${await statusText(page, 'Horovod stack')} (aria-label: ${tooltip})`);
  await runCommand(page, 'Horovodize: Show Horovod stack report (doctor)');
  await poll('the report tab', async () => {
    const label = await page.locator('.tabs-container .tab.active').first().getAttribute('aria-label');
    return label !== null && label.includes('Horovod stack report');
  });
  const lines = page.locator('.editor-instance .monaco-editor .view-lines').first();
  const text = await poll('the report to name the interpreter and its fixes', async () => {
    const t = (await lines.innerText()).replace(/\u00a0/g, ' ');
    return want.report.every((line) => t.split('\n').some((l) => l.replace(/\s+$/, '').startsWith(line))) ? t : false;
  }, T.mid).catch(async (err) => {
    const t = (await lines.innerText()).replace(/\u00a0/g, ' ');
    const missing = want.report.filter((line) => !t.split('\n').some((l) => l.replace(/\s+$/, '').startsWith(line)));
    fail(`the stack report lacks ${JSON.stringify(missing)} (${err.message}); it shows:\n${t}`);
  });
  log(`stack report:\n${text.split('\n').map((l) => `    ${l}`).join('\n')}`);
  await dismissNotifications(page);
  if (want.screenshot) await shot(page, want.screenshot);
}

async function doctorScenario(page) {
  await openWorkbench(page);
  await openFile(page, 'train.py');
  await waitStatus(page, /Horovod: GradientTape/, 'Horovod: GradientTape ...');
  log(`status bar: ${await statusText(page)}`);
  await doctorStep(page);
}

async function scenario(page) {
  await openWorkbench(page);

  // ---- (a) HVD100 in the Problems panel for train.py
  await openFile(page, 'train.py');
  await waitStatus(page, /Horovod: GradientTape \(single-GPU\)/, 'Horovod: GradientTape (single-GPU)');
  log(`status bar: ${await statusText(page)}`);
  await runCommand(page, 'View: Focus Problems');
  await page.locator('.markers-panel').waitFor({ timeout: T.short });
  const hvd100 = await poll('HVD100 in the Problems panel', async () => (await problems(page)).find((p) => /\bHVD100\b/.test(p.text) && p.line), T.long);
  const all = await problems(page);
  log(`Problems panel:\n${all.map((p) => `    ${p.text}`).join('\n')}`);
  if (!all.some((p) => p.text.includes('train.py'))) fail('the Problems panel has no train.py group');
  if (!/horovodize/.test(hvd100.text)) fail(`HVD100 row does not name the source horovodize: ${hvd100.text}`);
  await dismissNotifications(page);
  await shot(page, 'vscode-problems.png');

  // ---- (b) hover on the restriction diagnostic shows its explanation
  const restriction = all.find((p) => p.text.includes(cfg.restriction.code) && p.line);
  if (!restriction) fail(`no ${cfg.restriction.code} row in the Problems panel`);
  await page.locator('.editor-instance .monaco-editor .view-lines').first().click({ position: { x: 5, y: 5 } });
  await goTo(page, restriction.line, restriction.column);
  // Hover with the mouse over the character right after the cursor (inside the range).
  const cursor = page.locator('.editor-instance .monaco-editor .cursors-layer .cursor').first();
  const box = await poll('the editor cursor', async () => await cursor.boundingBox(), T.short);
  const hoverWidget = page.locator('.monaco-hover:not(.hidden)', { hasText: cfg.restriction.hoverText }).first();
  let hovered = false;
  for (let attempt = 0; attempt < 3 && !hovered; attempt++) {
    await page.mouse.move(box.x + 200, box.y - 120);
    await page.mouse.move(box.x + 6 + attempt * 8, box.y + box.height / 2, { steps: 5 });
    hovered = await hoverWidget.waitFor({ state: 'visible', timeout: T.short }).then(() => true, () => false);
  }
  if (!hovered) {
    log('mouse hover showed no explanation; trying the keyboard hover (editor.action.showHover)');
    await page.keyboard.press('Control+K');
    await page.keyboard.press('Control+I');
    await hoverWidget.waitFor({ state: 'visible', timeout: T.mid }).catch(async () => {
      const visible = await page.locator('.monaco-hover:not(.hidden)').allInnerTexts();
      fail(`no hover containing "${cfg.restriction.hoverText}" at Ln ${restriction.line}, Col ${restriction.column}; visible hovers: ${JSON.stringify(visible)}`);
    });
  }
  await page.waitForTimeout(600); // let the fade-in finish before the screenshot
  log(`hover: ${(await hoverWidget.innerText()).replace(/\s+/g, ' ').slice(0, 200)}`);
  await shot(page, 'vscode-hover.png');
  await page.keyboard.press('Escape');
  await page.mouse.move(5, 400);

  // ---- (c) Ctrl+. on the HVD100 line offers "Make Horovod-distributed"; apply, save, compare
  await goTo(page, hvd100.line, hvd100.column);
  const fixTitle = 'Make Horovod-distributed';
  const fixRow = page.locator('.action-widget .monaco-list-row', { hasText: fixTitle }).first();
  let offered = false;
  for (let attempt = 0; attempt < 3 && !offered; attempt++) {
    await page.keyboard.press('Control+.');
    offered = await fixRow.waitFor({ state: 'visible', timeout: T.short }).then(() => true, () => false);
    if (!offered) await page.keyboard.press('Escape');
  }
  if (!offered) {
    const items = await page.locator('.action-widget .monaco-list-row').allInnerTexts();
    fail(`the quick-fix menu on Ln ${hvd100.line} does not offer "${fixTitle}"; it shows ${JSON.stringify(items)}`);
  }
  const items = await page.locator('.action-widget .monaco-list-row').allInnerTexts();
  log(`quick-fix menu: ${JSON.stringify(items.map((s) => s.replace(/\s+/g, ' ').trim()))}`);
  // The menu sits under a pointer block: select the entry with the keyboard, as a user would.
  const focused = page.locator('.action-widget .monaco-list-row.focused');
  for (let i = 0; i < items.length + 1; i++) {
    if (((await focused.count()) > 0 && (await focused.first().innerText()).includes(fixTitle))) break;
    await page.keyboard.press('ArrowDown');
    await page.waitForTimeout(100);
  }
  if (!(await focused.first().innerText()).includes(fixTitle)) fail(`could not select "${fixTitle}" in the quick-fix menu`);
  await shot(page, 'vscode-quickfix.png');
  await page.keyboard.press('Enter');
  await saveAndCompare(page, 'train.py');
  await waitStatus(page, /Horovod: GradientTape \(distributed\)/, 'Horovod: GradientTape (distributed)');
  log(`status bar: ${await statusText(page)}`);

  // ---- (d) the command palette converts keras_train.py
  await openFile(page, 'keras_train.py');
  await waitStatus(page, /Horovod: Keras fit \(single-GPU\)/, 'Horovod: Keras fit (single-GPU)');
  log(`status bar: ${await statusText(page)}`);
  await runCommand(page, 'Horovodize: Make file Horovod-distributed');
  await saveAndCompare(page, 'keras_train.py');
  await waitStatus(page, /Horovod: Keras fit \(distributed\)/, 'Horovod: Keras fit (distributed)');
  log(`status bar: ${await statusText(page)}`);
  await dismissNotifications(page);
  await shot(page, 'vscode-converted.png');

  // ---- (e) the stack doctor for the interpreter the client found
  await doctorStep(page);
}

// Scenario "notebook": a Jupyter notebook in code-server's built-in notebook editor (no
// kernel): the HVD100 diagnostic of its loop cell in the Problems panel at the cell's own
// line and column, then "Horovodize: Make file Horovod-distributed" on the notebook and a
// save (the test compares the saved cells with `horovodize convert`).
async function notebookScenario(page) {
  const nb = cfg.notebook;
  await openWorkbench(page);
  await openFile(page, nb.name, { notebook: true });
  await page.locator('.notebook-editor .monaco-editor .view-lines').first().waitFor({ timeout: T.mid }).catch(() =>
    fail(`${nb.name} did not open in the notebook editor (is the built-in ipynb extension there?)`));
  log(`${nb.name} open in the notebook editor`);
  await runCommand(page, 'View: Focus Problems');
  await page.locator('.markers-panel').waitFor({ timeout: T.short });
  const want = nb.hvd100;
  const row = await poll(`HVD100 in the Problems panel at the cell's Ln ${want.line}, Col ${want.column}`, async () =>
    (await problems(page)).find((p) => /\bHVD100\b/.test(p.text) && p.line === want.line && p.column === want.column), 2 * T.mid)
    .catch(async (err) => {
      const rows = await problems(page);
      fail(`${err.message}; the Problems panel shows:\n${rows.map((p) => `    ${p.text}`).join('\n')}`);
    });
  const all = await problems(page);
  log(`Problems panel:\n${all.map((p) => `    ${p.text}`).join('\n')}`);
  if (!/horovodize/.test(row.text)) fail(`HVD100 row does not name the source horovodize: ${row.text}`);
  if (all.some((p) => /^[%!]/.test(p.text))) fail('a magic is reported');
  await dismissNotifications(page);
  await shot(page, 'vscode-notebook-problems.png');

  // the whole-notebook conversion from the command palette, with a code cell focused
  await page.locator('.notebook-editor .monaco-editor .view-lines').first().click({ position: { x: 5, y: 5 } });
  await runCommand(page, 'Horovodize: Make file Horovod-distributed');
  await poll(`${nb.name} to become dirty (the server's workspace/applyEdit)`,
    async () => (await page.locator('.tabs-container .tab.active.dirty').count()) > 0);
  const text = await poll('the set-up in the imports\' cell', async () => {
    const cells = await page.locator('.notebook-editor .monaco-editor .view-lines').allInnerTexts();
    const t = cells.join('\n').replace(/\u00a0/g, ' ');
    return t.includes('import horovod.tensorflow as hvd') ? t : false;
  }, T.short);
  log(`notebook after the conversion: ${text.includes('DistributedGradientTape') ? 'DistributedGradientTape shown' : '(loop cell not rendered)'}`);
  await shot(page, 'vscode-notebook-converted.png');
  await page.keyboard.press('Control+S');
  await poll(`${nb.name} to be saved`, async () => (await page.locator('.tabs-container .tab.active.dirty').count()) === 0);
  log(`${nb.name} saved`);
}

// Scenario "project": a script that imports its project's modules (run.py, agent/core.py):
// "Horovodize: Make project Horovod-distributed" on run.py applies one workspace edit to both
// files (core.py is not open), then "File: Save All"; the test compares the files on disk
// with `horovodize convert DIR --write`.
async function projectScenario(page) {
  await openWorkbench(page);
  await openFile(page, cfg.project.entry);
  await waitStatus(page, /Horovod: /, 'Horovod: (the server answers for the entry)');
  await runCommand(page, 'Horovodize: Make project Horovod-distributed');
  await poll(`${cfg.project.entry} to become dirty (the server's workspace/applyEdit)`,
    async () => (await page.locator('.tabs-container .tab.active.dirty').count()) > 0, T.long);
  await runCommand(page, 'File: Save All');
  for (const [name, f] of Object.entries(cfg.files)) {
    const expected = fs.readFileSync(f.expected, 'utf8');
    const saved = await poll(`${name} saved by Save All`, async () => fs.readFileSync(f.path, 'utf8') === expected, T.short)
      .then(() => true, () => false);
    if (!saved) {
      // a file the edit opened in the background: open its tab (dirty with the edit) and save it
      await openFile(page, name.split('/').pop());
      await poll(`${name} to be dirty with the project's edit`,
        async () => (await page.locator('.tabs-container .tab.active.dirty').count()) > 0, T.short);
      await page.keyboard.press('Control+S');
    }
    await poll(`${name} on disk to equal \`horovodize convert DIR --write\``,
      async () => fs.readFileSync(f.path, 'utf8') === expected, T.mid).catch(() => {
      const text = fs.readFileSync(f.path, 'utf8');
      fail(`${name} after the project conversion differs; ${firstDifference(text, expected)}\n--- saved file:\n${text}`);
    });
    log(`${name}: saved text equals the CLI's project conversion`);
  }
  await dismissNotifications(page);
  await shot(page, 'vscode-project.png');
}

// ------------------------------------------------------------------ main

let context;
let page;
let code = 0;
try {
  fs.mkdirSync(cfg.screenshots, { recursive: true });
  fs.mkdirSync(cfg.browserProfile, { recursive: true });
  context = await chromium.launchPersistentContext(cfg.browserProfile, {
    executablePath: cfg.chromium,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 800 },
    timeout: T.long,
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(T.mid);
  page.on('pageerror', (err) => log(`page error: ${err.message}`));
  const run = { doctor: doctorScenario, notebook: notebookScenario, project: projectScenario }[cfg.scenario] ?? scenario;
  await run(page);
  log('all checks passed');
} catch (err) {
  code = 1;
  console.error(`[e2e] FAILED: ${err instanceof StepError ? err.message : err.stack ?? err}`);
  if (page) {
    await page.screenshot({ path: cfg.failureScreenshot }).catch(() => {});
    const notes = await page.locator('.notifications-toasts .notification-list-item-message').allInnerTexts().catch(() => []);
    if (notes.length) console.error(`[e2e] notifications: ${JSON.stringify(notes)}`);
    const status = await statusText(page).catch(() => '');
    console.error(`[e2e] status bar item: ${JSON.stringify(status)}`);
  }
} finally {
  await context?.close().catch(() => {});
}
process.exit(code);
