// A jury's run (`run_jury`, `readout run --model A --model B`): each judge alone and the jury on
// the eval set — accuracy, mean family balanced accuracy with its interval, ECE, Brier — the jury
// against the best judge with its paired interval, and how often the judges agree. The files are
// in the results folder: each judge's result file and the jury file.
import { Card } from '../../components/ui';
import { pct } from '../../lib/format';
import type { JuryFile } from '../../types';

type Summary = JuryFile['summary'];

function Row(props: { name: string; weight?: number; s: Summary; strong?: boolean }) {
  const o = props.s.overall;
  const b = props.s.bootstrap;
  return (
    <tr class={props.strong ? 'is-chosen' : ''} data-testid="jury-row">
      <td>{props.strong ? <strong>{props.name}</strong> : props.name}</td>
      <td class="num">{props.weight === undefined ? '' : props.weight.toFixed(2)}</td>
      <td class="num">{pct(o.accuracy, 1)}</td>
      <td class="num">
        {pct(props.s.mean_family_balanced_accuracy, 1)} <span class="muted small">[{pct(b.lo, 1)}, {pct(b.hi, 1)}]</span>
      </td>
      <td class="num">{o.ece.toFixed(3)}</td>
      <td class="num">{o.brier.toFixed(3)}</td>
    </tr>
  );
}

export function JuryView(props: { file: JuryFile }) {
  const f = props.file;
  const best = f.judges[f.versus_best.judge];
  const d = f.versus_best.comparison.difference;
  const all = f.agreement.find((a) => a.criterion === 'all');
  const signed = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(1)}`;
  return (
    <Card title={`A jury of ${f.judges.length} judges on ${f.eval_set}`} testid="jury-view">
      <p class="small">
        {f.rows.length} rows. Each judge read every row in turn; the jury's answer is the {f.weights.method === 'fitted' ? 'pool with weights fitted on other folds' : 'average of their probabilities'}.
        Each judge's result file and the jury file are in the results folder.
      </p>
      <div class="scroll-x">
        <table class="table" data-testid="jury-table">
          <thead>
            <tr>
              <th>Judge</th>
              <th class="num">Weight</th>
              <th class="num">Accuracy</th>
              <th class="num">Balanced accuracy (95% interval)</th>
              <th class="num">ECE</th>
              <th class="num">Brier</th>
            </tr>
          </thead>
          <tbody>
            {f.judges.map((j) => (
              <Row key={j.file} name={j.model} weight={j.weight} s={j.summary} />
            ))}
            <Row name="The jury" s={f.summary} strong />
          </tbody>
        </table>
      </div>
      {d && (
        <p class="small" data-testid="jury-versus-best">
          Against the best judge alone ({best.model}): accuracy {signed(d.accuracy.estimate)} points [{signed(d.accuracy.lo)}, {signed(d.accuracy.hi)}], balanced accuracy{' '}
          {signed(d.balanced_accuracy.estimate)} points [{signed(d.balanced_accuracy.lo)}, {signed(d.balanced_accuracy.hi)}].{' '}
          {d.accuracy.lo > 0 ? 'The jury is better.' : d.accuracy.hi < 0 ? 'The jury is worse.' : 'No clear difference.'}
        </p>
      )}
      {all && (
        <p class="small" data-testid="jury-agreement">
          The judges disagree on {all.disagreements} of {all.rows} rows (Krippendorff's α {all.alpha === null ? 'undefined' : all.alpha.toFixed(2)}).
        </p>
      )}
    </Card>
  );
}
