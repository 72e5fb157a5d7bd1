// Results: the runs in the results folder, one opened, or two compared; and the labels-curve
// files beside them (how many labels a person needs), listed apart and drawn when opened.
import { useEffect, useState } from 'preact/hooks';
import { compareResults, errorMessage, listLabelsCurves, listResults, loadLabelsCurve, loadResult, pairwiseStandings, pickFile } from '../api';
import { PairwiseCard } from './results/PairwiseCard';
import { AgreementList, BETWEEN_RUNS } from '../components/Agreement';
import { CompareBars } from '../components/charts';
import { LabelsCurveView } from '../components/LabelsCurveView';
import { debiasWords, ResultView } from '../components/ResultView';
import { Busy, Card, Empty, ErrorBox } from '../components/ui';
import { baseName, pct, pValue } from '../lib/format';
import { Scorings } from './results/Scorings';
import type { Comparison, LabelsCurveEntry, LabelsCurveFile, PairedBootstrap, PairwiseReport, ResultFile, ResultEntry, RowRecord } from '../types';

type List = { status: 'loading' } | { status: 'ready'; rows: ResultEntry[] } | { status: 'error'; message: string };
type Curves = { status: 'loading' } | { status: 'ready'; rows: LabelsCurveEntry[] } | { status: 'error'; message: string };
type View =
  | { kind: 'none' }
  | { kind: 'open'; file: string; status: 'loading' }
  | { kind: 'open'; file: string; status: 'ready'; result: ResultFile; pairwise: PairwiseReport | null }
  | { kind: 'open'; file: string; status: 'error'; message: string }
  | { kind: 'compare'; a: string; b: string; status: 'loading' }
  | { kind: 'compare'; a: string; b: string; status: 'ready'; comparison: Comparison; rows: RowRecord[]; chance: Record<string, number | undefined> }
  | { kind: 'compare'; a: string; b: string; status: 'error'; message: string }
  | { kind: 'curve'; file: string; status: 'loading' }
  | { kind: 'curve'; file: string; status: 'ready'; curve: LabelsCurveFile }
  | { kind: 'curve'; file: string; status: 'error'; message: string };

/** A difference in points, signed: +7.6 points, −0.7 points. */
const points = (d: number) => `${d > 0 ? '+' : d < 0 ? '−' : '±'}${Math.abs(d * 100).toFixed(1)} points`;

/** The group-bootstrap intervals of B − A (accuracy and balanced accuracy), as the library made them. */
function Differences(props: { d: PairedBootstrap }) {
  const { d } = props;
  const level = `${Math.round(d.level * 100)}%`;
  const one = (label: string, i: PairedBootstrap['accuracy'], testid: string, help: string) => {
    const clear = i.lo > 0 || i.hi < 0;
    return (
      <div class="metric metric-wide" data-testid={testid} title={help}>
        <div class="metric-label">{label}</div>
        <div class="metric-value">{points(i.estimate)}</div>
        <div class="metric-sub">
          {level} interval {points(i.lo)} to {points(i.hi)}; {clear ? 'zero is outside it' : 'it holds zero: the difference could be chance'}
        </div>
      </div>
    );
  };
  return (
    <>
      <div class="metrics metrics-diff" data-testid="difference">
        {one('Accuracy, B − A', d.accuracy, 'diff-accuracy', 'The paired difference in accuracy, with the interval from resampling the groups.')}
        {one('Balanced accuracy, B − A', d.balanced_accuracy, 'diff-balanced', 'The paired difference in balanced accuracy (mean recall over the right answers present), with the interval from resampling the groups.')}
      </div>
      <p class="muted small">
        Interval: the {d.groups} groups of paired rows drawn with replacement {d.resamples.toLocaleString('en-US')} times (seed {d.seed}), each draw bringing all its rows in both runs.
      </p>
    </>
  );
}

function CompareView(props: { a: string; b: string; c: Comparison; rows: RowRecord[]; labelA: string; labelB: string; chance?: Record<string, number | undefined> }) {
  const { c } = props;
  const significant = c.p_value < 0.05;
  const diff = c.accuracy_b - c.accuracy_a;
  return (
    <div class="results-area" data-testid="compare-view">
      <Card title="Comparison">
        <dl class="kv">
          <dt>A</dt>
          <dd>
            {props.labelA} <span class="mono muted">{props.a}</span>
          </dd>
          <dt>B</dt>
          <dd>
            {props.labelB} <span class="mono muted">{props.b}</span>
          </dd>
        </dl>
        <div class="metrics metrics-compare">
          <div class="metric metric-big" data-testid="p-value">
            <div class="metric-label">McNemar p-value</div>
            <div class="metric-value">{pValue(c.p_value)}</div>
            <div class="metric-sub">
              {significant ? 'The difference is unlikely to be chance (p < 0.05).' : 'The difference could well be chance (p ≥ 0.05).'}
            </div>
          </div>
          <div class="metric metric-wide">
            <div class="metric-label">Accuracy A → B</div>
            <div class="metric-value">
              {pct(c.accuracy_a)} → {pct(c.accuracy_b)}
            </div>
            <div class="metric-sub">
              {diff >= 0 ? '+' : '−'}
              {pct(Math.abs(diff))} on {c.paired} paired rows
            </div>
          </div>
          <div class="metric">
            <div class="metric-label">Only A right</div>
            <div class="metric-value">{c.only_a_correct}</div>
            <div class="metric-sub">rows A got right and B wrong</div>
          </div>
          <div class="metric">
            <div class="metric-label">Only B right</div>
            <div class="metric-value">{c.only_b_correct}</div>
            <div class="metric-sub">rows B got right and A wrong</div>
          </div>
        </div>
        {c.difference && <Differences d={c.difference} />}
        {c.unpaired_a + c.unpaired_b > 0 && (
          <p class="notice notice-warn">
            Rows without a partner: {c.unpaired_a} only in A, {c.unpaired_b} only in B. They are left out of the comparison.
          </p>
        )}
      </Card>
      {c.agreement && c.agreement.length > 0 && (
        <Card title="Do A and B give the same answers? (per question)" testid="compare-agreement">
          <AgreementList list={c.agreement} rows={props.rows} raters={BETWEEN_RUNS} />
        </Card>
      )}
      <div class="results-area">
        <Card title="Per family">
          <div class="scroll-x">
            <table class="table" data-testid="family-diffs">
              <thead>
                <tr>
                  <th>family</th>
                  <th class="num">rows</th>
                  <th class="num">balanced acc. A</th>
                  <th class="num">balanced acc. B</th>
                  <th class="num">B − A</th>
                  <th class="num">accuracy A</th>
                  <th class="num">accuracy B</th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(c.families).map(([name, f]) => {
                  const d = f.balanced_accuracy_b - f.balanced_accuracy_a;
                  return (
                    <tr key={name}>
                      <td>{name.replace(/_/g, ' ')}</td>
                      <td class="num">{f.rows}</td>
                      <td class="num">{pct(f.balanced_accuracy_a)}</td>
                      <td class="num">{pct(f.balanced_accuracy_b)}</td>
                      <td class={`num ${d > 0 ? 'good' : d < 0 ? 'bad' : ''}`}>
                        {d >= 0 ? '+' : '−'}
                        {pct(Math.abs(d))}
                      </td>
                      <td class="num">{pct(f.accuracy_a)}</td>
                      <td class="num">{pct(f.accuracy_b)}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </Card>
        <Card title="Balanced accuracy per family">
          <p class="muted small figure-note">Each pair of bars: how often A and B found the right answer on one kind of question. The dashed line is what guessing would score.</p>
          <CompareBars families={c.families} nameA={props.labelA} nameB={props.labelB} chance={props.chance} />
        </Card>
      </div>
    </div>
  );
}

export function ResultsPage(props: { benchDir?: string; refresh: number; active: boolean }) {
  const [dir, setDir] = useState<string | undefined>(undefined);
  const [list, setList] = useState<List>({ status: 'loading' });
  const [selected, setSelected] = useState<string[]>([]);
  const [view, setView] = useState<View>({ kind: 'none' });
  const [curves, setCurves] = useState<Curves>({ status: 'loading' });
  const folder = dir ?? props.benchDir;

  async function loadCurves() {
    setCurves({ status: 'loading' });
    try {
      setCurves({ status: 'ready', rows: await listLabelsCurves(dir) });
    } catch (e) {
      setCurves({ status: 'error', message: errorMessage(e) });
    }
  }

  async function load() {
    setList({ status: 'loading' });
    void loadCurves();
    try {
      const rows = await listResults(dir);
      setList({ status: 'ready', rows });
      setSelected((s) => s.filter((f) => rows.some((r) => r.file === f)));
    } catch (e) {
      setList({ status: 'error', message: errorMessage(e) });
    }
  }

  async function openCurve(file: string) {
    setView({ kind: 'curve', file, status: 'loading' });
    try {
      setView({ kind: 'curve', file, status: 'ready', curve: await loadLabelsCurve(file) });
    } catch (e) {
      setView({ kind: 'curve', file, status: 'error', message: errorMessage(e) });
    }
  }
  useEffect(() => {
    if (props.active) void load();
  }, [dir, props.refresh, props.active]);

  async function chooseFolder() {
    try {
      const p = await pickFile('results_dir');
      if (p) setDir(p);
    } catch (e) {
      setList({ status: 'error', message: errorMessage(e) });
    }
  }

  async function open(file: string) {
    setView({ kind: 'open', file, status: 'loading' });
    try {
      const [result, pairwise] = await Promise.all([loadResult(file), pairwiseStandings(file).catch(() => null)]);
      setView({ kind: 'open', file, status: 'ready', result, pairwise });
    } catch (e) {
      setView({ kind: 'open', file, status: 'error', message: errorMessage(e) });
    }
  }

  async function compare() {
    if (selected.length !== 2) return;
    const [a, b] = selected;
    setView({ kind: 'compare', a, b, status: 'loading' });
    try {
      // A's rows name the questions of a row-form set (by their families) in the agreement.
      const [comparison, first] = await Promise.all([compareResults(a, b), loadResult(a)]);
      // Guessing per family (the same eval set in both runs): A's.
      const chance = Object.fromEntries(Object.entries(first.metrics?.families ?? {}).map(([f, m]) => [f, m.chance]));
      setView({ kind: 'compare', a, b, status: 'ready', comparison, rows: first.rows, chance });
    } catch (e) {
      setView({ kind: 'compare', a, b, status: 'error', message: errorMessage(e) });
    }
  }

  const runLabel = (file: string) => {
    const r = list.status === 'ready' ? list.rows.find((x) => x.file === file) : undefined;
    // The model by its name, and how it was run, in the words the forms use.
    return r
      ? `${r.model}, ${debiasWords(r.debias)}${r.mode === 'generate' ? ', writing its answer' : ''}, ${r.shots} worked example${r.shots === 1 ? '' : 's'}`
      : baseName(file);
  };

  const toggle = (file: string) =>
    setSelected((s) => (s.includes(file) ? s.filter((f) => f !== file) : [...s, file].slice(-2)));

  return (
    <div class="page" data-page="results">
      <header class="page-head">
        <h1>Results</h1>
        <p class="lead">Every evaluation saved in the results folder and every scoring of texts. Open one to see its figures or answers, or tick two evaluations to compare them.</p>
      </header>
      <Card
        title="Runs"
        testid="runs-card"
        actions={
          <>
            <span class="muted small mono" title="Results folder">
              {folder ?? 'results folder'}
            </span>
            <button type="button" class="secondary" onClick={chooseFolder}>
              Choose folder…
            </button>
            <button type="button" class="secondary" onClick={() => void load()}>
              Refresh
            </button>
          </>
        }
      >
        {list.status === 'loading' && <Busy label="Reading the result files…" />}
        {list.status === 'error' && <ErrorBox title="The results folder could not be read" message={list.message} onRetry={() => void load()} />}
        {list.status === 'ready' && list.rows.length === 0 && (
          <Empty title="No result files in this folder yet">Run an evaluation and save it, or choose the folder where your result files are.</Empty>
        )}
        {list.status === 'ready' && list.rows.length > 0 && (
          <>
            <div class="scroll-x">
              <table class="table runs" data-testid="runs-table">
                <thead>
                  <tr>
                    <th title="Tick two runs to compare them">compare</th>
                    <th />
                    <th class="col-model">model</th>
                    <th class="col-how">how it was run</th>
                    <th class="num" title="Mean over families of balanced accuracy, and what guessing would score">right (guessing)</th>
                    <th class="num">order-unstable rows</th>
                    <th class="num">seconds</th>
                    <th class="num">rows</th>
                    <th>file</th>
                  </tr>
                </thead>
                <tbody>
                  {list.rows.map((r) => (
                    <tr key={r.file} class={selected.includes(r.file) ? 'selected' : ''}>
                      <td>
                        <input type="checkbox" aria-label={`Compare ${baseName(r.file)}`} checked={selected.includes(r.file)} onChange={() => toggle(r.file)} />
                        {selected.includes(r.file) && <span class="ab">{selected.indexOf(r.file) === 0 ? 'A' : 'B'}</span>}
                      </td>
                      <td>
                        <button type="button" class="link" onClick={() => open(r.file)} data-testid="open-run">
                          Open
                        </button>
                      </td>
                      <td data-testid="run-model">{r.model}</td>
                      <td>
                        {r.mode === 'generate' ? 'writes its answer, ' : ''}
                        {debiasWords(r.debias)}, {r.shots} worked example{r.shots === 1 ? '' : 's'}
                      </td>
                      <td class="num" data-testid="run-right">
                        {pct(r.mean_family_balanced_accuracy)}
                        {r.chance !== null && <span class="muted"> ({pct(r.chance, 0)})</span>}
                      </td>
                      <td class="num">{r.order_unstable === null ? <span class="muted">not checked</span> : r.order_unstable}</td>
                      <td class="num">{r.seconds.toFixed(1)}</td>
                      <td class="num">
                        {r.rows}
                        {r.status === 'partial' && <span class="badge badge-partial"> partial</span>}
                      </td>
                      <td class="mono small">
                        <span class="file-cell" title={r.file}>
                          {baseName(r.file)}
                        </span>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <div class="row end">
              <span class="muted small">{selected.length === 2 ? 'A and B chosen.' : `Tick ${2 - selected.length} more run${selected.length === 1 ? '' : 's'} to compare.`}</span>
              <button type="button" class="primary" disabled={selected.length !== 2} onClick={compare} data-testid="compare-button">
                Compare A and B
              </button>
            </div>
          </>
        )}
      </Card>

      <Scorings folder={dir} refresh={props.refresh} active={props.active} />

      {curves.status === 'error' && <ErrorBox title="The labels-curve files could not be read" message={curves.message} onRetry={() => void loadCurves()} testid="curves-error" />}
      {curves.status === 'ready' && curves.rows.length > 0 && (
        <Card title="Measured: how many labels a person needs" testid="curves-card">
          <p class="muted small">
            Measurements beside the runs (<span class="mono">readout bench labels</span>): how the corrected share’s interval narrows as a person labels more texts.
          </p>
          <div class="scroll-x">
            <table class="table" data-testid="curves-table">
              <thead>
                <tr>
                  <th />
                  <th>eval set</th>
                  <th>judge</th>
                  <th>share of</th>
                  <th class="num">texts</th>
                  <th>file</th>
                </tr>
              </thead>
              <tbody>
                {curves.rows.map((c) => (
                  <tr key={c.file}>
                    <td>
                      <button type="button" class="link" onClick={() => openCurve(c.file)} data-testid="open-curve">
                        Open
                      </button>
                    </td>
                    <td>{c.eval_set}</td>
                    <td>{c.model}</td>
                    <td>“{c.option}”</td>
                    <td class="num">{c.texts}</td>
                    <td class="mono small">
                      <span class="file-cell" title={c.file}>
                        {baseName(c.file)}
                      </span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </Card>
      )}

      <section class="results-area" data-testid="results-view">
        {view.kind === 'open' && view.status === 'loading' && <Busy label={`Opening ${baseName(view.file)}…`} />}
        {view.kind === 'open' && view.status === 'error' && <ErrorBox title="The result file could not be opened" message={view.message} onRetry={() => open(view.file)} />}
        {view.kind === 'open' && view.status === 'ready' && (
          <ResultView
            result={view.result}
            file={view.file}
            below={view.pairwise ? <PairwiseCard report={view.pairwise} /> : undefined}
            actions={
              <button type="button" class="secondary" onClick={() => setView({ kind: 'none' })}>
                Close
              </button>
            }
          />
        )}
        {view.kind === 'compare' && view.status === 'loading' && <Busy label="Comparing the two runs row by row…" />}
        {view.kind === 'compare' && view.status === 'error' && <ErrorBox title="The runs could not be compared" message={view.message} onRetry={compare} />}
        {view.kind === 'compare' && view.status === 'ready' && (
          <CompareView a={view.a} b={view.b} c={view.comparison} rows={view.rows} labelA={runLabel(view.a)} labelB={runLabel(view.b)} chance={view.chance} />
        )}
        {view.kind === 'curve' && view.status === 'loading' && <Busy label={`Opening ${baseName(view.file)}…`} />}
        {view.kind === 'curve' && view.status === 'error' && <ErrorBox title="The labels-curve file could not be opened" message={view.message} onRetry={() => openCurve(view.file)} />}
        {view.kind === 'curve' && view.status === 'ready' && (
          <LabelsCurveView
            f={view.curve}
            file={view.file}
            actions={
              <button type="button" class="secondary" onClick={() => setView({ kind: 'none' })}>
                Close
              </button>
            }
          />
        )}
      </section>
    </div>
  );
}
