// Number and time formatting for people.

export const pct = (x: number | null | undefined, digits = 1): string =>
  x === null || x === undefined || Number.isNaN(x) ? '—' : `${(x * 100).toFixed(digits)}%`;

export const num = (x: number | null | undefined, digits = 3): string =>
  x === null || x === undefined || Number.isNaN(x) ? '—' : x.toFixed(digits);

/** Whole numbers with thousands separators: 56,623,104. */
export const int = (x: number): string => Math.round(x).toLocaleString('en-US');

export function duration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '—';
  if (seconds < 1) return `${seconds.toFixed(1)} s`;
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const m = Math.floor(seconds / 60);
  const s = Math.round(seconds % 60);
  if (m < 60) return `${m} min ${s} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** 1.2 KB, 30.1 MB (powers of 1000, as the bytes are counted exactly elsewhere). */
export function bytes(n: number): string {
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return i === 0 ? `${int(v)} bytes` : `${v.toFixed(1)} ${units[i]}`;
}

/** 56.6 M, 1.72 G */
export function si(n: number): string {
  const units: [number, string][] = [
    [1e12, 'T'],
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ];
  for (const [f, u] of units) if (Math.abs(n) >= f) return `${(n / f).toPrecision(3)} ${u}`;
  return String(n);
}

export const baseName = (p: string): string => p.split(/[\\/]/).pop() ?? p;

/** p-value in words and digits. */
export function pValue(p: number): string {
  if (p < 0.0001) return p.toExponential(1);
  return p < 0.01 ? p.toFixed(4) : p.toFixed(3);
}
