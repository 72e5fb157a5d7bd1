// Chart.js wrappers. Only the pieces used are registered (smaller bundle); no inline styles or
// eval, so the charts run under the app's strict Content-Security-Policy. Colours come from
// styles.css's variables, read when a chart is drawn, and every chart is drawn again when the
// system switches between light and dark. Under each chart, its figures as a table.
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  type ChartConfiguration,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  type Plugin,
  PointElement,
  Tooltip,
} from 'chart.js';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { int, pct } from '../lib/format';
import type { Bin, CoverageAtRisk, FamilyDiff, LetterBias, RiskCoveragePoint } from '../types';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Tooltip, Legend);
Chart.defaults.font.family = getComputedStyle(document.documentElement).getPropertyValue('--font').trim() || 'system-ui, sans-serif';
Chart.defaults.animation = false;

/** The colour variables of the 1 %, 5 % and 10 % error levels of the risk–coverage chart,
 * strictest first (the `.swatch-N` classes of styles.css). */
export const RISK_COLOURS = ['--green', '--amber', '--red'];

/** A colour variable of styles.css as the page has it now (light or dark). */
const cssVar = (name: string): string => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

/** The chart colours of the scheme in force. */
interface Palette {
  /** Axis ticks, titles, legends. */
  text: string;
  grid: string;
  blue: string;
  orange: string;
  grey: string;
  risk: string[];
}

const readPalette = (): Palette => ({
  text: cssVar('--chart-ink'),
  grid: cssVar('--grid'),
  blue: cssVar('--blue'),
  orange: cssVar('--orange'),
  grey: cssVar('--axis'),
  risk: RISK_COLOURS.map(cssVar),
});

const DARK = '(prefers-color-scheme: dark)';

/** The chart colours, read again (and so every chart drawn again) when the system's colour scheme
 * changes. */
function usePalette(): Palette {
  const [dark, setDark] = useState(() => window.matchMedia(DARK).matches);
  useEffect(() => {
    const query = window.matchMedia(DARK);
    const changed = () => setDark(query.matches);
    query.addEventListener('change', changed);
    return () => query.removeEventListener('change', changed);
  }, []);
  return useMemo(readPalette, [dark]);
}

/** A chart's figures as rows: the first cell of each names the row. */
export interface ChartTable {
  caption: string;
  columns: string[];
  rows: string[][];
}

/** The same numbers as the chart beside it, folded away: for a screen reader, or to read a figure
 * exactly. */
export function DataTable(props: { table: ChartTable; testid?: string }) {
  const { caption, columns, rows } = props.table;
  return (
    <details class="details chart-data" data-testid={props.testid}>
      <summary>Data table</summary>
      <div class="scroll-x">
        <table class="table compact">
          <caption>{caption}</caption>
          <thead>
            <tr>
              {columns.map((c, i) => (
                <th key={i} scope="col" class={i > 0 ? 'num' : undefined}>
                  {c}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r, j) => (
              <tr key={j}>
                <th scope="row">{r[0]}</th>
                {r.slice(1).map((v, i) => (
                  <td key={i} class="num">
                    {v}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
}

/** A chart (an image to assistive technology, `label` saying what it shows) and its data table. */
function ChartCanvas(props: { config: ChartConfiguration; palette: Palette; height: number; label: string; table: ChartTable; testid?: string; chance?: (number | null)[] }) {
  const ref = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (!ref.current) return;
    Chart.defaults.color = props.palette.text;
    Chart.defaults.borderColor = props.palette.grid;
    const chart = new Chart(ref.current, props.config);
    return () => chart.destroy();
  }, [props.config, props.palette]);
  return (
    <>
      <div class="chart" style={{ height: `${props.height}px` }} data-testid={props.testid} data-chance={chanceAttr(props.chance)}>
        <canvas ref={ref} role="img" aria-label={props.label} />
      </div>
      <DataTable table={props.table} testid={props.testid && `${props.testid}-data`} />
    </>
  );
}

/** Writes each bar's value at its end. */
const valueLabels = (fmt: (v: number) => string): Plugin => ({
  id: 'valueLabels',
  afterDatasetsDraw(chart) {
    const { ctx } = chart;
    ctx.save();
    ctx.font = `12px ${Chart.defaults.font.family}`;
    ctx.fillStyle = cssVar('--ink');
    chart.data.datasets.forEach((ds, di) => {
      if ((ds as { type?: string }).type === 'line') return;
      const meta = chart.getDatasetMeta(di);
      if (meta.hidden) return;
      meta.data.forEach((el, i) => {
        const v = ds.data[i] as number | null;
        if (v === null || v === undefined) return;
        const { x, y } = el.getProps(['x', 'y'], true) as { x: number; y: number };
        if (chart.options.indexAxis === 'y') {
          ctx.textAlign = 'left';
          ctx.textBaseline = 'middle';
          ctx.fillText(fmt(v), x + 6, y);
        } else {
          ctx.textAlign = 'center';
          ctx.textBaseline = 'bottom';
          ctx.fillText(fmt(v), x, y - 4);
        }
      });
    });
    ctx.restore();
  },
});

const pctLabel = (v: number) => `${(v * 100).toFixed(1)}%`;

/** The chance levels a chart draws, for `data-chance` (tests read it): "0.333" when one, the
 * distinct values joined by spaces when they differ; absent when none. */
function chanceAttr(chance: (number | null)[] | undefined): string | undefined {
  const known = [...new Set((chance ?? []).filter((c): c is number => c !== null).map((c) => c.toFixed(3)))];
  return known.length ? known.join(' ') : undefined;
}

/** The score of guessing (one of each question's options at random) as a dashed line labelled
 * "guessing" across an accuracy axis. `chance[i]` is the i-th category's (a family's option count
 * may differ from another's): one line across the plot when they are all the same, else a short
 * dash across each category's band. Horizontal bars (`indexAxis: 'y'`): the line is vertical. */
const chanceLine = (chance: (number | null)[]): Plugin => ({
  id: 'chanceLine',
  afterDatasetsDraw(chart) {
    const known = chance.filter((c): c is number => c !== null);
    if (known.length === 0) return;
    const { ctx, chartArea: area } = chart;
    const horizontal = chart.options.indexAxis === 'y';
    const value = horizontal ? chart.scales.x : chart.scales.y;
    const band = horizontal ? chart.scales.y : chart.scales.x;
    const same = known.every((c) => Math.abs(c - known[0]) < 1e-9);
    const colour = cssVar('--axis');
    ctx.save();
    ctx.strokeStyle = colour;
    ctx.setLineDash([6, 4]);
    ctx.lineWidth = 1.5;
    const segment = (v: number, from: number, to: number) => {
      const at = value.getPixelForValue(v);
      ctx.beginPath();
      if (horizontal) {
        ctx.moveTo(at, from);
        ctx.lineTo(at, to);
      } else {
        ctx.moveTo(from, at);
        ctx.lineTo(to, at);
      }
      ctx.stroke();
    };
    if (same) {
      segment(known[0], horizontal ? area.top : area.left, horizontal ? area.bottom : area.right);
    } else {
      const n = chance.length;
      const half = (horizontal ? area.bottom - area.top : area.right - area.left) / Math.max(1, n) / 2;
      chance.forEach((c, i) => {
        if (c === null) return;
        const mid = band.getPixelForValue(i);
        segment(c, mid - half * 0.9, mid + half * 0.9);
      });
    }
    ctx.setLineDash([]);
    ctx.font = `11px ${Chart.defaults.font.family}`;
    ctx.fillStyle = colour;
    const first = chance.find((c): c is number => c !== null) ?? known[0];
    if (horizontal) {
      ctx.textAlign = 'left';
      ctx.textBaseline = 'bottom';
      ctx.fillText('guessing', value.getPixelForValue(first) + 3, area.top - 2);
    } else {
      ctx.textAlign = 'right';
      ctx.textBaseline = 'bottom';
      ctx.fillText('guessing', area.right - 2, value.getPixelForValue(first) - 2);
    }
    ctx.restore();
  },
});

/** A 0–1 axis of shares, ticked in whole percents, with its title. */
const shareAxis = (title: string, ticks: { stepSize?: number } = {}) => ({
  min: 0,
  max: 1,
  ticks: { ...ticks, callback: (v: number | string) => `${Math.round(Number(v) * 100)}%` },
  title: { display: true, text: title },
});

export function FamilyBars(props: { families: Record<string, { balanced_accuracy: number; rows: number; chance?: number }>; mean: number }) {
  const names = Object.keys(props.families);
  const chance = names.map((n) => props.families[n].chance ?? null);
  const p = usePalette();
  const config = useMemo((): ChartConfiguration => ({
    type: 'bar',
    data: {
      labels: names.map((n) => n.replace(/_/g, ' ')),
      datasets: [
        {
          label: 'Balanced accuracy',
          data: names.map((n) => props.families[n].balanced_accuracy),
          backgroundColor: p.blue,
          borderRadius: 3,
          maxBarThickness: 34,
        },
      ],
    },
    options: {
      indexAxis: 'y',
      responsive: true,
      maintainAspectRatio: false,
      layout: { padding: { right: 48, top: chance.some((c) => c !== null) ? 14 : 0 } },
      scales: {
        x: shareAxis('balanced accuracy'),
        y: { grid: { display: false } },
      },
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: {
            label: (c) => `${pctLabel(c.parsed.x as number)} of ${props.families[names[c.dataIndex]].rows} rows`,
          },
        },
      },
    },
    plugins: [valueLabels(pctLabel), chanceLine(chance)],
  }), [props.families, p]);
  const table = {
    caption: 'Balanced accuracy per family',
    columns: ['family', 'balanced accuracy', 'guessing', 'rows'],
    rows: names.map((n, i) => [n.replace(/_/g, ' '), pct(props.families[n].balanced_accuracy), chance[i] === null ? '—' : pct(chance[i]), int(props.families[n].rows)]),
  };
  return <ChartCanvas config={config} palette={p} height={Math.max(300, 70 + names.length * 46)} label={familyWords(props.families, props.mean)} table={table} testid="family-chart" chance={chance} />;
}

export function ReliabilityChart(props: { bins: Bin[] }) {
  const bins = props.bins;
  const p = usePalette();
  const config = useMemo((): ChartConfiguration => ({
    type: 'bar',
    data: {
      labels: bins.map((b) => `${Math.round(b.lo * 100)}–${Math.round(b.hi * 100)}`),
      datasets: [
        {
          type: 'bar',
          label: 'Share right',
          data: bins.map((b) => (b.count > 0 ? b.accuracy : null)),
          backgroundColor: p.blue,
          borderRadius: 2,
          order: 2,
        },
        {
          type: 'line',
          label: 'If the confidence were right',
          data: bins.map((b) => (b.lo + b.hi) / 2),
          borderColor: p.grey,
          borderDash: [6, 4],
          borderWidth: 1.5,
          pointRadius: 0,
          order: 1,
        },
        {
          type: 'line',
          label: 'Mean confidence',
          data: bins.map((b) => (b.count > 0 ? b.mean_confidence : null)),
          borderColor: p.orange,
          backgroundColor: p.orange,
          showLine: false,
          pointRadius: 4,
          order: 0,
        },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      scales: {
        x: {
          title: { display: true, text: "model's confidence in its answer (%)" },
          grid: { display: false },
          ticks: { autoSkip: false, font: { size: 11 } },
        },
        y: shareAxis('share of answers right'),
      },
      plugins: {
        legend: { position: 'bottom', labels: { boxWidth: 14 } },
        tooltip: {
          callbacks: {
            afterBody: (items) => {
              const b = bins[items[0]?.dataIndex ?? 0];
              return b ? `${b.count} row${b.count === 1 ? '' : 's'} in this bin` : '';
            },
          },
        },
      },
    },
  }), [bins, p]);
  const table = {
    caption: "Share of answers right in each band of the model's confidence",
    columns: ["model's confidence", 'rows', 'share right', 'mean confidence'],
    rows: bins.map((b) => [`${Math.round(b.lo * 100)}–${Math.round(b.hi * 100)}%`, int(b.count), b.count > 0 ? pct(b.accuracy) : '—', b.count > 0 ? pct(b.mean_confidence) : '—']),
  };
  return <ChartCanvas config={config} palette={p} height={300} label={reliabilityWords(bins)} table={table} testid="reliability-chart" />;
}

export function CompareBars(props: { families: Record<string, FamilyDiff>; nameA: string; nameB: string; chance?: Record<string, number | undefined> }) {
  const names = Object.keys(props.families);
  const chance = names.map((n) => props.chance?.[n] ?? null);
  const p = usePalette();
  const config = useMemo((): ChartConfiguration => ({
    type: 'bar',
    data: {
      labels: names.map((n) => n.replace(/_/g, ' ')),
      datasets: [
        { label: `A: ${props.nameA}`, data: names.map((n) => props.families[n].balanced_accuracy_a), backgroundColor: p.blue, borderRadius: 3, maxBarThickness: 26 },
        { label: `B: ${props.nameB}`, data: names.map((n) => props.families[n].balanced_accuracy_b), backgroundColor: p.orange, borderRadius: 3, maxBarThickness: 26 },
      ],
    },
    options: {
      indexAxis: 'y',
      responsive: true,
      maintainAspectRatio: false,
      layout: { padding: { right: 48, top: chance.some((c) => c !== null) ? 14 : 0 } },
      scales: {
        x: shareAxis('balanced accuracy (paired rows)'),
        y: { grid: { display: false } },
      },
      plugins: { legend: { position: 'bottom', labels: { boxWidth: 14 } } },
    },
    plugins: [valueLabels(pctLabel), chanceLine(chance)],
  }), [props.families, props.nameA, props.nameB, props.chance, p]);
  const higher = names.filter((n) => props.families[n].balanced_accuracy_b > props.families[n].balanced_accuracy_a).length;
  const label = `Bar chart: balanced accuracy per family, A (${props.nameA}) against B (${props.nameB}); B is higher in ${higher} of ${names.length} families. The data table under the chart has each figure.`;
  const table = {
    caption: 'Balanced accuracy per family, on the rows both runs scored',
    columns: ['family', `A: ${props.nameA}`, `B: ${props.nameB}`, 'rows'],
    rows: names.map((n) => [n.replace(/_/g, ' '), pct(props.families[n].balanced_accuracy_a), pct(props.families[n].balanced_accuracy_b), int(props.families[n].rows)]),
  };
  return <ChartCanvas config={config} palette={p} height={110 + names.length * 64} label={label} table={table} testid="compare-chart" chance={chance} />;
}

const riskLabel = (r: number) => `${+(r * 100).toFixed(1)}% error`;

/** Draws each error level as a dashed line across the plot, labelled at its right end; labels
 * that would overlap are stacked upwards (the 1 %, 5 % and 10 % lines sit close together). */
const riskLevels = (levels: CoverageAtRisk[]): Plugin => ({
  id: 'riskLevels',
  beforeDatasetsDraw(chart) {
    const { ctx, chartArea: area } = chart;
    const y = chart.scales.y;
    ctx.save();
    ctx.font = `11px ${Chart.defaults.font.family}`;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'bottom';
    levels.forEach((l, i) => {
      const py = y.getPixelForValue(l.max_risk);
      ctx.strokeStyle = cssVar(RISK_COLOURS[i % RISK_COLOURS.length]);
      ctx.setLineDash([5, 4]);
      ctx.lineWidth = 1.2;
      ctx.beginPath();
      ctx.moveTo(area.left, py);
      ctx.lineTo(area.right, py);
      ctx.stroke();
    });
    let above = Infinity; // top of the label drawn last (canvas y grows downwards)
    levels.forEach((l, i) => {
      const py = y.getPixelForValue(l.max_risk);
      const colour = cssVar(RISK_COLOURS[i % RISK_COLOURS.length]);
      // On a box of the card's colour, so the lines that run behind a stacked label do not cross it.
      const base = Math.min(py - 2, above - 1);
      const label = riskLabel(l.max_risk);
      const w = ctx.measureText(label).width;
      ctx.fillStyle = cssVar('--panel');
      ctx.fillRect(area.right - 7 - w, base - 12, w + 6, 13);
      ctx.fillStyle = colour;
      ctx.fillText(label, area.right - 4, base);
      above = base - 13;
    });
    ctx.restore();
  },
});

/**
 * The risk–coverage curve: answering only the rows the model is most confident about, the share
 * of rows answered (coverage) against the share of those that are wrong (risk). Each error level
 * is a dashed line, with a dot where the most rows are answered within it (none: unreachable).
 */
export function RiskCoverageChart(props: { curve: RiskCoveragePoint[]; levels: CoverageAtRisk[] }) {
  const { curve, levels } = props;
  const p = usePalette();
  const config = useMemo((): ChartConfiguration => ({
    type: 'line',
    data: {
      datasets: [
        {
          label: 'Error rate of the answers given',
          data: curve.map((c) => ({ x: c.coverage, y: c.risk })),
          borderColor: p.blue,
          backgroundColor: p.blue,
          borderWidth: 2,
          pointRadius: 0,
          pointHitRadius: 6,
          order: 1,
        },
        ...levels.map((l, i) => ({
          label: `Most answered at ≤ ${riskLabel(l.max_risk)}`,
          data: l.coverage === null ? [] : [{ x: l.coverage, y: l.max_risk }],
          borderColor: p.risk[i % p.risk.length],
          backgroundColor: p.risk[i % p.risk.length],
          showLine: false,
          pointRadius: 5,
          pointHoverRadius: 6,
          order: 0,
        })),
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      scales: {
        x: { type: 'linear', ...shareAxis('rows answered (most confident first)', { stepSize: 0.2 }) },
        y: shareAxis('share of those answers wrong'),
      },
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: {
            title: () => '',
            label: (c) => {
              if (c.datasetIndex > 0) return `${levels[c.datasetIndex - 1] ? `≤ ${riskLabel(levels[c.datasetIndex - 1].max_risk)}` : ''}: ${pctLabel(c.parsed.x as number)} of rows answered`;
              const q = curve[c.dataIndex];
              return q ? `${pctLabel(q.coverage)} answered (confidence ≥ ${pctLabel(q.threshold)}), ${pctLabel(q.risk)} of them wrong` : '';
            },
          },
        },
      },
    },
    plugins: [riskLevels(levels)],
  }), [curve, levels, p]);
  const table = {
    caption: 'Answering only the rows the model is most confident about: how many are answered, and how many of those are wrong',
    columns: ['rows answered', 'confidence at least', 'share of those wrong'],
    rows: curve.map((c) => [pct(c.coverage), pct(c.threshold), pct(c.risk)]),
  };
  return <ChartCanvas config={config} palette={p} height={300} label={riskWords(curve, levels)} table={table} testid="risk-coverage-chart" />;
}

/** Per answer letter: how often the model chose it against how often the right answer sat there. */
export function PositionBiasChart(props: { letters: LetterBias[] }) {
  const letters = props.letters;
  const p = usePalette();
  const config = useMemo((): ChartConfiguration => ({
    type: 'bar',
    data: {
      labels: letters.map((l) => l.letter),
      datasets: [
        { label: 'Chosen by the model', data: letters.map((l) => l.chosen_share), backgroundColor: p.blue, borderRadius: 3, maxBarThickness: 46 },
        { label: 'Where the right answer was', data: letters.map((l) => l.gold_share), backgroundColor: p.grey, borderRadius: 3, maxBarThickness: 46 },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      layout: { padding: { top: 18 } },
      scales: {
        x: { grid: { display: false }, title: { display: true, text: 'answer letter (its place in the option list)' } },
        y: shareAxis('share of readings'),
      },
      plugins: {
        legend: { position: 'bottom', labels: { boxWidth: 14 } },
        tooltip: {
          callbacks: {
            label: (c) => {
              const l = letters[c.dataIndex];
              return c.datasetIndex === 0 ? `chosen ${pctLabel(l.chosen_share)} (${l.chosen} times)` : `right answer ${pctLabel(l.gold_share)} (${l.gold} times)`;
            },
          },
        },
      },
    },
    // Values on the bars only while they fit.
    plugins: letters.length <= 8 ? [valueLabels((v) => `${Math.round(v * 100)}%`)] : [],
  }), [letters, p]);
  const table = {
    caption: 'Per answer letter: how often the model chose it, and how often the right answer sat there (share of readings, and times)',
    columns: ['letter', 'chosen by the model', 'where the right answer was'],
    rows: letters.map((l) => [l.letter, `${pct(l.chosen_share)} (${int(l.chosen)})`, `${pct(l.gold_share)} (${int(l.gold)})`]),
  };
  return <ChartCanvas config={config} palette={p} height={300} label={positionWords(letters)} table={table} testid="position-bias-chart" />;
}

// What each chart shows, in a sentence or two: its label for a screen reader.

function familyWords(families: Record<string, { balanced_accuracy: number; chance?: number }>, mean: number): string {
  const byScore = Object.entries(families).sort((a, b) => a[1].balanced_accuracy - b[1].balanced_accuracy);
  if (byScore.length === 0) return 'Bar chart of balanced accuracy per family: no families.';
  const [low, high] = [byScore[0], byScore[byScore.length - 1]];
  const name = (n: string) => n.replace(/_/g, ' ');
  return `Bar chart of balanced accuracy per family, ${byScore.length} families: from ${pct(low[1].balanced_accuracy)} (${name(low[0])}) to ${pct(high[1].balanced_accuracy)} (${name(high[0])}); the mean over families is ${pct(mean)}.${Object.values(families).some((f) => f.chance !== undefined) ? ' A dashed line marks what guessing would score.' : ''} The data table under the chart has each figure.`;
}

function reliabilityWords(bins: Bin[]): string {
  const full = bins.filter((b) => b.count > 0);
  const rows = full.reduce((a, b) => a + b.count, 0);
  const fullest = full.reduce<Bin | null>((a, b) => (a === null || b.count > a.count ? b : a), null);
  const most = fullest
    ? ` Most answers fall between ${Math.round(fullest.lo * 100)}% and ${Math.round(fullest.hi * 100)}% confidence (${int(fullest.count)} rows): ${pct(fullest.accuracy)} of them right, at a mean confidence of ${pct(fullest.mean_confidence)}.`
    : '';
  return `Reliability diagram: the share of answers right against the model's confidence, over ${int(rows)} rows.${most} The data table under the chart has every band.`;
}

function riskWords(curve: RiskCoveragePoint[], levels: CoverageAtRisk[]): string {
  const all = curve[curve.length - 1];
  const at = levels.map((l) => `at most ${pct(l.max_risk, 0)} wrong, ${l.coverage === null ? 'unreachable' : `${pct(l.coverage)} of rows answered`}`);
  return `Risk–coverage curve: the share of rows answered, most confident first, against the share of those answers wrong. Answering every row, ${all ? pct(all.risk) : '—'} are wrong${at.length ? `; ${at.join('; ')}` : ''}. The data table under the chart has every point.`;
}

function positionWords(letters: LetterBias[]): string {
  const most = letters.reduce<LetterBias | null>((a, l) => (a === null || l.chosen_share - l.gold_share > a.chosen_share - a.gold_share ? l : a), null);
  const over = most ? ` The letter chosen most beyond its share of right answers: ${most.letter}, chosen in ${pct(most.chosen_share)} of readings, the right answer in ${pct(most.gold_share)}.` : '';
  return `Bar chart of position bias: for each answer letter, how often the model chose it against how often the right answer sat there.${over} The data table under the chart has each letter.`;
}
