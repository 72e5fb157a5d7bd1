//! The ends of the model: the token embedding (a table's rows, scaled for Gemma 3) and the
//! head (the output norm and the LM head at the rows read, soft-capped for Gemma 3). The head
//! is the embedding's table when the model ties them, and either is kept in the file's encoding
//! with native weights.

use super::linear::LoadedWeight;
use super::norm::RmsNorm;
use crate::engine::backends::cpu::project;
use crate::engine::backends::route::{self, DeviceKind, Op};
use crate::engine::weights::Stacked;
use candle_core::quantized::QMatMul;
use candle_core::{Device, Module, Tensor};
use std::sync::Arc;

/// A table of rows looked up by token id: the embedding, and the LM head (the same table when
/// tied), in f32 or in the file's encoding.
pub(crate) enum Table {
    Dense(Tensor),
    /// Rows decoded on the host when looked up; the full-vocabulary product decodes panel by
    /// panel (CPU) or goes through candle's quantised kernels (`quant`, on a GPU).
    Encoded {
        rows: Stacked,
        quant: Option<QMatMul>,
    },
}

impl Table {
    /// The table of a loaded weight: kept in its encoding when `native`, its product through our
    /// panels where they run (`route::Op::ProjectEncoded`, the CPU), else candle's quantised
    /// matmul.
    pub(crate) fn new(w: LoadedWeight, native: bool, device: &Device) -> candle_core::Result<Self> {
        match w {
            LoadedWeight::Encoded(e) if native => {
                let quant = match route::uses(Op::ProjectEncoded, DeviceKind::of(device), false)? {
                    true => None,
                    false => Some(super::linear::quantised_matmul(&e, device)?),
                };
                Ok(Table::Encoded { rows: Stacked::new(vec![e])?, quant })
            }
            w => Ok(Table::Dense(w.into_dense(device)?)),
        }
    }

    /// The rows `ids` as f32 `[ids.len(), hidden]` on `device`.
    pub(crate) fn rows(&self, ids: &[u32], device: &Device) -> candle_core::Result<Tensor> {
        match self {
            Table::Dense(t) => t.index_select(&Tensor::from_slice(ids, ids.len(), device)?, 0),
            Table::Encoded { rows, .. } => {
                let cols = rows.cols();
                let mut v = vec![0f32; ids.len() * cols];
                for (&id, row) in ids.iter().zip(v.chunks_mut(cols.max(1))) {
                    if id as usize >= rows.rows() {
                        candle_core::bail!("token id {id} is past the table's {} rows", rows.rows());
                    }
                    rows.decode_row(id as usize, row);
                }
                Tensor::from_vec(v, (ids.len(), cols), device)
            }
        }
    }

    /// `h [n, hidden] · tableᵀ -> [n, vocab]`.
    pub(crate) fn product(&self, h: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Table::Dense(t) => h.matmul(&t.t()?),
            Table::Encoded { quant: Some(q), .. } => q.forward(h),
            // The head in f32 panels: its logits are what the answers are read from.
            Table::Encoded { rows, quant: None } => project::project_encoded(&h.contiguous()?, rows, None),
        }
    }
}

/// The token embedding.
pub(crate) struct Embedding {
    pub table: Arc<Table>,
    /// What the rows are multiplied by (Gemma 3's `√hidden`); `None`: nothing.
    pub scale: Option<f32>,
}

impl Embedding {
    /// The rows of `tokens`, `[tokens, hidden]` on `device`.
    pub(crate) fn forward(&self, tokens: &[u32], device: &Device) -> candle_core::Result<Tensor> {
        let x = self.table.rows(tokens, device)?;
        match self.scale {
            Some(s) => x.affine(s as f64, 0.0),
            None => Ok(x),
        }
    }
}

/// The output norm and the LM head.
pub(crate) struct Head {
    pub norm: RmsNorm,
    /// `[vocab, hidden]`: the embedding table when tied.
    pub table: Arc<Table>,
    /// The head in its file's quantised form, used for full-vocabulary logits on the quantised path.
    pub quant: Option<QMatMul>,
    /// Gemma 3's final logit soft cap: logits become `cap · tanh(logit / cap)`.
    pub softcap: Option<f32>,
}

impl Head {
    /// Output norm and LM head at the given rows of `hidden`. With `ids`, only those rows of the
    /// head are used (a pruned head); otherwise the whole vocabulary.
    ///
    /// A row's logits do not depend on how many rows are read with it: the matmul library sums
    /// one row alone (a matrix-vector kernel), and up to 64 rows against at most 64 columns
    /// (the pruned head), in another order than a larger product, so the rows are padded past
    /// those sizes (copies of the first, dropped after). A resumed run, which reads fewer rows
    /// in a pass, then gives the bits an uninterrupted run gives.
    pub(crate) fn forward(
        &self,
        hidden: &Tensor,
        rows: &[u32],
        ids: Option<&[u32]>,
        device: &Device,
    ) -> candle_core::Result<Tensor> {
        let n = rows.len();
        let min_rows: usize = if ids.is_some() { 65 } else { 2 };
        let padded: Vec<u32> = rows
            .iter()
            .copied()
            .chain(std::iter::repeat_n(rows.first().copied().unwrap_or(0), min_rows.saturating_sub(n)))
            .collect();
        let rows = Tensor::from_slice(&padded, padded.len(), device)?;
        let h = hidden.index_select(&rows, 0)?;
        let h = self.norm.forward(&h)?;
        let out = match ids {
            Some(ids) => h.matmul(&self.table.rows(ids, device)?.t()?)?,
            None => match &self.quant {
                Some(q) => q.forward(&h)?,
                None => self.table.product(&h)?,
            },
        };
        let out = match self.softcap {
            Some(cap) => (out.affine(1.0 / cap as f64, 0.0)?.tanh()? * cap as f64)?,
            None => out,
        };
        if padded.len() == n {
            Ok(out)
        } else {
            out.narrow(0, 0, n)
        }
    }
}
