// The rubric editor's model and its conversion to and from the rubric file (docs/rubric.md).
// The editor keeps options as ordered lists, so the order written is the order scored.
import type { QuestionKind, Rubric, RubricQuestion } from '../types';

export interface OptionDraft {
  id: string;
  description: string;
}

export interface CriterionDraft {
  key: number; // stable key for the UI
  name: string;
  type: QuestionKind;
  instructions: string;
  options: OptionDraft[]; // choice
  rule: string; // noul
  levels: string[]; // score, lowest first
}

export interface RubricDraft {
  name: string;
  description: string;
  criteria: CriterionDraft[];
}

/** A question type in words, as the Score page shows it. */
export const TYPE_WORDS = { choice: 'choice', noul: 'yes / no', score: 'score' } as const;

let nextKey = 1;
export const newKey = () => nextKey++;

export function newCriterion(type: QuestionKind = 'choice'): CriterionDraft {
  return {
    key: newKey(),
    name: '',
    type,
    instructions: '',
    options: [
      { id: '', description: '' },
      { id: '', description: '' },
    ],
    rule: '',
    levels: ['', '', ''],
  };
}

export const emptyDraft = (): RubricDraft => ({ name: '', description: '', criteria: [newCriterion()] });

export function fromRubric(r: Rubric): RubricDraft {
  return {
    name: r.name ?? '',
    description: r.description ?? '',
    criteria: Object.entries(r.questions ?? {}).map(([name, q]) => {
      const c = newCriterion(q.type);
      c.name = name;
      c.instructions = q.instructions ?? '';
      if (q.type === 'choice' && q.criteria && typeof q.criteria === 'object' && !Array.isArray(q.criteria)) {
        c.options = Object.entries(q.criteria).map(([id, description]) => ({ id, description: String(description) }));
      } else if (q.type === 'noul') {
        c.rule = typeof q.criteria === 'string' ? q.criteria : '';
      } else if (q.type === 'score' && Array.isArray(q.criteria)) {
        c.levels = q.criteria.map(String);
      }
      return c;
    }),
  };
}

/** The rubric file. Blank option rows and blank levels are dropped; the backend checks the rest. */
export function toRubric(d: RubricDraft): Rubric {
  const questions: Record<string, RubricQuestion> = {};
  for (const c of d.criteria) {
    const q: RubricQuestion = { type: c.type, instructions: c.instructions.trim() };
    if (c.type === 'choice') {
      const opts: Record<string, string> = {};
      for (const o of c.options) {
        if (!o.id.trim() && !o.description.trim()) continue;
        opts[o.id.trim()] = o.description.trim();
      }
      q.criteria = opts;
    } else if (c.type === 'noul') {
      if (c.rule.trim()) q.criteria = c.rule.trim();
    } else {
      q.criteria = c.levels.map((l) => l.trim()).filter(Boolean);
    }
    questions[c.name.trim()] = q;
  }
  const r: Rubric = { name: d.name.trim(), questions };
  if (d.description.trim()) r.description = d.description.trim();
  // `description` before `questions`, as in the examples.
  return r.description ? { name: r.name, description: r.description, questions } : r;
}

/** Problems a person can fix in the form before anything is sent. Empty: fine. */
export function checkDraft(d: RubricDraft): string[] {
  const out: string[] = [];
  if (!d.name.trim()) out.push('Give the rubric a name.');
  if (d.criteria.length === 0) out.push('Add at least one question.');
  const names = new Set<string>();
  d.criteria.forEach((c, i) => {
    const label = c.name.trim() ? `“${c.name.trim()}”` : `Question ${i + 1}`;
    if (!c.name.trim()) out.push(`Question ${i + 1} needs a short name.`);
    else if (names.has(c.name.trim())) out.push(`Two questions are called ${label}; names must differ.`);
    names.add(c.name.trim());
    if (!c.instructions.trim()) out.push(`${label}: write the question to ask.`);
    if (c.type === 'choice') {
      const filled = c.options.filter((o) => o.id.trim() || o.description.trim());
      if (filled.length < 2) out.push(`${label}: give at least 2 answers.`);
      if (filled.length > 26) out.push(`${label}: at most 26 answers fit the letters A–Z.`);
      const ids = new Set<string>();
      for (const o of filled) {
        if (!o.id.trim()) out.push(`${label}: every answer needs a short name (its id).`);
        else if (ids.has(o.id.trim())) out.push(`${label}: the answer name “${o.id.trim()}” is used twice.`);
        ids.add(o.id.trim());
        if (!o.description.trim()) out.push(`${label}: describe the answer “${o.id.trim() || '?'}”.`);
      }
    } else if (c.type === 'score') {
      if (c.levels.filter((l) => l.trim()).length < 2) out.push(`${label}: give at least 2 levels.`);
    }
  });
  return [...new Set(out)];
}
