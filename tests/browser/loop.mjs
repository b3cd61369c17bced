// The whole nbgrader loop in Debian's Chromium: a learner in JupyterLab's Assignment List, an instructor in
// formgrader, two Jupyter servers sharing one exchange. Started by tests/test_browser.py
// (test_the_whole_loop_in_jupyterlab_and_formgrader), which starts both servers on a temporary copy of the
// course and checks the files on disk afterwards. Configuration comes from the environment:
//   LEARNER_URL, LEARNER_TOKEN        the learner's JupyterLab (lab/learner config, rooted at the workspace)
//   INSTRUCTOR_URL, INSTRUCTOR_TOKEN  the instructor's JupyterLab with formgrader (rooted at the course copy)
//   COURSE_DIR                        the course copy (the instructor's feedback/ is read from it)
//   LOOP_FIXTURE                      a JSON file: assignment, student, solutions {grade_id: source} for the
//                                     long TODO cells, the hand-graded answer, hidden-test lines, the
//                                     command that prints the gradebook's scores as JSON
//   ARTIFACTS_DIR                     where the screenshots go
//   CHROMIUM                          the browser (default /usr/bin/chromium)
// Every step is a click in the page (Fetch, Validate, Submit, Release, Collect, Autograde, the hand-graded
// points and comment, Generate Feedback, Release Feedback, Fetch Feedback) except the one named in a comment
// where it happens: the long solution cells are written through the learner server's contents API.
// Exits 0 when every check passed and prints `LOOP-RESULT {json}` for the Python side.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium, contentsApi } from './common.mjs';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const LEARNER = { url: env('LEARNER_URL'), token: env('LEARNER_TOKEN') };
const INSTRUCTOR = { url: env('INSTRUCTOR_URL'), token: env('INSTRUCTOR_TOKEN') };
const COURSE_DIR = env('COURSE_DIR');
const ARTIFACTS = env('ARTIFACTS_DIR');
const FIXTURE = JSON.parse(fs.readFileSync(env('LOOP_FIXTURE'), 'utf8'));
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const A = FIXTURE.assignment;
const NOTEBOOK = `${A}/${A}.ipynb`;

const started = Date.now();
const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
const log = (message) => console.log(`[${seconds().padStart(6)} s] ${message}`);
const check = (condition, message) => { if (!condition) throw new Error(message); };
const timings = {};
let learner;
let instructor;
let shotCount = 0;

async function shot(page, name) {
  await page.screenshot({ path: path.join(ARTIFACTS, `loop-${name}.png`), fullPage: false });
  shotCount += 1;
}

async function waitFor(page, predicate, timeout, message) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await page.waitForTimeout(250);
  }
  throw new Error(typeof message === 'function' ? message() : message);
}

// The gradebook's scores, read by the Python command the test gave (nbgrader's Gradebook API on gradebook.db).
function gradebook() {
  const [command, ...args] = FIXTURE.gradebook_command;
  return JSON.parse(execFileSync(command, args, { encoding: 'utf8' }));
}

// The learner server's REST API (not a UI step): used to read files and, once, to write the long solutions.
const contents = contentsApi(LEARNER);

async function shutDownLearnerKernels() {
  const headers = { Authorization: `token ${LEARNER.token}` };
  const kernels = await (await fetch(`${LEARNER.url}/api/kernels`, { headers })).json();
  for (const kernel of kernels) await fetch(`${LEARNER.url}/api/kernels/${kernel.id}`, { method: 'DELETE', headers });
}

// ---------------------------------------------------------------- formgrader (instructor)

// Clicks a formgrader action and waits for its result dialog (createLogModal); fails on its error dialog.
async function formgraderAction(link, what, timeout = 60_000) {
  const began = Date.now();
  await link.click();
  const modal = instructor.locator('#success-modal, #error-modal');
  await modal.first().waitFor({ state: 'visible', timeout });
  const id = await modal.first().getAttribute('id');
  const text = (await modal.first().locator('.modal-body').innerText()).trim();
  timings[what] = (Date.now() - began) / 1000;
  log(`formgrader: ${what} (${timings[what].toFixed(1)} s): ${text.split('\n')[0]}`);
  await shot(instructor, `instructor-${what.replace(/\W+/g, '-')}`);
  check(id === 'success-modal', `formgrader: ${what} failed:\n${text}`);
  await modal.first().locator('.modal-footer button').click();
  await modal.first().waitFor({ state: 'detached', timeout: 10_000 });
  return text;
}

async function manageAssignments() {
  await instructor.goto(`${INSTRUCTOR.url}/formgrader/manage_assignments`);
  const row = instructor.locator('#main-table tr', { has: instructor.getByRole('link', { name: A, exact: true }) });
  await row.waitFor({ state: 'visible', timeout: 30_000 });
  return row;
}

async function manageSubmissions() {
  await instructor.goto(`${INSTRUCTOR.url}/formgrader/manage_submissions/${A}`);
  const row = instructor.locator('tr', { has: instructor.locator('td.student-id', { hasText: FIXTURE.student }) });
  await row.waitFor({ state: 'visible', timeout: 30_000 });
  return row;
}

// ---------------------------------------------------------------- JupyterLab (learner)

async function openAssignmentList() {
  await learner.locator('.lm-MenuBar-itemLabel', { hasText: /^Nbgrader$/ }).click();
  await learner.getByRole('menuitem', { name: 'Assignment List' }).click();
  await learner.locator('#nbgrader-assignment-list').waitFor({ state: 'visible', timeout: 30_000 });
}

const listItem = (list, text) => learner.locator(`#${list} .list_item`, { hasText: text });

// ---------------------------------------------------------------- the loop

async function release() {
  const row = await manageAssignments();
  await shot(instructor, 'instructor-0-manage-assignments');
  await formgraderAction(row.locator('td.release a'), 'Release');
}

async function fetchAssignment() {
  await learner.goto(`${LEARNER.url}/lab/workspaces/loop-list?reset`);
  await learner.locator('#jp-main-dock-panel').waitFor({ state: 'visible', timeout: 60_000 });
  await openAssignmentList();
  const released = listItem('released_assignments_list', A);
  await released.getByRole('button', { name: 'Fetch', exact: true }).click();
  await listItem('fetched_assignments_list', A).first().waitFor({ state: 'visible', timeout: 60_000 });
  const fetched = await contents('GET', NOTEBOOK);
  check(fetched.type === 'notebook', `${NOTEBOOK} was not fetched into the workspace`);
  log(`learner: fetched ${A} from the Assignment List into the workspace`);
  await shot(learner, 'learner-1-fetched');
}

async function solveAndValidate() {
  // NOT A CLICK: the long TODO cells (the training step and the transfer, dozens of lines each) and the
  // free-text answer are written through the learner server's contents API, as an editor's save would;
  // typing them into CodeMirror is brittle (auto-indent, bracket closing). The quiz TODO is typed below.
  const model = await contents('GET', NOTEBOOK);
  const notebook = model.content;
  const written = [];
  for (const cell of notebook.cells) {
    const id = cell.metadata?.nbgrader?.grade_id;
    if (id in FIXTURE.solutions) {
      cell.source = FIXTURE.solutions[id];
      written.push(id);
    }
  }
  check(written.length === Object.keys(FIXTURE.solutions).length, `solution cells not found: ${written}`);
  await contents('PUT', NOTEBOOK, { type: 'notebook', format: 'json', content: notebook });
  log(`learner: wrote ${written.join(', ')} through the contents API`);

  await learner.goto(`${LEARNER.url}/lab/workspaces/loop-notebook/tree/${NOTEBOOK}?reset`);
  const cells = learner.locator('.jp-NotebookPanel .jp-Notebook .jp-Cell');
  await waitFor(learner, async () => (await cells.count()) === notebook.cells.length, 60_000,
    () => `${NOTEBOOK}: expected ${notebook.cells.length} cells in the page`);
  // The quiz TODO, typed into its cell editor as a learner does.
  const quiz = notebook.cells.findIndex((c) => c.metadata?.nbgrader?.grade_id === FIXTURE.typed.grade_id);
  const editor = cells.nth(quiz).locator('.cm-content');
  await editor.scrollIntoViewIfNeeded();
  await editor.click();
  await learner.keyboard.press('Control+A');
  await learner.keyboard.type(FIXTURE.typed.source);
  await learner.keyboard.press('Escape');
  check((await editor.innerText()).trim() === FIXTURE.typed.source, `the quiz cell shows ${await editor.innerText()}`);
  log(`learner: typed "${FIXTURE.typed.source}" into the ${FIXTURE.typed.grade_id} cell`);
  await shot(learner, 'learner-2-solved');

  const began = Date.now();
  await learner.locator('.jp-NotebookPanel-toolbar .validate-button').first().click();
  const dialog = learner.locator('.jp-Dialog').filter({ has: learner.locator('#validation-message') });
  await dialog.waitFor({ state: 'visible', timeout: 240_000 });
  const message = (await dialog.locator('#validation-message').innerText()).trim();
  timings.validate = (Date.now() - began) / 1000;
  log(`learner: Validate (${timings.validate.toFixed(1)} s): ${message.split('\n')[0]}`);
  await shot(learner, 'learner-3-validated');
  // The course's Validate (grader/learner): failing tests counted first, never "passes all the tests".
  check(message.startsWith('No visible check fails (of ') && !message.includes('passes all the tests'),
    `validation failed:\n${message.slice(0, 1500)}`);
  await dialog.locator('.jp-Dialog-button').last().click();
  const saved = (await contents('GET', NOTEBOOK)).content.cells[quiz].source;
  check(saved.trim() === FIXTURE.typed.source, `the saved quiz cell is ${JSON.stringify(saved)}`);
  await shutDownLearnerKernels();
}

async function submit() {
  await learner.goto(`${LEARNER.url}/lab/workspaces/loop-submit?reset`);
  await learner.locator('#jp-main-dock-panel').waitFor({ state: 'visible', timeout: 60_000 });
  await openAssignmentList();
  await listItem('fetched_assignments_list', A).getByRole('button', { name: 'Submit', exact: true }).first().click();
  await listItem('submitted_assignments_list', A).first().waitFor({ state: 'visible', timeout: 60_000 });
  log('learner: submitted from the Assignment List');
  await shot(learner, 'learner-4-submitted');
}

async function collectAndAutograde() {
  let row = await manageAssignments();
  await formgraderAction(row.locator('td.collect a'), 'Collect');
  row = await manageSubmissions();
  await formgraderAction(row.locator('td.autograde a'), 'Autograde', 400_000);
  const book = gradebook();
  check(book.submission !== null, 'autograde left no submission in gradebook.db');
  log(`formgrader: autograded ${JSON.stringify(book.submission)}`);
  return book;
}

async function gradeByHand() {
  await instructor.goto(`${INSTRUCTOR.url}/formgrader/gradebook/${A}/${A}`);
  const link = instructor.locator('a[href*="/formgrader/submissions/"]').first();
  await link.waitFor({ state: 'visible', timeout: 30_000 });
  await link.click();
  const { grade_id: id, points, comment } = FIXTURE.manual;
  const score = instructor.locator(`input.score[id="${id}"]`);
  await score.waitFor({ state: 'visible', timeout: 60_000 });
  // The learner's answer has TeX: MathJax, served by the instructor's own server, typesets it.
  await waitFor(instructor, async () => (await instructor.locator('.MathJax, .MathJax_CHTML, mjx-container').count()) > 0,
    30_000, 'formgrader: MathJax typeset nothing on the submission page');
  // formgrade.js saves a change only once it has fetched the grades and comments and bound a view to each box
  await instructor.waitForFunction(
    () => window.formgrader?.grades?.loaded === true && window.formgrader?.comments?.loaded === true, null,
    { timeout: 60_000 });
  await score.scrollIntoViewIfNeeded();
  await score.fill(String(points));
  await score.press('Tab');
  const box = instructor.locator(`textarea[id="${id}-comment"]`);
  await box.fill(comment);
  await box.press('Tab');
  await waitFor(instructor, async () => {
    const grade = gradebook().grades[id];
    return grade && grade.manual_score === points && grade.comment === comment;
  }, 30_000, () => `formgrader: the hand grade of ${id} did not reach gradebook.db: ${JSON.stringify(gradebook().grades[id])}`);
  log(`formgrader: ${id} graded by hand: ${points} points and a comment; MathJax typeset the answer`);
  await box.scrollIntoViewIfNeeded();
  await shot(instructor, 'instructor-manual-grading');
}

async function feedback() {
  let row = await manageAssignments();
  await formgraderAction(row.locator('td.generate-feedback a'), 'Generate Feedback', 300_000);
  row = await manageAssignments();
  await formgraderAction(row.locator('td.release-feedback a'), 'Release Feedback');
}

function hiddenIn(text) {
  return FIXTURE.hidden_lines.filter((line) => text.includes(line));
}

async function fetchFeedback() {
  await learner.goto(`${LEARNER.url}/lab/workspaces/loop-feedback?reset`);
  await learner.locator('#jp-main-dock-panel').waitFor({ state: 'visible', timeout: 60_000 });
  await openAssignmentList();
  const submitted = listItem('submitted_assignments_list', A).first();
  await submitted.getByRole('button', { name: 'Fetch Feedback', exact: true }).click();
  const view = learner.locator('#submitted_assignments_list a', { hasText: 'view feedback' }).first();
  await view.waitFor({ state: 'visible', timeout: 60_000 });
  await shot(learner, 'learner-5-feedback-fetched');
  await view.click();
  const folders = (await contents('GET', `${A}/feedback`)).content.filter((item) => item.type === 'directory');
  check(folders.length === 1, `expected one feedback folder, found ${folders.map((f) => f.name)}`);
  const file = `${folders[0].path}/${A}.html`;
  // Opened in a tab of its own, as from JupyterLab (Jupyter Server wants the Referer of a page of its own).
  await learner.goto(`${LEARNER.url}/files/${encodeURI(file)}`, { referer: `${LEARNER.url}/lab` });
  const text = await learner.locator('body').innerText();
  const found = text.match(/Autograded score: ([\d.]+) \/ ([\d.]+); graded by hand: ([\d.]+) \/ ([\d.]+); total: ([\d.]+) \/ ([\d.]+)\./);
  check(found, `the feedback page shows no total of autograded and hand-graded points:\n${text.slice(0, 800)}`);
  const [auto, autoMax, hand, handMax, total, totalMax] = found.slice(1).map(Number);
  check(hand === FIXTURE.manual.points && total === auto + hand && totalMax === autoMax + handMax,
    `feedback totals: ${found[0]}`);
  check(text.includes(FIXTURE.manual.comment), 'the feedback page lacks the instructor\'s comment');
  const leaked = hiddenIn(text + await learner.content());
  check(leaked.length === 0, `the learner's feedback shows hidden tests: ${leaked.slice(0, 3)}`);
  const math = await learner.evaluate(() => [...document.querySelectorAll('math')].map((m) => getComputedStyle(m).display));
  check(math.length > 0 && math.every((d) => d === 'math' || d === 'block math'), `math on the feedback page: ${math}`);
  log(`learner: feedback ${file}: ${found[0]} ${math.length} MathML formulas, no hidden test`);
  await shot(learner, 'learner-6-feedback-page');
  const answer = learner.locator('math').last();
  await answer.scrollIntoViewIfNeeded();
  await shot(learner, 'learner-7-feedback-math');
  return { file, auto, autoMax, hand, handMax, total, totalMax, math: math.length };
}

async function stockButtonsAgain() {
  const before = gradebook();
  let row = await manageSubmissions();
  await formgraderAction(row.locator('td.autograde a'), 'Autograde again', 400_000);
  row = await manageSubmissions();
  await formgraderAction(row.locator('td.generate-feedback a'), 'Generate Feedback again', 300_000);
  const after = gradebook();
  check(JSON.stringify(after) === JSON.stringify(before),
    `the stock buttons changed gradebook.db:\nbefore ${JSON.stringify(before)}\nafter  ${JSON.stringify(after)}`);
  const page = fs.readFileSync(path.join(COURSE_DIR, 'feedback', FIXTURE.student, A, `${A}.html`), 'utf8');
  const leaked = hiddenIn(page);
  check(leaked.length === 0, `the regenerated feedback shows hidden tests: ${leaked.slice(0, 3)}`);
  log('formgrader: Autograde and Generate Feedback again: gradebook.db unchanged, no hidden test in the feedback');
  return before;
}

// ---------------------------------------------------------------- main

async function login(browser, server, landing) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  page.on('pageerror', (error) => log(`page error (${server.url}): ${error.message}`));
  // Offline: anything but the two loopback servers is refused and reported.
  await context.route(/^https?:/, (route) => {
    const url = route.request().url();
    if (url.startsWith(LEARNER.url) || url.startsWith(INSTRUCTOR.url)) return route.continue();
    outside.push(url);
    return route.abort();
  });
  // MathJax's files (configuration, extensions, fonts) all come from the instructor's server.
  page.on('response', (response) => {
    if (response.url().includes('/static/jupyter_server_mathjax/') && response.status() >= 400) {
      missing.push(`${response.status()} ${response.url()}`);
    }
  });
  await page.goto(`${server.url}${landing}?token=${server.token}`);
  return page;
}

const outside = [];
const missing = [];

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const browser = await launchChromium(CHROMIUM);
  let step = 'login';
  try {
    instructor = await login(browser, INSTRUCTOR, '/formgrader');
    learner = await login(browser, LEARNER, '/lab');
    const steps = [['release', release], ['fetch', fetchAssignment], ['solve-validate', solveAndValidate],
      ['submit', submit], ['collect-autograde', collectAndAutograde], ['manual-grading', gradeByHand],
      ['feedback', feedback], ['fetch-feedback', fetchFeedback], ['stock-again', stockButtonsAgain]];
    const results = {};
    for (const [name, run] of steps) {
      step = name;
      results[name] = await run();
    }
    check(outside.length === 0, `requests left the machine: ${[...new Set(outside)].slice(0, 5)}`);
    check(missing.length === 0, `MathJax asked the instructor's server for files it lacks: ${missing.slice(0, 5)}`);
    log(`all checks passed; ${shotCount} screenshots in ${ARTIFACTS}`);
    console.log(`LOOP-RESULT ${JSON.stringify({ timings, feedback: results['fetch-feedback'],
      gradebook: results['stock-again'] })}`);
  } catch (error) {
    for (const [who, page] of [['learner', learner], ['instructor', instructor]]) {
      if (page) await page.screenshot({ path: path.join(ARTIFACTS, `loop-failure-${step}-${who}.png`) }).catch(() => {});
    }
    throw error;
  } finally {
    await browser.close();
  }
}

main().catch((error) => {
  console.error(`FAILED: ${error.stack || error}`);
  process.exit(1);
});
