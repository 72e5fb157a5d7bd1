//! The batcher: the units a caller asks for (each a stem on its own parent prefix and leaves to
//! read at its end) laid out as the segments of one forward pass, the pass run, and its output
//! handed back per unit: each unit's prefix extended by its stem, and what was read at its
//! leaves. Units on different parents share the pass's matmuls; units on the same parent can
//! share one segment (`PassOptions::group_units`), their attention then one set of kernels
//! under a mask that keeps each unit to its parent and its own tokens. What to run is decided
//! here; running it is the model's ([`Transformer::forward`]), reading its rows the caller's
//! (`head`).

use crate::engine::kv::{LayerKv, Prefix};
use crate::engine::model::{block_head_rows, grouped_tree_mask, stem_tree_mask, KeepKv, Mixer, Segment, Transformer};
use crate::engine::options::PassOptions;
use crate::engine::profile::{self, Stage};
use crate::engine::{StemRead, Unit};
use crate::error::{Error, Result};
use candle_core::{Device, Tensor};

/// Refuse `tokens` positions past the model's context, before anything is computed: a long text
/// must not cost minutes to be refused.
pub(crate) fn check_context(tokens: usize, context: usize) -> Result<()> {
    if tokens > context {
        return Err(Error::ContextOverflow { tokens, context });
    }
    Ok(())
}

/// Full next-token logits after `tokens` on `prefix`, and the prefix extended by them.
pub(crate) fn next_logits(model: &Transformer, prefix: &Prefix, tokens: &[u32]) -> Result<(Prefix, Vec<f32>)> {
    if tokens.is_empty() {
        return Err(Error::Candle(candle_core::Error::Msg("next_logits needs at least one token".into())));
    }
    let total = prefix.len() + tokens.len();
    let context = model.cfg.context_length;
    if total > context {
        return Err(Error::ContextOverflow { tokens: total, context });
    }
    let positions: Vec<u32> = (prefix.len()..total).map(|p| p as u32).collect();
    let mask = stem_tree_mask(prefix.len(), tokens.len(), &[], &model.device)?;
    let seg = Segment { past: prefix, tokens: tokens.to_vec(), positions, mask };
    let (hidden, new_kv) = model.forward(std::slice::from_ref(&seg), &KeepKv::All)?;
    let logits = model.head_at(&hidden, &[(tokens.len() - 1) as u32], None)?.squeeze(0)?.to_vec1()?;
    Ok((prefix.push(new_kv, tokens), logits))
}

/// One forward pass over `units`: every unit's prefix, and what `head` reads at each leaf's last
/// row (`every_row`: at each of its rows), per unit in leaf order, after the rows of its stem that
/// `stems[i]` names (`stems` empty: none). `head` is given the pass's
/// hidden states, the rows to read and the tokens each row reads. A caller keeps the pass within
/// `opts.pass_tokens`; this does not split it.
#[allow(clippy::type_complexity)]
pub(crate) fn run<R>(
    model: &Transformer,
    units: &[Unit<'_>],
    stems: &[StemRead<'_>],
    opts: PassOptions,
    every_row: bool,
    head: impl FnOnce(&Tensor, &[u32], &[&[u32]]) -> Result<Vec<R>>,
) -> Result<(Vec<Prefix>, Vec<Vec<R>>)> {
    let layout = lay_out(units, stems, opts, every_row, model.cfg.context_length, &model.device)?;
    let Layout { segs, read_rows, read_owner, reads, placed, busy } = layout;
    // Per unit: its prefix (the parent until the stem is kept) and what was read.
    let mut out: Vec<(Prefix, Vec<R>)> = units.iter().map(|u| (u.parent.clone(), vec![])).collect();
    if segs.is_empty() {
        return Ok(out.into_iter().unzip());
    }
    let seg_lens: Vec<usize> = segs.iter().map(|g| g.tokens.len()).collect();
    let past_chunks: usize = segs.iter().map(|g| g.past.chunks.len()).sum();
    let started = std::time::Instant::now();
    let rows_total: usize = seg_lens.iter().sum();
    let kept = kept_stems(units, &busy, &placed, &seg_lens);
    let keep = keep_of(model, &kept, rows_total)?;
    let _running = profile::pass();
    let forward = profile::time(Stage::Forward);
    let (hidden, new_kv) = model.forward(&segs, &keep)?;
    drop(forward);
    let head_timer = profile::time(Stage::Head);
    // On a GPU the forward only queues its kernels; the head below waits for them. So the
    // two times say whether a pass is bound by the host issuing kernels or by the device.
    let queued = started.elapsed();
    drop(segs);
    if !opts.trim {
        // What an untrimmed forward pays: the full head at every row (the values are the same
        // at the read rows, so they are read below as usual).
        let all: Vec<u32> = (0..hidden.dim(0)? as u32).collect();
        let _ = model.head_at(&hidden, &all, None)?;
    }
    if !read_rows.is_empty() {
        for (r, &i) in head(&hidden, &read_rows, &reads)?.into_iter().zip(&read_owner) {
            out[i].1.push(r);
        }
    }
    let read = started.elapsed();
    drop(head_timer);
    for (i, layers) in split_kept(model, &keep, &kept, new_kv)? {
        out[i].0 = units[i].parent.push(layers, units[i].stem);
    }
    tracing::debug!(
        units = busy.len(),
        kept = kept.len(),
        segments = seg_lens.len(),
        past_chunks,
        rows = rows_total,
        forward_queued_ms = queued.as_secs_f64() * 1e3,
        read_ms = read.as_secs_f64() * 1e3,
        total_ms = started.elapsed().as_secs_f64() * 1e3,
        "pass"
    );
    Ok(out.into_iter().unzip())
}

/// A pass laid out: its segments, and the rows it reads.
struct Layout<'a> {
    /// One segment per unit, or (grouping on) per set of units on the same parent.
    segs: Vec<Segment<'a>>,
    /// The rows read (of the whole pass), and for each the unit it belongs to and the tokens
    /// read there.
    read_rows: Vec<u32>,
    read_owner: Vec<usize>,
    reads: Vec<&'a [u32]>,
    /// Per unit: its segment and where its tokens start in it.
    placed: Vec<(usize, usize)>,
    /// The units with tokens to compute; the others give their parent back and take no part in
    /// the pass.
    busy: Vec<usize>,
}

/// `units` as the segments of one pass on `device`, each unit checked (no empty leaf, nothing
/// past `context`).
fn lay_out<'a>(
    units: &[Unit<'a>],
    stems: &[StemRead<'a>],
    opts: PassOptions,
    every_row: bool,
    context: usize,
    device: &Device,
) -> Result<Layout<'a>> {
    let mut seg_tokens: Vec<Vec<u32>> = Vec::with_capacity(units.len());
    for u in units {
        if let Some(i) = u.leaves.iter().position(|l| l.tokens.is_empty()) {
            return Err(Error::Candle(candle_core::Error::Msg(format!(
                "suffix {i} is empty; the plan must leave at least one token after the prefix"
            ))));
        }
        let longest = u.leaves.iter().map(|l| l.tokens.len()).max().unwrap_or(0);
        check_context(u.parent.len() + u.stem.len() + longest, context)?;
        let mut tokens = u.stem.to_vec();
        for l in &u.leaves {
            tokens.extend_from_slice(l.tokens);
        }
        seg_tokens.push(tokens);
    }
    if !stems.is_empty() && stems.len() != units.len() {
        return Err(Error::Candle(candle_core::Error::Msg(format!(
            "{} stem reads for {} units: give one per unit, or none",
            stems.len(),
            units.len()
        ))));
    }
    if let Some((i, s)) = stems.iter().enumerate().find(|(i, s)| s.rows.iter().any(|&r| r >= units[*i].stem.len())) {
        return Err(Error::Candle(candle_core::Error::Msg(format!(
            "unit {i} reads stem rows {:?} of a stem of {} tokens",
            s.rows,
            units[i].stem.len()
        ))));
    }
    let busy: Vec<usize> = (0..units.len()).filter(|&i| !seg_tokens[i].is_empty()).collect();
    let groups = group(units, &busy, opts.group_units);
    let mut read_rows: Vec<u32> = Vec::new();
    let mut read_owner: Vec<usize> = Vec::new();
    let mut reads: Vec<&'a [u32]> = Vec::new();
    let mut placed: Vec<(usize, usize)> = vec![(0, 0); units.len()];
    let mut offset = 0usize;
    let mut segs = Vec::with_capacity(groups.len());
    for (si, group) in groups.iter().enumerate() {
        let base = units[group[0]].parent.len();
        let (mut tokens, mut positions, mut parts) = (Vec::new(), Vec::new(), Vec::with_capacity(group.len()));
        for &i in group {
            let u = &units[i];
            placed[i] = (si, tokens.len());
            positions.extend((base..base + u.stem.len()).map(|p| p as u32));
            if let Some(s) = stems.get(i) {
                for &r in s.rows {
                    read_rows.push((offset + tokens.len() + r) as u32);
                    read_owner.push(i);
                    reads.push(s.read);
                }
            }
            let mut end = offset + tokens.len() + u.stem.len();
            for l in &u.leaves {
                let at = base + u.stem.len();
                positions.extend((at..at + l.tokens.len()).map(|p| p as u32));
                end += l.tokens.len();
                let first = if every_row { end - l.tokens.len() } else { end - 1 };
                for row in first..end {
                    read_rows.push(row as u32);
                    read_owner.push(i);
                    reads.push(l.read);
                }
            }
            tokens.extend_from_slice(&seg_tokens[i]);
            parts.push((u.stem.len(), u.leaves.iter().map(|l| l.tokens.len()).collect::<Vec<_>>()));
        }
        let mask = grouped_tree_mask(base, &parts, device)?;
        offset += tokens.len();
        segs.push(Segment { past: units[group[0]].parent, tokens, positions, mask });
    }
    Ok(Layout { segs, read_rows, read_owner, reads, placed, busy })
}

/// The segments of the `busy` units: one per unit, or (`together`) one per set of units on the
/// same parent, whose attention then runs as one, under a mask that keeps each unit to its
/// parent and its own tokens — fewer, larger kernels, which is what a GPU wants.
fn group(units: &[Unit<'_>], busy: &[usize], together: bool) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &i in busy {
        let same = |g: &&mut Vec<usize>| units[g[0]].parent.same_as(units[i].parent);
        match groups.iter_mut().find(|g| together && same(g)) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// The units whose stem the pass keeps, each as `(unit, first row in the pass, stem length)`.
fn kept_stems(
    units: &[Unit<'_>],
    busy: &[usize],
    placed: &[(usize, usize)],
    seg_lens: &[usize],
) -> Vec<(usize, usize, usize)> {
    let mut seg_start = Vec::with_capacity(seg_lens.len());
    let mut acc = 0;
    for &n in seg_lens {
        seg_start.push(acc);
        acc += n;
    }
    busy.iter()
        .filter(|&&i| !units[i].stem.is_empty() && units[i].keep)
        .map(|&i| (i, seg_start[placed[i].0] + placed[i].1, units[i].stem.len()))
        .collect()
}

/// Which new keys and values the forward returns for the `kept` stems: the kept stems' keys and
/// values, `[kv_heads, n, hd]` each, in one gather a layer for all of them inside the forward
/// (rows `(unit, head, token)`, each unit's block contiguous), not a copy a unit.
fn keep_of(model: &Transformer, kept: &[(usize, usize, usize)], rows_total: usize) -> Result<KeepKv> {
    Ok(match kept {
        [] => KeepKv::Nothing,
        &[(_, 0, n)] if n == rows_total => KeepKv::All,
        _ => {
            let blocks: Vec<(usize, usize)> = kept.iter().map(|&(_, at, n)| (at, n)).collect();
            let idx = block_head_rows(&blocks, model.cfg.num_kv_heads, rows_total);
            let ends = kept.iter().map(|&(_, at, n)| at + n - 1).collect();
            KeepKv::Rows(Tensor::from_slice(&idx, idx.len(), &model.device)?, ends)
        }
    })
}

/// The forward's new keys and values (`keep` of them, per layer) cut into each kept unit's.
fn split_kept(
    model: &Transformer,
    keep: &KeepKv,
    kept: &[(usize, usize, usize)],
    new_kv: Vec<LayerKv>,
) -> Result<Vec<(usize, Vec<LayerKv>)>> {
    let (kvh, hd) = (model.cfg.num_kv_heads, model.cfg.head_dim);
    Ok(match keep {
        KeepKv::Nothing => vec![],
        // One unit is the whole pass: its keys and values as they are.
        KeepKv::All => vec![(kept[0].0, new_kv)],
        // Each kept unit's block of the gathered rows.
        KeepKv::Rows(..) => {
            let mut off = 0;
            let mut out = Vec::with_capacity(kept.len());
            for (u, &(i, _, n)) in kept.iter().enumerate() {
                let layers = new_kv
                    .iter()
                    .zip(&model.layers)
                    .map(|(l, layer)| match matches!(layer.mixer, Mixer::Delta(_)) {
                        // A recurrent layer's states, one a unit (`model::DeltaNet`).
                        true => {
                            let (conv, heads) = (l.k.dim(0)? / kept.len(), l.v.dim(0)? / kept.len());
                            Ok(LayerKv { k: l.k.narrow(0, u * conv, conv)?, v: l.v.narrow(0, u * heads, heads)? })
                        }
                        false => Ok(LayerKv {
                            k: l.k.narrow(0, off, kvh * n)?.reshape((kvh, n, hd))?,
                            v: l.v.narrow(0, off, kvh * n)?.reshape((kvh, n, hd))?,
                        }),
                    })
                    .collect::<candle_core::Result<Vec<_>>>()?;
                off += kvh * n;
                out.push((i, layers));
            }
            out
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Suffix;

    #[test]
    fn units_on_one_parent_share_a_segment_only_when_grouped() {
        let root = Prefix::empty();
        let other = root.push(vec![], &[1, 2]);
        let read = [9u32];
        let leaf = |t: &'static [u32]| Suffix { tokens: t, read: &read };
        let units = [
            Unit { parent: &root, stem: &[3, 4], leaves: vec![leaf(&[5]), leaf(&[6, 7])], keep: true },
            Unit { parent: &other, stem: &[8], leaves: vec![], keep: true },
            Unit { parent: &root, stem: &[], leaves: vec![leaf(&[10])], keep: false },
            Unit { parent: &root, stem: &[], leaves: vec![], keep: true },
        ];
        let opts = |group_units| PassOptions { prune_head: false, trim: true, pass_tokens: 64, group_units };
        let apart = lay_out(&units, &[], opts(false), false, 100, &Device::Cpu).unwrap();
        assert_eq!(apart.busy, vec![0, 1, 2]);
        assert_eq!(
            apart.segs.iter().map(|g| g.tokens.clone()).collect::<Vec<_>>(),
            [vec![3, 4, 5, 6, 7], vec![8], vec![10]]
        );
        // Each leaf's last row, in pass rows; positions go on from the parent, leaves after the stem.
        assert_eq!((apart.read_rows, apart.read_owner), (vec![2, 4, 6], vec![0, 0, 2]));
        assert_eq!(apart.segs[0].positions, vec![0, 1, 2, 2, 3]);
        assert_eq!(apart.segs[1].positions, vec![2]);
        let together = lay_out(&units, &[], opts(true), true, 100, &Device::Cpu).unwrap();
        assert_eq!(together.segs.len(), 2);
        assert_eq!(together.segs[0].tokens, vec![3, 4, 5, 6, 7, 10]);
        assert_eq!(together.placed[..3], [(0, 0), (1, 0), (0, 5)]);
        // Every row of every leaf when every row is read.
        assert_eq!(together.read_rows, vec![2, 3, 4, 5]);
        // Stem rows asked: read before the unit's leaves, at the stem's place in the pass.
        let none = StemRead::default();
        let stems = [StemRead { rows: &[0, 1], read: &read }, none.clone(), none.clone(), none];
        let with = lay_out(&units, &stems, opts(true), true, 100, &Device::Cpu).unwrap();
        assert_eq!((with.read_rows, with.read_owner), (vec![0, 1, 2, 3, 4, 5], vec![0, 0, 0, 0, 0, 2]));
        let past =
            [StemRead { rows: &[2], read: &read }, StemRead::default(), StemRead::default(), StemRead::default()];
        assert!(lay_out(&units, &past, opts(true), true, 100, &Device::Cpu).is_err());
        let seg_lens: Vec<usize> = together.segs.iter().map(|g| g.tokens.len()).collect();
        assert_eq!(kept_stems(&units, &together.busy, &together.placed, &seg_lens), vec![(0, 0, 2), (1, 6, 1)]);
        // The longest leaf counts against the context: the parent, the stem and it.
        let long = lay_out(&units, &[], opts(true), false, 3, &Device::Cpu).err().map(|e| e.to_string());
        assert_eq!(long.as_deref(), Some("prompt has 4 tokens but the model's context holds 3; shorten the text"));
    }
}
