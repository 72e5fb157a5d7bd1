import { defineConfig } from 'vite';

// The app's Content-Security-Policy, exactly as tauri.conf.json sets it (src-tauri/README.md says
// why each directive is there; src-tauri/tests/security.rs checks the three agree). `vite preview`
// sends it, so the tests run the bundle under the policy the app has: no inline scripts or
// styles, no eval, nothing remote. `ipc:` and `http://ipc.localhost` are Tauri's IPC transports.
export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src ipc: http://ipc.localhost",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// `vite build` is the app's bundle, without the browser mock; `vite build --mode test` is the same
// bundle with it (src/api.ts loads it outside Tauri), written to dist-test/ for tests/run.mjs, so
// the app never picks up a bundle with the mock in it.
export default defineConfig(({ mode }) => ({
  // Relative asset paths: the bundle works from Tauri's custom protocol and from any folder.
  base: './',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  // Tauri's dev server conventions: fixed port, do not clear the Rust shell's output.
  clearScreen: false,
  server: { port: 1420, strictPort: true },
  preview: { port: 4173, headers: { 'Content-Security-Policy': CSP } },
  envPrefix: ['VITE_', 'TAURI_ENV_'],
  build: {
    target: ['es2021', 'chrome105', 'safari15'],
    outDir: mode === 'test' ? 'dist-test' : 'dist',
    emptyOutDir: true,
    sourcemap: false,
    // In the test build the mock (with its bundled result-file fixtures) is a separate lazy
    // chunk, loaded only when the page runs outside Tauri.
    chunkSizeWarningLimit: 700,
  },
}));
