// The standings of a pairwise run (`readout pairwise standings`): which system wins, by the
// judge's verdicts (each pair read in both orders) and by gold — win rates with Wilson intervals
// and Bradley–Terry scores with bootstrap intervals — and how often the judge's two orders
// disagreed.
import { Card } from '../../components/ui';
import { pct } from '../../lib/format';
import type { PairwiseReport } from '../../types';

type Est = { estimate: number; lo: number; hi: number };
const win = (w: Est | null) => (w ? `${pct(w.estimate, 0)} [${pct(w.lo, 0)}, ${pct(w.hi, 0)}]` : '–');
const bt = (e: Est) => `${e.estimate >= 0 ? '+' : '−'}${Math.abs(e.estimate).toFixed(2)} [${e.lo.toFixed(2)}, ${e.hi.toFixed(2)}]`;

export function PairwiseCard(props: { report: PairwiseReport }) {
  const r = props.report;
  return (
    <Card title="Which response wins: the systems compared" testid="pairwise-card">
      <p class="small" data-testid="pairwise-summary">
        {r.pairs} pairs, each read with the two responses in both orders. The judge agrees with gold on {r.correct} ({pct(r.correct / r.pairs, 0)});{' '}
        {r.order_unstable === null ? 'one order only: its position bias was not checked.' : `its verdict changed with the order on ${r.order_unstable}.`}
      </p>
      <div class="scroll-x">
        <table class="table" data-testid="pairwise-table">
          <thead>
            <tr>
              <th>System</th>
              <th class="num">Games</th>
              <th class="num">Wins by the judge (95% interval)</th>
              <th class="num">Strength by the judge</th>
              <th class="num">Wins by gold</th>
              <th class="num">Strength by gold</th>
            </tr>
          </thead>
          <tbody>
            {r.systems.map((s) => (
              <tr key={s.system} data-testid="pairwise-row">
                <td>{s.system}</td>
                <td class="num">{s.judge.games}</td>
                <td class="num">{win(s.judge.win_rate)}</td>
                <td class="num">{bt(s.judge.score)}</td>
                <td class="num">{win(s.gold.win_rate)}</td>
                <td class="num">{bt(s.gold.score)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p class="muted small">
        A tie counts half a win. Strength is the Bradley–Terry score (a log of odds, mean 0), with intervals from {r.resamples} redraws of the prompts.
      </p>
    </Card>
  );
}
