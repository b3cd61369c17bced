// Drives a running JupyterLab in Debian's Chromium, as a learner and an instructor would.
// Started by tests/test_browser.py, which starts the server; configuration comes from the environment:
//   LAB_URL        http://127.0.0.1:PORT (no trailing slash)
//   LAB_TOKEN      the server's token
//   COURSE_DIR     the server's root: a temporary copy of notebooks/, source/ and nbgrader_config.py
//   ARTIFACTS_DIR  where the screenshots go
//   CHROMIUM       the browser (default /usr/bin/chromium)
//   ASSIGNMENTS    comma-separated student notebooks to check (default: all three)
// Exits 0 when every check passed; otherwise prints the failed check and leaves failure-*.png.
import fs from 'node:fs';
import path from 'node:path';
import { axeViolations, launchChromium } from './common.mjs';

const LAB_URL = required('LAB_URL');
const TOKEN = required('LAB_TOKEN');
const COURSE_DIR = required('COURSE_DIR');
const ARTIFACTS = required('ARTIFACTS_DIR');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ASSIGNMENTS = (process.env.ASSIGNMENTS || 'sharded_step,local_mean_diagnosis,collectives').split(',');
const SOLVED = 'source/sharded_step/sharded_step.ipynb';
// The TODO cell each notebook runs right after setup: it needs nothing but the setup cell.
const TODO_CELL = { sharded_step: 'train-step', local_mean_diagnosis: 'two-averages', collectives: 'quiz' };
const DEVICES = /JAX \S+: 4 cpu devices \(ids 0 1 2 3\)/;
const JAX_INTERNALS = /jax\/_src|site-packages|jaxlib/;

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const started = Date.now();
function log(message) {
  console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${message}`);
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

// ---------------------------------------------------------------- notebook files

function readNotebook(relative) {
  return JSON.parse(fs.readFileSync(path.join(COURSE_DIR, relative), 'utf8'));
}

const source = (cell) => (Array.isArray(cell.source) ? cell.source.join('') : cell.source);
const gradeId = (cell) => cell.metadata?.nbgrader?.grade_id;

function cellIndex(nb, predicate, what) {
  const index = nb.cells.findIndex(predicate);
  check(index >= 0, `no ${what} cell`);
  return index;
}

function byId(nb, id) {
  return cellIndex(nb, (c) => gradeId(c) === id, `"${id}"`);
}

function parametersIndex(nb) {
  return cellIndex(nb, (c) => c.cell_type === 'code' && (c.metadata?.tags || []).includes('parameters'), 'parameters');
}

// The instructions of a TODO cell's scaffolds: raise NotImplementedError("...") (one per stub).
function instructions(cellSource) {
  const found = [...cellSource.matchAll(/raise NotImplementedError\((['"])(.+?)\1\)/g)].map((m) => m[2]);
  check(found.length > 0, 'the TODO cell raises no NotImplementedError with an instruction');
  return found;
}

// ---------------------------------------------------------------- server (REST)

async function api(method, route) {
  const response = await fetch(`${LAB_URL}${route}`, { method, headers: { Authorization: `token ${TOKEN}` } });
  check(response.ok, `${method} ${route}: HTTP ${response.status}`);
  return response.status === 204 ? null : response.json();
}

async function shutDownKernels() {
  for (const kernel of await api('GET', '/api/kernels')) await api('DELETE', `/api/kernels/${kernel.id}`);
}

// ---------------------------------------------------------------- the page

let page;
let shotCount = 0;

async function shot(name) {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file });
  shotCount += 1;
  log(`screenshot ${path.relative(process.cwd(), file)}`);
}

// Opens a document in a workspace of its own, so no tab of an earlier step is restored.
async function openNotebook(relative, workspace) {
  await page.goto(`${LAB_URL}/lab/workspaces/${workspace}/tree/${relative}`);
  const nb = readNotebook(relative);
  const panel = page.locator('.jp-NotebookPanel').filter({ has: page.locator('.jp-Notebook') });
  await panel.first().waitFor({ state: 'visible', timeout: 60_000 });
  const cells = page.locator('.jp-NotebookPanel .jp-Notebook .jp-Cell');
  await waitFor(async () => (await cells.count()) === nb.cells.length, 30_000,
    () => `${relative}: expected ${nb.cells.length} cells in the page`);
  // Kernel started and idle (the toolbar's kernel status shows "Idle").
  await waitFor(async () => (await page.locator('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status="idle"]').count()) > 0,
    60_000, () => `${relative}: the kernel never became idle`);
  return { nb, cells };
}

async function waitFor(predicate, timeout, message) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await page.waitForTimeout(200);
  }
  throw new Error(message());
}

const promptOf = (cell) => cell.locator('.jp-InputArea-prompt').first();

// Selects a cell by its prompt (command mode) and runs it with Shift+Enter, as a learner does.
// Returns the cell and its prompt before the run, so that a re-run is told from the last run.
async function runCell(cells, index) {
  const cell = cells.nth(index);
  await cell.scrollIntoViewIfNeeded();
  const before = (await promptOf(cell).textContent()) || '';
  await promptOf(cell).click();
  await page.keyboard.press('Shift+Enter');
  return { cell, before };
}

// Waits until the cell finished (its prompt shows a new execution count) and returns its output text.
async function outputOf({ cell, before = '' }, timeout = 90_000) {
  await waitFor(async () => {
    const now = (await promptOf(cell).textContent()) || '';
    return /\[\d+\]/.test(now) && now !== before;
  }, timeout, () => 'the cell did not finish running');
  return (await cell.locator('.jp-OutputArea').first().textContent()) || '';
}

async function showCell(cell) {
  await cell.evaluate((node) => node.scrollIntoView({ block: 'center' }));
  await page.waitForTimeout(300);
}

// ---------------------------------------------------------------- checks

async function studentNotebook(assignment) {
  const relative = `notebooks/${assignment}/${assignment}.ipynb`;
  log(`${assignment}: open ${relative}`);
  const { nb, cells } = await openNotebook(relative, `learner-${assignment}`);

  // 1. Parameters and setup cells: four CPU devices.
  await runCell(cells, parametersIndex(nb));
  const setup = await runCell(cells, byId(nb, 'setup'));
  const setupText = await outputOf(setup);
  check(DEVICES.test(setupText), `${assignment}: the setup cell printed ${JSON.stringify(setupText)}`);
  check(!/Warning|Error/.test(setupText), `${assignment}: the setup cell printed a warning: ${setupText}`);
  log(`${assignment}: setup cell says ${setupText.trim()}`);
  await showCell(setup.cell);
  await shot(`${assignment}-1-setup`);

  // Run a second time: same line, nothing else.
  if (assignment === ASSIGNMENTS[0]) {
    const again = await outputOf(await runCell(cells, byId(nb, 'setup')));
    check(again.trim() === setupText.trim(), `${assignment}: the setup cell run twice printed ${JSON.stringify(again)}`);
    log(`${assignment}: setup cell run twice: same output`);
  }

  // 2. A TODO cell: the scaffold's instruction, not a stack of JAX internals.
  const todoIndex = byId(nb, TODO_CELL[assignment]);
  const expected = instructions(source(nb.cells[todoIndex]));
  const todo = await runCell(cells, todoIndex);
  const todoText = await outputOf(todo);
  check(todoText.includes('NotImplementedError'), `${assignment}: the TODO cell shows ${JSON.stringify(todoText)}`);
  const shown = expected.find((text) => todoText.includes(`NotImplementedError: ${text}`));
  check(shown, `${assignment}: the TODO cell shows none of its instructions ${JSON.stringify(expected)}: ${todoText}`);
  check(!JAX_INTERNALS.test(todoText), `${assignment}: the TODO cell shows library internals: ${todoText}`);
  log(`${assignment}: TODO cell "${TODO_CELL[assignment]}" says: ${shown}`);
  await showCell(todo.cell);
  await shot(`${assignment}-2-todo`);

  // 3. nbgrader's Validate button (@jupyter/nbgrader): saves, validates, shows a dialog.
  const tests = nb.cells.filter((c) => c.metadata?.nbgrader?.grade && !c.metadata?.nbgrader?.solution && c.cell_type === 'code');
  const validate = page.locator('.jp-NotebookPanel-toolbar .validate-button');
  await validate.first().waitFor({ state: 'visible', timeout: 10_000 });
  const began = Date.now();
  await validate.first().click();
  const dialog = page.locator('.jp-Dialog').filter({ has: page.locator('#validation-message') });
  await dialog.waitFor({ state: 'visible', timeout: 180_000 });
  const message = (await dialog.locator('#validation-message').innerText()) || '';
  const failures = message.split('The following cell failed:').length - 1;
  const named = tests.filter((c) => message.includes(source(c).trim().split('\n')[0]));
  check(failures > 0, `${assignment}: validate reports no failed cell: ${message.slice(0, 500)}`);
  check(named.length > 0, `${assignment}: validate names none of the notebook's test cells: ${message.slice(0, 500)}`);
  log(`${assignment}: validate (${((Date.now() - began) / 1000).toFixed(1)} s): ${failures} failed cells, `
      + `test cells ${named.map(gradeId).join(', ')}`);
  await shot(`${assignment}-3-validate`);
  await dialog.locator('.jp-Dialog-button').last().click();
  await dialog.waitFor({ state: 'hidden', timeout: 10_000 });

  // 4. JAX started with another device count in this kernel: the restart instruction.
  if (assignment === ASSIGNMENTS[0]) {
    await cells.nth(nb.cells.length - 1).locator('.jp-InputArea-prompt').first().click();
    await page.keyboard.press('Escape');
    await page.keyboard.press('b');
    await page.keyboard.press('Enter');
    await page.keyboard.insertText('from coursekit.runtime import start_jax\nstart_jax(2)');
    await page.keyboard.press('Shift+Enter');
    const added = cells.nth(nb.cells.length);
    const restartText = await outputOf({ cell: added });
    check(/restart/i.test(restartText), `${assignment}: start_jax(2) after 4 devices shows ${JSON.stringify(restartText)}`);
    check(!JAX_INTERNALS.test(restartText), `${assignment}: the restart message shows library internals: ${restartText}`);
    log(`${assignment}: start_jax(2) in the same kernel says: ${restartText.replace(/-{5,}/g, '').trim()}`);
    await showCell(added);
    await shot(`${assignment}-4-restart-required`);
  }
  await shutDownKernels();
}

async function solvedNotebook() {
  log(`solved: open ${SOLVED} and run all cells`);
  const { nb, cells } = await openNotebook(SOLVED, 'solved');
  await page.getByRole('menuitem', { name: 'Run', exact: true }).click();
  await page.getByRole('menuitem', { name: /^Run All Cells/ }).click();
  const setupText = await outputOf({ cell: cells.nth(byId(nb, 'setup')) });
  check(DEVICES.test(setupText), `solved: the setup cell printed ${JSON.stringify(setupText)}`);
  const figureCell = cells.nth(byId(nb, 'figure'));
  await outputOf({ cell: figureCell }, 120_000);
  const image = figureCell.locator('.jp-OutputArea-output img');
  await image.first().waitFor({ state: 'visible', timeout: 30_000 });
  const size = await image.first().evaluate((img) => [img.naturalWidth, img.naturalHeight]);
  check(size[0] > 100 && size[1] > 100, `solved: the figure image is ${size[0]}x${size[1]}`);
  const errors = await page.locator('.jp-NotebookPanel .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').count();
  check(errors === 0, `solved: ${errors} cells of the solved notebook show errors or stderr`);
  log(`solved: ${setupText.trim()}; figure ${size[0]}x${size[1]} px; no errors`);
  // The course's outputs pass axe-core (a figure's alternative text says its data); the rest of the page is
  // JupyterLab's own, whose rule ids docs/reference/accessibility.md lists
  const alt = await image.first().getAttribute('alt');
  check(alt && /\d/.test(alt) && alt.length > 60, `solved: the figure's alternative text is ${JSON.stringify(alt)}`);
  const serious = (found) => found.filter((v) => v.impact === 'critical' || v.impact === 'serious');
  const outputs = serious(await axeViolations(page, ['.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea']));
  check(outputs.length === 0, `solved: axe-core finds in the outputs: ${JSON.stringify(outputs)}`);
  const whole = serious(await axeViolations(page)).map((v) => `${v.id} (${v.impact}, ${v.nodes}: ${v.targets.join(" | ")})`);
  log(`solved: the figure's alternative text: ${alt.slice(0, 120)}...; axe-core on JupyterLab's page: ${whole.join(', ')}`);
  await image.first().evaluate((node) => node.scrollIntoView({ block: 'center' }));
  await page.waitForTimeout(300);
  await shot('solved-sharded_step-figure');
  await shutDownKernels();
}

async function formgrader() {
  log('formgrader: open /formgrader');
  await page.goto(`${LAB_URL}/formgrader`);
  const expected = ['sharded_step', 'local_mean_diagnosis', 'collectives'];
  for (const name of expected) {
    await page.locator('table').getByText(name, { exact: true }).first().waitFor({ state: 'visible', timeout: 60_000 });
  }
  log(`formgrader: lists ${expected.join(', ')}`);
  await shot('formgrader');
}

// ---------------------------------------------------------------- main

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const browser = await launchChromium(CHROMIUM);
  let step = 'login';
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    context.setDefaultTimeout(30_000);
    page = await context.newPage();
    page.on('pageerror', (error) => log(`page error: ${error.message}`));
    // The token in the URL logs the browser in (a cookie) for the rest of the run.
    await page.goto(`${LAB_URL}/lab?token=${TOKEN}`);
    await page.locator('#jp-main-dock-panel').waitFor({ state: 'visible', timeout: 60_000 });
    log(`JupyterLab loaded in ${(await browser.version())}`);
    for (const assignment of ASSIGNMENTS) {
      step = assignment;
      await studentNotebook(assignment);
    }
    step = 'solved';
    await solvedNotebook();
    step = 'formgrader';
    await formgrader();
    log(`all checks passed; ${shotCount} screenshots in ${ARTIFACTS}`);
  } catch (error) {
    if (page) await page.screenshot({ path: path.join(ARTIFACTS, `failure-${step}.png`) }).catch(() => {});
    throw error;
  } finally {
    await browser.close();
  }
}

main().catch((error) => {
  console.error(`FAILED: ${error.stack || error}`);
  process.exit(1);
});
