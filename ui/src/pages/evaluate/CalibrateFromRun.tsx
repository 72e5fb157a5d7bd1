// "Calibrate from this run": a run of a labelled eval set knows where the model was right, so one
// number — a temperature — can be fitted to make its stated confidence match how often it is
// right (the shell's `calibrate_result`: `readout calibrate`'s fit and held-out check, the file
// written beside the saved result). The run is saved to the results folder first when it is not
// yet. "Use it when scoring" takes the calibration to the Score page, with the model and option
// order it belongs to.
import { useEffect, useState } from 'preact/hooks';
import { calibrateResult } from '../../api';
import { Badge, ErrorBox } from '../../components/ui';
import { debiasWords } from '../../lib/debias';
import { baseName } from '../../lib/format';
import type { Fitted, ResultFile } from '../../types';

type State = { status: 'idle' } | { status: 'busy' } | { status: 'done'; fitted: Fitted } | { status: 'error'; error: unknown };

/** A share of confidence as points: 0.0715 → "7.2 points". */
const points = (x: number) => `${(x * 100).toFixed(1)} points`;

/** What the temperature does to the model's probabilities, in words. */
function temperatureWords(t: number): string {
  if (t > 1.05) return 'the model was too sure of itself, so its probabilities are softened';
  if (t < 0.95) return 'the model was too timid, so its probabilities are sharpened';
  return 'the model’s probabilities were about right, so they barely change';
}

/** Whether a temperature can be fitted on this run: it read the letters, used none, and finished. */
export const canCalibrate = (r: ResultFile): boolean => r.status === 'complete' && r.config.mode === 'readout' && !r.config.calibration && !!r.metrics;

export function CalibrateFromRun(props: {
  result: ResultFile;
  /** The saved result file, or (not saved yet) a save to the results folder that gives its path. */
  file: () => Promise<string>;
  onUse: (f: Fitted) => void;
}) {
  const [state, setState] = useState<State>({ status: 'idle' });
  // Another run: its own calibration.
  useEffect(() => setState({ status: 'idle' }), [props.result]);
  if (!canCalibrate(props.result)) return null;

  async function calibrate() {
    setState({ status: 'busy' });
    try {
      const file = await props.file();
      setState({ status: 'done', fitted: await calibrateResult(file) });
    } catch (e) {
      setState({ status: 'error', error: e });
    }
  }

  if (state.status !== 'done') {
    return (
      <div class="calibrate-run" data-testid="calibrate-card">
        <div class="row wrap">
          <button type="button" class="secondary" onClick={calibrate} disabled={state.status === 'busy'} data-testid="calibrate-run">
            {state.status === 'busy' ? 'Calibrating…' : 'Calibrate from this run'}
          </button>
          <span class="muted small">Makes the model’s stated confidence match how often it was right here, for scoring texts with it. The run is saved first.</span>
        </div>
        {state.status === 'error' && <ErrorBox title="No temperature was fitted" error={state.error} onRetry={calibrate} testid="calibrate-error" />}
      </div>
    );
  }

  const f = state.fitted;
  const c = f.calibration;
  const { before, after } = c.held_out;
  const helps = after.ece < before.ece;
  return (
    <div class="calibrate-run fit-result" data-testid="calibrate-card">
      <p class="fit-headline" data-testid="calibrated-temperature">
        <strong>Temperature {c.temperature.toFixed(2)}</strong> — {temperatureWords(c.temperature)}. Fitted on the {c.fitted_on.rows} questions of this run (the model wrong on {c.fitted_on.wrong}).
      </p>
      <p class="fit-ece" data-testid="calibrated-ece">
        On questions held out of the fit, the model’s stated confidence is off by <strong>{points(before.ece)}</strong> on average before, <strong>{points(after.ece)}</strong> after.{' '}
        {helps ? <Badge kind="ok">better</Badge> : <span class="bad">It does not help on questions it did not see: better score without it.</span>}
      </p>
      {f.at_range_edge && (
        <p class="notice notice-warn" data-testid="calibrated-edge">
          The temperature reached the end of the range tried: the model’s probabilities say little about which of its answers are right.
        </p>
      )}
      <p class="muted small">
        It belongs to this model with {debiasWords(c.fitted_on.debias)}: using it switches the Score page to them. Kept beside the result as{' '}
        <span class="mono" title={f.file}>
          {baseName(f.file)}
        </span>
        .
      </p>
      <div class="row wrap">
        <button type="button" class={helps ? 'primary' : 'secondary'} onClick={() => props.onUse(f)} data-testid="calibrated-use">
          Use it when scoring
        </button>
      </div>
    </div>
  );
}
