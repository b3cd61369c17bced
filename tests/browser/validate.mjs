// nbgrader's Validate button in the learner's JupyterLab, in Debian's Chromium: what the dialog says.
// Started by tests/test_validate_browser.py, which starts the learner's JupyterLab (python -m grader lab's
// settings, the course's Validate route and dialog) and a grading service on loopback. Configuration comes from
// the environment:
//   LAB_URL, LAB_TOKEN   the learner's JupyterLab (rooted at a workspace)
//   VALIDATE_FIXTURE     a JSON file: {notebook: "sharded_step/sharded_step.ipynb", cases: [{name, content,
//                        notebook?}]}: each case's notebook is written to that path (or its own) through the
//                        contents API (as an editor's save would), opened, and validated with the toolbar's button
//   ARTIFACTS_DIR        where the screenshots go
//   CHROMIUM             the browser (default /usr/bin/chromium)
// Prints `VALIDATE-RESULT {json}`: per case the dialog's text, its paragraphs and whether any markup came from
// the answer; exits 0 when every dialog appeared.
import fs from 'node:fs';
import path from 'node:path';
import { axeViolations, launchChromium, contentsApi } from './common.mjs';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const LAB = { url: env('LAB_URL'), token: env('LAB_TOKEN') };
const FIXTURE = JSON.parse(fs.readFileSync(env('VALIDATE_FIXTURE'), 'utf8'));
const ARTIFACTS = env('ARTIFACTS_DIR');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

const started = Date.now();
const log = (message) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${message}`);
const check = (condition, message) => { if (!condition) throw new Error(message); };

const contents = contentsApi(LAB);

async function validateCase(page, { name, content, notebook = FIXTURE.notebook }, index) {
  await contents('PUT', notebook, { type: 'notebook', format: 'json', content });
  await page.goto(`${LAB.url}/lab/workspaces/validate-${index}/tree/${notebook}?reset`);
  const cells = page.locator('.jp-NotebookPanel .jp-Notebook .jp-Cell');
  const deadline = Date.now() + 60_000;
  while ((await cells.count()) !== content.cells.length) {
    check(Date.now() < deadline, `${name}: expected ${content.cells.length} cells in the page`);
    await page.waitForTimeout(250);
  }
  const button = page.locator('.jp-NotebookPanel-toolbar .validate-button').first();
  await button.waitFor({ state: 'visible', timeout: 30_000 });
  const began = Date.now();
  const keyboard = index === 0;  // the first case with the keyboard alone: Tab to the toolbar, the arrows, Enter
  if (keyboard) await pressValidate(page); else await button.click();
  const dialog = page.locator('.jp-Dialog').filter({ has: page.locator('#validation-message') });
  await dialog.waitFor({ state: 'visible', timeout: 300_000 });
  const message = dialog.locator('#validation-message');
  const seen = {
    name,
    seconds: (Date.now() - began) / 1000,
    text: (await message.innerText()).trim(),
    paragraphs: await message.locator('p').allInnerTexts(),
    summaryFirst: await message.evaluate((node) => node.firstElementChild?.classList.contains('grader-validate-summary')
      || node.classList.contains('validation-success')),
    markup: await message.locator('pre *').count(),
    classes: await message.getAttribute('class'),
  };
  seen.axe = (await axeViolations(page, ['#validation-message']))
    .filter((v) => v.impact === 'critical' || v.impact === 'serious');  // the course's message in the dialog
  log(`${name}: Validate (${seen.seconds.toFixed(1)} s): ${seen.paragraphs[0]}`);
  await page.screenshot({ path: path.join(ARTIFACTS, `validate-${name}.png`) });
  if (keyboard) {  // the dialog has the focus, and Escape closes it
    seen.focusInDialog = await page.evaluate(() => Boolean(document.activeElement?.closest('.jp-Dialog')));
    await page.keyboard.press('Escape');
  } else {
    await dialog.locator('.jp-Dialog-button').last().click();
  }
  await dialog.waitFor({ state: 'hidden', timeout: 10_000 });
  return seen;
}

// Reach the Validate button from the notebook with Tab (into the notebook's toolbar) and the arrow keys (along
// it), as a learner who uses no mouse does, and press it with Enter.
async function pressValidate(page) {
  const where = () => page.evaluate(() => {
    const active = document.activeElement;
    if (active?.closest('.jp-NotebookPanel-toolbar .validate-button')) return 'validate';
    return active?.closest('.jp-NotebookPanel-toolbar') ? 'toolbar' : 'elsewhere';
  });
  await page.locator('.jp-NotebookPanel .jp-Notebook').first().focus();
  for (let tab = 0; tab < 40 && (await where()) === 'elsewhere'; tab += 1) await page.keyboard.press('Shift+Tab');
  for (let arrow = 0; arrow < 40 && (await where()) === 'toolbar'; arrow += 1) await page.keyboard.press('ArrowRight');
  check((await where()) === 'validate', `the keyboard does not reach the Validate button (focus: ${await where()})`);
  await page.keyboard.press('Enter');
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const browser = await launchChromium(CHROMIUM);
  let step = 'login';
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    context.setDefaultTimeout(30_000);
    const page = await context.newPage();
    page.on('pageerror', (error) => log(`page error: ${error.message}`));
    await page.goto(`${LAB.url}/lab?token=${LAB.token}`);
    await page.locator('#jp-main-dock-panel').waitFor({ state: 'visible', timeout: 60_000 });
    log(`JupyterLab loaded in ${await browser.version()}`);
    const results = [];
    for (const [index, item] of FIXTURE.cases.entries()) {
      step = item.name;
      results.push(await validateCase(page, item, index));
    }
    console.log(`VALIDATE-RESULT ${JSON.stringify(results)}`);
  } catch (error) {
    const pages = browser.contexts().flatMap((c) => c.pages());
    if (pages.length) await pages[0].screenshot({ path: path.join(ARTIFACTS, `validate-failure-${step}.png`) }).catch(() => {});
    throw error;
  } finally {
    await browser.close();
  }
}

main().catch((error) => {
  console.error(`FAILED: ${error.stack || error}`);
  process.exit(1);
});
