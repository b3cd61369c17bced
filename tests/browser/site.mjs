// Pages of the docs site, opened from the file system as a reader would. Prints, as JSON:
//   math: { font, errors, failed } once the first display with a bmatrix on LESSON_PAGE is typeset (offline)
//   axe: { page: axe-core's critical and serious WCAG 2.1 A/AA violations } for LESSON_PAGE and each of AXE_PAGES
//   LESSON_PAGE=/site/course/sharded_step.html AXE_PAGES='["/site/index.html", ...]' node tests/browser/site.mjs
import { pathToFileURL } from 'node:url';
import { axeViolations, launchChromium } from './common.mjs';

const browser = await launchChromium();
try {
  const page = await browser.newPage();
  const failed = [];
  page.on('requestfailed', (request) => failed.push(request.url()));
  page.on('response', (response) => { if (response.status() >= 400) failed.push(response.url()); });
  await page.goto(pathToFileURL(process.env.LESSON_PAGE).href, { waitUntil: 'load' });
  await page.waitForFunction(() => window.MathJax && MathJax.Hub && MathJax.Hub.getAllJax().length > 0,
    null, { timeout: 60000 });
  const measured = await page.evaluate(() => new Promise((resolve) => MathJax.Hub.Queue(() => {
    const jax = MathJax.Hub.getAllJax().find((j) => j.originalText.includes('bmatrix'));
    if (!jax) { resolve({ error: 'no bmatrix on the page' }); return; }
    resolve({ font: MathJax.OutputJax['HTML-CSS'].fontInUse,
      errors: document.querySelectorAll('.MathJax_Error, .merror').length });
  })));
  const math = { ...measured, failed: [...failed] };  // before leaving the page aborts what it still loads
  const serious = (violations) => violations.filter((v) => v.impact === 'critical' || v.impact === 'serious');
  const axe = { [process.env.LESSON_PAGE]: serious(await axeViolations(page)) };  // typeset, as a reader sees it
  for (const other of JSON.parse(process.env.AXE_PAGES || '[]')) {
    await page.goto(pathToFileURL(other).href, { waitUntil: 'load' });
    axe[other] = serious(await axeViolations(page));
  }
  console.log(JSON.stringify({ math, axe }));
} finally {
  await browser.close();
}
