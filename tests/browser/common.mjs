// What every browser test shares: Debian's Chromium launched headless with nothing of its own going online, and
// a Jupyter server's contents API (reading a notebook, or writing the long cells an editor's save would write).
import { chromium } from 'playwright-core';

export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function launchChromium(executablePath = process.env.CHROMIUM || '/usr/bin/chromium') {
  return chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS });
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
