// The ways of handling the options' order (the library's debias modes), as the Evaluate and
// Score pages offer them and every page names them: one list, so all pages word them alike.
// `label` is the choice in a form; `words` the same choice inside a sentence ("… · every rotation
// of the options"). The raw ids (none, cyclic, …) are never shown.
import type { DebiasMode } from '../types';

export const DEBIAS: { id: DebiasMode; label: string; words: string; help: string }[] = [
  { id: 'none', label: 'One order (fastest, not checked)', words: 'one option order', help: 'Options in the order written; order-unstable answers are not checked.' },
  { id: 'cyclic', label: 'Every rotation (recommended)', words: 'every rotation of the options', help: 'Each rotation of the options is scored and the answers averaged by option.' },
  { id: 'permutation', label: 'Every order (slow)', words: 'every order of the options', help: 'All orders of the options (up to 6 options).' },
  { id: 'calibrate', label: 'Rotations with calibration', words: 'rotations with calibration', help: 'Divides out what the model says for an empty text, in each rotation.' },
  { id: 'pride', label: 'PriDe (estimate the letter bias)', words: 'PriDe (letter bias estimated from a sample)', help: "Estimates the model's taste for each letter from a 5% sample, then corrects the rest." },
  {
    id: 'batch',
    label: 'Batch calibration (letter bias from all rows)',
    words: 'batch calibration (letter bias from all rows)',
    help: "Each rotation's letter bias is taken from the mean over all the rows or texts scored together, then divided out; no extra prompts, but answers come only once every one is read.",
  },
];

/** The help line of a mode. */
export const debiasHelp = (id: DebiasMode): string => DEBIAS.find((d) => d.id === id)?.help ?? '';

/** A mode inside a sentence ("every rotation of the options"); an unknown id as "an option order
 * this version does not know" rather than the raw id. */
export const debiasWords = (id: string): string => DEBIAS.find((d) => d.id === id)?.words ?? 'an option order this version does not know';

/** A mode's short name, its form label without the note in brackets ("Every rotation"). */
export const debiasName = (id: string): string => DEBIAS.find((d) => d.id === id)?.label.replace(/ \(.*\)$/, '') ?? 'Another option order';
