// Submit -> feedback, in Debian's Chromium: a learner in JupyterLab's Assignment List with the course's grading
// service (python -m grader serve --attempts 1) running beside it. Started by tests/test_service.py
// (test_submit_and_fetch_feedback_in_jupyterlab). Configuration comes from the environment:
//   LEARNER_URL, LEARNER_TOKEN   the learner's JupyterLab (lab/learner config, rooted at the workspace)
//   SUBMIT_FIXTURE               a JSON file: assignment, solutions {grade_id: source} (the learner's cells),
//                                hidden-test lines, the named mistake the page must show, and each assignment's
//                                due-date line as this learner's list must show it (due: {assignment: text})
//   ARTIFACTS_DIR, CHROMIUM      screenshots; the browser (default /usr/bin/chromium)
// The tutorial's steps on one machine (the assignment already downloaded by `make lab`). Every step is a click
// (Submit, the list's refresh, Fetch Feedback) except writing the learner's cells,
// done through the contents API as an editor's save would, and the second Submit, made with the keyboard alone.
// Prints `SUBMIT-RESULT {json}` for the Python side.
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium, contentsApi } from './common.mjs';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const LEARNER = { url: env('LEARNER_URL'), token: env('LEARNER_TOKEN') };
const ARTIFACTS = env('ARTIFACTS_DIR');
const FIXTURE = JSON.parse(fs.readFileSync(env('SUBMIT_FIXTURE'), 'utf8'));
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const A = FIXTURE.assignment;
const NOTEBOOK = `${A}/${A}.ipynb`;
const started = Date.now();
const log = (message) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${message}`);
const check = (condition, message) => { if (!condition) throw new Error(message); };
let page;

const contents = contentsApi(LEARNER);

async function openAssignmentList(workspace) {
  await page.goto(`${LEARNER.url}/lab/workspaces/${workspace}?reset`);
  await page.locator('#jp-main-dock-panel').waitFor({ state: 'visible', timeout: 60_000 });
  await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Nbgrader$/ }).click();
  await page.getByRole('menuitem', { name: 'Assignment List' }).click();
  await page.locator('#nbgrader-assignment-list').waitFor({ state: 'visible', timeout: 30_000 });
}

const listItem = (list, text) => page.locator(`#${list} .list_item`, { hasText: text });

// The tutorial's one-machine path: `make lab` copied the assignment into the workspace and released it, so the
// Assignment List lists it under Downloaded assignments, with Submit, and there is nothing to fetch.
async function downloadedAndSolve() {
  await openAssignmentList('submit-downloaded');
  await listItem('fetched_assignments_list', A).first().waitFor({ state: 'visible', timeout: 60_000 });
  check(await listItem('fetched_assignments_list', A).getByRole('button', { name: 'Submit', exact: true }).count() === 1,
    `${A} is listed under Downloaded assignments without its Submit button`);
  // Before Submit: under each name, this learner's own due date (the class's, their extension, or none)
  const due = {};
  for (const [name, expected] of Object.entries(FIXTURE.due)) {
    const line = listItem('fetched_assignments_list', name).first().locator('.grader-due-date');
    await line.filter({ hasText: /\S/ }).waitFor({ state: 'visible', timeout: 30_000 });
    due[name] = (await line.innerText()).trim();
    check(due[name] === expected, `${name}'s due date in the Assignment List reads "${due[name]}", not "${expected}"`);
  }
  log(`learner: due dates listed: ${JSON.stringify(due)}`);
  // NOT A CLICK: the learner's cells, saved through the contents API.
  const model = await contents('GET', NOTEBOOK);
  let written = 0;
  for (const cell of model.content.cells) {
    const id = cell.metadata?.nbgrader?.grade_id;
    if (id in FIXTURE.solutions) { cell.source = FIXTURE.solutions[id]; written += 1; }
  }
  check(written === Object.keys(FIXTURE.solutions).length, `wrote ${written} of the learner's cells`);
  await contents('PUT', NOTEBOOK, { type: 'notebook', format: 'json', content: model.content });
  log(`learner: ${A} listed under Downloaded assignments; saved ${written} cells`);
}

// From the Assignment List's first control (its refresh button), Tab until `target` has the focus, then Enter: the
// list's buttons are in the keyboard's order, as a learner who uses no mouse needs them.
async function pressWithKeyboard(target, name) {
  await page.locator('#refresh_assignments_list').focus();
  const focused = () => target.evaluate((element) => element === document.activeElement);
  for (let tab = 0; tab < 60 && !(await focused()); tab += 1) await page.keyboard.press('Tab');
  check(await focused(), `the keyboard does not reach ${name} in the Assignment List`);
  await page.keyboard.press('Enter');
  log(`learner: ${name} reached with Tab and pressed with Enter`);
}

// Submit, then refresh the list (its own button) until the newest submission has feedback to fetch.
async function submitAndWait(nth) {
  await openAssignmentList(`submit-${nth}`);
  const submitted = page.locator('#submitted_assignments_list .nested_list_item');
  const before = await submitted.count();
  const began = Date.now();
  const button = listItem('fetched_assignments_list', A).getByRole('button', { name: 'Submit', exact: true }).first();
  if (nth === 2) await pressWithKeyboard(button, 'Submit'); else await button.click();
  const deadline = Date.now() + 240_000;
  for (;;) {
    const rows = await submitted.count();
    const ready = await page.locator('#submitted_assignments_list .nested_list_item', { hasText: 'feedback available to fetch' }).count();
    if (rows > before && ready >= 1) break;
    check(Date.now() < deadline, `no feedback to fetch 240 s after Submit (${rows} submissions listed)`);
    await page.waitForTimeout(500);
    await page.locator('#refresh_assignments_list').click();
    await page.waitForTimeout(300);
  }
  const seconds = (Date.now() - began) / 1000;
  log(`learner: submission ${nth}: "feedback available to fetch" ${seconds.toFixed(1)} s after Submit`);
  await page.screenshot({ path: path.join(ARTIFACTS, `submit-${nth}-listed.png`) });
  await listItem('submitted_assignments_list', A).first().getByRole('button', { name: 'Fetch Feedback', exact: true }).click();
  await page.locator('#submitted_assignments_list a', { hasText: 'view feedback' }).first()
    .waitFor({ state: 'visible', timeout: 60_000 });
  const fetched = (Date.now() - began) / 1000;
  const folders = (await contents('GET', `${A}/feedback`)).content.filter((item) => item.type === 'directory');
  const newest = folders.map((f) => f.name).sort().at(-1);
  const file = `${A}/feedback/${newest}/${A}.html`;
  await page.goto(`${LEARNER.url}/files/${encodeURI(file)}`, { referer: `${LEARNER.url}/lab` });
  const text = await page.locator('body').innerText();
  const html = text + await page.content();
  const leaked = FIXTURE.hidden_lines.filter((line) => html.includes(line));
  check(leaked.length === 0, `the feedback page shows hidden tests: ${leaked.slice(0, 3)}`);
  await page.screenshot({ path: path.join(ARTIFACTS, `submit-${nth}-feedback.png`), fullPage: false });
  log(`learner: submission ${nth}: feedback fetched ${fetched.toFixed(1)} s after Submit: ${text.split('\n').slice(0, 3).join(' | ')}`);
  return { listed: seconds, fetched, file, folders: folders.length, text };
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const browser = await launchChromium(CHROMIUM);
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    context.setDefaultTimeout(30_000);
    const outside = [];
    await context.route(/^https?:/, (route) => {
      if (route.request().url().startsWith(LEARNER.url)) return route.continue();
      outside.push(route.request().url());
      return route.abort();
    });
    page = await context.newPage();
    await page.goto(`${LEARNER.url}/lab?token=${LEARNER.token}`);
    await downloadedAndSolve();
    const first = await submitAndWait(1);
    check(first.text.includes(FIXTURE.mistake), `the first feedback page lacks "${FIXTURE.mistake}":\n${first.text.slice(0, 1500)}`);
    check(/Autograded( score)?: [\d.]+ \/ [\d.]+/.test(first.text), 'the first feedback page shows no score');
    check(first.text.includes('Submitted on time') && !first.text.includes('after the due date'),
      `submitted after the class's due date, within this learner's extension: not late\n${first.text.slice(0, 1500)}`);
    const second = await submitAndWait(2);
    check(second.text.includes('Received, not graded now') && !second.text.includes(FIXTURE.mistake),
      `the second page (over the limit) should say it was not graded and show no verdict:\n${second.text.slice(0, 800)}`);
    check(outside.length === 0, `requests left the machine: ${outside.slice(0, 3)}`);
    const brief = (r) => ({ ...r, text: r.text.slice(0, 1200) });
    console.log(`SUBMIT-RESULT ${JSON.stringify({ first: brief(first), second: brief(second) })}`);
  } finally {
    await browser.close();
  }
}

main().catch((error) => {
  console.error(`FAILED: ${error.stack || error}`);
  process.exit(1);
});
