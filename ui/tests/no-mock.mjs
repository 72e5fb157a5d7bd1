// The app's bundle (ui/dist, `npm run build`) must hold none of the browser mock: neither
// src/mock.ts nor the fixtures it serves. Looks for strings only they contain: the mock's own
// words, and the sha256s of the bundled eval set, model and calibration file (read from the
// fixtures, so the check follows them when they are written again).
//
//   node tests/no-mock.mjs [folder]      (default: ui/dist)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = process.argv[2] ?? join(root, 'dist');
const fixture = (name) => JSON.parse(readFileSync(join(root, 'src', 'fixtures', name), 'utf8'));

const mock = fixture('mock.json');
const cyclic = fixture('smollm2-135m-instruct.q4_1_3shot_cyclic.json');
const needles = [
  'mock failure', // src/mock.ts: the failure of a command named in ?fail=
  'the browser mock', // src/mock.ts: what it cannot do
  mock.calibration.sha256, // fixtures/mock.json
  cyclic.eval_set.sha256, // the result-file fixtures
  cyclic.model.sha256,
];

const files = (dir) => readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : [join(dir, n)]));
let found = 0;
let read = 0;
for (const f of files(dist)) {
  const text = readFileSync(f, 'utf8');
  read++;
  for (const n of needles) {
    if (text.includes(n)) {
      found++;
      console.error(`${relative(root, f)} holds \`${n}\`: the browser mock is in the app's bundle`);
    }
  }
}
if (read === 0) {
  console.error(`${dist} is empty: run \`npm run build\` first`);
  process.exit(2);
}
console.log(found ? `${found} trace(s) of the mock in ${relative(root, dist) || dist}` : `no trace of the mock in ${relative(root, dist)} (${read} files)`);
process.exit(found ? 1 : 0);
