// An LTI 1.3 launch as a learner makes it, in Debian's Chromium (started by tests/test_lti_launch.py): the LMS's course
// page (tests/lms_platform.py), click "Open the JAX course"; the browser goes through the hub's login initiation, the
// LMS's authorization endpoint and its form post of the id_token back to the hub, and lands in the learner's own
// JupyterLab. Environment: LMS_URL, HUB_URL, LTI_PERSON (the LMS's login_hint), LTI_ACCOUNT (the account expected),
// ARTIFACTS_DIR, CHROMIUM. Prints `LTI-RESULT {json}`.
import path from 'node:path';
import { launchChromium } from './common.mjs';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const [LMS, HUB, PERSON, ACCOUNT, ARTIFACTS] = ['LMS_URL', 'HUB_URL', 'LTI_PERSON', 'LTI_ACCOUNT', 'ARTIFACTS_DIR'].map(env);
const started = Date.now();
const log = (message) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${message}`);

const browser = await launchChromium();
try {
  const page = await (await browser.newContext()).newPage();
  const visited = [];
  page.on('request', (request) => {  // each step of the launch, redirects included
    if (request.isNavigationRequest() && request.frame() === page.mainFrame()) visited.push(new URL(request.url()).pathname);
  });
  await page.goto(`${LMS}/course?user=${encodeURIComponent(PERSON)}`);
  await page.getByRole('link', { name: 'Open the JAX course' }).click();
  const server = `${HUB}/user/${ACCOUNT}/`;
  await page.waitForURL((url) => url.href.startsWith(server), { timeout: 240_000, waitUntil: 'commit' });
  log(`launched from the LMS; at ${page.url()}`);
  await page.locator('#jp-main-dock-panel').waitFor({ state: 'visible', timeout: 180_000 });
  await page.screenshot({ path: path.join(ARTIFACTS, 'lti-launched-lab.png') });
  log('JupyterLab is open in the learner\'s own server');
  console.log(`LTI-RESULT ${JSON.stringify({ url: page.url(), visited })}`);
} finally {
  await browser.close();
}
