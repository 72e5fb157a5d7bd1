// Metrics for the mock backend only: a port of src/metrics.rs (summarize, compare, exact
// McNemar) so that a cancelled mock run gets a partial result with honest figures for its
// rows, and a mock comparison gives a real p-value. The app never loads this: in Tauri the Rust
// library computes everything.
import type { Comparison, FamilyDiff, Metrics, ResultRow, Summary } from './types';

const BINS = 10;
const NLL_FLOOR = 1e-12;

const ratio = (n: number, d: number) => (d === 0 ? 0 : n / d);
const isValid = (r: ResultRow) => r.predicted !== null && r.predicted < r.option_ids.length;
const isCorrect = (r: ResultRow) => isValid(r) && r.predicted === r.gold;
const goldId = (r: ResultRow) => r.option_ids[r.gold] ?? `#${r.gold}`;
const confidence = (r: ResultRow) => (r.probs && isValid(r) ? Math.max(0, ...r.probs) : 0);

function brier(r: ResultRow): number {
  if (!r.probs) return 1;
  let s = r.probs.reduce((acc, v, i) => acc + (i === r.gold ? (v - 1) ** 2 : v * v), 0);
  if (r.gold >= r.probs.length) s += 1;
  return s;
}

function nll(r: ResultRow): number {
  const p = r.probs?.[r.gold] ?? 0;
  return -Math.log(Number.isNaN(p) ? NLL_FLOOR : Math.max(p, NLL_FLOOR));
}

function binOf(c: number): number {
  if (Number.isNaN(c) || c <= 0) return 0;
  return Math.min(Math.floor(c * BINS), BINS - 1);
}

export function balancedAccuracy(rows: ResultRow[]): number {
  const per = new Map<string, [number, number]>();
  for (const r of rows) {
    const e = per.get(goldId(r)) ?? [0, 0];
    e[0] += 1;
    e[1] += isCorrect(r) ? 1 : 0;
    per.set(goldId(r), e);
  }
  let s = 0;
  for (const [n, c] of per.values()) s += ratio(c, n);
  return ratio(s, per.size);
}

export function metrics(rows: ResultRow[]): Metrics {
  const n = rows.length;
  const invalid = rows.filter((r) => !isValid(r)).length;
  const checked = rows.filter((r) => r.order_unstable !== null);
  const unstable = checked.filter((r) => r.order_unstable).length;
  const confSum = new Array<number>(BINS).fill(0);
  const hits = new Array<number>(BINS).fill(0);
  const counts = new Array<number>(BINS).fill(0);
  for (const r of rows) {
    const c = confidence(r);
    const b = binOf(c);
    counts[b] += 1;
    confSum[b] += c;
    hits[b] += isCorrect(r) ? 1 : 0;
  }
  let ece = 0;
  const reliability = counts.map((count, b) => {
    const mean_confidence = ratio(confSum[b], count);
    const accuracy = ratio(hits[b], count);
    ece += ratio(count, n) * Math.abs(accuracy - mean_confidence);
    return { lo: b / BINS, hi: (b + 1) / BINS, count, mean_confidence, accuracy };
  });
  // Confusion: labels in order of first appearance; an extra "invalid" column when needed.
  const labels: string[] = [];
  const index = new Map<string, number>();
  const add = (id: string) => {
    if (!index.has(id)) {
      index.set(id, labels.length);
      labels.push(id);
    }
    return index.get(id)!;
  };
  const cells: [number, number | null][] = rows.map((r) => {
    r.option_ids.forEach(add);
    const g = add(goldId(r));
    const p = isValid(r) ? add(r.option_ids[r.predicted!]) : null;
    return [g, p];
  });
  const cols = labels.length + (invalid > 0 ? 1 : 0);
  const table = labels.map(() => new Array<number>(cols).fill(0));
  for (const [g, p] of cells) table[g][p ?? cols - 1] += 1;
  return {
    rows: n,
    accuracy: ratio(rows.filter(isCorrect).length, n),
    balanced_accuracy: balancedAccuracy(rows),
    invalid,
    order_consistency: checked.length ? ratio(checked.length - unstable, checked.length) : null,
    order_unstable: checked.length ? unstable : null,
    ece,
    brier: ratio(rows.reduce((s, r) => s + brier(r), 0), n),
    nll: ratio(rows.reduce((s, r) => s + nll(r), 0), n),
    reliability,
    confusion: { labels, counts: table },
  };
}

function groupBy<T>(xs: T[], key: (x: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const x of xs) {
    const k = key(x);
    if (!m.has(k)) m.set(k, []);
    m.get(k)!.push(x);
  }
  return m;
}

const meanFamilyBa = (rows: ResultRow[]) => {
  const fams = [...groupBy(rows, (r) => r.family).values()];
  return ratio(
    fams.reduce((s, rs) => s + balancedAccuracy(rs), 0),
    fams.length,
  );
};

function percentile(sorted: number[], q: number): number {
  const h = q * (sorted.length - 1);
  const i = Math.floor(h);
  const j = Math.min(i + 1, sorted.length - 1);
  return sorted[i] + (h - i) * (sorted[j] - sorted[i]);
}

/** Per-family and overall metrics with a group bootstrap interval (seeded, not bit-identical to Rust's). */
export function summarize(rows: ResultRow[], resamples: number, seed: number): Summary {
  const families: Record<string, Metrics> = {};
  const byFamily = groupBy(rows, (r) => r.family);
  for (const f of [...byFamily.keys()].sort()) families[f] = metrics(byFamily.get(f)!);
  const mfba = ratio(
    Object.values(families).reduce((s, m) => s + m.balanced_accuracy, 0),
    Object.keys(families).length,
  );
  let lo = mfba;
  let hi = mfba;
  if (resamples > 0 && rows.length > 0) {
    const groups = [...groupBy(rows, (r) => r.group_id).values()];
    let state = (seed + 1) * 2654435761;
    const rand = () => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return state / 2147483648;
    };
    const values: number[] = [];
    for (let k = 0; k < resamples; k++) {
      const sample: ResultRow[] = [];
      for (let g = 0; g < groups.length; g++) sample.push(...groups[Math.floor(rand() * groups.length)]);
      values.push(meanFamilyBa(sample));
    }
    values.sort((a, b) => a - b);
    lo = percentile(values, 0.025);
    hi = percentile(values, 0.975);
  }
  return {
    overall: metrics(rows),
    families,
    mean_family_balanced_accuracy: mfba,
    bootstrap: { level: 0.95, lo, hi, resamples, seed },
  };
}

/** Exact two-sided McNemar: min(1, 2 P(X <= min(b, c))), X ~ Bin(b + c, 1/2). */
export function mcnemarExact(b: number, c: number): number {
  const n = b + c;
  if (n === 0) return 1;
  const k = Math.min(b, c);
  const logs: number[] = [];
  let l = -n * Math.LN2;
  logs.push(l);
  for (let i = 0; i < k; i++) {
    l += Math.log(n - i) - Math.log(i + 1);
    logs.push(l);
  }
  const top = Math.max(...logs);
  const tail = Math.exp(top + Math.log(logs.reduce((s, v) => s + Math.exp(v - top), 0)));
  return Math.min(2 * tail, 1);
}

export function compare(a: ResultRow[], b: ResultRow[]): Comparison {
  const bById = new Map<string, ResultRow>();
  for (const r of b) if (!bById.has(r.id)) bById.set(r.id, r);
  const aIds = new Set(a.map((r) => r.id));
  const used = new Set<string>();
  const pairs = new Map<string, [ResultRow[], ResultRow[]]>();
  let paired = 0,
    onlyA = 0,
    onlyB = 0,
    hitsA = 0,
    hitsB = 0,
    unpairedA = 0;
  for (const ra of a) {
    const rb = bById.get(ra.id);
    if (!rb || used.has(ra.id)) {
      unpairedA += 1;
      continue;
    }
    used.add(ra.id);
    paired += 1;
    const ca = isCorrect(ra);
    const cb = isCorrect(rb);
    hitsA += +ca;
    hitsB += +cb;
    onlyA += +(ca && !cb);
    onlyB += +(cb && !ca);
    if (!pairs.has(ra.family)) pairs.set(ra.family, [[], []]);
    pairs.get(ra.family)![0].push(ra);
    pairs.get(ra.family)![1].push(rb);
  }
  const acc = (rs: ResultRow[]) => ratio(rs.filter(isCorrect).length, rs.length);
  const families: Record<string, FamilyDiff> = {};
  for (const f of [...pairs.keys()].sort()) {
    const [ra, rb] = pairs.get(f)!;
    families[f] = {
      rows: ra.length,
      accuracy_a: acc(ra),
      accuracy_b: acc(rb),
      balanced_accuracy_a: balancedAccuracy(ra),
      balanced_accuracy_b: balancedAccuracy(rb),
    };
  }
  return {
    paired,
    only_a_correct: onlyA,
    only_b_correct: onlyB,
    p_value: mcnemarExact(onlyA, onlyB),
    accuracy_a: ratio(hitsA, paired),
    accuracy_b: ratio(hitsB, paired),
    families,
    unpaired_a: unpairedA,
    unpaired_b: b.filter((r) => !aIds.has(r.id)).length,
  };
}
