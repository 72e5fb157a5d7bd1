// Score: texts + a rubric → the model's answer to every question for every text; then, if the
// person wants, a review of those answers against their own labels. The state and the backend
// calls live in ./score/useScore.ts and ./review/useReview.ts; each card is a component in ./score/.
// While a review is open it takes the page's place (the scoring cards stay as they were, hidden).
import { useEffect } from 'preact/hooks';
import { baseName } from '../lib/format';
import type { Fitted, ModelEntry } from '../types';
import type { Judge } from './review/FitJudge';
import { Review } from './review/Review';
import { useReview } from './review/useReview';
import { ReviewCard } from './score/ReviewCard';
import { RubricCard } from './score/RubricCard';
import { ScoreResults } from './score/ScoreResults';
import { SettingsCard } from './score/SettingsCard';
import { TextsCard } from './score/TextsCard';
import { useScore } from './score/useScore';

export function ScorePage(props: {
  models: ModelEntry[];
  defaultModel?: string;
  onModelUsed: () => void;
  /** A calibration fitted elsewhere (the Evaluate page's "Calibrate from this run"), to use; `n`
   * counts the hand-overs, so the same one given twice is applied twice. */
  fit?: { fitted: Fitted; n: number } | null;
}) {
  const { texts, rubric, scoring, tryExample } = useScore(props.onModelUsed);
  const review = useReview();
  /** "Use it when scoring": the fit's calibration, with the model and option order it was fitted
   * with (a temperature belongs to one judge), then the texts scored again with it. */
  function applyFit(f: Fitted) {
    const model = props.models.find((m) => baseName(m.path) === f.model_file)?.path;
    const choice = {
      calibration: f.file,
      debias: f.calibration.fitted_on.debias,
      // The default model ('') when it is the one fitted, or when the file is not in the list.
      model: model && model !== props.defaultModel ? model : model ? '' : scoring.model,
    };
    scoring.setCalibration(choice.calibration);
    scoring.setCalibrationError(null);
    scoring.setDebias(choice.debias);
    scoring.setModel(choice.model);
    review.close();
    if (!scoring.why) void scoring.score(choice);
  }
  useEffect(() => {
    if (props.fit) applyFit(props.fit.fitted);
  }, [props.fit?.n]);
  const judge: Judge = { model: scoring.model, debias: scoring.debias, models: props.models, defaultModel: props.defaultModel, use: applyFit };
  return (
    <>
      {review.view && <Review review={review} judge={judge} />}
      <div class="page" data-page="score" hidden={!!review.view}>
        <header class="page-head">
          <h1>Score texts</h1>
          <p class="lead">Paste texts, choose the questions to ask (a rubric), and the model answers each question with a probability.</p>
        </header>
        <TextsCard texts={texts} onExample={tryExample} exampleDisabled={!!rubric.busy} />
        <RubricCard rubric={rubric} />
        <SettingsCard scoring={scoring} models={props.models} defaultModel={props.defaultModel} />
        <ScoreResults scoring={scoring} />
        <ReviewCard review={review} scoring={scoring} rubric={rubric} />
      </div>
    </>
  );
}
