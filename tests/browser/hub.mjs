// The class on JupyterHub (python -m grader hub), in Debian's Chromium. Started by tests/test_hub.py, one step per
// run (the Python side acts between steps, as the instructor would: the due date between two learners' Submits):
//   node hub.mjs submit USER       log in through the hub's login page, Assignment List: Fetch, save the answer,
//                                  Submit; the submission is listed
//   node hub.mjs feedback USER     log in, refresh the Assignment List until the feedback can be fetched, Fetch
//                                  Feedback, open the page; ask for OTHER's server and files (nothing comes back);
//                                  run PROBE (python) in a kernel of USER's own server
//   node hub.mjs formgrader USER   log in as staff: formgrader's submissions of the assignment
//   node hub.mjs grade USER        log in as staff: grade FIXTURE.manual's free-text answer by hand in formgrader
//   node hub.mjs resubmit USER     log in, save FIXTURE.answers[USER] (or FIXTURE.unreadable[USER], not a notebook)
//                                  over the fetched notebook, Submit again; one more submission is listed
//   node hub.mjs appeal USER       log in, Assignment List: "ask for a regrade", send FIXTURE.appeal[USER] from the page
// Environment: HUB_URL, HUB_FIXTURE (JSON: passwords, assignment, answers {user: notebook}, other {user: user},
// probe: python code, folder: the fetched assignment's folder, default A), ARTIFACTS_DIR, CHROMIUM. Prints `HUB-RESULT {json}`.
import fs from 'node:fs';
import path from 'node:path';
import { axeViolations, launchChromium } from './common.mjs';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const HUB = env('HUB_URL');
const ARTIFACTS = env('ARTIFACTS_DIR');
const FIXTURE = JSON.parse(fs.readFileSync(env('HUB_FIXTURE'), 'utf8'));
const [STEP, USER] = process.argv.slice(2);
const A = FIXTURE.assignment;
const DIR = FIXTURE.folder || A;  // where Fetch puts it: ~/COURSE/A on a hub of several courses
const started = Date.now();
const log = (message) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${USER}: ${message}`);
const check = (condition, message) => { if (!condition) throw new Error(message); };
const shot = (page, name) => page.screenshot({ path: path.join(ARTIFACTS, `hub-${USER}-${name}.png`) });
const server = `${HUB}/user/${USER}`;

let loginViolations = null;  // axe-core on the hub's login page, read once (the staff's formgrader step)

// The page each step opens first: the hub's login form sends the browser there (its `next`), so the page JupyterHub
// would otherwise open after logging in (JupyterLab, the heaviest page here) is not loaded only to be left.
const FIRST = {
  submit: 'lab', resubmit: 'lab', appeal: 'lab', feedback: 'lab',
  formgrader: `formgrader/manage_submissions/${A}`,
  grade: `formgrader/manage_students/${FIXTURE.manual?.student}/${A}`,
};
const labUrl = () => `${server}/lab/workspaces/${STEP}?reset`;
const firstUrl = () => (FIRST[STEP] === 'lab' ? labUrl() : `${server}/${FIRST[STEP]}`);
let landed = false;  // the login's redirect already opened firstUrl()

async function login(page) {
  // through the hub's spawn page, which starts the learner's server first where it is not running yet
  const target = new URL(firstUrl()).pathname + new URL(firstUrl()).search;
  const next = `/hub/spawn?next=${encodeURIComponent(target)}`;
  await page.goto(`${HUB}/hub/login?next=${encodeURIComponent(next)}`);
  if (STEP === 'formgrader') loginViolations = await axeViolations(page);
  await page.locator('#username_input').fill(USER);
  await page.locator('#password_input').fill(FIXTURE.passwords[USER]);
  await shot(page, 'login');
  await page.locator('#login_submit').click();
  await page.waitForURL((url) => url.href.startsWith(`${server}/`), { timeout: 240_000, waitUntil: 'commit' });
  landed = true;
  log(`logged in through the hub's login page; server at ${page.url()}`);
}

// The server's REST API from inside the page, as JupyterLab calls it (the hub's cookie, the _xsrf header).
async function api(page, method, route, body) {
  return page.evaluate(async ([method, url, body]) => {
    const xsrf = (document.cookie.match(/(?:^|;\s*)_xsrf=([^;]+)/) || [])[1] || '';
    const response = await fetch(url, { method, headers: { 'X-XSRFToken': decodeURIComponent(xsrf), 'Content-Type': 'application/json' },
      body: body && JSON.stringify(body), redirect: 'manual' });
    let json = null;
    try { json = await response.json(); } catch { json = null; }
    return { status: response.status, type: response.type, json };
  }, [method, route, body]);
}

async function openLab(page) {
  if (!landed || FIRST[STEP] !== 'lab') await page.goto(labUrl());
  landed = false;
  await page.locator('#jp-main-dock-panel').waitFor({ state: 'visible', timeout: 120_000 });
}

async function openAssignmentList(page) {
  await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Nbgrader$/ }).click();
  await page.getByRole('menuitem', { name: 'Assignment List' }).click();
  await page.locator('#nbgrader-assignment-list').waitFor({ state: 'visible', timeout: 60_000 });
}

const listItem = (page, list, text) => page.locator(`#${list} .list_item`, { hasText: text });

async function submit(page) {
  await openLab(page);
  await openAssignmentList(page);
  await listItem(page, 'released_assignments_list', A).getByRole('button', { name: 'Fetch', exact: true })
    .click({ timeout: 60_000 });
  await listItem(page, 'fetched_assignments_list', A).first().waitFor({ state: 'visible', timeout: 60_000 });
  // NOT A CLICK: the learner's answer, saved through the contents API as an editor's save would.
  const saved = await api(page, 'PUT', `${server}/api/contents/${DIR}/${A}.ipynb`,
    { type: 'notebook', format: 'json', content: FIXTURE.answers[USER] });
  check(saved.status === 200, `saving the answer: HTTP ${saved.status}`);
  log(`fetched ${A} into the home folder and saved the answer`);
  await listItem(page, 'fetched_assignments_list', A).getByRole('button', { name: 'Submit', exact: true }).first().click();
  const submitted = page.locator('#submitted_assignments_list .nested_list_item');
  await submitted.first().waitFor({ state: 'visible', timeout: 120_000 });
  await shot(page, 'submitted');
  log(`submitted from the Assignment List (${await submitted.count()} submission listed)`);
  return { submitted: await submitted.count() };
}

// A later Submit of the same assignment (already fetched): the learner's new notebook (FIXTURE.answers[USER]), or,
// with FIXTURE.unreadable[USER], a file in its place that is not a notebook, saved as an editor would; Submit again.
async function resubmit(page) {
  await openLab(page);
  await openAssignmentList(page);
  const before = await page.locator('#submitted_assignments_list .nested_list_item').count();
  const saved = FIXTURE.unreadable?.[USER]
    ? await api(page, 'PUT', `${server}/api/contents/${DIR}/${A}.ipynb`, { type: 'file', format: 'text', content: FIXTURE.unreadable[USER] })
    : await api(page, 'PUT', `${server}/api/contents/${DIR}/${A}.ipynb`, { type: 'notebook', format: 'json', content: FIXTURE.answers[USER] });
  check(saved.status === 200 || saved.status === 201, `saving the new answer: HTTP ${saved.status}`);
  await listItem(page, 'fetched_assignments_list', A).getByRole('button', { name: 'Submit', exact: true }).first().click();
  const submitted = page.locator('#submitted_assignments_list .nested_list_item');
  const deadline = Date.now() + 120_000;
  while ((await submitted.count()) <= before) {
    check(Date.now() < deadline, `the new submission is not listed (${before} before)`);
    await page.waitForTimeout(500);
  }
  await shot(page, `resubmitted-${before + 1}`);
  log(`submitted again from the Assignment List (${await submitted.count()} submissions listed)`);
  return { submitted: await submitted.count() };
}

// A regrade request as a learner makes it: the Assignment List's "(ask for a regrade)" beside a submission's feedback
// opens the learner's regrade page (grader.learner.regrade) in a new tab; choose FIXTURE.appeal[USER].test, give its
// reason, send. What the page said, the requests it lists, and axe-core's violations on the page.
async function appeal(page) {
  await openLab(page);
  await openAssignmentList(page);
  const link = page.locator('#submitted_assignments_list a', { hasText: 'ask for a regrade' }).first();
  await link.waitFor({ state: 'visible', timeout: 60_000 });
  await shot(page, 'regrade-link');
  const [tab] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
  await tab.getByLabel('Why you think the test is wrong').waitFor({ state: 'visible', timeout: 60_000 });
  check(tab.url().startsWith(`${server}/course/regrade?assignment=${A}`), `the link opened ${tab.url()}`);
  const { test, reason } = FIXTURE.appeal[USER];
  await tab.getByLabel('Test', { exact: true }).selectOption(test);
  await tab.getByLabel('Why you think the test is wrong').fill(reason);
  const violations = await axeViolations(tab);
  await shot(tab, 'regrade-form');
  await tab.getByRole('button', { name: 'Send the request' }).click();  // (the answer's page alone has a status)
  const said = await tab.getByRole('status').innerText({ timeout: 60_000 });
  await shot(tab, 'regrade-sent');
  log(`asked for a regrade of ${test}: ${said}`);
  return { said, listed: await tab.locator('main').innerText(), violations };
}

async function feedback(page) {
  await openLab(page);
  await openAssignmentList(page);
  const deadline = Date.now() + 240_000;
  for (;;) {
    const ready = await page.locator('#submitted_assignments_list .nested_list_item', { hasText: 'feedback available to fetch' }).count();
    const fetched = await page.locator('#submitted_assignments_list a', { hasText: 'view feedback' }).count();
    if (ready >= 1 || fetched >= 1) break;  // (fetched already: a second run of this step)
    check(Date.now() < deadline, 'no feedback to fetch after 240 s');
    await page.waitForTimeout(1000);
    await page.locator('#refresh_assignments_list').click();
    await page.waitForTimeout(500);
  }
  const fetchButton = listItem(page, 'submitted_assignments_list', A).first().getByRole('button', { name: 'Fetch Feedback', exact: true });
  // FIXTURE.pages[USER]: how many feedback pages there must be once fetched (a later Submit's page comes later);
  // FIXTURE.expect[USER]: a text the newest page must hold (an answer released beside an earlier page)
  const wanted = FIXTURE.pages?.[USER] || 1;
  const expected = FIXTURE.expect?.[USER];
  const folderNames = async () => ((await api(page, 'GET', `${server}/api/contents/${DIR}/feedback`)).json?.content || [])
    .filter((f) => f.type === 'directory').map((f) => f.name).sort();
  const pageText = async (file) => (await api(page, 'GET', `${server}/api/contents/${encodeURI(file)}?type=file&format=text&content=1`)).json?.content || '';
  const until = Date.now() + 240_000;
  for (;;) {
    if (await fetchButton.isEnabled()) await fetchButton.click();
    await page.waitForTimeout(1000);
    const names = await folderNames();
    if (names.length >= wanted && (!expected || (await pageText(`${DIR}/feedback/${names.at(-1)}/${A}.html`)).includes(expected))) break;
    check(Date.now() < until, `no feedback page ${wanted}${expected ? ` saying '${expected}'` : ''} after 240 s`);
    await page.waitForTimeout(1000);
    await page.locator('#refresh_assignments_list').click();
    await page.waitForTimeout(500);
  }
  await page.locator('#submitted_assignments_list a', { hasText: 'view feedback' }).first().waitFor({ state: 'visible', timeout: 60_000 });
  await shot(page, 'feedback-listed');
  const folders = (await api(page, 'GET', `${server}/api/contents/${DIR}/feedback`)).json.content.filter((f) => f.type === 'directory');
  const file = `${DIR}/feedback/${folders.map((f) => f.name).sort().at(-1)}/${A}.html`;
  await page.goto(`${server}/files/${encodeURI(file)}`);
  const text = await page.locator('body').innerText();
  await shot(page, 'feedback-page');
  log(`fetched feedback: ${text.split('\n').slice(0, 2).join(' | ')}`);
  // Another learner's server and files: the hub sends this learner away, and no content comes back.
  await openLab(page);  // (the feedback page is sandboxed: no script of the page may read cookies)
  const other = FIXTURE.other[USER];
  const theirs = {};
  for (const route of [`/user/${other}/api/contents/${DIR}/feedback`, `/user/${other}/files/${DIR}/${A}.ipynb`,
    `/user/${other}/api/contents`, `/hub/api/users/${other}`]) {
    const answer = await api(page, 'GET', `${HUB}${route}`);
    theirs[route] = { status: answer.status, type: answer.type, content: answer.json && (answer.json.content !== undefined || answer.json.name !== undefined) };
  }
  // A kernel of this learner's own server: who it runs as, what it may open.
  const probe = await runInKernel(page, FIXTURE.probe[USER]);
  log(`kernel says: ${probe.trim()}`);
  return { text: text.slice(0, 3000), file, theirs, probe };
}

async function runInKernel(page, code) {
  const kernel = await api(page, 'POST', `${server}/api/kernels`, { name: 'python3' });
  check(kernel.status === 201, `starting a kernel: HTTP ${kernel.status}`);
  return page.evaluate(async ([base, id, code]) => new Promise((resolve, reject) => {
    const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/api/kernels/${id}/channels`);
    const msgId = crypto.randomUUID();
    let printed = '';
    const timer = setTimeout(() => reject(new Error(`the kernel did not answer: ${printed}`)), 120_000);
    socket.onopen = () => socket.send(JSON.stringify({
      header: { msg_id: msgId, msg_type: 'execute_request', username: 'test', session: crypto.randomUUID(), version: '5.3', date: '' },
      parent_header: {}, metadata: {}, channel: 'shell',
      content: { code, silent: false, store_history: false, user_expressions: {}, allow_stdin: false } }));
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.parent_header?.msg_id !== msgId) return;
      if (message.msg_type === 'stream') printed += message.content.text;
      if (message.msg_type === 'error') printed += `ERROR ${message.content.ename}: ${message.content.evalue}\n`;
      if (message.msg_type === 'status' && message.content.execution_state === 'idle') {
        clearTimeout(timer); socket.close(); resolve(printed);
      }
    };
    socket.onerror = () => reject(new Error('the kernel websocket failed'));
  }), [server, kernel.json.id, code]);
}

async function formgrader(page) {
  if (!landed) await page.goto(`${server}/formgrader/manage_submissions/${A}`);
  landed = false;
  // formgrader's table is filled by its script after the page's load event: wait for each learner's row (a reload
  // only when a submission is not in the gradebook yet)
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      for (const s of FIXTURE.students) {
        await page.locator('#main-table td.student-id', { hasText: s }).first().waitFor({ state: 'visible', timeout: 15_000 });
      }
      break;
    } catch (error) {
      if (Date.now() > deadline) break;
      await page.reload();
    }
  }
  // the course's columns (course_totals.js): each learner's late penalty, total and Autograde cell, once filled
  await page.waitForFunction(() => window.courseTotals?.loaded === true, null, { timeout: 60_000 });
  const cells = {};
  for (const s of FIXTURE.students) {
    const row = page.locator('#main-table tr', { has: page.locator('td.student-id', { hasText: s }) }).first();
    cells[s] = { penalty: await row.locator('td.course-late-penalty').innerText(),
                 total: await row.locator('td.course-total').innerText(),
                 autograde: await row.locator('td.autograde').innerText() };
  }
  const notice = await page.locator('#course-service-grades').isVisible();
  const text = await page.locator('body').innerText();
  await shot(page, 'formgrader');
  log(`formgrader lists: ${JSON.stringify(cells)}; the service's notice shown: ${notice}`);
  // axe-core on the page, and on what the course adds to it (the notice, the two columns)
  const violations = await axeViolations(page);
  const ours = await axeViolations(page, ['#course-service-grades', '.course-late-penalty', '.course-total']);
  return { text: text.slice(0, 3000), rows: await page.locator('#main-table tr').count(), cells, notice, violations, ours };
}

// Staff: open the learner's submission in formgrader and grade its free-text answer by hand (the score box of the
// cell FIXTURE.manual.cell, as an instructor types it; formgrader saves on change).
async function grade(page) {
  const learner = FIXTURE.manual.student;
  if (!landed) await page.goto(`${server}/formgrader/manage_students/${learner}/${A}`);
  landed = false;
  await page.waitForURL(new RegExp(`/formgrader/manage_students/${learner}/`), { timeout: 240_000 });
  await page.locator('body').waitFor();
  const listed = await api(page, 'GET', `${server}/formgrader/api/student_notebook_submissions/${learner}/${A}`);
  check(listed.status === 200 && listed.json.length === 1, `formgrader's submissions of ${learner}: HTTP ${listed.status}`);
  // The score boxes are in the page's HTML at once, but formgrader's script (formgrade.js) saves a change only once
  // it has fetched the grades and bound a view to each box (formgrader.grades.loaded): typed earlier, as on a loaded
  // machine, nothing is sent. Wait for that, type, and see the save go out.
  await page.goto(`${server}/formgrader/submissions/${listed.json[0].id}/`);
  await page.waitForFunction(() => window.formgrader?.grades?.loaded === true && window.formgrader?.comments?.loaded === true,
                             null, { timeout: 120_000 });
  const box = page.locator(`input.score#${FIXTURE.manual.cell}`);
  await box.waitFor({ state: 'visible', timeout: 120_000 });
  const saved = page.waitForResponse((r) => r.url().includes('/formgrader/api/grade/') && r.request().method() === 'PUT',
                                     { timeout: 60_000 });
  await box.fill(String(FIXTURE.manual.points));
  await box.press('Tab');
  const answer = await saved;
  check(answer.status() === 200, `formgrader's save of the hand grade: HTTP ${answer.status()}`);
  // formgrader's own record of the notebook: nothing left to grade by hand once the score is saved
  const deadline = Date.now() + 60_000;
  for (;;) {
    const now = await api(page, 'GET', `${server}/formgrader/api/student_notebook_submissions/${learner}/${A}`);
    if (now.status === 200 && now.json[0].needs_manual_grade === false) break;
    check(Date.now() < deadline, `formgrader did not save the hand grade: ${JSON.stringify(now.json)}`);
    await page.waitForTimeout(1000);
  }
  await shot(page, `graded-${learner}`);
  log(`graded ${learner}'s ${FIXTURE.manual.cell} by hand: ${FIXTURE.manual.points} points`);
  return { graded: learner };
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const browser = await launchChromium();
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    context.setDefaultTimeout(30_000);
    const outside = [];
    await context.route(/^https?:/, (route) => {
      if (route.request().url().startsWith(HUB)) return route.continue();
      outside.push(route.request().url());
      return route.abort();
    });
    const page = await context.newPage();
    await login(page);
    const steps = { submit, resubmit, appeal, feedback, formgrader, grade };
    check(STEP in steps, `unknown step ${STEP}`);
    const result = await steps[STEP](page);
    if (loginViolations) result.login = loginViolations;
    check(outside.length === 0, `requests left the machine: ${outside.slice(0, 3)}`);
    console.log(`HUB-RESULT ${JSON.stringify(result)}`);
  } finally {
    await browser.close();
  }
}

main().catch((error) => {
  console.error(`FAILED: ${error.stack || error}`);
  process.exit(1);
});
