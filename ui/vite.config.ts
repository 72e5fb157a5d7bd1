import { defineConfig } from 'vite';

// The Content-Security-Policy the app is built for (and the one tauri.conf.json should set).
// `vite preview` sends it, so the tests run the bundle under it: no inline scripts, no eval,
// nothing remote. `ipc:` and `http://ipc.localhost` are Tauri's IPC transports.
export const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self' ipc: http://ipc.localhost",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

export default defineConfig({
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
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    // The mock (with its bundled result-file fixtures) is a separate lazy chunk; it is only
    // loaded when the page runs outside Tauri.
    chunkSizeWarningLimit: 700,
  },
});
