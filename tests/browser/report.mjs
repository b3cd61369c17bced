// Opens the class report in Debian's Chromium, as an instructor would, and reports what the page shows.
// Started by tests/test_class_report.py: `node report.mjs PAGE SCREENSHOT`.
// Prints one JSON object:
//   title: the page's <h1>; sections: the <h2> texts;
//   images / images_loaded: <img> elements, and those decoded with a non-zero size (the plots);
//   tables: for each <table>, its rows as arrays of cell texts (header row first);
//   details / details_open: <details> elements, and those open without a click (aggregate first: none);
//   scripts: <script> elements; csp_violations: securitypolicyviolation events (a blocked request or script);
//   injected: elements a hostile id could have made (any element carrying an attribute named "data-pwned");
//   axe: axe-core's WCAG 2.1 A/AA violations on the page.
// Exit status 0 unless the browser failed.
import { pathToFileURL } from 'node:url';
import { axeViolations, launchChromium } from './common.mjs';

const [file, screenshot] = process.argv.slice(2);
const browser = await launchChromium();
try {
  const page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective));
  });
  const dialogs = [];
  page.on('dialog', async (dialog) => { dialogs.push(dialog.message()); await dialog.dismiss(); });
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  const seen = await page.evaluate(async () => {
    const images = [...document.querySelectorAll('img')];
    await Promise.all(images.map((img) => img.decode().catch(() => null)));
    return {
      title: document.querySelector('h1')?.textContent,
      sections: [...document.querySelectorAll('h2')].map((h) => h.textContent),
      images: images.length,
      images_loaded: images.filter((img) => img.naturalWidth > 0 && img.getBoundingClientRect().width > 0).length,
      tables: [...document.querySelectorAll('table')].map((table) =>
        [...table.rows].map((row) => [...row.cells].map((cell) => cell.textContent.trim()))),
      details: document.querySelectorAll('details').length,
      details_open: document.querySelectorAll('details[open]').length,
      scripts: document.querySelectorAll('script').length,
      csp_violations: window.__violations,
      injected: document.querySelectorAll('[data-pwned]').length,
    };
  });
  seen.dialogs = dialogs;
  seen.axe = await axeViolations(page);
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
  console.log(JSON.stringify(seen));
} finally {
  await browser.close();
}
