// One result file, shown for people: first how often the model was right against guessing, in a
// sentence; then the figures a person reads (each with its line of explanation), the statisticians'
// figures (ECE, Brier, NLL) folded under Details; agreement with the right answers per question,
// per-family bars with the guessing line, reliability diagram, risk–coverage curve, position
// bias, confusion matrix, the order-unstable rows, and the details of the run.
// Files written before a figure existed (no `selective` or `position_bias`) say so in its place.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { rowTexts } from '../api';
import { againstGuessing, GUESSING_WORDS, rightOfTheTime } from '../lib/chance';
import { debiasWords } from '../lib/debias';
import { baseName, duration, int, num, pct } from '../lib/format';
import type { Confusion, EvalSetRecord, PositionBias, ResultFile, RowRecord, RowTexts, Selective } from '../types';
import { AGAINST_GOLD, AgreementList } from './Agreement';
import { FamilyBars, PositionBiasChart, ReliabilityChart, RISK_COLOURS, RiskCoverageChart } from './charts';
import { Badge, Card } from './ui';

// The option orders' words live in lib/debias (every page names them alike); kept here for the
// pages that import them from this file.
export { debiasWords };

/** A figure, its value, and beneath it the line that says what it means (shown, not only on hover). */
function Metric(props: { label: string; value: ComponentChildren; sub?: ComponentChildren; help: string; testid?: string; big?: boolean }) {
  return (
    <div class={`metric ${props.big ? 'metric-big' : ''}`} data-testid={props.testid}>
      <div class="metric-label">{props.label}</div>
      <div class="metric-value">{props.value}</div>
      {props.sub && <div class="metric-sub">{props.sub}</div>}
      <div class="metric-help">{props.help}</div>
    </div>
  );
}

/** The headline: how often the model was right against guessing, and one sentence on the gap. */
function Headline(props: { accuracy: number; chance?: number; lo: number; hi: number; level: number }) {
  const { accuracy, chance } = props;
  const against = chance === undefined ? null : againstGuessing(accuracy, chance);
  return (
    <div class={`eval-headline ${against ? `against-${against}` : ''}`} data-testid="eval-headline" data-against={against ?? undefined}>
      <p class="eval-headline-figure" data-testid="metric-mfba">
        {rightOfTheTime(accuracy, chance)}
      </p>
      {against && (
        <p class="eval-headline-words" data-testid="guessing-words">
          {GUESSING_WORDS[against]}
        </p>
      )}
      <p class="muted small">
        How often the model picked the right answer, each kind of question counting the same. Guessing picks one of each question’s options at random. Run on other
        questions like these, it would likely score between {pct(props.lo)} and {pct(props.hi)} ({Math.round(props.level * 100)} % sure).
      </p>
    </div>
  );
}

/** The option an ordering picked: argmax of its letter probabilities, mapped back through its order. */
function orderingPick(row: RowRecord, k: number): string {
  const o = row.orderings[k];
  if (!o.letter_probs.length) return '—';
  let best = 0;
  o.letter_probs.forEach((p, i) => {
    if (p > o.letter_probs[best]) best = i;
  });
  return row.option_ids[o.order[best]] ?? '?';
}

function ConfusionTable(props: { confusion: Confusion }) {
  const { labels, counts } = props.confusion;
  const cols = counts[0]?.length ?? labels.length;
  const colLabels = cols > labels.length ? [...labels, 'invalid'] : labels;
  const max = Math.max(1, ...counts.flat());
  return (
    <div class="scroll-x">
      <table class="confusion" data-testid="confusion">
        <thead>
          <tr>
            <th class="corner">
              right answer ↓ / model said →
            </th>
            {colLabels.map((l) => (
              <th key={l} scope="col">
                {l}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {counts.map((row, g) => (
            <tr key={labels[g]}>
              <th scope="row">{labels[g]}</th>
              {row.map((c, p) => {
                const share = c / max;
                const diag = g === p;
                return (
                  <td
                    key={p}
                    class={`${diag ? 'diag' : ''} ${share > 0.55 ? 'dark' : ''}`}
                    style={{ backgroundColor: c === 0 ? 'transparent' : `rgba(${diag ? '47,111,223' : '224,123,57'},${0.12 + 0.78 * share})` }}
                  >
                    {c === 0 ? '·' : c}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The rows whose answer changed with the option order, each with the text it judged (from the
 * eval set the run read, found again by its checksum; without it, the row's id). */
function UnstableRows(props: { rows: RowRecord[]; evalSet: EvalSetRecord }) {
  const [all, setAll] = useState(false);
  const [texts, setTexts] = useState<RowTexts | null>(null);
  useEffect(() => {
    let live = true;
    rowTexts(props.evalSet)
      .then((t) => live && setTexts(t))
      .catch(() => live && setTexts(null));
    return () => {
      live = false;
    };
  }, [props.evalSet.sha256]);
  const rows = props.rows.filter((r) => r.order_unstable);
  const shown = all ? rows : rows.slice(0, 12);
  if (rows.length === 0) return <p class="muted">No row changed its answer with the option order.</p>;
  return (
    <>
      {texts?.missing && <p class="muted small" data-testid="row-texts-missing">{texts.missing}</p>}
      <div class="scroll-x">
        <table class="table compact" data-testid="unstable-rows">
          <thead>
            <tr>
              <th>text</th>
              <th>family</th>
              <th>right answer</th>
              <th>combined answer</th>
              <th>answer in each option order</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <tr key={r.id}>
                <td title={texts?.texts[r.id] ?? `row ${r.id}`}>
                  <div class="row-text" data-testid="row-text">
                    {texts?.texts[r.id] ?? <span class="mono">{r.id}</span>}
                  </div>
                </td>
                <td>{r.family.replace(/_/g, ' ')}</td>
                <td>{r.gold_id}</td>
                <td class={r.correct ? 'good' : 'bad'}>{r.predicted_id ?? 'invalid'}</td>
                <td class="picks">{r.orderings.map((_, k) => orderingPick(r, k)).join(' · ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rows.length > shown.length && (
        <button type="button" class="link" onClick={() => setAll(true)}>
          Show all {rows.length} rows
        </button>
      )}
    </>
  );
}

/** What a card shows for a figure the result file does not hold. */
function Absent(props: { testid: string }) {
  return (
    <p class="muted" data-testid={props.testid}>
      Not in this result file: it was written before Readout measured this. Run the evaluation again to see it.
    </p>
  );
}

/** The risk–coverage curve and, beneath it, the coverage reached at each error level. */
function SelectiveAnswers(props: { selective: Selective }) {
  const { curve, coverage_at_risk: levels } = props.selective;
  if (curve.length === 0) return <p class="muted">No rows were scored.</p>;
  const all = curve[curve.length - 1];
  return (
    <>
      <RiskCoverageChart curve={curve} levels={levels} />
      <table class="table compact levels" data-testid="coverage-at-risk">
        <thead>
          <tr>
            <th title="The share of the answers given that may be wrong">error at most</th>
            <th class="num" title="The most rows the model can answer within that error">rows answered</th>
            <th class="num" title="Answer only when the likeliest option has at least this probability">confidence at least</th>
          </tr>
        </thead>
        <tbody>
          {levels.map((l, i) => (
            <tr key={l.max_risk} data-testid="risk-level">
              <td>
                <span class={`swatch swatch-${i % RISK_COLOURS.length}`} aria-hidden="true" />
                {pct(l.max_risk, 0)}
              </td>
              {l.coverage === null ? (
                <td class="num muted" colSpan={2} title="Even the model's most confident answers are wrong more often than this.">
                  unreachable
                </td>
              ) : (
                <>
                  <td class="num">{pct(l.coverage)}</td>
                  <td class="num">{pct(l.threshold)}</td>
                </>
              )}
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted small">
        Answering every row, {pct(all.risk)} of the answers are wrong.{' '}
        {levels.some((l) => l.coverage === null) && 'Unreachable: even the most confident answers are wrong more often than that. '}
        To withhold unsure answers when scoring texts, set “No answer below” on the Score page.
      </p>
    </>
  );
}

/** Paired bars per letter, and beneath them the accuracy of order-stable against order-unstable rows. */
function LetterPreference(props: { bias: PositionBias }) {
  const { letters, readings, stable, unstable } = props.bias;
  if (letters.length === 0) return <p class="muted">No letter was read (no ordering was scored).</p>;
  const subset = (label: string, s: { rows: number; accuracy: number } | null, testid: string, help: string) => (
    <div class="metric" data-testid={testid} title={help}>
      <div class="metric-label">{label}</div>
      <div class="metric-value">{s ? pct(s.accuracy) : '—'}</div>
      <div class="metric-sub">{s ? `right, of ${int(s.rows)} row${s.rows === 1 ? '' : 's'}` : 'no such rows'}</div>
    </div>
  );
  return (
    <>
      <PositionBiasChart letters={letters} />
      <p class="muted small">
        Over {int(readings)} readings (every option order of every row), before the option orders are combined. A fair judge's bars match.
      </p>
      {stable || unstable ? (
        <div class="metrics metrics-pair" data-testid="stable-unstable">
          {subset('Order-stable rows', stable, 'stable-accuracy', 'Rows whose answer was the same in every option order: how many of them are right.')}
          {subset('Order-unstable rows', unstable, 'unstable-accuracy', 'Rows whose answer changed with the option order: how many of them are right.')}
        </div>
      ) : (
        <p class="muted small" data-testid="stable-unstable">
          Order-stable against order-unstable rows: not checked, one option order was scored.
        </p>
      )}
    </>
  );
}

export function ResultView(props: { result: ResultFile; file?: string; actions?: ComponentChildren; below?: ComponentChildren }) {
  const r = props.result;
  const m = r.metrics;
  const checked = m?.overall.order_unstable !== null && m?.overall.order_unstable !== undefined;
  return (
    <div class="result" data-testid="result-view" data-status={r.status}>
      <Card
        title={
          <>
            {r.status === 'partial' ? 'Partial result' : 'Result'}{' '}
            {r.status === 'partial' ? (
              <Badge kind="partial" title="The run was stopped before every row was scored">
                stopped early
              </Badge>
            ) : (
              <Badge kind="ok">complete</Badge>
            )}
          </>
        }
        actions={props.actions}
      >
        {r.status === 'partial' && (
          <p class="notice notice-warn" data-testid="partial-note">
            The run was stopped after {r.rows.length} of {r.eval_set.rows} rows. The figures below are for those rows only.
          </p>
        )}
        <p class="summary-line">
          <strong>{r.model.name}</strong>
          {r.model.name.includes(r.model.quantisation) ? '' : ` (${r.model.quantisation})`} on <strong>{r.eval_set.name}</strong> · {r.config.mode === 'readout' ? 'reading the answer letters' : 'generating an answer'} ·{' '}
          {r.config.shots} worked example{r.config.shots === 1 ? '' : 's'} · {debiasWords(r.config.debias)}
          {r.config.levers.prune_head ? ' · output layer pruned to the letters' : ''}
          {r.config.prompt_version === 'readout-terse-v1' ? ' · terse prompt' : ''}
          {r.config.calibration ? ` · temperature ${r.config.calibration.temperature.toFixed(3)} (${r.config.calibration.file})` : ''}
          {leversOff(r.config.levers)}
        </p>
        {props.file && <p class="muted mono small">{props.file}</p>}

        {!m ? (
          <p class="muted">No figures: the run stopped before any row was scored.</p>
        ) : (
          <>
            <Headline accuracy={m.mean_family_balanced_accuracy} chance={m.chance} lo={m.bootstrap.lo} hi={m.bootstrap.hi} level={m.bootstrap.level} />
            <div class="metrics" data-testid="metrics">
              <Metric
                label="Questions answered right"
                value={pct(m.overall.accuracy)}
                sub={`of ${int(m.overall.rows)} questions`}
                help="Every question counted once, so the kinds with more questions weigh more than in the headline."
                testid="metric-accuracy"
              />
              <Metric
                testid="metric-unstable"
                label="Answers that change with the option order"
                value={checked ? `${m.overall.order_unstable} of ${m.overall.rows}` : 'not checked'}
                sub={checked ? `${pct(m.overall.order_consistency)} keep their answer` : 'only one option order was scored'}
                help="Questions whose answer changed when the options were shown in another order: the model was unsure there."
              />
              {(r.config.mode === 'generate' || m.overall.invalid > 0) && (
                <Metric
                  label="Replies without an answer"
                  value={String(m.overall.invalid)}
                  sub="counted as wrong"
                  help="Replies the model wrote that named none of the options."
                />
              )}
              <Metric
                label="Time"
                value={duration(r.timing.wall_seconds)}
                sub={`${r.timing.rows_per_second.toFixed(2)} questions a second`}
                help={`Measured on this computer, from start to end; loading the model took ${duration(r.timing.model_load_seconds)}.`}
              />
            </div>
            <details class="details stats-details" data-testid="stats-details">
              <summary>
                Details <span class="muted small">for statisticians</span>
              </summary>
              <div class="metrics">
                <Metric
                  label="Mean family balanced accuracy"
                  value={pct(m.mean_family_balanced_accuracy)}
                  sub={`${Math.round(m.bootstrap.level * 100)}% interval ${pct(m.bootstrap.lo)} – ${pct(m.bootstrap.hi)}${m.chance !== undefined ? ` · chance ${pct(m.chance)}` : ''}`}
                  help="The headline: per family, the mean recall over the gold answers present; then the mean over families. Interval: group bootstrap."
                  testid="metric-mfba-stat"
                />
                <Metric label="ECE" value={num(m.overall.ece)} sub="lower is better" help="Expected calibration error: the gap between stated confidence and the share right, over 10 bins." testid="metric-ece" />
                <Metric label="Brier" value={num(m.overall.brier)} sub="lower is better" help="Squared error of the probabilities, summed over options, averaged over rows." />
                <Metric label="NLL" value={num(m.overall.nll)} sub="lower is better" help="Negative log-probability of the right answer, averaged over rows." />
                {r.config.mode !== 'generate' && m.overall.invalid === 0 && (
                  <Metric label="Invalid answers" value="0" sub="reading the letters always gives one" help="Generated replies with no valid option letter; counted as wrong." />
                )}
              </div>
            </details>
          </>
        )}
        {props.below}
      </Card>

      {m && (
        <>
          <Card title="Agreement with the right answers, per question" testid="agreement-card">
            {m.agreement ? <AgreementList list={m.agreement} rows={r.rows} raters={AGAINST_GOLD} /> : <Absent testid="agreement-absent" />}
          </Card>
          <div class="grid-2">
            <Card title="Right answers per kind of question">
              <p class="muted small figure-note">Each bar: how often the model found the right answer on one kind of question. The dashed line is what guessing would score.</p>
              <FamilyBars families={m.families} mean={m.mean_family_balanced_accuracy} />
            </Card>
            <Card title="Is the confidence right? (reliability)">
              <p class="muted small figure-note">When the model is 70 % sure, is it right 70 % of the time? Bars on the dashed line mean yes; bars below it, too sure.</p>
              <ReliabilityChart bins={m.overall.reliability} />
            </Card>
          </div>
          <div class="grid-2">
            <Card title="Answer only when sure? (risk and coverage)" testid="selective-card">
              <p class="muted small figure-note">Answering only where the model is most sure: how many questions it answers, and how many of those it gets wrong.</p>
              {m.selective ? <SelectiveAnswers selective={m.selective} /> : <Absent testid="selective-absent" />}
            </Card>
            <Card title="Which letter does it pick? (position bias)" testid="position-card">
              <p class="muted small figure-note">How often the model picked each letter, against how often the right answer sat there. A fair judge’s bars match.</p>
              {m.position_bias ? <LetterPreference bias={m.position_bias} /> : <Absent testid="position-absent" />}
            </Card>
          </div>
          <Card title="Answers against the right answers (confusion matrix)">
            <p class="muted small figure-note">Each row is a right answer, each column what the model said; the shaded diagonal is where they agree.</p>
            <ConfusionTable confusion={m.overall.confusion} />
          </Card>
          <Card title={`Order-unstable rows${checked ? ` (${m.overall.order_unstable})` : ''}`} testid="unstable-card">
            {checked ? (
              <UnstableRows rows={r.rows} evalSet={r.eval_set} />
            ) : (
              <p class="muted">Not checked: this run scored one option order. Choose “Every rotation” to check.</p>
            )}
          </Card>
        </>
      )}

      <details class="card details">
        <summary>Details of this run</summary>
        <dl class="kv">
          <dt>Created</dt>
          <dd>{r.created}</dd>
          <dt>Program</dt>
          <dd>
            {r.program.name} {r.program.version}, prompt {r.config.prompt_version}
          </dd>
          <dt>Machine</dt>
          <dd>
            {r.machine.os} {r.machine.arch}, {r.machine.cpus} CPUs, {r.machine.device}
          </dd>
          <dt>Model file</dt>
          <dd class="mono">
            {baseName(r.model.file)} · {r.model.architecture} · {int(r.model.parameters)} parameters
          </dd>
          <dt>Eval set</dt>
          <dd class="mono">
            {r.eval_set.path} · {r.eval_set.rows} rows{r.eval_set.skipped.length ? ` · ${r.eval_set.skipped.length} bad line${r.eval_set.skipped.length === 1 ? '' : 's'} skipped` : ''}
          </dd>
          <dt>Prompts</dt>
          <dd>
            {int(r.plan.prompts)} prompts, {int(r.plan.prompt_tokens)} tokens, {int(r.plan.computed_tokens)} computed (shared prefixes once)
          </dd>
          <dt>Temperature</dt>
          <dd data-testid="calibration-detail">
            {r.config.calibration ? (
              <>
                {r.config.calibration.temperature.toFixed(3)} from <span class="mono">{r.config.calibration.file}</span> (fitted on a run with {debiasWords(r.config.calibration.debias)}; sha256{' '}
                <span class="mono">{r.config.calibration.sha256.slice(0, 12)}…</span>)
              </>
            ) : (
              'none (the probabilities as the model gave them)'
            )}
          </dd>
          <dt>Speed levers</dt>
          <dd>
            {Object.entries(r.config.levers)
              .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${String(v)}`)
              .join(' · ')}
          </dd>
        </dl>
      </details>
    </div>
  );
}

/** The speed levers a run switched off (they are on by default), in words; empty when none. */
function leversOff(l: { prefix_tree: boolean; batched_suffixes: boolean; trim: boolean; pass_tokens?: number }): string {
  const off: string[] = [];
  if (!l.prefix_tree) off.push('no shared prompt beginnings');
  if (!l.batched_suffixes) off.push('no batching');
  if (!l.trim) off.push('output layer at every position');
  // The pass sizes the engine chooses by itself (the CPU's 512, earlier 1024; a GPU's 16,384) are not a lever set.
  if (l.pass_tokens && ![512, 1024, 16384].includes(l.pass_tokens)) off.push(`${l.pass_tokens} word pieces per pass`);
  return off.length ? ` · measuring: ${off.join(', ')}` : '';
}
