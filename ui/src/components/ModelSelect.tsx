// The model a job runs on: the default one (named), or one of the known models. Names are the
// library's (`readout::models::name_of`), the same as on the Models page; the whole name of the
// choice is in the title when the box is too narrow for it.
import type { ModelEntry } from '../types';

export function ModelSelect(props: { id: string; value: string; onChange: (path: string) => void; models: ModelEntry[]; defaultModel?: string }) {
  const byPath = (p?: string) => props.models.find((m) => m.path === p);
  const first = byPath(props.defaultModel) ? `Default: ${byPath(props.defaultModel)?.name}` : 'The default model';
  const chosen = props.value ? (byPath(props.value)?.name ?? props.value) : first;
  return (
    <select id={props.id} value={props.value} title={chosen} onChange={(e) => props.onChange(e.currentTarget.value)}>
      <option value="">{first}</option>
      {props.models.map((m) => (
        <option key={m.path} value={m.path}>
          {m.name}
        </option>
      ))}
    </select>
  );
}
