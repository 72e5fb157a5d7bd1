// Chart.js wrappers. Only the pieces used are registered (smaller bundle); no inline styles or
// eval, so the charts run under the app's strict Content-Security-Policy.
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
import { useEffect, useMemo, useRef } from 'preact/hooks';
import type { Bin, CoverageAtRisk, FamilyDiff, LetterBias, RiskCoveragePoint } from '../types';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Tooltip, Legend);
Chart.defaults.font.family = getComputedStyle(document.documentElement).getPropertyValue('--font').trim() || 'system-ui, sans-serif';
Chart.defaults.color = '#3d4451';
Chart.defaults.animation = false;

export const BLUE = '#2f6fdf';
export const ORANGE = '#e07b39';
const GREY = '#8a93a3';
/** The 1 %, 5 % and 10 % error levels of the risk–coverage chart, strictest first. */
export const RISK_COLOURS = ['#1e7b4d', '#9a6400', '#c0392b'];

function ChartCanvas(props: { config: ChartConfiguration; height: number; label: string; testid?: string }) {
  const ref = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (!ref.current) return;
    const chart = new Chart(ref.current, props.config);
    return () => chart.destroy();
  }, [props.config]);
  return (
    <div class="chart" style={{ height: `${props.height}px` }} data-testid={props.testid}>
      <canvas ref={ref} role="img" aria-label={props.label} />
    </div>
  );
}

/** Writes each bar's value at its end. */
const valueLabels = (fmt: (v: number) => string): Plugin => ({
  id: 'valueLabels',
  afterDatasetsDraw(chart) {
    const { ctx } = chart;
    ctx.save();
    ctx.font = `12px ${Chart.defaults.font.family}`;
    ctx.fillStyle = '#1f2430';
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

/** A 0–1 axis of shares, ticked in whole percents, with its title. */
const shareAxis = (title: string, ticks: { stepSize?: number } = {}) => ({
  min: 0,
  max: 1,
  ticks: { ...ticks, callback: (v: number | string) => `${Math.round(Number(v) * 100)}%` },
  title: { display: true, text: title },
});

export function FamilyBars(props: { families: Record<string, { balanced_accuracy: number; rows: number }>; mean: number }) {
  const names = Object.keys(props.families);
  const config = useMemo((): ChartConfiguration => ({
    type: 'bar',
    data: {
      labels: names.map((n) => n.replace(/_/g, ' ')),
      datasets: [
        {
          label: 'Balanced accuracy',
          data: names.map((n) => props.families[n].balanced_accuracy),
          backgroundColor: BLUE,
          borderRadius: 3,
          maxBarThickness: 34,
        },
      ],
    },
    options: {
      indexAxis: 'y',
      responsive: true,
      maintainAspectRatio: false,
      layout: { padding: { right: 48 } },
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
    plugins: [valueLabels(pctLabel)],
  }), [props.families]);
  return <ChartCanvas config={config} height={Math.max(300, 70 + names.length * 46)} label="Balanced accuracy per family" testid="family-chart" />;
}

export function ReliabilityChart(props: { bins: Bin[] }) {
  const bins = props.bins;
  const config = useMemo((): ChartConfiguration => ({
    type: 'bar',
    data: {
      labels: bins.map((b) => `${Math.round(b.lo * 100)}–${Math.round(b.hi * 100)}`),
      datasets: [
        {
          type: 'bar',
          label: 'Share right',
          data: bins.map((b) => (b.count > 0 ? b.accuracy : null)),
          backgroundColor: BLUE,
          borderRadius: 2,
          order: 2,
        },
        {
          type: 'line',
          label: 'If the confidence were right',
          data: bins.map((b) => (b.lo + b.hi) / 2),
          borderColor: GREY,
          borderDash: [6, 4],
          borderWidth: 1.5,
          pointRadius: 0,
          order: 1,
        },
        {
          type: 'line',
          label: 'Mean confidence',
          data: bins.map((b) => (b.count > 0 ? b.mean_confidence : null)),
          borderColor: ORANGE,
          backgroundColor: ORANGE,
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
  }), [bins]);
  return <ChartCanvas config={config} height={300} label="Reliability diagram" testid="reliability-chart" />;
}

export function CompareBars(props: { families: Record<string, FamilyDiff>; nameA: string; nameB: string }) {
  const names = Object.keys(props.families);
  const config = useMemo((): ChartConfiguration => ({
    type: 'bar',
    data: {
      labels: names.map((n) => n.replace(/_/g, ' ')),
      datasets: [
        { label: `A: ${props.nameA}`, data: names.map((n) => props.families[n].balanced_accuracy_a), backgroundColor: BLUE, borderRadius: 3, maxBarThickness: 26 },
        { label: `B: ${props.nameB}`, data: names.map((n) => props.families[n].balanced_accuracy_b), backgroundColor: ORANGE, borderRadius: 3, maxBarThickness: 26 },
      ],
    },
    options: {
      indexAxis: 'y',
      responsive: true,
      maintainAspectRatio: false,
      layout: { padding: { right: 48 } },
      scales: {
        x: shareAxis('balanced accuracy (paired rows)'),
        y: { grid: { display: false } },
      },
      plugins: { legend: { position: 'bottom', labels: { boxWidth: 14 } } },
    },
    plugins: [valueLabels(pctLabel)],
  }), [props.families, props.nameA, props.nameB]);
  return <ChartCanvas config={config} height={110 + names.length * 64} label="Balanced accuracy per family, A and B" testid="compare-chart" />;
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
      ctx.strokeStyle = RISK_COLOURS[i % RISK_COLOURS.length];
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
      const colour = RISK_COLOURS[i % RISK_COLOURS.length];
      // On a white box, so the lines that run behind a stacked label do not cross it.
      const base = Math.min(py - 2, above - 1);
      const label = riskLabel(l.max_risk);
      const w = ctx.measureText(label).width;
      ctx.fillStyle = 'rgba(255,255,255,0.92)';
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
  const config = useMemo((): ChartConfiguration => ({
    type: 'line',
    data: {
      datasets: [
        {
          label: 'Error rate of the answers given',
          data: curve.map((p) => ({ x: p.coverage, y: p.risk })),
          borderColor: BLUE,
          backgroundColor: BLUE,
          borderWidth: 2,
          pointRadius: 0,
          pointHitRadius: 6,
          order: 1,
        },
        ...levels.map((l, i) => ({
          label: `Most answered at ≤ ${riskLabel(l.max_risk)}`,
          data: l.coverage === null ? [] : [{ x: l.coverage, y: l.max_risk }],
          borderColor: RISK_COLOURS[i % RISK_COLOURS.length],
          backgroundColor: RISK_COLOURS[i % RISK_COLOURS.length],
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
              const p = curve[c.dataIndex];
              return p ? `${pctLabel(p.coverage)} answered (confidence ≥ ${pctLabel(p.threshold)}), ${pctLabel(p.risk)} of them wrong` : '';
            },
          },
        },
      },
    },
    plugins: [riskLevels(levels)],
  }), [curve, levels]);
  return <ChartCanvas config={config} height={300} label="Risk–coverage curve: share of rows answered against the share of those wrong" testid="risk-coverage-chart" />;
}

/** Per answer letter: how often the model chose it against how often the right answer sat there. */
export function PositionBiasChart(props: { letters: LetterBias[] }) {
  const letters = props.letters;
  const config = useMemo((): ChartConfiguration => ({
    type: 'bar',
    data: {
      labels: letters.map((l) => l.letter),
      datasets: [
        { label: 'Chosen by the model', data: letters.map((l) => l.chosen_share), backgroundColor: BLUE, borderRadius: 3, maxBarThickness: 46 },
        { label: 'Where the right answer was', data: letters.map((l) => l.gold_share), backgroundColor: GREY, borderRadius: 3, maxBarThickness: 46 },
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
  }), [letters]);
  return <ChartCanvas config={config} height={300} label="Position bias: share of answers per letter against share of right answers per letter" testid="position-bias-chart" />;
}
