// The Hugging Face hub on loopback, for the real-window test (src-tauri/window-test.sh starts it
// before the app, so that the app's HF_ENDPOINT can name it): the API's revision info (commit,
// files with size and sha256) and `resolve` with the headers hf-hub reads (X-Repo-Commit, ETag,
// Content-Range) and Range requests, serving each file at about 40 MB/s so that a person (or
// the test) sees the progress and can press Cancel. The Rust tests have their own hub in
// tests/fake_hub/ (std threads, no node).
//
//   node ui/tests/fake-hub.mjs URL_FILE ORG/REPO:FILE=PATH …   (writes its address to URL_FILE)
import { createHash } from 'node:crypto';
import { createReadStream, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';

const COMMIT = '0123456789abcdef0123456789abcdef01234567';
const [urlFile, ...served] = process.argv.slice(2);
if (!urlFile || served.length === 0) {
  console.error('usage: node ui/tests/fake-hub.mjs URL_FILE ORG/REPO:FILE=PATH …');
  process.exit(2);
}

const sha256 = (path) =>
  new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path).on('data', (d) => h.update(d)).on('end', () => resolve(h.digest('hex'))).on('error', reject);
  });

/** repo → [{ name, path, size, sha }] */
const repos = new Map();
for (const arg of served) {
  const [spec, path] = arg.split('=');
  const [repo, name] = spec.split(':');
  const entry = { name, path, size: statSync(path).size, sha: await sha256(path) };
  repos.set(repo, [...(repos.get(repo) ?? []), entry]);
}

const notFound = (res, code) => {
  res.writeHead(404, { 'X-Error-Code': code, 'X-Error-Message': code, 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ error: code }));
};

const server = createServer((req, res) => {
  res.on('error', () => {});
  const path = decodeURIComponent((req.url ?? '/').split('?')[0]);
  const api = path.match(/^\/api\/models\/([^/]+\/[^/]+)\/revision\/(.+)$/);
  if (api) {
    const files = repos.get(api[1]);
    if (!files) return notFound(res, 'RepoNotFound');
    const siblings = files.map((f) => ({ rfilename: f.name, size: f.size, lfs: { sha256: f.sha, size: f.size, pointerSize: 134 } }));
    res.writeHead(200, { 'Content-Type': 'application/json' });
    return res.end(JSON.stringify({ id: api[1], modelId: api[1], sha: COMMIT, siblings }));
  }
  const file = path.match(/^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/);
  if (!file) return notFound(res, 'RepoNotFound');
  const f = (repos.get(file[1]) ?? []).find((x) => x.name === file[3]);
  if (!f) return notFound(res, repos.has(file[1]) ? 'EntryNotFound' : 'RepoNotFound');
  const range = (req.headers.range ?? '').match(/^bytes=(\d+)-(\d*)$/);
  const start = range ? Number(range[1]) : 0;
  const end = range && range[2] ? Math.min(Number(range[2]), f.size - 1) : f.size - 1;
  const headers = {
    'X-Repo-Commit': COMMIT,
    ETag: `"${f.sha}"`,
    'Accept-Ranges': 'bytes',
    'Content-Length': String(end - start + 1),
    'Content-Range': `bytes ${start}-${end}/${f.size}`,
  };
  res.writeHead(range ? 206 : 200, headers);
  if (end - start < 1024) return createReadStream(f.path, { start, end }).pipe(res);
  // Paced: 256 KiB every ~6 ms.
  const stream = createReadStream(f.path, { start, end, highWaterMark: 256 * 1024 });
  stream.on('data', (chunk) => {
    stream.pause();
    if (!res.write(chunk)) res.once('drain', () => setTimeout(() => stream.resume(), 6));
    else setTimeout(() => stream.resume(), 6);
  });
  stream.on('end', () => res.end());
  req.on('close', () => stream.destroy());
});
server.listen(0, '127.0.0.1', () => {
  writeFileSync(urlFile, `http://127.0.0.1:${server.address().port}`);
});
