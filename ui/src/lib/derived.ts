// DERIVED figures: exact arithmetic from a model config (never timings).

/** Bytes per weight of common storage types (GGUF block sizes included). */
export const BYTES_PER_WEIGHT: { id: string; label: string; bytes: number }[] = [
  { id: 'F32', label: 'F32 (4 bytes)', bytes: 4 },
  { id: 'F16', label: 'F16 / BF16 (2 bytes)', bytes: 2 },
  { id: 'Q8_0', label: 'Q8_0 (34 bytes per 32 weights)', bytes: 34 / 32 },
  { id: 'Q6_K', label: 'Q6_K (210 bytes per 256 weights)', bytes: 210 / 256 },
  { id: 'Q4_1', label: 'Q4_1 (20 bytes per 32 weights)', bytes: 20 / 32 },
  { id: 'Q4_0', label: 'Q4_0 (18 bytes per 32 weights)', bytes: 18 / 32 },
  { id: 'Q4_K', label: 'Q4_K (144 bytes per 256 weights)', bytes: 144 / 256 },
];

export function bytesPerWeightFor(quantisation: string): number {
  const q = quantisation.toUpperCase();
  if (q === 'BF16') return 2;
  return BYTES_PER_WEIGHT.find((b) => b.id === q)?.bytes ?? 4;
}

export interface HeadFigures {
  flops: number; // 2 · vocab · hidden, per position
  bytes: number; // vocab · hidden · bytes per weight
  prunedFlops: number; // 2 · N · hidden
  prunedBytes: number; // N · hidden · bytes per weight
  savedFlops: number; // 2 · (vocab − N) · hidden
  savedShare: number; // savedFlops / flops
}

export function headFigures(vocab: number, hidden: number, bytesPerWeight: number, letters: number): HeadFigures {
  const flops = 2 * vocab * hidden;
  const prunedFlops = 2 * letters * hidden;
  return {
    flops,
    bytes: vocab * hidden * bytesPerWeight,
    prunedFlops,
    prunedBytes: letters * hidden * bytesPerWeight,
    savedFlops: flops - prunedFlops,
    savedShare: flops > 0 ? (flops - prunedFlops) / flops : 0,
  };
}
