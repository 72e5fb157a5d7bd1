// Models: a card per model on this computer (its name, size, licence, what it is good for, and
// whether it is the one in use; its internals under Details), models to get from the Hugging Face
// hub (the library's catalogue, each marked when installed, or any by id), the device, and, folded
// away, DERIVED figures of the output layer (LM head). Names, licences and what a model is good for
// are the library's (`readout::models`), the same on every page.
import { useEffect, useState } from 'preact/hooks';
import { addModel, chatTemplateNames, deriveModel, errorMessage, pickFile, setChatTemplate } from '../api';
import { PullStatus, type PullState } from '../components/Pull';
import { Badge, Busy, Card, Empty, ErrorBox, Notice } from '../components/ui';
import { bytes, int, pct, si } from '../lib/format';
import type { CatalogueItem, Derivation, Device, ModelEntry, Settings } from '../types';

export type ModelsState = { status: 'loading' } | { status: 'ready'; list: ModelEntry[] } | { status: 'error'; message: string };
export type SettingsState = { status: 'loading' } | { status: 'ready'; settings: Settings } | { status: 'error'; message: string };

type DerivedState = { status: 'idle' } | { status: 'loading' } | { status: 'ready'; d: Derivation } | { status: 'error'; message: string };

/** The output layer's cost for one model: the library's DERIVED figures (`readout derive`), shown as they come. */
/** A model's layers in words: a hybrid's (Qwen3.5) Gated DeltaNet and attention layers apart. */
function layers(m: ModelEntry): string {
  const h = m.config.hybrid;
  if (!h) return String(m.config.num_layers);
  const recurrent = h.recurrent_layers.filter((r) => r).length;
  return `${m.config.num_layers} (${recurrent} Gated DeltaNet, ${m.config.num_layers - recurrent} attention)`;
}

function Derived(props: { models: ModelEntry[] }) {
  const [source, setSource] = useState('');
  const [letters, setLetters] = useState(4);
  const [state, setState] = useState<DerivedState>({ status: 'idle' });

  useEffect(() => {
    if (!props.models.some((m) => m.path === source)) setSource(props.models[0]?.path ?? '');
  }, [props.models]);
  useEffect(() => {
    if (!source) {
      setState({ status: 'idle' });
      return;
    }
    // Only the answer to the latest question is shown.
    let current = true;
    setState({ status: 'loading' });
    deriveModel({ model: source, pruneTo: letters }).then(
      (d) => current && setState({ status: 'ready', d }),
      (e) => current && setState({ status: 'error', message: errorMessage(e) }),
    );
    return () => {
      current = false;
    };
  }, [source, letters]);

  const model = props.models.find((m) => m.path === source);
  const d = state.status === 'ready' ? state.d : null;
  // The file's type (q4_k_m is mostly q4_k).
  const stored = model?.quantisation.toLowerCase();
  const isStored = (dtype: string) => !!stored && (stored === dtype || stored.startsWith(`${dtype}_`));

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
        Exact arithmetic from a model's configuration, not a measurement (the figures <span class="mono">readout derive</span> prints). The output layer (LM head) turns
        the model's last hidden state into a score for every word in its vocabulary. Readout only needs the answer letters, so the head can be cut down to them.
      </p>
      <div class="form-grid wide">
        <label for="derived-model">Model</label>
        <select id="derived-model" value={source} onChange={(e) => setSource(e.currentTarget.value)}>
          {props.models.length === 0 && <option value="">No models yet</option>}
          {props.models.map((m) => (
            <option key={m.path} value={m.path}>
              {m.name}
            </option>
          ))}
        </select>
        <label for="letters">Answer letters kept (N)</label>
        <input id="letters" type="number" min={2} max={26} value={letters} class="narrow" onInput={(e) => setLetters(Math.max(2, Math.min(26, Number(e.currentTarget.value) || 2)))} />
      </div>
      {state.status === 'loading' && <Busy label="Working out the figures…" />}
      {state.status === 'error' && <ErrorBox title="The figures could not be derived" message={state.message} />}
      {d && (
        <>
          <p class="muted small" data-testid="derived-shape">
            Vocabulary {int(d.shape.vocab)} · hidden size {int(d.shape.hidden)} · {d.shape.layers} layers · {si(d.parameters)} parameters
            {d.shape.tied_embeddings && ' · the output layer is tied to the input embedding (its bytes are shared with the embedding table)'}
          </p>
          <table class="table derived" data-testid="derived-table">
            <tbody>
              <tr>
                <th>Full head, FLOPs per position</th>
                <td class="mono">
                  2 · {int(d.shape.vocab)} · {int(d.shape.hidden)}
                </td>
                <td class="num strong" data-testid="derived-flops">
                  {int(d.lm_head.flops_per_position)}
                </td>
                <td class="muted">
                  {si(d.lm_head.flops_per_position)}FLOP, {pct(d.head_share_of_token_matmul_flops)} of a token's matmul FLOPs
                </td>
              </tr>
              <tr>
                <th>Head pruned to {d.prune.to} letters, FLOPs per position</th>
                <td class="mono">
                  2 · {d.prune.to} · {int(d.shape.hidden)}
                </td>
                <td class="num strong" data-testid="derived-pruned">
                  {int(d.prune.flops_per_position)}
                </td>
                <td class="muted">{si(d.prune.flops_per_position)}FLOP</td>
              </tr>
              <tr>
                <th>Saved by pruning, FLOPs per position</th>
                <td class="mono">
                  2 · ({int(d.shape.vocab)} − {d.prune.to}) · {int(d.shape.hidden)}
                </td>
                <td class="num strong" data-testid="derived-saved">
                  {int(d.prune.flops_saved_per_position)}
                </td>
                <td class="muted">{pct(d.prune.share_saved, 3)} of the head</td>
              </tr>
              <tr>
                <th>Logits at the answer only, FLOPs saved on a {int(d.trim.prompt_tokens)}-token prompt</th>
                <td class="mono">
                  {int(d.lm_head.flops_per_position)} · ({int(d.trim.prompt_tokens)} − 1)
                </td>
                <td class="num strong" data-testid="derived-trim">
                  {int(d.trim.flops_saved)}
                </td>
                <td class="muted">{pct(d.trim.share_of_prompt_matmul_flops)} of the prompt's matmul FLOPs</td>
              </tr>
            </tbody>
          </table>
          <table class="table derived" data-testid="derived-bytes-table">
            <thead>
              <tr>
                <th>Head weights stored as</th>
                <th class="num">full head, bytes</th>
                <th class="num">pruned to {d.prune.to} letters, bytes</th>
              </tr>
            </thead>
            <tbody>
              {d.lm_head.bytes_per_position.map((b) => {
                const pruned = d.prune.bytes_per_position.find((p) => p.dtype === b.dtype);
                return (
                  <tr key={b.dtype} class={isStored(b.dtype) ? 'is-chosen' : ''} data-testid={`derived-bytes-${b.dtype}`}>
                    <td class="mono">
                      {b.dtype}
                      {isStored(b.dtype) && <span class="muted"> (this file's type)</span>}
                    </td>
                    <td class="num" title={bytes(b.bytes)}>
                      {int(b.bytes)}
                    </td>
                    <td class="num" title={pruned ? bytes(pruned.bytes) : undefined}>
                      {pruned ? int(pruned.bytes) : '—'}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </>
      )}
      <p class="muted small">A position is one token the head is applied to; Readout applies it only where an answer is read (the last position of each prompt).</p>
    </Card>
  );
}

/** Get a model from the hub: one of the catalogue's judges (marked when it is installed), or any by its id. */
function HubCard(props: { catalogue: CatalogueItem[]; models: ModelEntry[]; pull: PullState; onPull: (spec: string) => void; onCancel: () => void }) {
  const [spec, setSpec] = useState('');
  const busy = props.pull.status === 'pulling';
  const last = props.pull.status === 'idle' ? null : props.pull.spec;
  const retry = last && (props.pull.status === 'stopped' || props.pull.status === 'error') ? () => props.onPull(last) : undefined;
  const installed = (c: CatalogueItem) => props.models.some((m) => m.catalogue === c.spec);
  return (
    <Card title="Get another model" testid="hub-card">
      <p class="muted">
        Models are downloaded from the Hugging Face hub onto this computer, checked, and added to your models. A stopped download resumes where it stopped.
      </p>
      <PullStatus pull={props.pull} onCancel={props.onCancel} onRetry={retry} />
      {props.catalogue.length > 0 && (
        <>
          <h3 class="sub">Models worth trying</h3>
          <table class="table catalogue" data-testid="catalogue-table">
            <thead>
              <tr>
                <th>model</th>
                <th class="num">size (about)</th>
                <th>licence</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {props.catalogue.map((c) => (
                <tr key={c.spec} data-testid="catalogue-row" data-spec={c.spec} data-installed={installed(c) ? 'yes' : 'no'}>
                  <td>
                    <strong title={`${c.name}: ${c.spec} on the Hugging Face hub`}>{c.name}</strong> {c.default && <Badge kind="info">Readout's default</Badge>}
                    <span class="block muted small">{c.good_for}</span>
                  </td>
                  <td class="num nowrap" title={c.size_basis}>
                    {bytes(c.size_bytes)}
                  </td>
                  <td>{c.licence}</td>
                  <td class="catalogue-action">
                    {installed(c) ? (
                      <span class="installed" data-testid="catalogue-installed">
                        Installed ✓
                      </span>
                    ) : (
                      <button
                        type="button"
                        class="secondary small"
                        data-testid="pull-catalogue"
                        data-spec={c.spec}
                        disabled={busy || !c.runs_here}
                        title={c.runs_here ? `Download ${c.name} (${bytes(c.size_bytes)})` : `This version of Readout cannot run ${c.architecture} models yet.`}
                        onClick={() => props.onPull(c.spec)}
                      >
                        Download
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <p class="muted small">Sizes are approximate (point at one to see how it is known). No accuracy is claimed for these models: evaluate one on texts you have labelled to measure it.</p>
        </>
      )}
      <h3 class="sub">Another model from the hub</h3>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (spec.trim()) props.onPull(spec.trim());
        }}
      >
        <label for="hub-spec" class="sr-only">
          Hub model
        </label>
        <input id="hub-spec" class="grow mono" placeholder="its id on the hub, e.g. Qwen/Qwen3-0.6B-GGUF:Qwen3-0.6B-Q8_0.gguf" value={spec} onInput={(e) => setSpec(e.currentTarget.value)} />
        <button type="submit" data-testid="pull-spec" disabled={busy || !spec.trim()}>
          Download
        </button>
      </form>
    </Card>
  );
}

/** The chat template a model is read with: its own, a family the library knows, or a Jinja file. */
function TemplateChoice(props: { model: ModelEntry; names: string[]; disabled: boolean; onChoose: (template: string | null) => void }) {
  const m = props.model;
  const FILE = '__file__';
  const current = m.chat_template ?? '';
  const isFile = current !== '' && !props.names.includes(current);
  return (
    <select
      data-testid="chat-template"
      data-path={m.path}
      aria-label={`Chat template of ${m.name}`}
      value={current}
      disabled={props.disabled}
      onChange={(e) => {
        const v = e.currentTarget.value;
        e.currentTarget.value = current;
        props.onChoose(v === FILE ? FILE : v || null);
      }}
    >
      <option value="">{m.has_chat_template ? "the model's own" : '— choose one —'}</option>
      {props.names.map((n) => (
        <option key={n} value={n}>
          {n}
        </option>
      ))}
      {isFile && <option value={current}>{current.split('/').pop()}</option>}
      <option value={FILE}>a Jinja file…</option>
    </select>
  );
}

/** One model on this computer: what a person needs first, its internals under Details. */
function ModelCard(props: {
  model: ModelEntry;
  inUse: boolean;
  names: string[];
  busy: boolean;
  onUse?: () => void;
  onTemplate: (choice: string | null) => void;
}) {
  const m = props.model;
  const needsTemplate = !m.has_chat_template && !m.chat_template;
  // A base model's template is a choice a person makes, so it stays on the card once made.
  const templateOnCard = !m.has_chat_template || !!m.chat_template;
  const template = <TemplateChoice model={m} names={props.names} disabled={props.busy} onChoose={props.onTemplate} />;
  return (
    <article class={`model-card${props.inUse ? ' in-use' : ''}`} data-testid="model-row" data-path={m.path} data-default={props.inUse ? 'yes' : 'no'}>
      <h3 class="model-name" title={m.name}>
        {m.name}
      </h3>
      <div class="model-use">
        {props.inUse ? (
          <Badge kind="ok" title="Score and Evaluate use this model unless you choose another there.">
            In use (default)
          </Badge>
        ) : (
          props.onUse && (
            <button type="button" class="secondary small" data-testid="make-default" data-path={m.path} disabled={props.busy} onClick={props.onUse}>
              Make it the default
            </button>
          )
        )}
      </div>
      <p class="model-facts" data-testid="model-facts">
        {bytes(m.size_bytes)} on disk · {m.licence ?? <span class="muted">licence not stated</span>}
      </p>
      <p class="model-good" data-testid="model-good-for">
        {m.good_for}
      </p>
      {m.decision && (
        <p class="small" data-testid="model-decision">
          <Badge kind="ok" title="The file states how it is to be asked: System One requests (serve, decide) use its own prompt, labels and temperatures.">
            decision model · {m.decision}
          </Badge>{' '}
          Asked by the contract in its file on System One requests.
        </p>
      )}
      {needsTemplate && (
        <p class="small" data-testid="needs-template">
          <Badge kind="close" title="The model carries no chat template (a base model?): choose the one it was trained with.">
            needs a chat template
          </Badge>{' '}
          A base model: choose how to talk to it below (for a Gemma model, “gemma”).
        </p>
      )}
      {templateOnCard && (
        <label class="model-template">
          <span class="muted small">Chat template</span>
          {template}
        </label>
      )}
      <details class="details model-details" data-testid="model-details">
        <summary>Details</summary>
        <dl class="kv">
          <dt>Architecture</dt>
          <dd>{m.architecture}</dd>
          <dt>Weights</dt>
          <dd>{m.quantisation}</dd>
          <dt>Parameters</dt>
          <dd title={int(m.parameters)}>{si(m.parameters)}</dd>
          <dt>Vocabulary</dt>
          <dd>{int(m.config.vocab_size)} word pieces</dd>
          <dt>Hidden size</dt>
          <dd>{int(m.config.hidden_size)}</dd>
          <dt>Layers</dt>
          <dd data-testid="model-layers">{layers(m)}</dd>
          {!templateOnCard && (
            <>
              <dt>Chat template</dt>
              <dd>{template}</dd>
            </>
          )}
          <dt>{m.path.endsWith('.gguf') ? 'File' : 'Folder'}</dt>
          <dd class="mono small">{m.path}</dd>
        </dl>
      </details>
    </article>
  );
}

export function ModelsPage(props: {
  models: ModelsState;
  settings: SettingsState;
  reloadModels: () => void;
  reloadSettings: () => void;
  applySettings: (s: Settings) => Promise<void>;
  catalogue: CatalogueItem[];
  pull: PullState;
  onPull: (spec: string) => void;
  onCancelPull: () => void;
}) {
  const [names, setNames] = useState<string[]>([]);
  useEffect(() => {
    chatTemplateNames().then(setNames, () => setNames([]));
  }, []);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<{ title: string; message: string; error?: unknown } | null>(null);
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
      setNote(m.has_chat_template || m.chat_template ? `Added ${m.name}.` : `Added ${m.name}. It has no chat template of its own (a base model?): choose one on its card before using it.`);
      props.reloadModels();
    } catch (e) {
      setError({ title: 'The model could not be added', message: errorMessage(e), error: e });
    } finally {
      setBusy(null);
    }
  }

  async function chooseTemplate(m: ModelEntry, choice: string | null) {
    setError(null);
    setNote(null);
    try {
      let template = choice;
      if (choice === '__file__') {
        template = await pickFile('chat_template');
        if (!template) return;
      }
      setBusy('Checking the chat template…');
      const next = await setChatTemplate(m.path, template);
      setNote(next.chat_template ? `${next.name} is read with the chat template ${next.chat_template}.` : `${next.name} is read with its own chat template.`);
      props.reloadModels();
    } catch (e) {
      setError({ title: 'The chat template could not be chosen', message: errorMessage(e), error: e });
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
      setError({ title: 'The setting could not be changed', message: errorMessage(e), error: e });
    } finally {
      setBusy(null);
    }
  }

  const list = props.models.status === 'ready' ? props.models.list : [];

  return (
    <div class="page" data-page="models">
      <header class="page-head">
        <h1>Models</h1>
        <p class="lead">The language models that read your texts: the one in use, the others on this computer, and more you can get.</p>
      </header>

      <Card
        title="Your models"
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
        {error && <ErrorBox title={error.title} error={error.error ?? error.message} />}
        {note && <Notice>{note}</Notice>}
        {props.models.status === 'loading' && <Busy label="Looking for models…" />}
        {props.models.status === 'error' && <ErrorBox title="The models could not be listed" message={props.models.message} onRetry={props.reloadModels} />}
        {props.models.status === 'ready' && list.length === 0 && (
          <Empty title="No models yet">
            Download one below (Readout's default is the first of the list), or add a model file you have: a GGUF file, or a Hugging Face folder (config.json, tokenizer.json and
            .safetensors weights) of a llama, mistral, qwen2, qwen3 or gemma3 model.
          </Empty>
        )}
        {list.length > 0 && (
          <div class="model-cards" data-testid="models-table">
            {list.map((m) => {
              const inUse = settings?.defaultModel === m.path;
              return (
                <ModelCard
                  key={m.path}
                  model={m}
                  inUse={inUse}
                  names={names}
                  busy={!!busy}
                  onUse={settings ? () => apply({ defaultModel: m.path }, `${m.name} is now the default model: Score and Evaluate use it.`) : undefined}
                  onTemplate={(t) => chooseTemplate(m, t)}
                />
              );
            })}
          </div>
        )}
      </Card>

      <HubCard catalogue={props.catalogue} models={list} pull={props.pull} onPull={props.onPull} onCancel={props.onCancelPull} />

      <Card title="Device" testid="device-card">
        {props.settings.status === 'loading' && <Busy label="Reading the settings…" />}
        {props.settings.status === 'error' && <ErrorBox title="The settings could not be read" message={props.settings.message} onRetry={props.reloadSettings} />}
        {settings && (
          <>
            <p>
              In use: <strong data-testid="device-in-use">{settings.deviceInUse ?? `${settings.device} (no model loaded yet)`}</strong>
            </p>
            {settings.deviceFallback && (
              <div data-testid="device-fallback">
                <Notice kind="warn">
                  <strong>Running on the CPU instead of the GPU.</strong> {settings.deviceFallback}
                </Notice>
              </div>
            )}
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

      <details class="details page-details" data-testid="models-details">
        <summary>Details for engineers: what the output layer costs</summary>
        <Derived models={list} />
      </details>
    </div>
  );
}
