// Models: what the app knows, the device, and DERIVED figures of the output layer (LM head).
import { useEffect, useState } from 'preact/hooks';
import { addModel, errorMessage, pickFile } from '../api';
import { Badge, Busy, Card, Empty, ErrorBox, Notice } from '../components/ui';
import { BYTES_PER_WEIGHT, bytesPerWeightFor, headFigures } from '../lib/derived';
import { bytes, int, si } from '../lib/format';
import type { Device, ModelInfo, Settings } from '../types';

export type ModelsState = { status: 'loading' } | { status: 'ready'; list: ModelInfo[] } | { status: 'error'; message: string };
export type SettingsState = { status: 'loading' } | { status: 'ready'; settings: Settings } | { status: 'error'; message: string };

function Derived(props: { models: ModelInfo[] }) {
  const [source, setSource] = useState<string>('');
  const [vocab, setVocab] = useState(49152);
  const [hidden, setHidden] = useState(576);
  const [bpw, setBpw] = useState('Q8_0');
  const [letters, setLetters] = useState(4);

  function pick(path: string) {
    setSource(path);
    const m = props.models.find((x) => x.path === path);
    if (m) {
      setVocab(m.config.vocab_size);
      setHidden(m.config.hidden_size);
      const b = bytesPerWeightFor(m.quantisation);
      setBpw(BYTES_PER_WEIGHT.find((x) => x.bytes === b)?.id ?? 'F32');
    }
  }
  useEffect(() => {
    if (!source && props.models[0]) pick(props.models[0].path);
  }, [props.models]);

  const b = BYTES_PER_WEIGHT.find((x) => x.id === bpw)?.bytes ?? 4;
  const ok = vocab > 0 && hidden > 0 && letters >= 1 && letters <= vocab;
  const f = headFigures(vocab, hidden, b, letters);
  const model = props.models.find((m) => m.path === source);

  return (
    <Card
      title={
        <>
          Output layer cost <Badge kind="derived" title="DERIVED: exact arithmetic from the model's configuration; no timing.">DERIVED</Badge>
        </>
      }
      testid="derived-panel"
    >
      <p class="muted">
        Exact arithmetic from a model's configuration, not a measurement. The output layer (LM head) turns the model's last hidden state into a score for every word in
        its vocabulary. Readout only needs the answer letters, so the head can be cut down to them.
      </p>
      <div class="form-grid wide">
        <label for="derived-model">From model</label>
        <select id="derived-model" value={source} onChange={(e) => pick(e.currentTarget.value)}>
          <option value="">Type the numbers</option>
          {props.models.map((m) => (
            <option key={m.path} value={m.path}>
              {m.name}
            </option>
          ))}
        </select>
        <label for="vocab">Vocabulary size</label>
        <input id="vocab" type="number" min={1} value={vocab} class="narrow" onInput={(e) => { setVocab(Number(e.currentTarget.value) || 0); setSource(''); }} />
        <label for="hidden">Hidden size</label>
        <input id="hidden" type="number" min={1} value={hidden} class="narrow" onInput={(e) => { setHidden(Number(e.currentTarget.value) || 0); setSource(''); }} />
        <label for="bpw">Weights stored as</label>
        <select id="bpw" value={bpw} onChange={(e) => setBpw(e.currentTarget.value)}>
          {BYTES_PER_WEIGHT.map((x) => (
            <option key={x.id} value={x.id}>
              {x.label}
            </option>
          ))}
        </select>
        <label for="letters">Answer letters kept (N)</label>
        <input id="letters" type="number" min={1} max={26} value={letters} class="narrow" onInput={(e) => setLetters(Math.max(1, Math.min(26, Number(e.currentTarget.value) || 1)))} />
      </div>
      {model?.config.tie_word_embeddings === true && (
        <p class="muted small">This model ties its output layer to its input embedding: the bytes below are shared with the embedding table.</p>
      )}
      {ok ? (
        <table class="table derived" data-testid="derived-table">
          <tbody>
            <tr>
              <th>Full head, FLOPs per position</th>
              <td class="mono">2 · {int(vocab)} · {int(hidden)}</td>
              <td class="num strong" data-testid="derived-flops">
                {int(f.flops)}
              </td>
              <td class="muted">{si(f.flops)}FLOP</td>
            </tr>
            <tr>
              <th>Full head, weight bytes</th>
              <td class="mono">
                {int(vocab)} · {int(hidden)} · {+b.toFixed(6)}
              </td>
              <td class="num strong" data-testid="derived-bytes">
                {int(f.bytes)}
              </td>
              <td class="muted">{bytes(f.bytes)}</td>
            </tr>
            <tr>
              <th>Head pruned to {letters} letters, FLOPs per position</th>
              <td class="mono">2 · {letters} · {int(hidden)}</td>
              <td class="num strong" data-testid="derived-pruned">
                {int(f.prunedFlops)}
              </td>
              <td class="muted">{bytes(f.prunedBytes)} of weights</td>
            </tr>
            <tr>
              <th>Saved by pruning, FLOPs per position</th>
              <td class="mono">
                2 · ({int(vocab)} − {letters}) · {int(hidden)}
              </td>
              <td class="num strong" data-testid="derived-saved">
                {int(f.savedFlops)}
              </td>
              <td class="muted">{(f.savedShare * 100).toFixed(3)}% of the head</td>
            </tr>
          </tbody>
        </table>
      ) : (
        <p class="problems">Enter a vocabulary size, a hidden size and N between 1 and the vocabulary size.</p>
      )}
      <p class="muted small">A position is one token the head is applied to; Readout applies it only where an answer is read (the last position of each prompt).</p>
    </Card>
  );
}

export function ModelsPage(props: {
  models: ModelsState;
  settings: SettingsState;
  reloadModels: () => void;
  reloadSettings: () => void;
  applySettings: (s: Settings) => Promise<void>;
}) {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<{ title: string; message: string } | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const settings = props.settings.status === 'ready' ? props.settings.settings : null;
  const [device, setDevice] = useState<Device>('auto');
  const [threads, setThreads] = useState(0);
  useEffect(() => {
    if (settings) {
      setDevice(settings.device);
      setThreads(settings.threads);
    }
  }, [settings?.device, settings?.threads]);

  async function add(kind: 'model_gguf' | 'model_dir') {
    setError(null);
    setNote(null);
    try {
      const path = await pickFile(kind);
      if (!path) return;
      setBusy('Reading the model…');
      const m = await addModel(path);
      setNote(`Added ${m.name}.`);
      props.reloadModels();
    } catch (e) {
      setError({ title: 'The model could not be added', message: errorMessage(e) });
    } finally {
      setBusy(null);
    }
  }

  async function apply(patch: Partial<Settings>, message: string) {
    if (!settings) return;
    setError(null);
    setNote(null);
    try {
      setBusy('Saving the settings…');
      await props.applySettings({ ...settings, ...patch });
      setNote(message);
    } catch (e) {
      setError({ title: 'The setting could not be changed', message: errorMessage(e) });
    } finally {
      setBusy(null);
    }
  }

  const list = props.models.status === 'ready' ? props.models.list : [];

  return (
    <div class="page" data-page="models">
      <header class="page-head">
        <h1>Models</h1>
        <p class="lead">The language models Readout can use, the device it runs on, and what the output layer costs.</p>
      </header>

      <Card
        title="Known models"
        testid="models-card"
        actions={
          <>
            <button type="button" class="secondary" onClick={() => add('model_gguf')} disabled={!!busy} data-testid="add-gguf">
              Add a GGUF file…
            </button>
            <button type="button" class="secondary" onClick={() => add('model_dir')} disabled={!!busy}>
              Add a Hugging Face folder…
            </button>
          </>
        }
      >
        {busy && <Busy label={busy} />}
        {error && <ErrorBox title={error.title} message={error.message} />}
        {note && <Notice>{note}</Notice>}
        {props.models.status === 'loading' && <Busy label="Looking for models…" />}
        {props.models.status === 'error' && <ErrorBox title="The models could not be listed" message={props.models.message} onRetry={props.reloadModels} />}
        {props.models.status === 'ready' && list.length === 0 && (
          <Empty title="No models yet">Add a GGUF file, or a Hugging Face folder (config.json, tokenizer.json and .safetensors weights) of a llama or qwen3 model.</Empty>
        )}
        {list.length > 0 && (
          <div class="scroll-x">
            <table class="table models" data-testid="models-table">
              <thead>
                <tr>
                  <th>name</th>
                  <th>architecture</th>
                  <th>weights</th>
                  <th class="num">parameters</th>
                  <th class="num">vocabulary</th>
                  <th class="num">hidden size</th>
                  <th>file or folder</th>
                </tr>
              </thead>
              <tbody>
                {list.map((m) => {
                  const isDefault = settings?.defaultModel === m.path;
                  return (
                    <tr key={m.path} data-testid="model-row" data-path={m.path} data-default={isDefault ? 'yes' : 'no'}>
                      <td class="nowrap">
                        <strong>{m.name}</strong> {isDefault && <Badge kind="ok">default</Badge>}
                        {!isDefault && settings && (
                          <button type="button" class="link small block" data-testid="make-default" data-path={m.path} onClick={() => apply({ defaultModel: m.path }, `${m.name} is now the default model.`)}>
                            Make default
                          </button>
                        )}
                      </td>
                      <td>{m.architecture}</td>
                      <td>{m.quantisation}</td>
                      <td class="num" title={int(m.parameters)}>
                        {si(m.parameters)}
                      </td>
                      <td class="num">{int(m.config.vocab_size)}</td>
                      <td class="num">{int(m.config.hidden_size)}</td>
                      <td class="mono small">
                        <span class="file-cell" title={m.path}>
                          {m.path}
                        </span>
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </Card>

      <Card title="Device" testid="device-card">
        {props.settings.status === 'loading' && <Busy label="Reading the settings…" />}
        {props.settings.status === 'error' && <ErrorBox title="The settings could not be read" message={props.settings.message} onRetry={props.reloadSettings} />}
        {settings && (
          <>
            <p>
              In use: <strong data-testid="device-in-use">{settings.deviceInUse ?? settings.device}</strong>
            </p>
            <div class="form-grid wide">
              <label for="device">Run on</label>
              <select id="device" value={device} onChange={(e) => setDevice(e.currentTarget.value as Device)}>
                <option value="auto">Automatic (the GPU when there is one)</option>
                <option value="cpu">CPU</option>
                <option value="cuda">NVIDIA GPU (CUDA)</option>
                <option value="metal">Apple GPU (Metal)</option>
              </select>
              <label for="threads">CPU threads</label>
              <div class="row">
                <input id="threads" type="number" min={0} max={256} value={threads} class="narrow" onInput={(e) => setThreads(Math.max(0, Number(e.currentTarget.value) || 0))} />
                <span class="muted small">0 = all cores</span>
              </div>
            </div>
            <div class="row end">
              <button type="button" class="secondary" data-testid="apply-device" disabled={!!busy || (device === settings.device && threads === settings.threads)} onClick={() => apply({ device, threads }, 'Device settings saved.')}>
                Apply
              </button>
            </div>
          </>
        )}
      </Card>

      <Derived models={list} />
    </div>
  );
}
