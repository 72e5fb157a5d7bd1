// Score: texts + a rubric → the model's answer to every question for every text. The state and
// the backend calls live in ./score/useScore.ts; each card is a component in ./score/.
import type { ModelEntry } from '../types';
import { RubricCard } from './score/RubricCard';
import { ScoreResults } from './score/ScoreResults';
import { SettingsCard } from './score/SettingsCard';
import { TextsCard } from './score/TextsCard';
import { useScore } from './score/useScore';

export function ScorePage(props: { models: ModelEntry[]; defaultModel?: string; onModelUsed: () => void }) {
  const { texts, rubric, scoring, tryExample } = useScore(props.onModelUsed);
  return (
    <div class="page" data-page="score">
      <header class="page-head">
        <h1>Score texts</h1>
        <p class="lead">Paste texts, choose the questions to ask (a rubric), and the model answers each question with a probability.</p>
      </header>
      <TextsCard texts={texts} onExample={tryExample} exampleDisabled={!!rubric.busy} />
      <RubricCard rubric={rubric} />
      <SettingsCard scoring={scoring} models={props.models} defaultModel={props.defaultModel} />
      <ScoreResults scoring={scoring} />
    </div>
  );
}
