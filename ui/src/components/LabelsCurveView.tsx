// A labels-curve file (`readout bench labels`): how close to the truth the corrected share gets as
// a person labels more texts, drawn at random or the judge's least sure first. An SVG chart of
// the 95% interval's half-width against the number of labels, with the ± 5 and ± 10 point lines,
// and in words how many labels each draw needs for them. Every figure is the file's.
import type { ComponentChildren } from 'preact';
import { baseName, int, pct } from '../lib/format';
import type { Curve, LabelsCurveFile } from '../types';
import { debiasWords } from './ResultView';
import { Badge, Card } from './ui';

/** `colour`: a class of styles.css (`.svg-blue` …), so the curves follow the light or dark scheme. */
const DRAWS: Record<string, { name: string; colour: string; help: string }> = {
  uniform: { name: 'Texts drawn at random', colour: 'svg-blue', help: 'every text as likely as any other' },
  uncertainty: {
    name: 'The judge’s least sure texts first',
    colour: 'svg-orange',
    help: 'as the review draws them: likelier the less sure the judge was, each label weighted by its chance so the share stays unbiased',
  },
};
const draw = (c: Curve) => DRAWS[c.by] ?? { name: c.by, colour: 'svg-grey', help: '' };

/** Half-widths as points: 0.0731 → "7.3". */
const pts = (x: number) => (x * 100).toFixed(1);

/** Round numbers for an axis from 0 to at least `max`: [step, top]. */
function niceAxis(max: number, ticks: number): [number, number] {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  return [step, Math.ceil(max / step) * step];
}

/** The curves: the interval's half-width (points) against the labels, with the target lines. */
export function LabelsCurveChart(props: { curves: Curve[]; texts: number; targets: number[] }) {
  const W = 760;
  const H = 340;
  const m = { left: 64, right: 112, top: 18, bottom: 52 };
  const iw = W - m.left - m.right;
  const ih = H - m.top - m.bottom;
  const maxLabels = Math.max(props.texts, ...props.curves.flatMap((c) => c.points.map((p) => p.labels)));
  const maxWidth = Math.max(...props.targets, ...props.curves.flatMap((c) => c.points.map((p) => p.mean_half_width))) * 100;
  const [xStep, xTop] = niceAxis(maxLabels, 7);
  const [yStep, yTop] = niceAxis(maxWidth, 6);
  const x = (n: number) => m.left + (n / xTop) * iw;
  const y = (points: number) => m.top + ih - (points / yTop) * ih;
  const xTicks = Array.from({ length: Math.round(xTop / xStep) + 1 }, (_, i) => i * xStep);
  const yTicks = Array.from({ length: Math.round(yTop / yStep) + 1 }, (_, i) => i * yStep);
  const label = `The 95% interval's half-width against the number of labels, for ${props.curves.map((c) => draw(c).name.toLowerCase()).join(' and ')}. The data table under the chart has every point.`;
  return (
    <div class="svg-chart" data-testid="labels-curve-chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={label} width="100%">
        <title>{label}</title>
        {/* grid and y ticks */}
        {yTicks.map((t) => (
          <g key={`y${t}`}>
            <line x1={m.left} x2={m.left + iw} y1={y(t)} y2={y(t)} class="svg-grid" stroke-width="1" />
            <text x={m.left - 8} y={y(t)} text-anchor="end" dominant-baseline="middle" class="svg-tick">
              {t === 0 ? '0' : `±${t}`}
            </text>
          </g>
        ))}
        {xTicks.map((t) => (
          <g key={`x${t}`}>
            <line x1={x(t)} x2={x(t)} y1={m.top + ih} y2={m.top + ih + 5} class="svg-axis-line" />
            <text x={x(t)} y={m.top + ih + 18} text-anchor="middle" class="svg-tick">
              {t}
            </text>
          </g>
        ))}
        <line x1={m.left} x2={m.left + iw} y1={m.top + ih} y2={m.top + ih} class="svg-axis-line" />
        <line x1={m.left} x2={m.left} y1={m.top} y2={m.top + ih} class="svg-axis-line" />
        {/* axis titles */}
        <text x={m.left + iw / 2} y={H - 8} text-anchor="middle" class="svg-axis">
          labels (texts a person answered)
        </text>
        <text transform={`translate(16 ${m.top + ih / 2}) rotate(-90)`} text-anchor="middle" class="svg-axis">
          ± points around the corrected share (95%)
        </text>
        {/* the target lines */}
        {props.targets.map((t) => (
          <g key={`t${t}`} data-testid="target-line">
            <line x1={m.left} x2={m.left + iw} y1={y(t * 100)} y2={y(t * 100)} class="svg-target-line" stroke-width="1.5" stroke-dasharray="6 4" />
            <text x={m.left + iw + 6} y={y(t * 100)} dominant-baseline="middle" class="svg-target">
              ± {Math.round(t * 100)} points
            </text>
          </g>
        ))}
        {/* the curves */}
        {props.curves.map((c) => {
          const d = draw(c);
          const path = c.points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.labels).toFixed(1)},${y(p.mean_half_width * 100).toFixed(1)}`).join(' ');
          return (
            <g key={c.by} data-testid="curve" data-by={c.by} class={d.colour}>
              <path d={path} fill="none" stroke-width="2.5" />
              {c.points.map((p) => (
                <circle key={p.labels} cx={x(p.labels)} cy={y(p.mean_half_width * 100)} r="3.5">
                  <title>{`${d.name}: ${p.labels} labels, ± ${pts(p.mean_half_width)} points (the interval held the truth in ${pct(p.coverage, 0)} of the draws)`}</title>
                </circle>
              ))}
            </g>
          );
        })}
        {/* legend */}
        {props.curves.map((c, i) => (
          <g key={`l${c.by}`} transform={`translate(${m.left + iw - 250} ${m.top + 10 + i * 20})`} class={draw(c).colour}>
            <line x1="0" x2="22" y1="0" y2="0" stroke-width="2.5" />
            <circle cx="11" cy="0" r="3.5" />
            <text x="30" y="0" dominant-baseline="middle" class="svg-legend">
              {draw(c).name}
            </text>
          </g>
        ))}
      </svg>
    </div>
  );
}

/** "about 80 labels" / "not within the 144 texts". */
function needs(n: number | null, texts: number): string {
  return n === null ? `not reached within the ${texts} texts` : `${n} labels`;
}

function Needs(props: { f: LabelsCurveFile }) {
  const { curve } = props.f;
  const targets = [...new Set(curve.curves.flatMap((c) => c.labels_for.map(([t]) => t)))].sort((a, b) => b - a);
  const lines: ComponentChildren[] = [];
  for (const t of targets) {
    const per = curve.curves.map((c) => ({ c, n: c.labels_for.find(([x]) => x === t)?.[1] ?? null }));
    lines.push(
      <li key={t} data-testid="labels-needed" data-target={t}>
        <strong>± {Math.round(t * 100)} points</strong>: {per.map((p) => `${draw(p.c).name.toLowerCase()}, ${needs(p.n, curve.texts)}`).join('; ')}.
      </li>,
    );
  }
  return (
    <>
      <ul class="share-words">{lines}</ul>
      <DrawsCompared f={props.f} />
    </>
  );
}

/** How far apart the two draws' curves are, from 10 labels on (the first few labels say little). */
function DrawsCompared(props: { f: LabelsCurveFile }) {
  const { curves } = props.f.curve;
  const u = curves.find((c) => c.by === 'uniform');
  const v = curves.find((c) => c.by === 'uncertainty');
  if (!u || !v) return null;
  const diffs = u.points
    .filter((p) => p.labels >= 10)
    .flatMap((p) => {
      const q = v.points.find((x) => x.labels === p.labels);
      return q ? [(q.mean_half_width - p.mean_half_width) * 100] : [];
    });
  if (diffs.length === 0) return null;
  const most = Math.max(...diffs.map(Math.abs));
  const mean = diffs.reduce((a, b) => a + b, 0) / diffs.length;
  return (
    <p class="draws-compared" data-testid="draws-compared">
      {most < 1
        ? `From 10 labels on, the two draws stay within ${most.toFixed(1)} points of each other: here, drawing the judge’s least sure texts first barely narrows the interval.`
        : mean < 0
          ? `From 10 labels on, drawing the judge’s least sure texts first narrows the interval by up to ${most.toFixed(1)} points.`
          : `From 10 labels on, drawing at random gives the narrower interval, by up to ${most.toFixed(1)} points.`}
    </p>
  );
}

export function LabelsCurveView(props: { f: LabelsCurveFile; file: string; actions?: ComponentChildren }) {
  const { f } = props;
  const c = f.curve;
  const targets = [...new Set(c.curves.flatMap((x) => x.labels_for.map(([t]) => t)))];
  const labelsTried = c.curves[0]?.points.map((p) => p.labels) ?? [];
  return (
    <div class="result" data-testid="labels-curve-view">
      <Card
        title={
          <>
            How many labels a person needs{' '}
            <Badge kind="ok" title="Measured: the file names the run it was measured on">
              {f.label}
            </Badge>
          </>
        }
        actions={props.actions}
      >
        <p class="summary-line">
          <strong>{f.source.model}</strong> on <strong>{f.source.eval_set}</strong> · {f.source.shots} worked example{f.source.shots === 1 ? '' : 's'} · {debiasWords(f.source.debias)}
        </p>
        <p data-testid="labels-curve-what">
          The share to estimate: how many of the {c.texts} rows have the right answer “{c.option}”. Truly {pct(c.true_share, 0)}; the judge alone says {pct(c.judge_only_share, 0)}.
          A person labels the first texts of a draw, and the judge’s answers on all texts are corrected by those labels. The lower the curve, the closer the corrected share is to
          the truth: each point is the mean over {int(c.replicates)} simulated people, the result file’s right answers standing in for theirs.
        </p>
        <LabelsCurveChart curves={c.curves} texts={c.texts} targets={targets} />
        <h4 class="sub-sm">Labels needed</h4>
        <Needs f={f} />
        <p class="muted small">
          Counted on the numbers of labels tried ({labelsTried.join(', ')}): the first whose mean interval is that narrow. On the Score page’s review, “Labels for ± N%” says the
          same for your own labels.
        </p>
        <details class="details chart-data" data-testid="labels-curve-chart-data">
          <summary>Data table</summary>
          <div class="scroll-x">
            <table class="table compact" data-testid="labels-curve-table">
              <caption>
                The 95% interval around the corrected share, ± points, at each number of labels; in brackets, how often it held the truth
              </caption>
              <thead>
                <tr>
                  <th scope="col" class="num">
                    labels
                  </th>
                  {c.curves.map((x) => (
                    <th key={x.by} scope="col" class="num" title={draw(x).help}>
                      {draw(x).name.toLowerCase()}: ± points (held the truth)
                    </th>
                  ))}
                  {c.curves.map((x) => (
                    <th key={`lo${x.by}`} scope="col" class="num" title="The interval from the labels alone, without the judge">
                      labels alone, {x.by === 'uniform' ? 'at random' : 'least sure first'}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {labelsTried.map((n) => (
                  <tr key={n}>
                    <th scope="row" class="num">
                      {n}
                    </th>
                    {c.curves.map((x) => {
                      const p = x.points.find((q) => q.labels === n);
                      return (
                        <td key={x.by} class="num">
                          {p ? `± ${pts(p.mean_half_width)} (${pct(p.coverage, 0)})` : '—'}
                        </td>
                      );
                    })}
                    {c.curves.map((x) => {
                      const p = x.points.find((q) => q.labels === n);
                      return (
                        <td key={`lo${x.by}`} class="num">
                          {p ? `± ${pts(p.labels_only_mean_half_width)}` : '—'}
                        </td>
                      );
                    })}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
        <p class="muted small mono">
          {baseName(props.file)} · {f.created} · {f.command}
        </p>
      </Card>
    </div>
  );
}
