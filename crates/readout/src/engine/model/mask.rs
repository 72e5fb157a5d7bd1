//! The masks of a pass: which keys each new token sees. A tree mask lets several suffixes share
//! one pass over a cached prefix (each sees the prefix, its unit's stem and its own earlier
//! tokens), several units on one parent share one segment, and Gemma 3's local layers cut the
//! tree mask to their sliding window. Additive masks: 0 where a key is seen, −∞ where not.

use super::Segment;
use candle_core::{DType, Device, Tensor};

/// Additive mask for a stem of `stem` tokens followed by `groups` of leaf tokens, over a
/// prefix of `past` tokens: stem tokens see the prefix and the earlier stem tokens; a leaf
/// token sees the prefix, the whole stem and the earlier tokens of its own group. It is
/// [`grouped_tree_mask`] of one unit.
pub(crate) fn stem_tree_mask(
    past: usize,
    stem: usize,
    groups: &[usize],
    device: &Device,
) -> candle_core::Result<Tensor> {
    grouped_tree_mask(past, &[(stem, groups.to_vec())], device)
}

/// The additive mask of several units computed on one parent of `past` tokens, their tokens
/// one after the other: each unit's rows see the parent and, among the new tokens, only their
/// own unit's, laid out as in [`stem_tree_mask`]. `parts` holds each unit's stem
/// length and leaf lengths.
pub(crate) fn grouped_tree_mask(
    past: usize,
    parts: &[(usize, Vec<usize>)],
    device: &Device,
) -> candle_core::Result<Tensor> {
    let s: usize = parts.iter().map(|(stem, lens)| stem + lens.iter().sum::<usize>()).sum();
    let t = past + s;
    let mut m = vec![f32::NEG_INFINITY; s * t];
    let mut off = 0;
    for (stem, lens) in parts {
        let own = past + off; // this unit's first column
        for i in 0..*stem {
            let row = (off + i) * t;
            m[row..row + past].fill(0.0);
            m[row + own..row + own + i + 1].fill(0.0);
        }
        let mut start = *stem;
        for &g in lens {
            for i in 0..g {
                let row = (off + start + i) * t;
                m[row..row + past].fill(0.0);
                m[row + own..row + own + stem].fill(0.0);
                m[row + own + start..row + own + start + i + 1].fill(0.0);
            }
            start += g;
        }
        off += start;
    }
    Tensor::from_vec(m, (s, t), device)
}

/// A segment's tree mask cut to a sliding window of `window` positions: a token at position `p`
/// keeps the keys at positions `q` with `p − q < window` (llama.cpp masks `p − q ≥ window`).
/// The past's keys are at positions `0..past` (a prefix is one path from the root), the
/// segment's own at `seg.positions`; the tree mask already hides every key off a token's path,
/// so along the path the window is a matter of positions alone. `None` when no key the tree
/// shows is that far back (the tree mask is then the window's too).
fn window_mask(seg: &Segment<'_>, window: usize, device: &Device) -> candle_core::Result<Option<Tensor>> {
    let past = seg.past.len();
    let pos = &seg.positions;
    let (Some(&hi), Some(&lo)) = (pos.iter().max(), pos.iter().min()) else { return Ok(None) };
    let oldest = if past > 0 { 0 } else { lo as usize };
    if (hi as usize) - oldest < window {
        return Ok(None);
    }
    let t = past + pos.len();
    let mut far = vec![0f32; pos.len() * t];
    for (row, &p) in far.chunks_exact_mut(t).zip(pos) {
        let p = p as usize;
        // Columns of the past are positions 0..past; those before p + 1 − window are out.
        let cut = (p + 1).saturating_sub(window).min(past);
        row[..cut].fill(f32::NEG_INFINITY);
        for (c, &q) in row[past..].iter_mut().zip(pos) {
            if (q as usize) + window <= p {
                *c = f32::NEG_INFINITY;
            }
        }
    }
    let far = Tensor::from_vec(far, (pos.len(), t), device)?;
    Ok(Some((&seg.mask + far)?))
}

/// The masks of one pass's segments, in the forms its attention takes them.
pub(crate) struct Masks {
    /// Each segment's mask for the local layers, where the window cuts its tree mask.
    local: Vec<Option<Tensor>>,
    /// Each segment's tree mask and local mask as `[1, 1, n, T]`, for candle's broadcasting add
    /// (made off the CPU, whose softmax takes the `[n, T]` masks as they are).
    broadcast: Vec<Tensor>,
    local_broadcast: Vec<Option<Tensor>>,
}

impl Masks {
    /// The masks of `segs`: cut to `window` for the local layers (`None`: the model has none),
    /// and in the broadcasting form too when `broadcast`.
    pub(crate) fn new(
        segs: &[Segment<'_>],
        window: Option<usize>,
        broadcast: bool,
        device: &Device,
    ) -> candle_core::Result<Self> {
        let local: Vec<Option<Tensor>> = match window {
            Some(w) => segs.iter().map(|seg| window_mask(seg, w, device)).collect::<candle_core::Result<_>>()?,
            None => vec![None; segs.len()],
        };
        // [1, 1, s, T]
        let for_device = |m: &Tensor| m.unsqueeze(0)?.unsqueeze(0);
        let (broadcast, local_broadcast) = if broadcast {
            (
                segs.iter().map(|g| for_device(&g.mask)).collect::<candle_core::Result<_>>()?,
                local.iter().map(|m| m.as_ref().map(for_device).transpose()).collect::<candle_core::Result<_>>()?,
            )
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(Masks { local, broadcast, local_broadcast })
    }

    /// The mask `[n, T]` segment `gi` (`seg`) attends under on a layer: the window's on a local
    /// layer where it cuts, the tree mask otherwise.
    pub(crate) fn of<'a>(&'a self, seg: &'a Segment<'_>, gi: usize, local: bool) -> &'a Tensor {
        match (local, &self.local[gi]) {
            (true, Some(m)) => m,
            _ => &seg.mask,
        }
    }

    /// [`Masks::of`] as `[1, 1, n, T]` (made only when asked for in [`Masks::new`]).
    pub(crate) fn broadcast(&self, gi: usize, local: bool) -> &Tensor {
        match (local, &self.local_broadcast[gi]) {
            (true, Some(m)) => m,
            _ => &self.broadcast[gi],
        }
    }
}

/// Each row's parent in a segment whose mask is `mask` (`[n, past + n]`, additive): the last
/// earlier new token it sees, or `None` when it sees none (it follows the prefix).
pub(crate) fn parents(mask: &Tensor, past: usize) -> candle_core::Result<Vec<Option<usize>>> {
    let m = mask.to_device(&Device::Cpu)?.to_dtype(DType::F32)?.to_vec2::<f32>()?;
    Ok(m.iter()
        .enumerate()
        .map(|(i, row)| (0..i).rev().find(|&j| row.get(past + j).is_some_and(|v| v.is_finite())))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_follows_the_last_new_token_it_sees() {
        // A stem of 2 on a prefix of 1, then two leaves of 1 and 2 tokens.
        let mask = stem_tree_mask(1, 2, &[1, 2], &Device::Cpu).unwrap();
        assert_eq!(parents(&mask, 1).unwrap(), vec![None, Some(0), Some(1), Some(1), Some(3)]);
    }
    use crate::engine::kv::Prefix;

    #[test]
    fn the_window_cuts_the_tree_mask_by_position() {
        // A past of 3 tokens (positions 0, 1, 2); a stem of 1 (position 3), then leaves of 2
        // (positions 4, 5) and 1 (position 4). Window 2: a token sees itself and one back.
        let past = Prefix::empty().push(vec![], &[7, 7, 7]);
        let mask = stem_tree_mask(3, 1, &[2, 1], &Device::Cpu).unwrap();
        let seg = Segment { past: &past, tokens: vec![1, 2, 3, 4], positions: vec![3, 4, 5, 4], mask };
        let m: Vec<Vec<f32>> = window_mask(&seg, 2, &Device::Cpu).unwrap().unwrap().to_vec2().unwrap();
        let seen = |r: usize| m[r].iter().map(|x| x.is_finite() as u8).collect::<Vec<_>>();
        // columns: past 0 1 2 | stem 3 | leaf one 4 5 | leaf two 4
        assert_eq!(seen(0), vec![0, 0, 1, 1, 0, 0, 0]);
        assert_eq!(seen(1), vec![0, 0, 0, 1, 1, 0, 0]);
        assert_eq!(seen(2), vec![0, 0, 0, 0, 1, 1, 0]);
        assert_eq!(seen(3), vec![0, 0, 0, 1, 0, 0, 1]);
        // Window 6: nothing is that far back, and the tree mask is used as it is.
        assert!(window_mask(&seg, 6, &Device::Cpu).unwrap().is_none());
        // Window 3 reaches position 0 only from position 3 on: still a cut.
        let m: Vec<Vec<f32>> = window_mask(&seg, 3, &Device::Cpu).unwrap().unwrap().to_vec2().unwrap();
        assert_eq!(m[0].iter().map(|x| x.is_finite() as u8).collect::<Vec<_>>(), vec![0, 1, 1, 1, 0, 0, 0]);
    }

    #[test]
    fn tree_mask_shapes_and_visibility() {
        let m = stem_tree_mask(2, 0, &[2, 1], &Device::Cpu).unwrap();
        let v: Vec<Vec<f32>> = m.to_vec2().unwrap();
        let seen = |r: usize| v[r].iter().map(|x| x.is_finite() as u8).collect::<Vec<_>>();
        assert_eq!(seen(0), vec![1, 1, 1, 0, 0]);
        assert_eq!(seen(1), vec![1, 1, 1, 1, 0]);
        assert_eq!(seen(2), vec![1, 1, 0, 0, 1]);
    }

    #[test]
    fn stem_tree_mask_leaves_see_the_stem() {
        // past 1, stem 2, leaves of 1 and 2 tokens.
        let m = stem_tree_mask(1, 2, &[1, 2], &Device::Cpu).unwrap();
        let v: Vec<Vec<f32>> = m.to_vec2().unwrap();
        let seen = |r: usize| v[r].iter().map(|x| x.is_finite() as u8).collect::<Vec<_>>();
        assert_eq!(seen(0), vec![1, 1, 0, 0, 0, 0]);
        assert_eq!(seen(1), vec![1, 1, 1, 0, 0, 0]);
        assert_eq!(seen(2), vec![1, 1, 1, 1, 0, 0]);
        assert_eq!(seen(3), vec![1, 1, 1, 0, 1, 0]);
        assert_eq!(seen(4), vec![1, 1, 1, 0, 1, 1]);
    }
    #[test]
    fn a_group_of_one_is_the_stem_tree_mask() {
        for (past, stem, lens) in [(2, 0, vec![2, 1]), (1, 2, vec![1, 2]), (0, 3, vec![]), (4, 1, vec![3])] {
            let a: Vec<Vec<f32>> = stem_tree_mask(past, stem, &lens, &Device::Cpu).unwrap().to_vec2().unwrap();
            let b: Vec<Vec<f32>> =
                grouped_tree_mask(past, &[(stem, lens.clone())], &Device::Cpu).unwrap().to_vec2().unwrap();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn grouped_units_see_the_parent_and_only_their_own_tokens() {
        // past 1; unit one: stem 1, a leaf of 1; unit two: no stem, leaves of 1 and 1.
        let m: Vec<Vec<f32>> =
            grouped_tree_mask(1, &[(1, vec![1]), (0, vec![1, 1])], &Device::Cpu).unwrap().to_vec2().unwrap();
        let seen = |r: usize| m[r].iter().map(|x| x.is_finite() as u8).collect::<Vec<_>>();
        assert_eq!(seen(0), vec![1, 1, 0, 0, 0]);
        assert_eq!(seen(1), vec![1, 1, 1, 0, 0]);
        assert_eq!(seen(2), vec![1, 0, 0, 1, 0]);
        assert_eq!(seen(3), vec![1, 0, 0, 0, 1]);
    }
}
