// The contrast of the app's colour pairs, light and dark, read from the colour variables in
// src/styles.css (its `:root` block and the `:root` inside `@media (prefers-color-scheme: dark)`).
// Text pairs need WCAG AA, 4.5:1; chart lines and bars (not text) need 3:1 against the card.
//
//   node tests/contrast.mjs      prints every pair and exits non-zero when one falls short
//
// e2e.mjs runs the same check (`check`), so `npm test` fails on a colour too faint to read.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** WCAG 2 relative luminance of `#rrggbb` (or `#rgb`). */
export function luminance(hex) {
  let h = hex.trim().replace(/^#/, '');
  if (h.length === 3) h = [...h].map((c) => c + c).join('');
  if (!/^[0-9a-f]{6}$/i.test(h)) throw new Error(`not a #rrggbb colour: ${hex}`);
  const [r, g, b] = [0, 2, 4].map((i) => {
    const c = parseInt(h.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** The WCAG contrast ratio of two colours, 1 to 21, whichever is lighter. */
export function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** [foreground, background, where it shows, minimum ratio]. */
export const PAIRS = [
  ['--ink', '--bg', 'text on the page', 4.5],
  ['--ink', '--panel', 'text on a card', 4.5],
  ['--ink', '--field', 'text in a field', 4.5],
  ['--ink', '--subtle', 'text in a quiet box', 4.5],
  ['--muted', '--panel', 'help text on a card', 4.5],
  ['--muted', '--bg', 'help text on the page', 4.5],
  ['--muted', '--subtle', 'help text in a quiet box', 4.5],
  ['--blue-dark', '--panel', 'a link', 4.5],
  ['--blue-dark', '--blue-soft', 'badge "info", chosen segment, headline figure', 4.5],
  ['--on-accent', '--blue', 'a main button, the page in the navigation', 4.5],
  ['--on-accent', '--blue-hover', 'a main button under the pointer', 4.5],
  ['--on-accent', '--red-fill', 'a danger button', 4.5],
  ['--amber', '--amber-soft', 'badge "close call"', 4.5],
  ['--red', '--red-soft', 'badge "order-unstable"', 4.5],
  ['--green', '--green-soft', 'badge "ok"', 4.5],
  ['--violet', '--violet-soft', 'badge "DERIVED"', 4.5],
  ['--grey-ink', '--grey-soft', 'badge "no answer"', 4.5],
  ['--red', '--panel', 'a wrong answer', 4.5],
  ['--green', '--panel', 'a right answer, "installed"', 4.5],
  ['--amber-ink', '--amber-soft', 'a warning', 4.5],
  ['--green-ink', '--green-soft', 'a notice', 4.5],
  ['--red-ink', '--red-soft', 'an error', 4.5],
  ['--nav-ink', '--nav-bg', 'the navigation', 4.5],
  ['--nav-muted', '--nav-bg', 'the navigation, small print', 4.5],
  ['--demo-ink', '--demo-bg', 'the demo tag', 4.5],
  ['--chart-ink', '--panel', 'chart labels', 4.5],
  ['--blue', '--panel', 'chart: bars and lines (blue)', 3],
  ['--orange', '--panel', 'chart: bars and lines (orange)', 3],
  ['--axis', '--panel', 'chart: grey line and bars', 3],
  ['--amber', '--panel', 'chart: 5% error line', 3],
];

/** The colour variables of one `{ … }` block. */
function vars(block) {
  const out = {};
  for (const m of block.matchAll(/(--[\w-]+):\s*(#[0-9a-fA-F]{3,6})\s*;/g)) out[m[1]] = m[2];
  return out;
}

/** { light, dark }: the colour variables of each scheme (dark: light's, overridden). */
export function schemes(css) {
  const light = css.match(/:root\s*\{([^}]*)\}/);
  const dark = css.match(/@media\s*\(prefers-color-scheme:\s*dark\)\s*\{\s*:root\s*\{([^}]*)\}/);
  if (!light || !dark) throw new Error('styles.css: no :root block, or no dark :root block');
  const l = vars(light[1]);
  return { light: l, dark: { ...l, ...vars(dark[1]) } };
}

/** The `#rrggbb` colours written outside the two `:root` blocks (each should be a variable, so
 * that it has a dark value too): ['line N: …']. */
export function strayColours(css) {
  const out = [];
  let inRoot = false;
  css.split('\n').forEach((line, i) => {
    if (/^\s*:root\s*\{/.test(line)) inRoot = true;
    else if (inRoot && /^\s*\}/.test(line)) inRoot = false;
    else if (!inRoot && /#[0-9a-fA-F]{3,8}\b/.test(line.replace(/\/\*.*?\*\//g, ''))) out.push(`line ${i + 1}: ${line.trim()}`);
  });
  return out;
}

/** Every pair in both schemes: { scheme, fg, bg, where, ratio, min, ok }. */
export function check(css = readStyles()) {
  const s = schemes(css);
  const rows = [];
  for (const scheme of ['light', 'dark']) {
    for (const [fg, bg, where, min] of PAIRS) {
      const [a, b] = [s[scheme][fg], s[scheme][bg]];
      if (!a || !b) throw new Error(`styles.css (${scheme}): ${!a ? fg : bg} is not set`);
      const ratio = contrast(a, b);
      rows.push({ scheme, fg, bg, where, ratio, min, ok: ratio >= min });
    }
  }
  return rows;
}

export const readStyles = () => readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'styles.css'), 'utf8');

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const stray = strayColours(readStyles());
  for (const l of stray) console.log(`a colour outside :root (make it a variable): ${l}`);
  const rows = check();
  for (const r of rows) {
    console.log(`${r.ok ? 'ok  ' : 'LOW '} ${r.scheme.padEnd(5)} ${r.ratio.toFixed(2).padStart(5)}:1 (≥ ${r.min})  ${r.fg} on ${r.bg}  ${r.where}`);
  }
  process.exit(rows.every((r) => r.ok) && stray.length === 0 ? 0 : 1);
}
