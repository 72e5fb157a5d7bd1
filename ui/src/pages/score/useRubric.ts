// The Score page's rubric: opened, written in the form, or saved; kept in My rubrics (the app's own
// folder of rubrics); with the rubric files opened lately and what is wrong with the rubric.
import { useEffect, useState } from 'preact/hooks';
import { errorMessage, loadRubric, pickFile, recentAdd, recentList, rubricLibraryDelete, rubricLibraryList, rubricLibrarySave, saveRubric } from '../../api';
import { checkDraft, emptyDraft, fromRubric, type RubricDraft, toRubric } from '../../lib/rubric';
import type { Rubric, RubricEntry } from '../../types';

export function useRubric() {
  const [draft, setDraft] = useState<RubricDraft | null>(null);
  const [from, setFrom] = useState<string>('');
  const [editing, setEditing] = useState(false);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [library, setLibrary] = useState<RubricEntry[]>([]);
  const [recent, setRecent] = useState<string[]>([]);

  useEffect(() => {
    rubricLibraryList().then(setLibrary, () => setLibrary([]));
    recentList().then(
      (r) => setRecent(r.rubrics),
      () => setRecent([]),
    );
  }, []);

  /** Does `task` with the rubric's error and note cleared; `busy(label)` says what it is waiting for. */
  async function act(task: (busy: (label: string) => void) => Promise<void>) {
    setError(null);
    setNote(null);
    try {
      await task(setBusy);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(null);
    }
  }

  /** Show a rubric read from `source` (a path, or words for where it came from). */
  function show(d: RubricDraft, source: string) {
    setDraft(d);
    setFrom(source);
    setEditing(false);
  }

  /** A rubric file by its path, remembered among the recent ones. */
  const openPath = (path: string) =>
    act(async (busy) => {
      busy('Opening the rubric…');
      show(fromRubric(await loadRubric(path)), path);
      recentAdd('rubrics', path).then(
        (r) => setRecent(r.rubrics),
        () => undefined,
      );
    });

  const open = () =>
    act(async () => {
      const path = await pickFile('rubric');
      if (path) await openPath(path);
    });

  async function save() {
    if (!draft) return;
    await act(async (busy) => {
      const name = (draft.name.trim() || 'rubric').replace(/[^\w.-]+/g, '-');
      const path = await pickFile('rubric_save', `${name}.rubric.json`);
      if (!path) return;
      busy('Saving the rubric…');
      await saveRubric(path, toRubric(draft));
      setFrom(path);
      setNote(`Saved to ${path}`);
      recentAdd('rubrics', path).then(
        (r) => setRecent(r.rubrics),
        () => undefined,
      );
    });
  }

  /** Keep the rubric in My rubrics (one of the same name is replaced). */
  async function saveToLibrary() {
    if (!draft) return;
    await act(async (busy) => {
      busy('Saving to My rubrics…');
      const entry = await rubricLibrarySave(toRubric(draft));
      setLibrary(await rubricLibraryList());
      setNote(`Saved to My rubrics as “${entry.name}”.`);
    });
  }

  const openFromLibrary = (entry: RubricEntry) =>
    act(async (busy) => {
      busy('Opening the rubric…');
      show(fromRubric(await loadRubric(entry.path)), `My rubrics: ${entry.name}`);
    });

  const deleteFromLibrary = (entry: RubricEntry) =>
    act(async () => {
      await rubricLibraryDelete(entry.path);
      setLibrary(await rubricLibraryList());
      setNote(`“${entry.name}” deleted from My rubrics.`);
    });

  function startNew() {
    setDraft(emptyDraft());
    setFrom('');
    setEditing(true);
    setError(null);
    setNote(null);
  }

  /** Put back the rubric of a session, as it stood (perhaps unfinished). */
  function restore(rubric: unknown, source: string) {
    if (!rubric || typeof rubric !== 'object') return;
    const d = fromRubric(rubric as Rubric);
    setDraft(d);
    setFrom(source);
    setEditing(checkDraft(d).length > 0);
  }

  return {
    draft,
    setDraft,
    from,
    editing,
    toggleEditing: () => setEditing(!editing),
    busy,
    error,
    note,
    problems: draft ? checkDraft(draft) : [],
    act,
    show,
    open,
    openPath,
    save,
    saveToLibrary,
    library,
    openFromLibrary,
    deleteFromLibrary,
    recent,
    startNew,
    restore,
  };
}
export type RubricState = ReturnType<typeof useRubric>;
