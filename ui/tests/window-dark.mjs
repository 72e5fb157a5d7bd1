// The real window in the dark: a short second pass after window.mjs, with the app started under
// GTK_THEME=Adwaita:dark. WebKitGTK takes a GTK_THEME ending in ":dark" (or "-dark") as the
// system's dark preference, so the page sees `prefers-color-scheme: dark` (WebKit's
// SystemSettingsManagerProxy::darkMode, PageClientImpl::effectiveAppearanceIsDark before it).
// Nothing is scored: each page is opened as window.mjs left the app's folders, checked to be in
// its dark colours, and screenshotted into SHOTS_DIR/window-*-dark.png.
//
// Environment: as window.mjs (APP, SHOTS_DIR, QUALITY_FILE; DRIVER, default
// http://127.0.0.1:4444/), with tauri-driver itself started under GTK_THEME=Adwaita:dark so the
// app it launches inherits it: src-tauri/window-test.sh runs it after window.mjs, with a
// tauri-driver of its own.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Builder, By, Capabilities, until } from 'selenium-webdriver';

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set; run this through src-tauri/window-test.sh`);
  return v;
};
const shotsDir = env('SHOTS_DIR');
mkdirSync(shotsDir, { recursive: true });
const caps = new Capabilities();
caps.setBrowserName('wry');
caps.set('tauri:options', { application: env('APP') });
const driver = await new Builder().withCapabilities(caps).usingServer(process.env.DRIVER ?? 'http://127.0.0.1:4444/').build();
await driver.manage().setTimeouts({ pageLoad: 60_000, script: 60_000 });
const started = Date.now();
const log = (m) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] dark: ${m}`);
const css = (s) => By.css(s);
const find = (s, ms = 20_000) => driver.wait(until.elementLocated(css(s)), ms, `waiting for ${s}`);
const visible = async (s, ms = 20_000) => driver.wait(until.elementIsVisible(await find(s, ms)), ms, `waiting for ${s} to show`);
const click = async (s) => driver.executeScript('arguments[0].click()', await visible(s));
const shot = async (name, at) => {
  await driver.executeScript(
    `document.activeElement?.blur?.();
     const el = arguments[0] && document.querySelector(arguments[0]);
     if (el) el.scrollIntoView({ block: 'start' }); else window.scrollTo(0, 0);`,
    at ?? null,
  );
  await driver.sleep(150);
  writeFileSync(join(shotsDir, `window-${name}-dark.png`), await driver.takeScreenshot(), 'base64');
  log(`screenshot window-${name}-dark.png`);
};
const go = async (id) => {
  await driver.executeScript('arguments[0].click()', await visible(`[data-nav="${id}"]`));
  await driver.executeScript('window.scrollTo(0, 0);');
  await visible(`[data-page="${id}"]`);
};

let failed = false;
try {
  await visible('[data-page="score"]');
  // The system's dark preference reached the page, and styles.css's dark colours are in force.
  assert.equal(await driver.executeScript("return matchMedia('(prefers-color-scheme: dark)').matches"), true, 'WebKitGTK reports the dark preference');
  assert.equal(await driver.executeScript('return getComputedStyle(document.documentElement).backgroundColor'), 'rgb(18, 21, 25)', 'the dark page colour');
  await click('[data-testid="try-example"]');
  await visible('[data-testid="rubric-summary"]');
  await shot('score');

  await go('results');
  await visible('[data-testid="runs-table"]');
  await driver.executeScript(
    `const row = [...document.querySelectorAll('[data-testid="runs-table"] tbody tr')].find((r) => r.querySelector('.file-cell')?.title.endsWith(arguments[0]));
     row.querySelector('[data-testid="open-run"]').click();`,
    env('QUALITY_FILE'),
  );
  await visible('[data-testid="results-view"] [data-testid="risk-coverage-chart"] canvas');
  for (const id of ['reliability-chart', 'risk-coverage-chart', 'position-bias-chart']) {
    const size = await driver.executeScript(`const c = document.querySelector('[data-testid="results-view"] [data-testid="${id}"] canvas'); return c ? [c.clientWidth, c.clientHeight] : null`);
    assert.ok(size && size[0] > 200 && size[1] > 100, `${id} is drawn (${size})`);
  }
  await driver.executeScript(`document.querySelector('[data-testid="results-view"] [data-testid="position-bias-chart-data"] summary').click()`);
  await shot('results-open', '[data-testid="results-view"]');
  await shot('results-quality', '[data-testid="results-view"] [data-testid="selective-card"]');
  await click('[data-testid="curves-card"] [data-testid="open-curve"]');
  await visible('[data-testid="labels-curve-view"] [data-testid="labels-curve-chart"] svg');
  await shot('results-labels-curve', '[data-testid="labels-curve-view"]');

  await go('models');
  await visible('[data-testid="models-table"]');
  await shot('models');
  log('passed');
} catch (e) {
  failed = true;
  console.error(`FAIL ${e?.stack ?? e}`);
  try {
    writeFileSync(join(shotsDir, 'window-failure.png'), await driver.takeScreenshot(), 'base64');
  } catch {}
} finally {
  await driver.quit().catch(() => {});
}
process.exit(failed ? 1 : 0);
