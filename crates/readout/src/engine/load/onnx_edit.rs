//! The seed's levers as edits of an ONNX export, for onnxruntime to run: `trim` (the LM head
//! applied at the last position only) and `prune` (the head cut to the answer letters' rows).
//!
//! Why it exists: the system Readout rebuilds cuts the cost of reading an answer with these two
//! graph edits; Readout does both inside its own forward (`--prune-head`, trimming on by
//! default), and these make the same cuts in the file so the seed's own engine can be measured
//! with and without them. Each writes a new directory: the edited `model.onnx` beside the
//! original's external data (linked, or copied where a link cannot be made) and its other files.
//! The head is found as the loader finds it: the last product of the hidden state with a
//! vocabulary-sized weight.

use super::onnx::{graph_file, onnx_config, read_model, Graph, Weights};
use crate::engine::model::LoadedWeight;
use crate::engine::weights::Stacked;
use crate::error::{Error, Result};
use candle_onnx::onnx::{tensor_shape_proto, type_proto, AttributeProto, NodeProto, TensorProto};
use prost::Message;
use std::path::{Path, PathBuf};

/// An edit of an ONNX export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnnxEdit {
    /// The LM head at the last position only: a Gather of the last position before it.
    Trim,
    /// The LM head cut to these tokens' rows (each letter one token of the tokenizer), in this
    /// order: logit `i` is token `letters[i]`'s.
    Prune { letters: Vec<String> },
}

/// What an edit did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EditReport {
    /// The edited graph file.
    pub file: PathBuf,
    /// The head node edited (its name in the graph).
    pub head: String,
    /// The token ids the pruned head keeps, in order.
    pub kept_tokens: Vec<u32>,
    /// Bytes of the new `model.onnx`.
    pub bytes: u64,
}

const ONNX_INT64: i32 = 7;
const ONNX_FLOAT: i32 = 1;
const ONNX_FLOAT16: i32 = 10;

/// Apply `edit` to the export in `dir`, writing the edited export into `out` (created; an
/// existing `out/model.onnx` is refused).
pub(crate) fn edit(dir: &Path, out: &Path, edit: &OnnxEdit) -> Result<EditReport> {
    let file = graph_file(dir).ok_or_else(|| Error::BadModelConfig {
        path: dir.to_path_buf(),
        detail: "no model.onnx in the directory or its onnx/ folder".into(),
    })?;
    let graph_dir = file.parent().unwrap_or(dir).to_path_buf();
    let (cfg, _) = onnx_config(dir, &graph_dir)?;
    if out.join("model.onnx").exists() {
        return Err(Error::BadModelConfig {
            path: out.join("model.onnx"),
            detail: "exists already; name a new directory for the edited export".into(),
        });
    }
    let mut model = read_model(&file)?;
    let (head, kept, new_weight) = {
        let gp = model.graph.as_ref().ok_or_else(|| Error::BadModelConfig {
            path: file.clone(),
            detail: "the ONNX file holds no graph".into(),
        })?;
        let g = Graph::new(gp, &file);
        let head = g
            .projections()
            .into_iter()
            .rev()
            .find(|p| p.n == cfg.vocab_size && p.k == cfg.hidden_size)
            .ok_or_else(|| g.bad("no product of the hidden state with a vocabulary-sized weight (the LM head)"))?;
        let (kept, new_weight) = match edit {
            OnnxEdit::Trim => (Vec::new(), None),
            OnnxEdit::Prune { letters } => {
                // The vocabulary of tokenizer.json (read with the tokenizers crate itself: the
                // engine's tokenizer sits above loading).
                let tok_path = [graph_dir.join("tokenizer.json"), dir.join("tokenizer.json")]
                    .into_iter()
                    .find(|p| p.is_file())
                    .unwrap_or_else(|| dir.join("tokenizer.json"));
                let tok = tokenizers::Tokenizer::from_file(&tok_path).map_err(|e| Error::Tokenizer {
                    path: tok_path.clone(),
                    detail: format!("not a readable tokenizer.json ({e})"),
                })?;
                let ids = letters
                    .iter()
                    .map(|l| {
                        tok.token_to_id(l).ok_or_else(|| Error::BadModelConfig {
                            path: tok_path.clone(),
                            detail: format!(
                                "`{l}` is not one token of the model's vocabulary; prune to letters that are"
                            ),
                        })
                    })
                    .collect::<Result<Vec<u32>>>()?;
                let mut w = Weights::new(&g, &graph_dir, &file);
                let LoadedWeight::Encoded(e) = w.projection(&head)? else {
                    return Err(g.bad("the LM head's weight was not read as a table"));
                };
                let rows = Stacked::new(vec![e]).map_err(|e| g.bad(e.to_string()))?;
                let (n, k) = (ids.len(), cfg.hidden_size);
                // `[hidden, n]` (MatMul's right operand): column i is token ids[i]'s row.
                let mut t = vec![0f32; k * n];
                let mut row = vec![0f32; k];
                for (i, &id) in ids.iter().enumerate() {
                    rows.decode_row(id as usize, &mut row);
                    for (c, &v) in row.iter().enumerate() {
                        t[c * n + i] = v;
                    }
                }
                (ids, Some(t))
            }
        };
        (head, kept, new_weight)
    };
    let gp = model.graph.as_mut().expect("checked above");
    let head_name = gp.node[head.node].name.clone();
    let logits_dims = |gp: &mut candle_onnx::onnx::GraphProto| -> Option<(usize, i32)> {
        let out_name = gp.node.get(head.node)?.output.first()?.clone();
        let vi = gp.output.iter_mut().find(|o| o.name == out_name)?;
        match vi.r#type.as_ref()?.value.as_ref()? {
            type_proto::Value::TensorType(t) => Some((t.shape.as_ref().map(|s| s.dim.len()).unwrap_or(0), t.elem_type)),
            _ => None,
        }
    };
    let elem = logits_dims(gp).map(|(_, e)| e).unwrap_or(ONNX_FLOAT);
    match (edit, new_weight) {
        (OnnxEdit::Trim, _) => {
            let last = "readout/trim/last_position";
            let hidden = "readout/trim/last_hidden";
            gp.initializer.push(TensorProto {
                name: last.into(),
                dims: vec![1],
                data_type: ONNX_INT64,
                int64_data: vec![-1],
                ..Default::default()
            });
            let gather = NodeProto {
                name: "/readout/trim/Gather".into(),
                op_type: "Gather".into(),
                input: vec![head.input.clone(), last.into()],
                output: vec![hidden.into()],
                attribute: vec![AttributeProto { name: "axis".into(), r#type: 2, i: 1, ..Default::default() }],
                ..Default::default()
            };
            gp.node[head.node].input[0] = hidden.into();
            gp.node.insert(head.node, gather);
            set_output_dim(gp, &head_output(&gp.node[head.node + 1]), 1, 1);
        }
        (OnnxEdit::Prune { .. }, Some(t)) => {
            let name = "readout/prune/head";
            let (data_type, raw) = if elem == ONNX_FLOAT16 {
                (ONNX_FLOAT16, t.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect())
            } else {
                (ONNX_FLOAT, t.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>())
            };
            gp.initializer.push(TensorProto {
                name: name.into(),
                dims: vec![cfg.hidden_size as i64, kept.len() as i64],
                data_type,
                raw_data: raw,
                ..Default::default()
            });
            let old = &gp.node[head.node];
            let node = NodeProto {
                name: "/readout/prune/MatMul".into(),
                op_type: "MatMul".into(),
                input: vec![head.input.clone(), name.into()],
                output: old.output.iter().take(1).cloned().collect(),
                ..Default::default()
            };
            let out_name = head_output(&node);
            gp.node[head.node] = node;
            set_output_dim(gp, &out_name, 2, kept.len() as i64);
            // The vocabulary's table is left to whatever still reads it (a tied embedding).
            let used: std::collections::HashSet<String> =
                gp.node.iter().flat_map(|n| n.input.iter().cloned()).collect();
            gp.initializer.retain(|t| used.contains(&t.name));
        }
        (OnnxEdit::Prune { .. }, None) => unreachable!("a prune has its new weight"),
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let bytes = model.encode_to_vec();
    let target = out.join("model.onnx");
    std::fs::write(&target, &bytes).map_err(|e| Error::io(&target, e))?;
    // Everything else beside the graph: its external data (linked where possible) and the
    // tokenizer's and configuration's files.
    for entry in std::fs::read_dir(&graph_dir).map_err(|e| Error::io(&graph_dir, e))? {
        let p = entry.map_err(|e| Error::io(&graph_dir, e))?.path();
        let Some(name) = p.file_name() else { continue };
        if p == file || !p.is_file() {
            continue;
        }
        let to = out.join(name);
        if to.exists() {
            continue;
        }
        if std::fs::hard_link(&p, &to).is_err() {
            std::fs::copy(&p, &to).map_err(|e| Error::io(&to, e))?;
        }
    }
    if graph_dir != dir {
        for f in ["config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"] {
            let (p, to) = (dir.join(f), out.join(f));
            if p.is_file() && !to.exists() {
                std::fs::copy(&p, &to).map_err(|e| Error::io(&to, e))?;
            }
        }
    }
    Ok(EditReport { file: target, head: head_name, kept_tokens: kept, bytes: bytes.len() as u64 })
}

fn head_output(n: &NodeProto) -> String {
    n.output.first().cloned().unwrap_or_default()
}

/// Dimension `axis` of the graph output `name` set to `value` (the edited head's new shape).
fn set_output_dim(gp: &mut candle_onnx::onnx::GraphProto, name: &str, axis: usize, value: i64) {
    let Some(vi) = gp.output.iter_mut().find(|o| o.name == name) else { return };
    let Some(type_proto::Value::TensorType(t)) = vi.r#type.as_mut().and_then(|t| t.value.as_mut()) else { return };
    if let Some(d) = t.shape.as_mut().and_then(|s| s.dim.get_mut(axis)) {
        d.value = Some(tensor_shape_proto::dimension::Value::DimValue(value));
    }
}
