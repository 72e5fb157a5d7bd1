// Serves the test build ui/dist-test (the app's bundle with the browser mock, `npm run
// build:test`) with `vite preview` (under the app's Content-Security-Policy), launches Debian's
// chromium through playwright-core, runs every test in e2e.mjs, and exits non-zero when one
// fails. `npm test` builds first.
//
//   node tests/run.mjs [name-filter]
//   CHROMIUM=/path/to/chromium node tests/run.mjs
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { preview } from 'vite';
import { tests } from './e2e.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
if (!existsSync(join(root, 'dist-test', 'index.html'))) {
  console.error('ui/dist-test is missing: run `npm run build:test` first (or `npm test`, which builds).');
  process.exit(2);
}
if (!existsSync(executablePath)) {
  console.error(`${executablePath} not found. On Debian/Ubuntu: apt-get install -y chromium (or set CHROMIUM=…).`);
  process.exit(2);
}

const shots = join(here, 'screenshots');
mkdirSync(shots, { recursive: true });

const server = await preview({ root, configFile: join(root, 'vite.config.ts'), mode: 'test', logLevel: 'warn', preview: { port: 0, strictPort: false, open: false } });
const base = server.resolvedUrls?.local?.[0];
if (!base) throw new Error('vite preview did not report a URL');

const browser = await chromium.launch({
  executablePath,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});

const filter = process.argv[2];
let failed = 0;
let ran = 0;
const started = Date.now();
for (const t of tests) {
  if (filter && !t.name.includes(filter)) continue;
  ran++;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true, deviceScaleFactor: 1 });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
  });
  const t0 = Date.now();
  try {
    const url = (query = '', hash = '') => `${base}${query ? `?${query}` : ''}${hash ? `#/${hash}` : ''}`;
    const shot = async (name) => {
      // Full-page shots from the top, without a focus ring or caret.
      await page.evaluate(() => {
        document.activeElement?.blur?.();
        window.scrollTo(0, 0);
      });
      await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true, caret: 'hide' });
    };
    await t.run({ page, url, shot });
    if (problems.length) throw new Error(problems.join('\n'));
    console.log(`ok   ${t.name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${t.name}\n     ${String(e?.stack ?? e).split('\n').slice(0, 6).join('\n     ')}`);
    if (problems.length) console.log(`     ${problems.join('\n     ')}`);
    await page.screenshot({ path: join(here, `.failure-${t.name.replace(/\W+/g, '-')}.png`), fullPage: true }).catch(() => {});
  }
  await context.close();
}
await browser.close();
await new Promise((r) => server.httpServer.close(r));
console.log(`${ran - failed} passed, ${failed} failed, ${((Date.now() - started) / 1000).toFixed(1)} s; screenshots in tests/screenshots/`);
process.exit(failed || ran === 0 ? 1 : 0);
