// What every browser test shares: Debian's Chromium launched headless with nothing of its own going online, and
// a Jupyter server's contents API (reading a notebook, or writing the long cells an editor's save would write).
import { chromium } from 'playwright-core';

export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// CHROMIUM_TRUSTED_SPKI: the base64 SHA-256 of a CA's public key, the one CA this browser trusts besides the system's
// (a site's browsers have its CA installed; a chain through any other unknown CA is still refused).
export function launchChromium(executablePath = process.env.CHROMIUM || '/usr/bin/chromium') {
  const trusted = process.env.CHROMIUM_TRUSTED_SPKI;
  const args = trusted ? [...CHROMIUM_ARGS, `--ignore-certificate-errors-spki-list=${trusted}`] : CHROMIUM_ARGS;
  return chromium.launch({ executablePath, headless: true, args });
}

// contents(method, path, body) for the server { url, token }: the parsed answer, or an Error naming the HTTP status.
export function contentsApi(server) {
  return async function contents(method, route, body) {
    const response = await fetch(`${server.url}/api/contents/${route}`, {
      method,
      headers: { Authorization: `token ${server.token}`, 'Content-Type': 'application/json' },
      body: body && JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} /api/contents/${route}: HTTP ${response.status}`);
    return response.json();
  };
}

// axe-core's accessibility rules (WCAG 2.x A and AA) run in `page`, or only in the elements `include` selects:
// each violation as { id, impact, help, nodes: how many elements, targets: the first three }.
const AXE_SOURCE = new URL('./node_modules/axe-core/axe.min.js', import.meta.url);
export async function axeViolations(page, include = null) {
  const fs = await import('node:fs');
  // evaluated through the DevTools protocol, as a console would: the page's Content-Security-Policy (the course's
  // pages allow no inline script) governs the page's own scripts, not this one
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(fs.readFileSync(AXE_SOURCE, 'utf8'));
  return page.evaluate(async (include) => {
    const context = include ? { include } : document;
    const result = await window.axe.run(context, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length,
      targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  }, include);
}
