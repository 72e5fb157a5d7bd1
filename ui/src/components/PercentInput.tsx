// A percentage typed into a field (0–100, empty: off), and the probability the library takes from it.

/** A percentage typed into a field, as the probability the library takes; empty or not a number: none. */
export function probabilityOf(typed: string): number | undefined {
  if (!typed.trim()) return undefined;
  const v = Number(typed);
  return Number.isFinite(v) ? Math.min(100, Math.max(0, v)) / 100 : undefined;
}

/** A whole-percent field, kept as typed (read it with `probabilityOf`); empty shows “off”. */
export function PercentInput(props: { id: string; value: string; onInput: (typed: string) => void; testid?: string }) {
  return (
    <input
      id={props.id}
      type="number"
      min={0}
      max={100}
      step={1}
      class="percent"
      placeholder="off"
      value={props.value}
      onInput={(e) => props.onInput(e.currentTarget.value)}
      data-testid={props.testid}
    />
  );
}
