// The "Temperature" control of Score and Evaluate: a calibration file from `readout calibrate`,
// chosen through the shell's file dialog, shown as a chip that can be removed.
import { errorMessage, pickFile } from '../api';
import { baseName } from '../lib/format';

export function CalibrationPicker(props: {
  /** The chosen file's path, or null. */
  value: string | null;
  onChange: (path: string | null) => void;
  /** Called with null when a pick starts, and with the message when the dialog fails. */
  onError: (message: string | null) => void;
  /** Put before the test ids `calibration-chip` and `choose-calibration` (e.g. `eval-`). */
  testidPrefix?: string;
  /** The help line goes on with this (e.g. where the choice is recorded). */
  more?: string;
  wrap?: boolean;
}) {
  const prefix = props.testidPrefix ?? '';
  async function choose() {
    props.onError(null);
    try {
      const path = await pickFile('calibration');
      if (path) props.onChange(path);
    } catch (e) {
      props.onError(errorMessage(e));
    }
  }
  return (
    <div class={props.wrap ? 'row wrap' : 'row'}>
      {props.value ? (
        <span class="file-chip" data-testid={`${prefix}calibration-chip`}>
          <span class="mono small" title={props.value}>
            {baseName(props.value)}
          </span>
          <button type="button" class="link" onClick={() => props.onChange(null)}>
            Remove
          </button>
        </span>
      ) : (
        <button type="button" class="secondary" onClick={choose} data-testid={`${prefix}choose-calibration`}>
          Choose a calibration file…
        </button>
      )}
      <span class="muted small help">
        optional: from <span class="mono">readout calibrate</span> or a review’s “Fit the judge to my labels”
        {`, on a run of this model and option order${props.more ?? ''}`}
      </span>
    </div>
  );
}
