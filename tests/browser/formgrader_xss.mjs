// Opens formgrader pages of a running instructor server in Debian's Chromium and reports, for each page, every
// sign that a payload ran. Started by tests/test_formgrader_xss.py:
//   SERVER_URL=... SERVER_TOKEN=... node formgrader_xss.mjs MANIFEST
// MANIFEST: { "pages": [{ "name": "...", "path": "/formgrader/...", "expect": ["text the page must show", ...] }] }
// Prints one JSON object: { name: { ran: [...], present: [...], shown: [...], missing: [...], violations: [...],
//   math, status, ready } }
// math: how many formulas MathJax typeset on the page;
// ran: window.__pwned, a dialog, a page retitled 'pwned', a request to the payloads' loopback port 9;
// present: elements carrying an event-handler attribute (markup a payload made, whether or not it fired);
// shown: expected texts found in the page's text content (the hostile values shown as data);
// missing: expected texts not found; violations: Content-Security-Policy violations the page reported.
import fs from 'node:fs';
import { launchChromium } from './common.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const URL = process.env.SERVER_URL;
const TOKEN = process.env.SERVER_TOKEN;
const SETTLE_MS = 2500; // formgrader's tables load from its API after the page; onerror fires within this

async function probe(context, { name, path, expect = [], ready }) {
  const ran = [];
  const violations = [];
  const page = await context.newPage();
  page.on('dialog', (dialog) => { ran.push(`dialog: ${dialog.message()}`); dialog.dismiss().catch(() => {}); });
  page.on('request', (request) => {
    if (/^https?:\/\/127\.0\.0\.1:9\//.test(request.url())) ran.push(`request: ${request.url()}`);
  });
  page.on('console', (message) => {
    const text = message.text();
    if (/Content Security Policy/i.test(text)) violations.push(text.slice(0, 300));
  });
  await page.exposeFunction('__cspViolation', (text) => violations.push(text));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      window.__cspViolation(`${event.violatedDirective} blocked ${event.blockedURI || 'inline'} ` +
        `(${(event.sample || '').slice(0, 80)})`);
    });
  });
  await page.route(/^https?:\/\/(?!127\.0\.0\.1:\d{3,5}\/)/, (route) => route.abort()); // nothing off the machine
  let status = 0;
  try {
    const response = await page.goto(`${URL}${path}`, { waitUntil: 'load', timeout: 60000 });
    status = response ? response.status() : 0;
  } catch (error) {
    ran.push(`navigation: ${error.message.split('\n')[0]}`);
  }
  if (ready) await page.waitForSelector(ready, { timeout: 120000 }).catch(() => {});
  await page.waitForTimeout(SETTLE_MS);
  const found = await page.evaluate(() => {
    const present = [];
    for (const element of document.querySelectorAll('*')) {
      for (const attribute of element.attributes) {
        if (attribute.name.startsWith('on')) present.push(element.outerHTML.slice(0, 160));
      }
    }
    const math = document.querySelectorAll('.MathJax, .MathJax_Display, .MathJax_CHTML').length;
    return { pwned: window.__pwned || null, title: document.title, present, math,
      text: document.body ? document.body.textContent : '' };
  }).catch((error) => ({ pwned: null, title: '', text: '', present: [], error: error.message }));
  if (found.pwned) ran.push(`window.__pwned = ${found.pwned}`);
  if (found.title === 'pwned') ran.push('document.title = pwned');
  const shown = expect.filter((text) => found.text.includes(text));
  const missing = expect.filter((text) => !found.text.includes(text));
  const readyFound = ready ? await page.$(ready).then((e) => !!e).catch(() => false) : true;
  if (process.env.ARTIFACTS_DIR) {
    const file = `${process.env.ARTIFACTS_DIR}/formgrader-xss-${name.replace(/[^a-z]+/gi, '-')}.png`;
    await page.screenshot({ path: file }).catch(() => {});
  }
  await page.close();
  return { ran: [...new Set(ran)], present: [...new Set(found.present)], shown, missing, math: found.math || 0,
    violations: [...new Set(violations)], status, ready: readyFound };
}

async function main() {
  const manifest = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const browser = await launchChromium(CHROMIUM);
  try {
    const context = await browser.newContext();
    const login = await context.newPage(); // the token logs the browser in (a cookie), as `jupyter lab` prints it
    await login.goto(`${URL}/?token=${TOKEN}`, { waitUntil: 'load' }); // at /: the cookie is for every path
    await login.close();
    const report = {};
    for (const entry of manifest.pages) report[entry.name] = await probe(context, entry);
    console.log(JSON.stringify(report));
  } finally {
    await browser.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
