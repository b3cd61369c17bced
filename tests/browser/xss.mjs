// Opens HTML files in Debian's Chromium and reports every learner payload that ran in them.
// Started by tests/test_xss.py: `node xss.mjs MANIFEST`, where MANIFEST is a JSON list of
//   { "file": "/abs/path.html", "allow": ["https://cdn.example/asset.js", ...] }
// (allow: URLs the page's own template requests; aborted, never fetched). Prints one JSON object:
//   { "/abs/path.html": { "ran": [...], "present": [...], "math": [...] }, ... }
// ran: evidence that script ran or a payload made a request (window.__pwned, document.title,
// a dialog, a console message, any request other than the file itself, data: URIs and `allow`);
// present: active markup left in the DOM (on* attributes, javascript: URLs, frames, objects,
// scripts that mention a payload), whether or not it fired; math: the computed CSS display of each <math>
// element ("math" or "block math" where Chromium lays it out as MathML Core). Exit status 0 unless the
// browser failed.
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import { launchChromium } from './common.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SETTLE_MS = 1500; // onerror, onload, autofocus and meta refresh all fire well within this

async function probe(context, { file, allow = [] }) {
  const ran = [];
  const url = pathToFileURL(file).href;
  const page = await context.newPage();
  page.on('dialog', (dialog) => { ran.push(`dialog: ${dialog.message()}`); dialog.dismiss().catch(() => {}); });
  page.on('console', (message) => { if (/pwned/i.test(message.text())) ran.push(`console: ${message.text()}`); });
  page.on('request', (request) => {
    const target = request.url();
    if (target !== url && !target.startsWith('data:') && !allow.includes(target)) ran.push(`request: ${target}`);
  });
  // Nothing leaves the machine: every http(s) request is aborted (it was already recorded above).
  await page.route(/^https?:/, (route) => route.abort());
  await page.goto(url, { waitUntil: 'load' }).catch((error) => ran.push(`navigation: ${error.message}`));
  await page.waitForTimeout(SETTLE_MS);
  let present = [];
  for (const frame of page.frames()) {
    const found = await frame.evaluate(() => {
      const out = [];
      if (window.__pwned) out.push(`ran: window.__pwned = ${window.__pwned}`);
      if (/pwned/i.test(document.title)) out.push(`ran: document.title = ${document.title}`);
      if (window.top !== window) out.push(`present: a frame (${location.href.slice(0, 60)})`);
      for (const element of document.querySelectorAll('*')) {
        const tag = element.tagName.toLowerCase();
        for (const attribute of element.attributes) {
          const value = attribute.value.replace(/[\u0000-\u0020]/g, '').toLowerCase();
          if (attribute.name.startsWith('on')) out.push(`present: <${tag} ${attribute.name}>`);
          else if (/^(javascript|vbscript|data:text|data:image\/svg)/.test(value)) {
            out.push(`present: <${tag} ${attribute.name}="${value.slice(0, 40)}">`);
          }
        }
        if (['iframe', 'frame', 'object', 'embed', 'base', 'form'].includes(tag)) out.push(`present: <${tag}>`);
        if (['script', 'style', 'meta', 'link'].includes(tag) && /pwned/i.test(element.outerHTML)) {
          out.push(`present: <${tag}> with a payload`);
        }
      }
      return out;
    }).catch((error) => [`present: frame not readable (${error.message.split('\n')[0]})`]);
    for (const item of found) (item.startsWith('ran: ') ? ran : present).push(item.replace(/^(ran|present): /, ''));
  }
  present = [...new Set(present)];
  const math = await page.evaluate(() => [...document.querySelectorAll('math')].map((m) => getComputedStyle(m).display))
    .catch(() => []);
  await page.close();
  return { ran: [...new Set(ran)], present, math };
}

async function main() {
  const manifest = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const browser = await launchChromium(CHROMIUM);
  try {
    const context = await browser.newContext();
    const report = {};
    for (const entry of manifest) report[entry.file] = await probe(context, entry);
    console.log(JSON.stringify(report));
  } finally {
    await browser.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
