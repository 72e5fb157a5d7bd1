// The model a job runs on: the default one (named), or one of the known models.
import type { ModelEntry } from '../types';

export function ModelSelect(props: { id: string; value: string; onChange: (path: string) => void; models: ModelEntry[]; defaultModel?: string }) {
  const named = props.defaultModel ? ` (${props.models.find((m) => m.path === props.defaultModel)?.name ?? props.defaultModel})` : '';
  return (
    <select id={props.id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
      <option value="">Default model{named}</option>
      {props.models.map((m) => (
        <option key={m.path} value={m.path}>
          {m.name}
        </option>
      ))}
    </select>
  );
}
