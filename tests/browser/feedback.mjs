// Opens a learner's feedback page in Debian's Chromium and reports what a learner sees.
// Started by tests/test_feedback_page.py: `node feedback.mjs MANIFEST`, where MANIFEST is a JSON object
//   { "file": "/abs/feedback.html", "secrets": ["hidden line", ...], "printed": "text the learner printed",
//     "pending": "words of the header while hand grading is pending", "more": ["/abs/other-page.html", ...] }
// Prints one JSON object:
//   printed_visible: the printed text is in a visible element of the page;
//   figures / figures_loaded: <img> elements, and those decoded and laid out with a non-zero size;
//   code_blocks: <pre> elements; clipped: those whose content is wider than their box (scrollWidth > clientWidth),
//     or that reach past the page's right edge;
//   secrets_found: secrets present anywhere in the page's text or markup;
//   pending_in_header: the pending words are in the page's status lines, above the first table;
//   long_line_text: the text of the output block that starts with "a long line", if any;
//   axe: axe-core's WCAG 2.1 A/AA violations on the page; more_axe: {page: violations} for each of "more".
// Exit status 0 unless the browser failed.
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import { axeViolations, launchChromium } from './common.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const manifest = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));

const browser = await launchChromium(CHROMIUM);
try {
  const page = await (await browser.newContext({ viewport: { width: 900, height: 900 } })).newPage();
  await page.goto(pathToFileURL(manifest.file).href, { waitUntil: 'load' });
  const seen = await page.evaluate(({ printed, pending }) => {
    const visible = (element) => {
      const box = element.getBoundingClientRect();
      const style = getComputedStyle(element);
      return box.width > 0 && box.height > 0 && style.visibility !== 'hidden' && style.display !== 'none';
    };
    const pres = [...document.querySelectorAll('pre')];
    const right = document.documentElement.clientWidth;
    const clipped = pres.filter((pre) => pre.scrollWidth > pre.clientWidth || pre.getBoundingClientRect().right > right)
      .map((pre) => `${pre.textContent.slice(0, 60)} (${pre.scrollWidth} > ${pre.clientWidth})`);
    const images = [...document.querySelectorAll('img')];
    const status = [];
    for (const element of (document.querySelector('main') || document.body).children) {
      if (element.tagName === 'TABLE') break;
      status.push(element.textContent);
    }
    const long = pres.find((pre) => pre.textContent.startsWith('a long line'));
    return {
      printed_visible: pres.some((pre) => pre.textContent.includes(printed) && visible(pre)),
      figures: images.length,
      figures_loaded: images.filter((img) => img.complete && img.naturalWidth > 0 && visible(img)).length,
      code_blocks: pres.length,
      clipped,
      pending_in_header: status.some((text) => text.includes(pending)),
      long_line_text: long ? long.textContent : null,
      text: document.documentElement.textContent,
      markup: document.documentElement.outerHTML,
    };
  }, { printed: manifest.printed, pending: manifest.pending });
  seen.axe = await axeViolations(page);
  seen.secrets_found = manifest.secrets.filter((secret) => seen.text.includes(secret) || seen.markup.includes(secret));
  delete seen.text;
  delete seen.markup;
  fs.mkdirSync('test-artifacts/browser', { recursive: true });
  await page.screenshot({ path: 'test-artifacts/browser/feedback.png', fullPage: true });
  seen.more_axe = {};  // the service's own pages (manifest.more): axe-core's violations on each
  for (const other of manifest.more || []) {
    await page.goto(pathToFileURL(other).href, { waitUntil: 'load' });
    seen.more_axe[other] = await axeViolations(page);
  }
  console.log(JSON.stringify(seen));
} finally {
  await browser.close();
}
