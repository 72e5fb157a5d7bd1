//! An ONNX decoder export (the layout onnxruntime-genai's model builder and Optimum write, the one
//! onnx-community ships): `model.onnx` (its initializers inline or in an external data file),
//! `config.json` (copied beside a builder's export, which writes only `genai_config.json`), `tokenizer.json` and the chat template beside it, in the
//! directory or its `onnx/` folder.
//!
//! Why it exists: the system Readout rebuilds runs ONNX models, so its users' models are ONNX
//! files. Readout does not run the graph: it reads the weights out of it and runs them through
//! its own forward, prefix tree and kernels. Each weight is found by the graph's structure, not
//! by its name (exporters name transposed weights `onnx::MatMul_1234`): the embedding is the
//! table the token ids are gathered from; a layer's q, k and v are the three products of one
//! normalised input, told apart by where their outputs go (q and k meet in the product whose
//! scores reach the softmax, q on its left; v is multiplied by the softmax's probabilities, or
//! each takes its place among a fused attention op's inputs); the MLP's gate is the product of
//! the pair whose output reaches a sigmoid (SiLU); the output projection and the down projection
//! are the products back to the hidden size; a norm's weight is the scale of the node that makes
//! a product's input. Then the weights get the names the Hugging Face loader's build reads, and
//! the model is built as a safetensors directory's is.

use super::build::build;
use super::build::BlockKeys;
use super::hf::{gemma_keys, HF_KEYS};
use super::tokenizer_config::{hf_chat_template, read_tokenizer_config};
use super::{Loaded, TokenizerSource};
use crate::engine::config::{Architecture, ModelConfig};
use crate::engine::model::{Hold, LoadedWeight};
use crate::engine::options::MatmulPath;
use crate::engine::weights::{Encoded, Mapped};
use crate::error::{Error, Result};
use candle_core::quantized::GgmlDType;
use candle_core::Device;
use candle_onnx::onnx::{GraphProto, ModelProto, NodeProto, TensorProto};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The graph file of an ONNX model directory: `model.onnx` in it or in its `onnx/` folder, or
/// the directory's only `*.onnx` file; `None` when it has none.
pub(crate) fn graph_file(dir: &Path) -> Option<PathBuf> {
    for d in [dir.to_path_buf(), dir.join("onnx")] {
        let p = d.join("model.onnx");
        if p.is_file() {
            return Some(p);
        }
    }
    let mut found = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "onnx"));
    let one = found.next()?;
    found.next().is_none().then_some(one)
}

/// ONNX's element types the loader reads (`TensorProto.DataType`).
const FLOAT: i32 = 1;
const UINT8: i32 = 2;
const FLOAT16: i32 = 10;
const BFLOAT16: i32 = 16;

/// A projection of the graph: a product of an activation with a weight.
#[derive(Debug, Clone)]
pub(super) struct Projection {
    pub(super) node: usize,
    pub(super) input: String,
    output: String,
    /// Inputs and outputs of the product (`[in, out]`).
    pub(super) k: usize,
    pub(super) n: usize,
    weight: WeightRef,
    /// The bias added to the product's output, if an initializer is.
    bias: Option<String>,
    /// Outputs `start .. start + n` of a packed product (q, k and v in one `[q | k | v]`).
    rows_from: usize,
}

/// Where a projection's weight lies.
#[derive(Debug, Clone)]
enum WeightRef {
    /// An initializer `[in, out]` (MatMul's right operand; Gemm with transB 0).
    InOut(String),
    /// An initializer `[out, in]` (Gemm with transB 1; a Transpose of one).
    OutIn(String),
    /// `MatMulNBits`: packed `[out, blocks, block_size·bits/8]` bytes, scales and zero points.
    NBits { packed: String, scales: String, zero_points: Option<String>, bits: usize, block: usize },
}

/// The roles of a model's weights, found in its graph.
#[derive(Debug)]
struct Roles {
    embedding: String,
    layers: Vec<LayerRoles>,
    final_norm: String,
    head: Projection,
    /// The head reads the embedding's table.
    tied: bool,
}

#[derive(Debug)]
struct LayerRoles {
    attn_norm: String,
    q: Projection,
    k: Projection,
    v: Projection,
    o: Projection,
    /// Qwen3's RMS norms of each head's query and key (`[head_dim]` scales), where it has them.
    qk_norms: Option<(String, String)>,
    ffn_norm: String,
    /// Gemma 3's norms of the attention's and the MLP's outputs, before each joins the residual.
    post_norms: Option<(String, String)>,
    gate: Projection,
    up: Projection,
    down: Projection,
}

/// A summary of an ONNX graph, for `readout info`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GraphSummary {
    pub file: PathBuf,
    pub producer: String,
    pub opset: i64,
    pub nodes: usize,
    /// Each op type and how many nodes have it, most first.
    pub ops: Vec<(String, usize)>,
    pub initializers: usize,
    /// Bytes of weights in the graph file and its external data files.
    pub weight_bytes: u64,
    /// How the projections' weights are encoded (`f32`, `f16`, `int4 blocks of 32`, …).
    pub encodings: Vec<String>,
    pub layers: usize,
    pub tied_embeddings: bool,
}

/// The graph with its lookups.
pub(super) struct Graph<'a> {
    g: &'a GraphProto,
    producer: HashMap<&'a str, usize>,
    consumers: HashMap<&'a str, Vec<usize>>,
    inits: HashMap<&'a str, &'a TensorProto>,
    path: &'a Path,
}

impl<'a> Graph<'a> {
    pub(super) fn new(g: &'a GraphProto, path: &'a Path) -> Self {
        let mut producer = HashMap::new();
        let mut consumers: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, n) in g.node.iter().enumerate() {
            for o in &n.output {
                producer.insert(o.as_str(), i);
            }
            for x in &n.input {
                consumers.entry(x.as_str()).or_default().push(i);
            }
        }
        let inits = g.initializer.iter().map(|t| (t.name.as_str(), t)).collect();
        Graph { g, producer, consumers, inits, path }
    }

    fn node(&self, i: usize) -> &'a NodeProto {
        &self.g.node[i]
    }

    fn consumers(&self, name: &str) -> &[usize] {
        self.consumers.get(name).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// The initializer `name`, seen through Cast, Identity and Constant nodes.
    fn init(&self, name: &str) -> Option<&'a TensorProto> {
        if let Some(t) = self.inits.get(name) {
            return Some(t);
        }
        let n = self.node(*self.producer.get(name)?);
        match n.op_type.as_str() {
            "Identity" | "Cast" => self.init(n.input.first()?),
            "Constant" => n.attribute.iter().find(|a| a.name == "value").and_then(|a| a.t.as_ref()),
            _ => None,
        }
    }

    fn dims(&self, name: &str) -> Option<Vec<usize>> {
        self.init(name).map(|t| t.dims.iter().map(|&d| d.max(0) as usize).collect())
    }

    /// A MatMulNBits node's `N` (all its outputs, packed or not).
    fn nbits_outputs(&self, node: usize) -> Option<usize> {
        Self::attr_int(self.node(node), "N").map(|n| n as usize)
    }

    fn attr_int(n: &NodeProto, name: &str) -> Option<i64> {
        n.attribute.iter().find(|a| a.name == name).map(|a| a.i)
    }

    /// Every product of an activation with a weight, in graph order.
    pub(super) fn projections(&self) -> Vec<Projection> {
        let mut out = Vec::new();
        for (i, n) in self.g.node.iter().enumerate() {
            let (Some(x), Some(w)) = (n.input.first(), n.input.get(1)) else { continue };
            let found = match n.op_type.as_str() {
                "MatMul" => {
                    if let Some([k, nn]) = self.dims(w).as_deref().and_then(|d| <[usize; 2]>::try_from(d).ok()) {
                        Some((k, nn, WeightRef::InOut(self.init_name(w))))
                    } else {
                        // A Transpose of an `[out, in]` initializer (a tied head).
                        self.producer.get(w.as_str()).map(|&p| self.node(p)).and_then(|t| {
                            let src = t.input.first()?;
                            let [nn, k] = <[usize; 2]>::try_from(self.dims(src)?).ok()?;
                            (t.op_type == "Transpose").then(|| (k, nn, WeightRef::OutIn(self.init_name(src))))
                        })
                    }
                }
                "Gemm" => {
                    let [a, b] = <[usize; 2]>::try_from(self.dims(w).unwrap_or_default()).unwrap_or([0, 0]);
                    match Self::attr_int(n, "transB").unwrap_or(0) {
                        0 if a > 0 => Some((a, b, WeightRef::InOut(self.init_name(w)))),
                        _ if a > 0 => Some((b, a, WeightRef::OutIn(self.init_name(w)))),
                        _ => None,
                    }
                }
                "MatMulNBits" => {
                    let k = Self::attr_int(n, "K").unwrap_or(0) as usize;
                    let nn = Self::attr_int(n, "N").unwrap_or(0) as usize;
                    let bits = Self::attr_int(n, "bits").unwrap_or(4) as usize;
                    let block = Self::attr_int(n, "block_size").unwrap_or(32) as usize;
                    let scales = n.input.get(2).cloned().unwrap_or_default();
                    let zero_points = n.input.get(3).filter(|z| !z.is_empty()).cloned();
                    (k > 0 && nn > 0).then(|| {
                        let packed = self.init_name(w);
                        (k, nn, WeightRef::NBits { packed, scales, zero_points, bits, block })
                    })
                }
                _ => None,
            };
            let Some((k, nn, weight)) = found else { continue };
            // A bias: an Add of the product's output and an initializer of `out` values (a Gemm's
            // third input).
            let output = n.output.first().cloned().unwrap_or_default();
            let mut bias = None;
            let mut out_name = output.clone();
            if n.op_type == "Gemm" {
                bias = n.input.get(2).filter(|b| !b.is_empty()).cloned();
            } else if let [a] = self.consumers(&output) {
                let add = self.node(*a);
                if add.op_type == "Add" {
                    let other = add.input.iter().find(|x| **x != output);
                    if let Some(b) = other.filter(|b| self.dims(b).is_some_and(|d| d == [nn])) {
                        bias = Some(self.init_name(b));
                        out_name = add.output.first().cloned().unwrap_or_default();
                    }
                }
            }
            out.push(Projection { node: i, input: x.clone(), output: out_name, k, n: nn, weight, bias, rows_from: 0 });
        }
        out
    }

    /// The initializer's own name behind Cast/Identity/Constant nodes.
    fn init_name(&self, name: &str) -> String {
        if self.inits.contains_key(name) {
            return name.to_string();
        }
        match self.producer.get(name).map(|&p| self.node(p)) {
            Some(n) if matches!(n.op_type.as_str(), "Identity" | "Cast") => {
                n.input.first().map(|x| self.init_name(x)).unwrap_or_else(|| name.to_string())
            }
            _ => name.to_string(),
        }
    }

    /// Nodes reached downstream of `from` (breadth first, at most `depth` steps), not passing
    /// through the nodes in `stop`; each with the input index it was reached by.
    fn downstream(&self, from: &str, depth: usize, stop: &HashSet<usize>) -> Vec<(usize, usize)> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut queue: VecDeque<(String, usize)> = VecDeque::from([(from.to_string(), 0)]);
        while let Some((t, d)) = queue.pop_front() {
            if d >= depth {
                continue;
            }
            for &c in self.consumers(&t) {
                if stop.contains(&c) || !seen.insert(c) {
                    continue;
                }
                let idx = self.node(c).input.iter().position(|x| *x == t).unwrap_or(0);
                out.push((c, idx));
                for o in &self.node(c).output {
                    queue.push_back((o.clone(), d + 1));
                }
            }
        }
        out
    }

    /// Whether a node of one of `ops` is upstream of `tensor` within `depth` steps.
    fn upstream_has(&self, tensor: &str, ops: &[&str], depth: usize) -> bool {
        let mut queue = VecDeque::from([(tensor.to_string(), 0usize)]);
        let mut seen = HashSet::new();
        while let Some((t, d)) = queue.pop_front() {
            let Some(&p) = self.producer.get(t.as_str()) else { continue };
            if !seen.insert(p) {
                continue;
            }
            let n = self.node(p);
            if ops.contains(&n.op_type.as_str()) {
                return true;
            }
            if d + 1 < depth {
                for x in &n.input {
                    queue.push_back((x.clone(), d + 1));
                }
            }
        }
        false
    }

    /// The scale of the norm that makes `tensor`: a (Skip)SimplifiedLayerNormalization's or
    /// RMSNormalization's scale input, or the `[hidden]` initializer multiplied in last by a
    /// norm written out as ops; Casts passed through.
    fn norm_weight(&self, tensor: &str, hidden: usize) -> Option<String> {
        let mut t = tensor.to_string();
        for _ in 0..4 {
            let n = self.node(*self.producer.get(t.as_str())?);
            match n.op_type.as_str() {
                "Cast" | "Identity" => t = n.input.first()?.clone(),
                "SimplifiedLayerNormalization" | "LayerNormalization" | "RMSNormalization" => {
                    return n.input.get(1).map(|s| self.init_name(s))
                }
                "SkipSimplifiedLayerNormalization" | "SkipLayerNormalization" => {
                    return n.input.get(2).map(|s| self.init_name(s))
                }
                "Mul" => {
                    return n
                        .input
                        .iter()
                        .find(|x| self.dims(x).is_some_and(|d| d == [hidden]))
                        .map(|s| self.init_name(s))
                }
                _ => return None,
            }
        }
        None
    }

    /// The scale of the per-head norm that a query's or key's product passes through on its way
    /// to attention (Qwen3's q_norm and k_norm): the nearest norm node downstream of `from` whose
    /// scale is a `[head_dim]` initializer, or the nearest Mul by one (a norm written out as ops).
    fn head_norm_weight(&self, from: &str, head_dim: usize, stop: &HashSet<usize>) -> Option<String> {
        let is_head = |x: &String| self.dims(&self.init_name(x)).is_some_and(|d| d == [head_dim]);
        self.downstream(from, 16, stop).into_iter().find_map(|(i, _)| {
            let n = self.node(i);
            match n.op_type.as_str() {
                "SimplifiedLayerNormalization" | "RMSNormalization" | "LayerNormalization" => {
                    n.input.get(1).filter(|x| is_head(x)).map(|x| self.init_name(x))
                }
                "Mul" => n.input.iter().find(|x| is_head(x)).map(|x| self.init_name(x)),
                _ => None,
            }
        })
    }

    /// The scale of the norm that takes `tensor` itself as its input (Gemma 3's norms of the
    /// attention's and the MLP's outputs): a SimplifiedLayerNormalization (or RMSNormalization)
    /// reading it, Casts passed through.
    fn norm_after(&self, tensor: &str) -> Option<String> {
        let mut t = tensor.to_string();
        for _ in 0..3 {
            let &c = self.consumers(&t).first()?;
            let n = self.node(c);
            match n.op_type.as_str() {
                "Cast" | "Identity" => t = n.output.first()?.clone(),
                "SimplifiedLayerNormalization" | "RMSNormalization" if n.input.first() == Some(&t) => {
                    return n.input.get(1).map(|s| self.init_name(s))
                }
                _ => return None,
            }
        }
        None
    }

    pub(super) fn bad(&self, detail: impl Into<String>) -> Error {
        Error::BadModelConfig { path: self.path.to_path_buf(), detail: detail.into() }
    }
}

/// A layer's attention as met in the graph: its norm; q, k and v; Qwen3's q and k norms.
type AttentionParts = (String, [Projection; 3], Option<(String, String)>);

/// The roles of the graph's weights (see the module's comment), checked against `cfg`.
fn find_roles(g: &Graph<'_>, cfg: &ModelConfig) -> Result<Roles> {
    let ids = g.g.input.first().map(|i| i.name.clone()).unwrap_or_default();
    // The embedding: the table the token ids are gathered from.
    let embedding = g
        .g
        .node
        .iter()
        .filter(|n| n.op_type == "Gather" && n.input.get(1) == Some(&ids))
        .find_map(|n| n.input.first().filter(|t| g.dims(t).is_some_and(|d| d.len() == 2)).map(|t| g.init_name(t)))
        .ok_or_else(|| g.bad(format!("no Gather of a weight table by the graph's first input `{ids}` (the token ids): not a decoder export Readout reads")))?;
    let [vocab, hidden] = <[usize; 2]>::try_from(g.dims(&embedding).unwrap_or_default()).unwrap_or([0, 0]);
    if (vocab, hidden) != (cfg.vocab_size, cfg.hidden_size) {
        return Err(g.bad(format!(
            "the embedding `{embedding}` is {vocab} x {hidden}; the configuration says {} x {}",
            cfg.vocab_size, cfg.hidden_size
        )));
    }
    let projections = g.projections();
    let (h, kv, hd) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
    let stop: HashSet<usize> = projections.iter().map(|p| p.node).collect();
    let head = projections
        .iter()
        .rev()
        .find(|p| p.n == vocab && p.k == hidden)
        .cloned()
        .ok_or_else(|| g.bad("no product of the hidden state with a vocabulary-sized weight (the LM head)"))?;
    let tied = matches!(&head.weight, WeightRef::OutIn(w) if *w == embedding);
    // Group the products by their input, in graph order.
    let mut groups: Vec<(String, Vec<Projection>)> = Vec::new();
    for p in projections.iter().filter(|p| p.node != head.node) {
        match groups.iter_mut().find(|(x, _)| *x == p.input) {
            Some((_, v)) => v.push(p.clone()),
            None => groups.push((p.input.clone(), vec![p.clone()])),
        }
    }
    let mut layers: Vec<LayerRoles> = Vec::new();
    // A layer's parts as they are met: its attention's norm and q, k, v; its output projection;
    // its MLP's norm, gate and up; then its down projection finishes it.
    let mut attn: Option<AttentionParts> = None;
    let mut o_proj: Option<Projection> = None;
    let mut mlp: Option<(String, Projection, Projection)> = None;
    let activations = ["Sigmoid", "Silu", "Gelu", "FastGelu", "QuickGelu"];
    for (input, ps) in &groups {
        let at = layers.len();
        let sizes: Vec<(usize, usize)> = ps.iter().map(|p| (p.k, p.n)).collect();
        if ps.len() == 3 && ps.iter().all(|p| p.k == hidden) {
            let [q, k, v] = attention_roles(g, ps, &stop)?;
            if (q.n, k.n, v.n) != (h * hd, kv * hd, kv * hd) {
                return Err(g.bad(format!(
                    "layer {at}: q, k and v give {}, {} and {} values; the configuration says {}, {} and {}",
                    q.n,
                    k.n,
                    v.n,
                    h * hd,
                    kv * hd,
                    kv * hd
                )));
            }
            let norm = g
                .norm_weight(input, hidden)
                .ok_or_else(|| g.bad(format!("layer {at}: no norm weight before q, k and v")))?;
            let qk_norms = if cfg.architecture.has_qk_norms() {
                let find = |p: &Projection, which: &str| {
                    g.head_norm_weight(&p.output, hd, &stop).ok_or_else(|| {
                        g.bad(format!(
                            "layer {at}: no {which} norm (a norm with a [{hd}] scale after the {which} product), \
                             which a {:?} model has",
                            cfg.architecture
                        ))
                    })
                };
                Some((find(&q, "query")?, find(&k, "key")?))
            } else {
                None
            };
            attn = Some((norm, [q, k, v], qk_norms));
        } else if ps.len() == 1
            && ps[0].k == hidden
            && ps[0].n == (h + 2 * kv) * hd
            && packed_attention(g, &ps[0], &stop)
        {
            // q, k and v packed in one product `[q | k | v]`, read by a fused attention op.
            let p = &ps[0];
            let part = |from: usize, n: usize| Projection { rows_from: from, n, ..p.clone() };
            let norm = g
                .norm_weight(input, hidden)
                .ok_or_else(|| g.bad(format!("layer {at}: no norm weight before q, k and v")))?;
            if cfg.architecture.has_qk_norms() {
                return Err(g.bad(format!(
                    "layer {at}: q, k and v are packed in one product, but a {:?} model normalises q and k apart",
                    cfg.architecture
                )));
            }
            attn = Some((norm, [part(0, h * hd), part(h * hd, kv * hd), part((h + kv) * hd, kv * hd)], None));
        } else if ps.len() == 1 && ps[0].k == h * hd && ps[0].n == hidden && attn.is_some() && o_proj.is_none() {
            o_proj = Some(ps[0].clone());
        } else if ps.len() == 2 && ps.iter().all(|p| p.k == hidden && p.n == cfg.intermediate_size) {
            let (gate, up) = match (
                reaches(g, &ps[0].output, &activations, &stop),
                reaches(g, &ps[1].output, &activations, &stop),
            ) {
                (true, false) => (ps[0].clone(), ps[1].clone()),
                (false, true) => (ps[1].clone(), ps[0].clone()),
                _ => return Err(g.bad(format!("layer {at}: cannot tell the MLP's gate from its up projection"))),
            };
            let norm = g
                .norm_weight(input, hidden)
                .ok_or_else(|| g.bad(format!("layer {at}: no norm weight before the MLP")))?;
            mlp = Some((norm, gate, up));
        } else if ps.len() == 1 && ps[0].k == cfg.intermediate_size && ps[0].n == hidden {
            let (Some((attn_norm, [q, k, v], qk_norms)), Some(o), Some((ffn_norm, gate, up))) =
                (attn.take(), o_proj.take(), mlp.take())
            else {
                return Err(g.bad(format!("layer {at}: a down projection before its attention and gate")));
            };
            let down = ps[0].clone();
            let post_norms = if cfg.architecture == Architecture::Gemma3 {
                let after = |p: &Projection, what: &str| {
                    g.norm_after(&p.output).ok_or_else(|| {
                        g.bad(format!("layer {at}: no norm of the {what}'s output, which a Gemma 3 layer has"))
                    })
                };
                Some((after(&o, "attention")?, after(&down, "MLP")?))
            } else {
                None
            };
            layers.push(LayerRoles { attn_norm, q, k, v, o, qk_norms, ffn_norm, post_norms, gate, up, down });
        } else {
            return Err(g.bad(format!(
                "products of `{input}` with weights of {sizes:?} (inputs x outputs) are no layer part Readout knows \
                 (hidden {hidden}, intermediate {}, {h} heads, {kv} KV heads of {hd})",
                cfg.intermediate_size
            )));
        }
    }
    if layers.len() != cfg.num_layers {
        return Err(g.bad(format!(
            "{} layers found in the graph; the configuration says {}",
            layers.len(),
            cfg.num_layers
        )));
    }
    let final_norm = g
        .norm_weight(&head.input, hidden)
        .ok_or_else(|| g.bad("no norm weight before the LM head (the final norm)"))?;
    Ok(Roles { embedding, layers, final_norm, head, tied })
}

/// Whether a node of one of `ops` is reached from `tensor` before another projection.
fn reaches(g: &Graph<'_>, tensor: &str, ops: &[&str], stop: &HashSet<usize>) -> bool {
    g.downstream(tensor, 4, stop).iter().any(|&(n, _)| ops.contains(&g.node(n).op_type.as_str()))
}

/// Whether a product's output is a fused attention op's packed query input (its key and value
/// inputs empty).
fn packed_attention(g: &Graph<'_>, p: &Projection, stop: &HashSet<usize>) -> bool {
    let fused = ["GroupQueryAttention", "MultiHeadAttention", "Attention", "PackedMultiHeadAttention"];
    g.downstream(&p.output, 3, stop).iter().any(|&(n, idx)| {
        let node = g.node(n);
        fused.contains(&node.op_type.as_str()) && idx == 0 && node.input.get(1).is_none_or(|x| x.is_empty())
    })
}

/// q, k and v among three products of one input, by where their outputs go: into a fused
/// attention op (its inputs are query, key, value, in that order), or into the two products
/// of attention: q on the left of the product whose scores reach the softmax, k on its right,
/// v on the right of the product of the softmax's probabilities.
fn attention_roles(g: &Graph<'_>, ps: &[Projection], stop: &HashSet<usize>) -> Result<[Projection; 3]> {
    let fused = ["GroupQueryAttention", "MultiHeadAttention", "Attention", "PackedMultiHeadAttention"];
    let mut role = [None, None, None];
    for p in ps {
        let reached = g.downstream(&p.output, 24, stop);
        let r = reached.iter().find_map(|&(n, idx)| {
            let node = g.node(n);
            if fused.contains(&node.op_type.as_str()) {
                return (idx < 3).then_some(idx);
            }
            if node.op_type != "MatMul" || node.input.iter().any(|x| g.init(x).is_some()) {
                return None;
            }
            // The probabilities' product: its left operand comes from a softmax.
            let left_from_softmax = g.upstream_has(&node.input[0], &["Softmax"], 4);
            match (idx, left_from_softmax) {
                (1, true) => Some(2),
                (0, false) => Some(0),
                (1, false) => Some(1),
                _ => None,
            }
        });
        match r {
            Some(i) if role[i].is_none() => role[i] = Some(p.clone()),
            _ => {
                return Err(g.bad(format!(
                    "cannot tell whether the product `{}` is the query, the key or the value",
                    g.node(p.node).name
                )))
            }
        }
    }
    match role {
        [Some(q), Some(k), Some(v)] => Ok([q, k, v]),
        _ => Err(g.bad("a layer's q, k and v are not each found once")),
    }
}

/// The bytes of an initializer: a view of its external data file (mapped once per file), or a
/// copy of its inline data in an anonymous map.
struct Bytes<'a> {
    dir: &'a Path,
    path: &'a Path,
    files: HashMap<String, Mapped>,
}

impl Bytes<'_> {
    fn of(&mut self, t: &TensorProto) -> Result<(Mapped, usize, usize)> {
        let bad = |detail: String| Error::BadTensor { path: self.path.to_path_buf(), tensor: t.name.clone(), detail };
        if t.data_location == 1 {
            let get = |k: &str| t.external_data.iter().find(|e| e.key == k).map(|e| e.value.clone());
            let location = get("location").ok_or_else(|| bad("its external data names no file".into()))?;
            let file = self.dir.join(&location);
            let map = match self.files.get(&location) {
                Some(m) => m.clone(),
                None => {
                    let m = super::map(&file)?;
                    self.files.insert(location.clone(), m.clone());
                    m
                }
            };
            let offset: usize = get("offset").map(|o| o.parse().unwrap_or(usize::MAX)).unwrap_or(0);
            let len: usize = match get("length") {
                Some(l) => l.parse().map_err(|_| bad(format!("its external data length `{l}` is not a number")))?,
                None => map.len().saturating_sub(offset),
            };
            if offset.checked_add(len).is_none_or(|end| end > map.len()) {
                return Err(bad(format!("its {len} bytes at {offset} run past the end of {}", file.display())));
            }
            return Ok((map, offset, len));
        }
        let bytes: Vec<u8> = if !t.raw_data.is_empty() {
            t.raw_data.clone()
        } else if !t.float_data.is_empty() {
            t.float_data.iter().flat_map(|v| v.to_le_bytes()).collect()
        } else if !t.int32_data.is_empty() {
            // FLOAT16, BFLOAT16 and UINT8 values are kept one a number in int32_data.
            match t.data_type {
                FLOAT16 | BFLOAT16 => t.int32_data.iter().flat_map(|&v| (v as u16).to_le_bytes()).collect(),
                _ => t.int32_data.iter().map(|&v| v as u8).collect(),
            }
        } else {
            Vec::new()
        };
        let len = bytes.len();
        Ok((anon(&bytes).map_err(|e| Error::io(self.path, e))?, 0, len))
    }
}

/// `bytes` in an anonymous read-only map.
fn anon(bytes: &[u8]) -> std::io::Result<Mapped> {
    let mut m = memmap2::MmapMut::map_anon(bytes.len().max(1))?;
    m[..bytes.len()].copy_from_slice(bytes);
    Ok(Arc::new(m.make_read_only()?))
}

fn dtype_of(t: &TensorProto) -> Option<(GgmlDType, usize)> {
    match t.data_type {
        FLOAT => Some((GgmlDType::F32, 4)),
        FLOAT16 => Some((GgmlDType::F16, 2)),
        BFLOAT16 => Some((GgmlDType::BF16, 2)),
        _ => None,
    }
}

/// Why an initializer's element type is not read.
fn unread(t: &TensorProto) -> String {
    format!(
        "has ONNX element type {}; Readout reads float, float16 and bfloat16 weights and MatMulNBits blocks",
        t.data_type
    )
}

/// The weights by role, as [`LoadedWeight`]s `[out, in]` (vectors `[1, n]`).
pub(super) struct Weights<'a, 'b> {
    g: &'b Graph<'a>,
    bytes: Bytes<'b>,
}

impl<'a, 'b> Weights<'a, 'b> {
    pub(super) fn new(g: &'b Graph<'a>, dir: &'b Path, path: &'b Path) -> Self {
        Weights { g, bytes: Bytes { dir, path, files: HashMap::new() } }
    }

    fn init(&self, name: &str) -> Result<&'a TensorProto> {
        self.g.init(name).ok_or_else(|| Error::BadTensor {
            path: self.g.path.to_path_buf(),
            tensor: name.to_string(),
            detail: "is not an initializer of the graph".into(),
        })
    }

    /// A float tensor as it lies: `[rows, cols]`.
    fn plain(&mut self, name: &str, rows: usize, cols: usize) -> Result<LoadedWeight> {
        let t = self.init(name)?;
        let bad = |d: String| Error::BadTensor { path: self.g.path.to_path_buf(), tensor: name.to_string(), detail: d };
        let (dtype, size) = dtype_of(t).ok_or_else(|| {
            bad(format!(
                "has ONNX element type {}; Readout reads float, float16 and bfloat16 weights and MatMulNBits blocks",
                t.data_type
            ))
        })?;
        let (map, offset, len) = self.bytes.of(t)?;
        if len != rows * cols * size {
            return Err(bad(format!(
                "holds {len} bytes; {rows} x {cols} values of {size} bytes are {}",
                rows * cols * size
            )));
        }
        Ok(LoadedWeight::Encoded(Encoded::new(map, offset, dtype, rows, cols).map_err(bad)?))
    }

    /// Values `from .. from + n` of a vector initializer, as `[1, n]`.
    fn vector_part(&mut self, name: &str, from: usize, n: usize) -> Result<LoadedWeight> {
        let t = self.init(name)?;
        let bad = |d: String| Error::BadTensor { path: self.g.path.to_path_buf(), tensor: name.to_string(), detail: d };
        let (dtype, size) = dtype_of(t)
            .ok_or_else(|| bad(format!("has ONNX element type {}; a float vector expected", t.data_type)))?;
        let (map, offset, len) = self.bytes.of(t)?;
        if len < (from + n) * size {
            return Err(bad(format!("holds {len} bytes; values {from}..{} of {size} bytes expected", from + n)));
        }
        Ok(LoadedWeight::Encoded(Encoded::new(map, offset + from * size, dtype, 1, n).map_err(bad)?))
    }

    /// A projection's weight as `[out, in]` (its outputs `rows_from ..` when packed): a view of
    /// the graph's bytes when it holds `[out, in]`, transposed into an anonymous map when it
    /// holds `[in, out]`, MatMulNBits blocks as [`nbits_weights`] keeps them.
    pub(super) fn projection(&mut self, p: &Projection) -> Result<LoadedWeight> {
        let name = match &p.weight {
            WeightRef::OutIn(w) | WeightRef::InOut(w) => w.clone(),
            WeightRef::NBits { packed, .. } => packed.clone(),
        };
        let bad = |d: String| Error::BadTensor { path: self.g.path.to_path_buf(), tensor: name.clone(), detail: d };
        // Each form: where the `[full, k]` rows lie, their encoding and the bytes of one row.
        let mut f32_scales = None;
        let (map, offset, dtype, row_bytes, full) = match &p.weight {
            WeightRef::OutIn(w) => {
                let t = self.init(w)?;
                let (dtype, size) = dtype_of(t).ok_or_else(|| bad(unread(t)))?;
                let (map, offset, len) = self.bytes.of(t)?;
                (map, offset, dtype, p.k * size, len / size / p.k.max(1))
            }
            WeightRef::InOut(w) => {
                let t = self.init(w)?;
                let (dtype, size) = dtype_of(t).ok_or_else(|| bad(unread(t)))?;
                let (map, offset, len) = self.bytes.of(t)?;
                let full = len / size / p.k.max(1);
                let src = &map[offset..offset + p.k * full * size];
                let mut out = vec![0u8; src.len()];
                for i in 0..p.k {
                    for j in 0..full {
                        let (from, to) = ((i * full + j) * size, (j * p.k + i) * size);
                        out[to..to + size].copy_from_slice(&src[from..from + size]);
                    }
                }
                (anon(&out).map_err(|e| Error::io(self.g.path, e))?, 0, dtype, p.k * size, full)
            }
            WeightRef::NBits { packed, scales, zero_points, bits, block } => {
                let (map, dtype, full, table) = self.nbits(p, packed, scales, zero_points.as_deref(), *bits, *block)?;
                f32_scales = table;
                (map, 0, dtype, p.k / dtype.block_size() * dtype.type_size(), full)
            }
        };
        if p.rows_from + p.n > full {
            return Err(bad(format!(
                "has {full} outputs of {} inputs; outputs {}..{} were expected",
                p.k,
                p.rows_from,
                p.rows_from + p.n
            )));
        }
        let start = offset + p.rows_from * row_bytes;
        let e = Encoded::new(map, start, dtype, p.n, p.k).map_err(bad)?;
        let e = match f32_scales {
            Some(t) => e.with_f32_scales(t, p.rows_from * (p.k / 32)).map_err(bad)?,
            None => e,
        };
        Ok(LoadedWeight::Encoded(e))
    }

    /// `MatMulNBits` (com.microsoft): `B [N, k_blocks, block·bits/8]` of unsigned `bits`-bit
    /// values, low bits first, `scales [N·k_blocks]`, zero points packed the same way (default
    /// `2^(bits-1)`): `w = scale · (q − zero)`, decoded to f32 `[N, K]`.
    fn nbits(
        &mut self,
        p: &Projection,
        packed: &str,
        scales: &str,
        zero_points: Option<&str>,
        bits: usize,
        block: usize,
    ) -> Result<(Mapped, GgmlDType, usize, Option<F32Scales>)> {
        let bad =
            |d: String| Error::BadTensor { path: self.g.path.to_path_buf(), tensor: packed.to_string(), detail: d };
        let rows = self.g.nbits_outputs(p.node).unwrap_or(p.n);
        if bits != 4 || block == 0 || 8 % bits != 0 {
            return Err(bad(format!(
                "MatMulNBits with {bits}-bit values in blocks of {block}: Readout reads 4-bit blocks"
            )));
        }
        let blocks = p.k.div_ceil(block);
        let (qmap, qoff, qlen) = self.bytes.of(self.init(packed)?)?;
        let blob = block * bits / 8;
        if qlen != rows * blocks * blob {
            return Err(bad(format!(
                "holds {qlen} bytes; {} x {blocks} blocks of {blob} bytes are {}",
                rows,
                rows * blocks * blob
            )));
        }
        let st = self.init(scales)?;
        let (smap, soff, slen) = self.bytes.of(st)?;
        let scale: Vec<f32> = match st.data_type {
            FLOAT => {
                smap[soff..soff + slen].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
            }
            FLOAT16 => smap[soff..soff + slen]
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => return Err(bad(format!("its scales have ONNX element type {other}; float or float16 expected"))),
        };
        if scale.len() != rows * blocks {
            return Err(bad(format!("has {} scales; {} x {blocks} expected", scale.len(), rows)));
        }
        let zeros: Option<Vec<u8>> = match zero_points {
            Some(z) => {
                let zt = self.init(z)?;
                if zt.data_type != UINT8 {
                    return Err(bad("its zero points are not packed uint8 (float zero points are not read)".into()));
                }
                let (zmap, zoff, zlen) = self.bytes.of(zt)?;
                Some(zmap[zoff..zoff + zlen].to_vec())
            }
            None => None,
        };
        let (dtype, bytes, table) = nbits_weights(&qmap[qoff..qoff + qlen], &scale, zeros.as_deref(), rows, p.k, block);
        Ok((anon(&bytes).map_err(|e| Error::io(self.g.path, e))?, dtype, rows, table.map(Arc::from)))
    }
}

/// Each Q4_1 block's f32 `[scale, zero]`, row by row, where the scales are f32 values.
type F32Scales = Arc<[[f32; 2]]>;

/// `MatMulNBits` 4-bit blocks (`q [rows, blocks, block/2]`, low nibble first; a scale per block;
/// zero points packed two a byte per row, 8 without them) as Readout holds them: GGML Q4_1
/// blocks of 32 (`w = d·u + m`, the integer kernel's own encoding; a block of 64 or 128 is two or
/// four of them with its scale) where the block is a multiple of 32 — their `d` and `m` the f16
/// values `scale` and `−scale·zero` where every block's are f16 values (the q4f16 exports), else
/// kept in f32 beside the bytes (`[scale, zero]` a block of 32: the builder's CPU int4 has f32
/// scales) — else f32 `scale · (q − zero)`. Each is the values MatMulNBits stands for. Rows `[rows, k]`.
fn nbits_weights(
    q: &[u8],
    scale: &[f32],
    zeros: Option<&[u8]>,
    rows: usize,
    k: usize,
    block: usize,
) -> (GgmlDType, Vec<u8>, Option<Vec<[f32; 2]>>) {
    use half::f16;
    let blocks = k.div_ceil(block);
    let blob = block / 2;
    let zero_of = |r: usize, b: usize| -> f32 {
        match zeros {
            Some(z) => {
                let byte = z.get(r * blocks.div_ceil(2) + b / 2).copied().unwrap_or(0x88);
                (if b.is_multiple_of(2) { byte & 0x0F } else { byte >> 4 }) as f32
            }
            None => 8.0,
        }
    };
    if block.is_multiple_of(32) && k.is_multiple_of(32) {
        let exact_f16 = |v: f32| f16::from_f32(v).to_f32() == v;
        let f16_scales = (0..rows).all(|r| {
            (0..blocks).all(|b| {
                let s = scale[r * blocks + b];
                exact_f16(s) && exact_f16(-s * zero_of(r, b))
            })
        });
        let per = block / 32;
        let mut out = Vec::with_capacity(rows * k / 32 * 20);
        let mut table = Vec::with_capacity(if f16_scales { 0 } else { rows * k / 32 });
        for r in 0..rows {
            for c in 0..k / 32 {
                let b = c / per;
                let (s, zero) = (scale[r * blocks + b], zero_of(r, b));
                let at = (r * blocks + b) * blob + (c % per) * 16;
                let src = &q[at..at + 16];
                let nib = |i: usize| if i.is_multiple_of(2) { src[i / 2] & 0x0F } else { src[i / 2] >> 4 };
                out.extend_from_slice(&f16::from_f32(s).to_le_bytes());
                out.extend_from_slice(&f16::from_f32(-s * zero).to_le_bytes());
                // Q4_1's bytes: element j in the low nibble, element j + 16 in the high one.
                out.extend((0..16).map(|j| nib(j) | (nib(j + 16) << 4)));
                if !f16_scales {
                    table.push([s, zero]);
                }
            }
        }
        return (GgmlDType::Q4_1, out, (!f16_scales).then_some(table));
    }
    let mut out = vec![0f32; rows * k];
    for r in 0..rows {
        for b in 0..blocks {
            let (s, zero) = (scale[r * blocks + b], zero_of(r, b));
            let bytes = &q[(r * blocks + b) * blob..(r * blocks + b + 1) * blob];
            for (i, &v) in bytes.iter().enumerate() {
                for (h, nib) in [v & 0x0F, v >> 4].into_iter().enumerate() {
                    let col = b * block + 2 * i + h;
                    if col < k {
                        out[r * k + col] = s * (nib as f32 - zero);
                    }
                }
            }
        }
    }
    (GgmlDType::F32, out.iter().flat_map(|v| v.to_le_bytes()).collect(), None)
}

/// The model directory's configuration: `config.json` beside the graph or in the directory
/// (Optimum copies it; onnxruntime-genai's builder writes only `genai_config.json`, so its
/// exports need the model's `config.json` copied beside them).
pub(super) fn onnx_config(dir: &Path, graph_dir: &Path) -> Result<(ModelConfig, String)> {
    for d in [graph_dir, dir] {
        if d.join("config.json").is_file() {
            return super::hf::hf_config(d);
        }
    }
    Err(Error::BadModelConfig {
        path: dir.to_path_buf(),
        detail: "an ONNX model directory needs config.json (the model's Hugging Face configuration) beside model.onnx"
            .into(),
    })
}

pub(super) fn read_model(file: &Path) -> Result<ModelProto> {
    candle_onnx::read_file(file).map_err(|e| Error::BadModelConfig {
        path: file.to_path_buf(),
        detail: format!("not a readable ONNX model ({e}); get a complete copy of the export"),
    })
}

/// Load an ONNX model directory.
pub(super) fn load(dir: &Path, graph: &Path, device: &Device, hold: Hold) -> Result<Loaded> {
    let graph_dir = graph.parent().unwrap_or(dir);
    let (cfg, _) = onnx_config(dir, graph_dir)?;
    let model = read_model(graph)?;
    let gp = model.graph.as_ref().ok_or_else(|| Error::BadModelConfig {
        path: graph.to_path_buf(),
        detail: "the ONNX file holds no graph".into(),
    })?;
    let g = Graph::new(gp, graph);
    let roles = find_roles(&g, &cfg)?;
    let mut w = Weights::new(&g, graph_dir, graph);
    // Every weight under the name the Hugging Face layout gives it.
    let mut named: HashMap<String, LoadedWeight> = HashMap::new();
    let hidden = cfg.hidden_size;
    named.insert("model.embed_tokens.weight".into(), w.plain(&roles.embedding, cfg.vocab_size, hidden)?);
    named.insert("model.norm.weight".into(), w.plain(&roles.final_norm, 1, hidden)?);
    if !roles.tied {
        named.insert("lm_head.weight".into(), w.projection(&roles.head)?);
    }
    // Gemma 3's blocks by its own keys (the MLP's norm is `pre_feedforward_layernorm`, the
    // attention's output norm `post_attention_layernorm`), whose norms the builder writes as the
    // `1 + w` they multiply by (`add_offset`): taken as they are, not shifted again.
    let gemma = cfg.architecture == Architecture::Gemma3;
    let keys = if gemma { BlockKeys { norm_shift: 0.0, ..gemma_keys() } } else { HF_KEYS };
    for (i, l) in roles.layers.iter().enumerate() {
        let name = |k: &str| format!("model.layers.{i}.{k}");
        named.insert(name("input_layernorm.weight"), w.plain(&l.attn_norm, 1, hidden)?);
        named.insert(name(&format!("{}.weight", keys.ffn_norm)), w.plain(&l.ffn_norm, 1, hidden)?);
        if let Some((attn_post, ffn_post)) = &l.post_norms {
            named.insert(name(&format!("{}.weight", keys.attn_post_norm)), w.plain(attn_post, 1, hidden)?);
            named.insert(name(&format!("{}.weight", keys.ffn_post_norm)), w.plain(ffn_post, 1, hidden)?);
        }
        if let Some((qn, kn)) = &l.qk_norms {
            named.insert(name("self_attn.q_norm.weight"), w.plain(qn, 1, cfg.head_dim)?);
            named.insert(name("self_attn.k_norm.weight"), w.plain(kn, 1, cfg.head_dim)?);
        }
        for (key, p) in [
            ("self_attn.q_proj", &l.q),
            ("self_attn.k_proj", &l.k),
            ("self_attn.v_proj", &l.v),
            ("self_attn.o_proj", &l.o),
            ("mlp.gate_proj", &l.gate),
            ("mlp.up_proj", &l.up),
            ("mlp.down_proj", &l.down),
        ] {
            named.insert(name(&format!("{key}.weight")), w.projection(p)?);
            if let Some(b) = &p.bias {
                named.insert(name(&format!("{key}.bias")), w.vector_part(b, p.rows_from, p.n)?);
            }
        }
    }
    let mut cfg = cfg;
    cfg.tie_embeddings = roles.tied;
    let mut get = |name: &str| -> Result<LoadedWeight> {
        named.remove(name).ok_or_else(|| Error::BadTensor {
            path: graph.to_path_buf(),
            tensor: name.to_string(),
            detail: "has no weight in the graph (the model needs it)".into(),
        })
    };
    let names = |i: usize, k: &str| format!("model.layers.{i}.{k}.weight");
    let built = build(
        &cfg,
        device,
        Hold { matmul: MatmulPath::Dense, ..hold },
        graph,
        &mut get,
        "model.embed_tokens.weight",
        "model.norm.weight",
        "lm_head.weight",
        names,
        keys,
    )?;
    let tok_dir =
        [graph_dir, dir].into_iter().find(|d| d.join("tokenizer.json").is_file()).ok_or_else(|| Error::Tokenizer {
            path: dir.join("tokenizer.json"),
            detail: "missing; an ONNX model directory needs tokenizer.json beside model.onnx".into(),
        })?;
    let tc = read_tokenizer_config(&tok_dir.join("tokenizer_config.json"))?;
    Ok(Loaded {
        model: built,
        tokenizer_source: TokenizerSource::Json(tok_dir.join("tokenizer.json")),
        chat_template: hf_chat_template(tok_dir, tc.chat_template)?,
        bos_token: tc.bos_token,
        eos_token: tc.eos_token,
        quantisation: encodings(&g, &roles).join("+").to_uppercase(),
        name: dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        decision: None,
    })
}

/// How the projections' weights are encoded, e.g. `["f32"]` or `["int4 blocks of 32", "f16"]`.
fn encodings(g: &Graph<'_>, roles: &Roles) -> Vec<String> {
    let mut seen = Vec::new();
    let all = roles.layers.iter().flat_map(|l| [&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down]).chain([&roles.head]);
    for p in all {
        let e = match &p.weight {
            WeightRef::NBits { bits, block, .. } => format!("int{bits} blocks of {block}"),
            WeightRef::InOut(w) | WeightRef::OutIn(w) => match g.init(w).map(|t| t.data_type) {
                Some(FLOAT16) => "f16".into(),
                Some(BFLOAT16) => "bf16".into(),
                _ => "f32".into(),
            },
        };
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    seen
}

/// The graph of `path` when it is an ONNX model directory (for `readout info`); `None` for any
/// other model.
pub(crate) fn graph_of(path: &Path) -> Result<Option<GraphSummary>> {
    match path.is_dir() && graph_file(path).is_some() {
        true => summary(path).map(Some),
        false => Ok(None),
    }
}

/// What `readout info` says of an ONNX model directory's graph.
pub(crate) fn summary(dir: &Path) -> Result<GraphSummary> {
    let file = graph_file(dir).ok_or_else(|| Error::BadModelConfig {
        path: dir.to_path_buf(),
        detail: "no model.onnx in the directory or its onnx/ folder".into(),
    })?;
    let graph_dir = file.parent().unwrap_or(dir);
    let (cfg, _) = onnx_config(dir, graph_dir)?;
    let model = read_model(&file)?;
    let gp = model
        .graph
        .as_ref()
        .ok_or_else(|| Error::BadModelConfig { path: file.clone(), detail: "the ONNX file holds no graph".into() })?;
    let g = Graph::new(gp, &file);
    let roles = find_roles(&g, &cfg)?;
    let mut ops: HashMap<String, usize> = HashMap::new();
    for n in &gp.node {
        let name = if n.domain.is_empty() || n.domain == "ai.onnx" {
            n.op_type.clone()
        } else {
            format!("{}:{}", n.domain, n.op_type)
        };
        *ops.entry(name).or_default() += 1;
    }
    let mut ops: Vec<(String, usize)> = ops.into_iter().collect();
    ops.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut weight_bytes = 0u64;
    let mut files = HashSet::new();
    for t in &gp.initializer {
        if t.data_location == 1 {
            if let Some(l) = t.external_data.iter().find(|e| e.key == "location") {
                files.insert(l.value.clone());
            }
        } else {
            weight_bytes += t.raw_data.len() as u64 + 4 * t.float_data.len() as u64;
        }
    }
    for f in files {
        weight_bytes += std::fs::metadata(graph_dir.join(f)).map(|m| m.len()).unwrap_or(0);
    }
    Ok(GraphSummary {
        file: file.clone(),
        producer: format!("{} {}", model.producer_name, model.producer_version).trim().to_string(),
        opset: model
            .opset_import
            .iter()
            .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
            .map(|o| o.version)
            .unwrap_or(0),
        nodes: gp.node.len(),
        ops,
        initializers: gp.initializer.len(),
        weight_bytes,
        encodings: encodings(&g, &roles),
        layers: roles.layers.len(),
        tied_embeddings: roles.tied,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two rows of 64 values (two blocks of 32): `q` counting up, zero points 3 and 12 on row
    /// 0, none (8) on row 1.
    fn blocks(scales: [f32; 4], zeros: Option<Vec<u8>>) -> (GgmlDType, bool, Vec<f32>) {
        let (rows, k) = (2, 64);
        let q: Vec<u8> = (0..rows * k / 2).map(|i| ((2 * i) % 16) as u8 | ((((2 * i + 1) % 16) as u8) << 4)).collect();
        let (dtype, bytes, table) = nbits_weights(&q, &scales, zeros.as_deref(), rows, k, 32);
        let map = anon(&bytes).unwrap();
        let e = Encoded::new(map, 0, dtype, rows, k).unwrap();
        let f32_scales = table.is_some();
        let e = match table {
            Some(t) => e.with_f32_scales(Arc::from(t), 0).unwrap(),
            None => e,
        };
        let s = crate::engine::weights::Stacked::new(vec![e]).unwrap();
        let mut out = vec![0f32; rows * k];
        for (r, row) in out.chunks_mut(k).enumerate() {
            s.decode_row(r, row);
        }
        (dtype, f32_scales, out)
    }

    /// The value MatMulNBits stands for: `scale · (q − zero)`.
    fn want(scales: [f32; 4], zeros: [f32; 4]) -> Vec<f32> {
        (0..128)
            .map(|i| {
                let (r, c) = (i / 64, i % 64);
                let b = r * 2 + c / 32;
                scales[b] * ((i % 16) as f32 - zeros[b])
            })
            .collect()
    }

    #[test]
    fn int4_blocks_are_kept_as_q4_1_with_f16_or_f32_scales_and_the_same_values() {
        // f16 scales (a q4f16 export): Q4_1, exactly the values.
        let scales = [0.5, 0.013671875, 1.25, 0.0009765625];
        let zeros = Some(vec![0x3 | (12 << 4), 0x88]);
        let (dtype, f32_scales, got) = blocks(scales, zeros.clone());
        assert_eq!((dtype, f32_scales), (GgmlDType::Q4_1, false));
        assert_eq!(got, want(scales, [3.0, 12.0, 8.0, 8.0]));
        // Symmetric blocks (no zero points): 8.
        let (dtype, f32_scales, got) = blocks(scales, None);
        assert_eq!((dtype, f32_scales, got), (GgmlDType::Q4_1, false, want(scales, [8.0; 4])));
        // Scales f16 cannot hold (an f32 export): Q4_1 blocks with their f32 scales beside
        // them, decoded to the same values bit for bit.
        let scales = [0.1, 0.2, 0.3, 0.4];
        let (dtype, f32_scales, got) = blocks(scales, zeros);
        assert_eq!((dtype, f32_scales), (GgmlDType::Q4_1, true));
        assert_eq!(got, want(scales, [3.0, 12.0, 8.0, 8.0]));
    }

    #[test]
    fn int4_blocks_of_64_are_two_q4_1_blocks_each() {
        // One row of 128 values in two blocks of 64, scales 0.5 and 0.25, zeros 3 and 9.
        let (rows, k) = (1, 128);
        let q: Vec<u8> = (0..k / 2).map(|i| ((2 * i) % 16) as u8 | ((((2 * i + 1) % 16) as u8) << 4)).collect();
        let (dtype, bytes, table) = nbits_weights(&q, &[0.5, 0.25], Some(&[0x3u8 | (9 << 4)][..]), rows, k, 64);
        assert_eq!((dtype, table.is_none(), bytes.len()), (GgmlDType::Q4_1, true, 4 * 20));
        let e = Encoded::new(anon(&bytes).unwrap(), 0, dtype, rows, k).unwrap();
        let mut got = vec![0f32; k];
        crate::engine::weights::Stacked::new(vec![e]).unwrap().decode_row(0, &mut got);
        let want: Vec<f32> = (0..k)
            .map(|c| if c < 64 { 0.5 * ((c % 16) as f32 - 3.0) } else { 0.25 * ((c % 16) as f32 - 9.0) })
            .collect();
        assert_eq!(got, want);
    }
}
