// A lesson page of the docs site, opened from the file system as a reader would, typesets its math offline:
// prints { font, errors, failed } once the first display with a bmatrix is typeset, as JSON.
//   LESSON_PAGE=/path/to/site/course/sharded_step.html node tests/browser/math.mjs
import { pathToFileURL } from 'node:url';
import { launchChromium } from './common.mjs';

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
  console.log(JSON.stringify({ ...measured, failed }));
} finally {
  await browser.close();
}
