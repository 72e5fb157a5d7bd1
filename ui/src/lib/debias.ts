// The ways of handling the options' order (the library's debias modes), as the Evaluate and
// Score pages offer them: one list, so both pages word them alike.
import type { DebiasMode } from '../types';

export const DEBIAS: { id: DebiasMode; label: string; help: string }[] = [
  { id: 'none', label: 'One order (fastest, not checked)', help: 'Options in the order written; order-unstable answers are not checked.' },
  { id: 'cyclic', label: 'Every rotation (recommended)', help: 'Each rotation of the options is scored and the answers averaged by option.' },
  { id: 'permutation', label: 'Every order (slow)', help: 'All orders of the options (up to 6 options).' },
  { id: 'calibrate', label: 'Rotations with calibration', help: 'Divides out what the model says for an empty text, in each rotation.' },
  { id: 'pride', label: 'PriDe (estimate the letter bias)', help: "Estimates the model's taste for each letter from a 5% sample, then corrects the rest." },
  {
    id: 'batch',
    label: 'Batch calibration (letter bias from all rows)',
    help: "Each rotation's letter bias is taken from the mean over all the rows or texts scored together, then divided out; no extra prompts, but answers come only once every one is read.",
  },
];

/** The help line of a mode. */
export const debiasHelp = (id: DebiasMode): string => DEBIAS.find((d) => d.id === id)?.help ?? '';
