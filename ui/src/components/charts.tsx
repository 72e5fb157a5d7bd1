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
import type { FamilyDiff, Bin } from '../types';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Tooltip, Legend);
Chart.defaults.font.family = getComputedStyle(document.documentElement).getPropertyValue('--font').trim() || 'system-ui, sans-serif';
Chart.defaults.color = '#3d4451';
Chart.defaults.animation = false;

export const BLUE = '#2f6fdf';
export const ORANGE = '#e07b39';
const GREY = '#8a93a3';

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
        x: { min: 0, max: 1, ticks: { callback: (v) => `${Number(v) * 100}%` }, title: { display: true, text: 'balanced accuracy' } },
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
        y: { min: 0, max: 1, ticks: { callback: (v) => `${Number(v) * 100}%` }, title: { display: true, text: 'share of answers right' } },
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
        x: { min: 0, max: 1, ticks: { callback: (v) => `${Number(v) * 100}%` }, title: { display: true, text: 'balanced accuracy (paired rows)' } },
        y: { grid: { display: false } },
      },
      plugins: { legend: { position: 'bottom', labels: { boxWidth: 14 } } },
    },
    plugins: [valueLabels(pctLabel)],
  }), [props.families, props.nameA, props.nameB]);
  return <ChartCanvas config={config} height={110 + names.length * 64} label="Balanced accuracy per family, A and B" testid="compare-chart" />;
}
