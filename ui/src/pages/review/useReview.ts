// The Review view's state: the review open (the shell's view of it, its texts' labels kept up to
// date), where the person is (the text and the question answered next), what can be undone, the
// report, and the review folders to continue. Every label goes to the shell at once, in the order
// given (a chain of calls), and the page moves on without waiting: typing stays fast, and the
// shell's answer only brings the counts (and the labels once nothing else is on its way).
import { useEffect, useRef, useState } from 'preact/hooks';
import { errorMessage, reviewLabel, reviewList, reviewOpen, reviewOpenAnswers, reviewReport, reviewStart, reviewUndo } from '../../api';
import type { Report, ReviewEntry, ReviewItem, ReviewLabel, ReviewUpdate, ReviewView, Rubric, TextIn, TextResult } from '../../types';

export type Mode = 'label' | 'list' | 'summary';

/** Where a review came from, to open it again. */
type Source = { kind: 'dir'; dir: string } | { kind: 'answers'; answers: string; texts: string; rubric: string };

/** One step back: the text's labels before it, and where the person was. */
interface Undo {
  index: number;
  before: ReviewLabel;
  pos: number;
  crit: number;
}

interface Model {
  view: ReviewView | null;
  source: Source | null;
  /** The text shown (a place in `view.queue`) and the question the keys answer. */
  pos: number;
  crit: number;
  undo: Undo[];
  /** Calls to the shell not answered yet. */
  pending: number;
}

export type ReportState =
  | { status: 'idle' }
  | { status: 'loading'; last?: Report }
  | { status: 'done'; report: Report }
  | { status: 'error'; message: string; last?: Report };

/** Whether a text is done: labelled (any answer) or skipped. */
export const isDone = (i: ReviewItem) => i.skipped || (i.labels?.some((a) => a !== null) ?? false);

/** The first question of `item` with no answer yet (0 when all have one). */
function firstOpen(item: ReviewItem | undefined): number {
  const k = item?.labels?.findIndex((a) => a === null) ?? 0;
  return k < 0 ? 0 : k;
}

/** Where to start: the first text neither labelled nor skipped (the last one when all are done). */
function startAt(view: ReviewView): number {
  const k = view.queue.findIndex((i) => !isDone(i));
  return k < 0 ? Math.max(0, view.queue.length - 1) : k;
}

export function useReview() {
  const m = useRef<Model>({ view: null, source: null, pos: 0, crit: 0, undo: [], pending: 0 });
  const chain = useRef<Promise<void>>(Promise.resolve());
  const [, setTick] = useState(0);
  const render = () => setTick((n) => n + 1);
  const [entries, setEntries] = useState<ReviewEntry[]>([]);
  const [busy, setBusy] = useState<string | null>(null);
  const [openError, setOpenError] = useState<string | null>(null);
  const [saveError, setSaveError] = useState<string | null>(null);
  const [mode, setModeState] = useState<Mode>('label');
  const [report, setReport] = useState<ReportState>({ status: 'idle' });
  const [target, setTarget] = useState('5');

  async function refreshList() {
    try {
      setEntries(await reviewList());
    } catch {
      setEntries([]);
    }
  }
  useEffect(() => {
    void refreshList();
  }, []);

  function show(view: ReviewView, source: Source) {
    const pos = startAt(view);
    m.current = { view, source, pos, crit: firstOpen(view.queue[pos]), undo: [], pending: 0 };
    setSaveError(null);
    setReport({ status: 'idle' });
    setModeState('label');
    render();
  }

  async function open(label: string, task: () => Promise<ReviewView>, source: (v: ReviewView) => Source) {
    setOpenError(null);
    setBusy(label);
    try {
      const view = await task();
      show(view, source(view));
      void refreshList();
    } catch (e) {
      setOpenError(errorMessage(e));
    } finally {
      setBusy(null);
    }
  }

  const start = (rubric: Rubric, texts: TextIn[], results: TextResult[]) =>
    // A stopped job: the texts it scored.
    open('Starting the review…', () => reviewStart(rubric, texts.slice(0, results.length), results), (v) => ({ kind: 'dir', dir: v.dir }));
  const continueReview = (dir: string) => open('Opening the review…', () => reviewOpen(dir), () => ({ kind: 'dir', dir }));
  const openAnswers = (answers: string, texts: string, rubric: string) =>
    open('Opening the answers…', () => reviewOpenAnswers(answers, texts, rubric), () => ({ kind: 'answers', answers, texts, rubric }));

  function close() {
    const v = m.current.view;
    // The counts as they are now, until the list is read again.
    if (v) setEntries((es) => es.map((e) => (e.dir === v.dir ? { ...e, labelled: v.counts.labelled } : e)));
    m.current = { view: null, source: null, pos: 0, crit: 0, undo: [], pending: 0 };
    setReport({ status: 'idle' });
    render();
    void chain.current.then(refreshList);
  }

  /** Replace the labels of text `index` in the view. */
  function setLabel(index: number, label: ReviewLabel) {
    const v = m.current.view;
    if (!v) return;
    m.current.view = { ...v, queue: v.queue.map((i) => (i.index === index ? { ...i, ...label } : i)) };
  }

  /** Send a change to the shell after those before it; its answer brings the counts. */
  function send(call: () => Promise<ReviewUpdate>) {
    m.current.pending++;
    setSaveError(null);
    render();
    chain.current = chain.current.then(async () => {
      try {
        const u = await call();
        const v = m.current.view;
        if (v) {
          m.current.view = { ...v, counts: u.counts };
          // The labels as the shell keeps them, once no later change is on its way.
          if (m.current.pending === 1) setLabel(u.index, { labels: u.labels, skipped: u.skipped });
        }
      } catch (e) {
        setSaveError(errorMessage(e));
        await reload();
      } finally {
        m.current.pending--;
        render();
      }
    });
  }

  /** Read the review again from the shell (after a refused change), keeping the person's place. */
  async function reload() {
    const s = m.current.source;
    if (!s) return;
    try {
      const v = s.kind === 'dir' ? await reviewOpen(s.dir) : await reviewOpenAnswers(s.answers, s.texts, s.rubric);
      m.current.view = v;
    } catch (e) {
      setSaveError(errorMessage(e));
    }
  }

  const current = (): ReviewItem | undefined => m.current.view?.queue[m.current.pos];

  function moveTo(pos: number) {
    const v = m.current.view;
    if (!v) return;
    m.current.pos = Math.max(0, Math.min(v.queue.length - 1, pos));
    m.current.crit = firstOpen(v.queue[m.current.pos]);
    render();
  }

  /** The person's answer `option` to question `crit` of the text shown. */
  function answer(crit: number, option: number) {
    const v = m.current.view;
    const item = current();
    if (!v || !item || crit >= v.criteria.length || option >= v.criteria[crit].options.length) return;
    const labels = item.labels ? [...item.labels] : v.criteria.map(() => null);
    labels[crit] = option;
    m.current.undo.push({ index: item.index, before: { labels: item.labels, skipped: item.skipped }, pos: m.current.pos, crit });
    setLabel(item.index, { labels, skipped: false });
    send(() => reviewLabel(item.index, labels, false));
    // The next question without an answer; every one answered: the next text.
    const next = labels.findIndex((a, k) => k > crit && a === null);
    const open = next >= 0 ? next : labels.findIndex((a) => a === null);
    if (open >= 0) {
      m.current.crit = open;
      render();
    } else if (m.current.pos < v.queue.length - 1) {
      moveTo(m.current.pos + 1);
    } else render();
  }

  /** Answer the question the keys are on. */
  const answerCurrent = (option: number) => answer(m.current.crit, option);

  function skip() {
    const v = m.current.view;
    const item = current();
    if (!v || !item) return;
    const none = v.criteria.map(() => null);
    m.current.undo.push({ index: item.index, before: { labels: item.labels, skipped: item.skipped }, pos: m.current.pos, crit: m.current.crit });
    setLabel(item.index, { labels: none, skipped: true });
    send(() => reviewLabel(item.index, none, true));
    moveTo(m.current.pos + 1);
  }

  /** Take the last change back (an answer, a skip, or a text cleared). */
  function undo() {
    const u = m.current.undo.pop();
    const v = m.current.view;
    if (!u || !v) return;
    setLabel(u.index, u.before);
    const { labels, skipped } = u.before;
    send(() => (labels === null && !skipped ? reviewUndo(u.index) : reviewLabel(u.index, labels ?? v.criteria.map(() => null), skipped)));
    m.current.pos = u.pos;
    m.current.crit = u.crit;
    render();
  }

  /** Clear a text's labels (from the list). */
  function clear(index: number) {
    const v = m.current.view;
    const pos = v?.queue.findIndex((i) => i.index === index) ?? -1;
    if (!v || pos < 0) return;
    const item = v.queue[pos];
    m.current.undo.push({ index, before: { labels: item.labels, skipped: item.skipped }, pos, crit: 0 });
    setLabel(index, { labels: null, skipped: false });
    send(() => reviewUndo(index));
    render();
  }

  /** Choose the question the keys answer. */
  function focusCriterion(crit: number) {
    const v = m.current.view;
    if (!v) return;
    m.current.crit = Math.max(0, Math.min(v.criteria.length - 1, crit));
    render();
  }

  /** The report on every label given so far (after the changes on their way). */
  async function loadReport() {
    const share = Number(target) / 100;
    setReport((r) => ({ status: 'loading', last: r.status === 'done' ? r.report : r.status !== 'idle' ? r.last : undefined }));
    await chain.current;
    try {
      setReport({ status: 'done', report: await reviewReport(share) });
    } catch (e) {
      setReport((r) => ({ status: 'error', message: errorMessage(e), last: r.status === 'loading' ? r.last : undefined }));
    }
  }

  function setMode(next: Mode) {
    setModeState(next);
    if (next === 'summary') void loadReport();
  }

  // The target changed on the summary: the report again, once typing pauses.
  useEffect(() => {
    if (mode !== 'summary' || !m.current.view) return;
    const t = setTimeout(() => void loadReport(), 350);
    return () => clearTimeout(t);
  }, [target]);

  const model = m.current;
  return {
    view: model.view,
    pos: model.pos,
    crit: model.crit,
    canUndo: model.undo.length > 0,
    saving: model.pending > 0,
    saveError,
    entries,
    busy,
    openError,
    mode,
    setMode,
    report,
    target,
    setTarget,
    start,
    continueReview,
    openAnswers,
    close,
    answer,
    answerCurrent,
    next: () => moveTo(m.current.pos + 1),
    prev: () => moveTo(m.current.pos - 1),
    goTo: (pos: number) => {
      moveTo(pos);
      setModeState('label');
    },
    skip,
    undo,
    clear,
    focusCriterion,
    loadReport,
    refreshList,
  };
}
export type ReviewState = ReturnType<typeof useReview>;
