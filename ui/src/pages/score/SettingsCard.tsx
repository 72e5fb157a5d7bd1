// Step 3 of the Score page: how to score (option order, when to give no answer, a temperature,
// the model) and the Score button.
import { CalibrationPicker } from '../../components/CalibrationPicker';
import { ModelSelect } from '../../components/ModelSelect';
import { PercentInput } from '../../components/PercentInput';
import { Card, ErrorBox } from '../../components/ui';
import { DEBIAS, debiasHelp } from '../../lib/debias';
import type { DebiasMode, ModelEntry } from '../../types';
import type { Scoring } from './useScore';

export function SettingsCard(props: { scoring: Scoring; models: ModelEntry[]; defaultModel?: string }) {
  const s = props.scoring;
  return (
    <Card step={3} title="Score" testid="score-card">
      <div class="form-grid wide score-grid">
        <label for="score-debias">Option order</label>
        <div class="row wrap">
          <select id="score-debias" value={s.debias} onChange={(e) => s.setDebias(e.currentTarget.value as DebiasMode)} data-testid="score-debias">
            {DEBIAS.map((d) => (
              <option key={d.id} value={d.id}>
                {d.label}
              </option>
            ))}
          </select>
          <span class="muted small help" data-testid="score-debias-help">
            {debiasHelp(s.debias)}
          </span>
        </div>

        <label for="abstain-below">No answer below</label>
        <div class="row" data-testid="abstain-options">
          <PercentInput id="abstain-below" value={s.abstainBelow} onInput={s.setAbstainBelow} testid="abstain-below" />
          <span class="muted small help">% confidence: a criterion whose likeliest option has less gets “no answer” (unsure). Empty: always answer.</span>
        </div>

        <label for="abstain-mass">No answer when the letters get under</label>
        <div class="row">
          <PercentInput id="abstain-mass" value={s.abstainMass} onInput={s.setAbstainMass} testid="abstain-mass" />
          <span class="muted small help">% of the model's next-token probability: it wanted to say something else, so none of the options fits.</span>
        </div>

        <span class="label">Temperature</span>
        <CalibrationPicker value={s.calibration} onChange={s.setCalibration} onError={s.setCalibrationError} />
        {s.calibrationError && (
          <div class="span-all">
            <ErrorBox title="The calibration file could not be chosen" message={s.calibrationError} />
          </div>
        )}

        <label for="score-model">Model</label>
        <div class="row">
          <ModelSelect id="score-model" value={s.model} onChange={s.setModel} models={props.models} defaultModel={props.defaultModel} />
          <span class="spacer" />
          <button type="button" class="primary" onClick={() => void s.score()} disabled={s.running || !!s.why} data-testid="score-button">
            {s.running ? 'Scoring…' : 'Score'}
          </button>
        </div>
      </div>
      {s.why && !s.running && <p class="muted small right">{s.why}</p>}
    </Card>
  );
}
