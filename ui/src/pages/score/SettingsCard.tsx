// Step 3 of the Score page: how to score and the Score button. In the main path: every rotation
// of the options or one order (with what each costs), "Answer only when sure" as a preset, and
// the model. Folded under "More settings": the two exact "no answer" numbers, a temperature, and
// every way of handling the options' order. Ctrl+Enter (⌘+Enter on a Mac) scores from anywhere
// on the page.
import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { CalibrationPicker } from '../../components/CalibrationPicker';
import { ModelSelect } from '../../components/ModelSelect';
import { PercentInput } from '../../components/PercentInput';
import { Card, ErrorBox } from '../../components/ui';
import { aboutTime, estimateSeconds, optionsWords, times, timesOneOrder } from '../../lib/cost';
import { DEBIAS, debiasHelp } from '../../lib/debias';
import { baseName } from '../../lib/format';
import type { DebiasMode, ModelEntry } from '../../types';
import type { Scoring } from './useScore';
import { PRESETS, type Preset } from './useSettings';

const PRESET_WORDS: Record<Preset, string> = { off: 'Off', normal: 'Normal', strict: 'Strict' };
const PRESET_HELP =
  `Off: always answer. Normal: no answer below ${PRESETS.normal.below}% confidence. ` +
  `Strict: no answer below ${PRESETS.strict.below}% confidence, or when the answer letters get under ${PRESETS.strict.mass}% of what the model wanted to say.`;

/** The keys that score from anywhere on the page, as this computer names them. */
const isMac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
export const SCORE_KEYS = isMac ? '⌘+Enter' : 'Ctrl+Enter';

/** What the chosen order costs: a multiple of one order, and — when a scoring on this model was
 * timed — about how long these texts take. */
function costLine(s: Scoring, texts: number): string | null {
  const { options, secondsPerPrompt, debiasIsDefault } = s.settings;
  if (options.length === 0) return null;
  const label = s.debias === 'cyclic' ? 'Every rotation' : s.debias === 'none' ? 'One order' : (DEBIAS.find((d) => d.id === s.debias)?.label ?? s.debias);
  const these = `these ${texts} text${texts === 1 ? '' : 's'}`;
  const time = (mode: DebiasMode) => aboutTime(estimateSeconds(mode, options, texts, secondsPerPrompt ?? 0));
  const measured = secondsPerPrompt !== null && texts > 0;
  if (s.debias === 'none') {
    const base = measured ? `One order: the fastest — ${time('none')} for ${these} on this model.` : 'One order: the fastest; answers are not checked against other orders.';
    // The page chose one order itself: say why.
    return debiasIsDefault && measured ? `${base} Every rotation would take ${time('cyclic')}.` : base;
  }
  const x = times(timesOneOrder(s.debias, options));
  return measured
    ? `${label}: about ${x} the time of one order (${optionsWords(options)}) — ${time(s.debias)} for ${these} on this model.`
    : `${label}: ${x} the work of one order (${optionsWords(options)}).`;
}

/** A jury: more judges under the model, each a model of its own; with two or more the texts are
 * read by each in turn and their answers averaged. */
function JuryRows(props: { scoring: Scoring; models: ModelEntry[]; defaultModel?: string }) {
  const st = props.scoring.settings;
  const judges = st.judges;
  const set = (i: number, path: string) => st.setJudges(judges.map((j, k) => (k === i ? path : j)));
  return (
    <div class="jury" data-testid="jury">
      {judges.length > 0 && (
        <div class="form-grid wide score-grid">
          {judges.map((j, i) => (
            <Fragment key={i}>
              <label for={`judge-${i + 2}`}>
                Judge {i + 2}
              </label>
              <div class="row">
                <ModelSelect id={`judge-${i + 2}`} value={j} onChange={(p) => set(i, p)} models={props.models} defaultModel={props.defaultModel} />
                <button type="button" onClick={() => st.setJudges(judges.filter((_, k) => k !== i))} title="Take this judge off the jury" data-testid={`remove-judge-${i + 2}`}>
                  Remove
                </button>
              </div>
            </Fragment>
          ))}
          <span class="label">When judges disagree</span>
          <label class="check">
            <input type="checkbox" checked={st.abstainDisagree} onChange={(e) => st.setAbstainDisagree(e.currentTarget.checked)} data-testid="abstain-disagree" />
            Give no answer
          </label>
        </div>
      )}
      <p class="small row wrap">
        <button type="button" onClick={() => st.setJudges([...judges, ''])} data-testid="add-judge">
          {judges.length === 0 ? 'Ask more models (a jury)' : 'Add a judge'}
        </button>
        <span class="muted" data-testid="jury-help">
          {judges.length === 0
            ? 'Several models can judge together: each reads every text, and their answers are averaged.'
            : `${judges.length + 1} judges read every text one after another (one model in memory at a time); the answer is the average of their probabilities, and each judge's own answer is shown under it.`}
        </span>
      </p>
    </div>
  );
}

export function SettingsCard(props: { scoring: Scoring; models: ModelEntry[]; defaultModel?: string }) {
  const s = props.scoring;
  const texts = s.settings.texts;
  const [more, setMore] = useState(false);
  const expert = s.debias !== 'none' && s.debias !== 'cyclic';
  // A temperature chosen elsewhere (the review's "Use it") or an expert order: shown unfolded.
  useEffect(() => {
    if (s.calibration || expert) setMore(true);
  }, [s.calibration, expert]);

  // Ctrl+Enter (⌘+Enter) scores from anywhere on the page while Score can be pressed; the page is
  // out of sight (another page, or a review open) when the card has no layout box.
  const latest = useRef(s);
  latest.current = s;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Enter' || !(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey) return;
      const cur = latest.current;
      const card = document.querySelector<HTMLElement>('[data-testid="score-card"]');
      if (!card || card.offsetParent === null || cur.running || cur.why) return;
      e.preventDefault();
      void cur.score();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  const cost = costLine(s, texts);
  const preset = s.settings.preset;
  return (
    <Card step={3} title="Score" testid="score-card">
      <div class="form-grid wide score-grid">
        <span class="label">Option order</span>
        <div class="stack-tight">
          <div class="row wrap">
            <div class="segmented" role="radiogroup" aria-label="Option order">
              <label class={s.debias === 'cyclic' ? 'on' : ''}>
                <input type="radio" name="score-order" value="cyclic" checked={s.debias === 'cyclic'} onChange={() => s.setDebias('cyclic')} data-testid="order-cyclic" />
                Every rotation (recommended)
              </label>
              <label class={s.debias === 'none' ? 'on' : ''}>
                <input type="radio" name="score-order" value="none" checked={s.debias === 'none'} onChange={() => s.setDebias('none')} data-testid="order-none" />
                One order (fastest)
              </label>
            </div>
            {expert && <span class="small">Chosen in More settings: {DEBIAS.find((d) => d.id === s.debias)?.label}</span>}
          </div>
          <span class="muted small" data-testid="score-debias-help">
            {debiasHelp(s.debias)}
          </span>
          {cost && (
            <span class="small" data-testid="score-cost">
              {cost}
            </span>
          )}
        </div>

        <span class="label">Answer only when sure</span>
        <div class="stack-tight">
          <div class="row wrap">
            <div class="segmented" role="radiogroup" aria-label="Answer only when sure" data-testid="abstain-preset" data-preset={preset}>
              {(Object.keys(PRESETS) as Preset[]).map((p) => (
                <label key={p} class={preset === p ? 'on' : ''}>
                  <input type="radio" name="abstain-preset" value={p} checked={preset === p} onChange={() => s.settings.setPreset(p)} data-testid={`preset-${p}`} />
                  {PRESET_WORDS[p]}
                </label>
              ))}
            </div>
            {preset === 'custom' && (
              <span class="small" data-testid="preset-custom">
                Custom (the numbers under More settings)
              </span>
            )}
          </div>
          <span class="muted small" data-testid="preset-help">
            {PRESET_HELP}
          </span>
        </div>

        <label for="score-model">{s.settings.judges.length > 0 ? 'Judge 1' : 'Model'}</label>
        <div class="row">
          <ModelSelect id="score-model" value={s.model} onChange={s.setModel} models={props.models} defaultModel={props.defaultModel} />
          <span class="spacer" />
          <button
            type="button"
            class="primary"
            onClick={() => void s.score()}
            disabled={s.running || !!s.why}
            title={s.why ?? `Score the texts (${SCORE_KEYS} from anywhere on this page)`}
            aria-keyshortcuts={isMac ? 'Meta+Enter' : 'Control+Enter'}
            data-testid="score-button"
          >
            {s.running ? 'Scoring…' : 'Score'}
          </button>
        </div>
      </div>
      <JuryRows scoring={s} models={props.models} defaultModel={props.defaultModel} />
      {s.why && !s.running ? (
        <p class="muted small right">{s.why}</p>
      ) : (
        <p class="muted small right" data-testid="score-shortcut">
          Tip: press {SCORE_KEYS} to score from anywhere on this page.
        </p>
      )}

      <details class="more-settings" data-testid="more-settings" open={more} onToggle={(e) => setMore((e.currentTarget as HTMLDetailsElement).open)}>
        <summary>More settings</summary>
        <div class="form-grid wide score-grid">
          <label for="score-debias">Option order (every way)</label>
          <div class="row wrap">
            <select id="score-debias" value={s.debias} onChange={(e) => s.setDebias(e.currentTarget.value as DebiasMode)} data-testid="score-debias">
              {DEBIAS.map((d) => (
                <option key={d.id} value={d.id}>
                  {d.label}
                </option>
              ))}
            </select>
          </div>

          <label for="abstain-below">No answer below</label>
          <div class="row" data-testid="abstain-options">
            <PercentInput id="abstain-below" value={s.abstainBelow} onInput={s.setAbstainBelow} testid="abstain-below" />
            <span class="muted small help">% confidence: a question whose likeliest answer has less gets “no answer” (unsure). Empty: always answer.</span>
          </div>

          <label for="abstain-mass">No answer when the letters get under</label>
          <div class="row">
            <PercentInput id="abstain-mass" value={s.abstainMass} onInput={s.setAbstainMass} testid="abstain-mass" />
            <span class="muted small help">% of what the model wanted to say next: below it, none of the answers fits.</span>
          </div>

          <span class="label">Long texts</span>
          <label class="check">
            <input type="checkbox" checked={s.truncate} onChange={(e) => s.setTruncate(e.currentTarget.checked)} data-testid="truncate-middle" />
            Cut a text too long for the model from the middle (its start and end are kept)
          </label>

          <span class="label">Temperature</span>
          <CalibrationPicker value={s.calibration} onChange={s.setCalibration} onError={s.setCalibrationError} />
        </div>
      </details>
      {s.calibrationError && <ErrorBox title="The calibration file could not be chosen" message={s.calibrationError} />}

      {s.settings.exports.length > 0 && (
        <details class="recent-exports" data-testid="recent-exports">
          <summary>Answers you exported lately ({s.settings.exports.length})</summary>
          <ul>
            {s.settings.exports.map((p) => (
              <li key={p} title={p}>
                <strong>{baseName(p)}</strong>
                {p.includes('/') || p.includes('\\') ? <span class="muted small"> in {p.slice(0, p.length - baseName(p).length - 1)}</span> : null}
              </li>
            ))}
          </ul>
        </details>
      )}
    </Card>
  );
}
