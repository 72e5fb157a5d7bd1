// The shell of the page: left navigation, four pages kept alive (a run goes on while you look
// elsewhere), and the models and settings shared by the pages.
import { useEffect, useState } from 'preact/hooks';
import { cancelPull, catalogue as getCatalogue, errorMessage, getSettings, inTauri, listModels, pullModel, setSettings, toAppError } from './api';
import { FirstStart, isStopped, type PullState } from './components/Pull';
import { EvaluatePage } from './pages/Evaluate';
import { type ModelsState, ModelsPage, type SettingsState } from './pages/Models';
import { ResultsPage } from './pages/Results';
import { ScorePage } from './pages/Score';
import type { CatalogueItem, Fitted, Settings } from './types';

const PAGES = [
  { id: 'score', label: 'Score', hint: 'Answer questions about texts' },
  { id: 'evaluate', label: 'Evaluate', hint: 'Measure a model on an eval set' },
  { id: 'results', label: 'Results', hint: 'Saved runs, compared' },
  { id: 'models', label: 'Models', hint: 'Models, device, costs' },
] as const;
type PageId = (typeof PAGES)[number]['id'];

const pageFromHash = (): PageId => {
  const h = location.hash.replace(/^#\/?/, '');
  return (PAGES.find((p) => p.id === h)?.id ?? 'score') as PageId;
};

export function App() {
  const [page, setPage] = useState<PageId>(pageFromHash());
  const [models, setModels] = useState<ModelsState>({ status: 'loading' });
  const [settings, setSettingsState] = useState<SettingsState>({ status: 'loading' });
  const [resultsRefresh, setResultsRefresh] = useState(0);
  // A calibration the Evaluate page fitted, handed to the Score page ("Use it when scoring").
  const [fitForScore, setFitForScore] = useState<{ fitted: Fitted; n: number } | null>(null);
  function handOverCalibration(fitted: Fitted) {
    setFitForScore((cur) => ({ fitted, n: (cur?.n ?? 0) + 1 }));
    location.hash = '#/score';
  }
  const [catalogue, setCatalogue] = useState<CatalogueItem[]>([]);
  // One download from the hub at a time, shared by the first-start offer and the Models page.
  const [pull, setPull] = useState<PullState>({ status: 'idle' });

  useEffect(() => {
    const onHash = () => setPage(pageFromHash());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  async function reloadModels() {
    setModels({ status: 'loading' });
    try {
      setModels({ status: 'ready', list: await listModels() });
    } catch (e) {
      setModels({ status: 'error', message: errorMessage(e) });
    }
  }
  async function reloadSettings() {
    setSettingsState({ status: 'loading' });
    try {
      setSettingsState({ status: 'ready', settings: await getSettings() });
    } catch (e) {
      setSettingsState({ status: 'error', message: errorMessage(e) });
    }
  }
  /** Read the settings again without a loading state: the device in use (and any fallback from
   * the GPU) is known only once a model has been loaded, by a score or a run. */
  async function refreshDevice() {
    // The models too, quietly: a fix on another page may have chosen a model's chat template.
    listModels().then(
      (list) => setModels({ status: 'ready', list }),
      () => undefined,
    );
    try {
      const next = await getSettings();
      setSettingsState((cur) => (cur.status === 'ready' ? { status: 'ready', settings: next } : cur));
    } catch {
      // The settings shown stay as they were; the Models page reloads them with their error.
    }
  }
  useEffect(() => {
    void refreshDevice();
  }, [page]);
  async function applySettings(s: Settings) {
    const next = await setSettings(s);
    setSettingsState({ status: 'ready', settings: next });
  }
  useEffect(() => {
    void reloadModels();
    void reloadSettings();
    getCatalogue().then(setCatalogue, () => setCatalogue([]));
  }, []);

  async function startPull(spec: string) {
    setPull({ status: 'pulling', spec, progress: null, cancelling: false });
    try {
      const model = await pullModel(spec, (progress) => setPull((p) => (p.status === 'pulling' ? { ...p, progress } : p)));
      setPull({ status: 'done', spec, model });
      void reloadModels();
      void refreshDevice();
    } catch (e) {
      const error = toAppError(e);
      setPull(isStopped(error) ? { status: 'stopped', spec, message: error.message } : { status: 'error', spec, message: error.message, error });
    }
  }
  async function stopPull() {
    setPull((p) => (p.status === 'pulling' ? { ...p, cancelling: true } : p));
    await cancelPull();
  }
  // No model at all (an installed app's first start): offer the catalogue's default, until one is there.
  const noModel = models.status === 'ready' && models.list.length === 0;

  const modelList = models.status === 'ready' ? models.list : [];
  const s = settings.status === 'ready' ? settings.settings : undefined;

  return (
    <div class="app">
      <nav class="nav" aria-label="Pages">
        <div class="nav-inner">
        <div class="brand">
          <span class="logo" aria-hidden="true">
            R
          </span>
          Readout
        </div>
        <ul>
          {PAGES.map((p) => (
            <li key={p.id}>
              <a href={`#/${p.id}`} class={page === p.id ? 'active' : ''} aria-current={page === p.id ? 'page' : undefined} data-nav={p.id}>
                <span class="nav-label">{p.label}</span>
                <span class="nav-hint">{p.hint}</span>
              </a>
            </li>
          ))}
        </ul>
        <div class="nav-foot muted small">
          {s?.deviceInUse && (
            <div data-testid="nav-device" title={s.deviceFallback ?? undefined}>
              Device: {s.deviceInUse}
              {s.deviceFallback && <span class="badge badge-close"> GPU not used</span>}
            </div>
          )}
          {!inTauri() && <div class="demo" title="Running in a browser: the answers come from a stand-in backend, not a model.">Demo data (browser)</div>}
        </div>
        </div>
      </nav>
      <main class="main">
        {noModel && page !== 'models' && <FirstStart item={catalogue.find((c) => c.default)} pull={pull} onPull={startPull} onCancel={stopPull} />}
        <div hidden={page !== 'score'}>
          <ScorePage models={modelList} defaultModel={s?.defaultModel} onModelUsed={refreshDevice} fit={fitForScore} />
        </div>
        <div hidden={page !== 'evaluate'}>
          <EvaluatePage
            models={modelList}
            defaultModel={s?.defaultModel}
            onSaved={() => setResultsRefresh((n) => n + 1)}
            onModelUsed={refreshDevice}
            onUseCalibration={handOverCalibration}
          />
        </div>
        <div hidden={page !== 'results'}>
          <ResultsPage benchDir={s?.benchDir} refresh={resultsRefresh} active={page === 'results'} />
        </div>
        <div hidden={page !== 'models'}>
          <ModelsPage
            models={models}
            settings={settings}
            reloadModels={reloadModels}
            reloadSettings={reloadSettings}
            applySettings={applySettings}
            catalogue={catalogue}
            pull={pull}
            onPull={startPull}
            onCancelPull={stopPull}
          />
        </div>
      </main>
    </div>
  );
}
