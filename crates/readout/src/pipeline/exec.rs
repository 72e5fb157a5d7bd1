//! The pipeline's third stage: walking the prompt tree through the model. The walk decides which
//! units of the tree go into which forward pass (as many as fit in `pass_tokens`), keeps the
//! keys and values of the current path only, skips the units a resumed job has already read,
//! and stops between passes when asked. Generation (`--mode generate`) decodes a leaf at a time.
//!
//! The walk sees the model through [`Forward`], a small trait the [`Engine`] implements; the
//! tests below drive it with a fake model that records every pass.

use crate::config::{Mode, RunConfig};
use crate::engine::{Engine, PassOptions, Prefix, Readout, Suffix};
use crate::error::Result;
use crate::math::argmax;
use crate::pipeline::plan::{build_trie, Prompt, TrieNode};
use std::collections::{HashMap, HashSet};

/// One unit of a pass: compute `stem` on top of `parent`, and read the letters at the end of
/// each leaf (see [`crate::engine::Unit`]).
pub struct Unit<'a, P> {
    pub parent: &'a P,
    pub stem: &'a [u32],
    pub leaves: Vec<Suffix<'a>>,
    /// Whether the walk goes on from this unit's prefix.
    pub keep: bool,
}

/// What a unit gives back: the parent extended by the stem, and one readout per leaf.
pub struct UnitOut<P> {
    pub prefix: P,
    pub readouts: Vec<Readout>,
}

/// What the walk needs from a model.
pub trait Forward: Sync {
    /// Computed tokens whose keys and values later tokens attend to.
    type Prefix: Clone + Send + Sync;
    /// The empty prefix.
    fn root(&self) -> Self::Prefix;
    /// `tokens` computed on top of `parent`, in passes of at most `opts.pass_tokens`.
    fn extend(&self, parent: &Self::Prefix, tokens: &[u32], opts: PassOptions) -> Result<Self::Prefix>;
    /// The letters read at the end of each suffix on `prefix`, in passes of at most `opts.pass_tokens`.
    fn read(&self, prefix: &Self::Prefix, suffixes: &[Suffix<'_>], opts: PassOptions) -> Result<Vec<Readout>>;
    /// One forward pass over several units.
    fn pass(&self, units: &[Unit<'_, Self::Prefix>], opts: PassOptions) -> Result<Vec<UnitOut<Self::Prefix>>>;
    /// Two passes; the engine runs them side by side.
    #[allow(clippy::type_complexity)]
    fn pass_pair(
        &self,
        a: &[Unit<'_, Self::Prefix>],
        b: &[Unit<'_, Self::Prefix>],
        opts: PassOptions,
    ) -> (Result<Vec<UnitOut<Self::Prefix>>>, Result<Vec<UnitOut<Self::Prefix>>>) {
        (self.pass(a, opts), self.pass(b, opts))
    }
    /// Full next-token logits after `tokens` on `prefix`, and the extended prefix (generation).
    fn next_logits(&self, prefix: &Self::Prefix, tokens: &[u32]) -> Result<(Self::Prefix, Vec<f32>)>;
    /// Token ids that end a generated reply.
    fn stop_tokens(&self) -> Vec<u32>;
    /// Text of generated token ids.
    fn decode(&self, ids: &[u32]) -> Result<String>;
}

fn engine_units<'a>(units: &'a [Unit<'a, Prefix>]) -> Vec<crate::engine::Unit<'a>> {
    units
        .iter()
        .map(|u| crate::engine::Unit { parent: u.parent, stem: u.stem, leaves: u.leaves.clone(), keep: u.keep })
        .collect()
}

fn exec_outs(outs: Vec<crate::engine::UnitOut>) -> Vec<UnitOut<Prefix>> {
    outs.into_iter().map(|o| UnitOut { prefix: o.prefix, readouts: o.readouts }).collect()
}

impl Forward for Engine {
    type Prefix = Prefix;
    fn root(&self) -> Prefix {
        Prefix::empty()
    }
    fn extend(&self, parent: &Prefix, tokens: &[u32], opts: PassOptions) -> Result<Prefix> {
        self.extend_with(parent, tokens, opts)
    }
    fn read(&self, prefix: &Prefix, suffixes: &[Suffix<'_>], opts: PassOptions) -> Result<Vec<Readout>> {
        self.read_with(prefix, suffixes, opts)
    }
    fn pass(&self, units: &[Unit<'_, Prefix>], opts: PassOptions) -> Result<Vec<UnitOut<Prefix>>> {
        Ok(exec_outs(self.pass_with(&engine_units(units), opts)?))
    }
    fn pass_pair(
        &self,
        a: &[Unit<'_, Prefix>],
        b: &[Unit<'_, Prefix>],
        opts: PassOptions,
    ) -> (Result<Vec<UnitOut<Prefix>>>, Result<Vec<UnitOut<Prefix>>>) {
        let (x, y) = Engine::pass_pair(self, &engine_units(a), &engine_units(b), opts);
        (x.map(exec_outs), y.map(exec_outs))
    }
    fn next_logits(&self, prefix: &Prefix, tokens: &[u32]) -> Result<(Prefix, Vec<f32>)> {
        Engine::next_logits(self, prefix, tokens)
    }
    fn stop_tokens(&self) -> Vec<u32> {
        ["<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>", "<end_of_turn>", "<eos>"]
            .iter()
            .filter_map(|t| self.tokenizer().token_id(t))
            .collect()
    }
    fn decode(&self, ids: &[u32]) -> Result<String> {
        self.tokenizer().decode(ids)
    }
}

/// What was read for one prompt.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    /// The letters' logits (readout).
    pub logits: Vec<f32>,
    /// Share of the full next-token distribution on the letters.
    pub mass: Option<f32>,
    /// The generated reply, and the option slot parsed from it (generate).
    pub reply: Option<String>,
    pub parsed: Option<usize>,
}

/// Called after every pass with the prompts it read; returns false to stop the walk.
pub type OnBatch<'a> = dyn FnMut(&[usize], &HashMap<usize, Reading>) -> Result<bool> + 'a;

/// Tokens one [`exec`] call put through the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Tokens that went through the model.
    pub computed: usize,
    /// Tokens in the prompt tree (each shared prefix once).
    pub unique: usize,
    /// Whether `on_batch` stopped the walk.
    pub stopped: bool,
}

/// Read the prompts `idx` of `prompts` as one tree, every one that `done` does not say is read
/// already (a resumed job). The tree is built from all of `idx`, done or not, and every unit with
/// something left to read is computed whole, as an uninterrupted job computes it; units with
/// nothing left are skipped, so what is read is bit for bit what an uninterrupted job reads.
#[allow(clippy::too_many_arguments)]
pub fn exec<F: Forward>(
    model: &F,
    config: &RunConfig,
    opts: PassOptions,
    prompts: &[Prompt],
    idx: &[usize],
    shape: Shape<'_>,
    done: &dyn Fn(usize) -> bool,
    readings: &mut HashMap<usize, Reading>,
    on_batch: &mut OnBatch<'_>,
) -> Result<Work> {
    if idx.iter().all(|&pi| done(pi)) {
        return Ok(Work::default());
    }
    let seqs: Vec<&[u32]> = idx.iter().map(|&i| prompts[i].tokens.as_slice()).collect();
    let flat = config.mode == Mode::Readout && !config.levers.prefix_tree;
    let roots: Vec<TrieNode> = match shape {
        // Lever off: every prompt from scratch, nothing shared.
        _ if flat => (0..seqs.len())
            .map(|i| TrieNode { rep: i, start: 0, end: seqs[i].len(), children: vec![], prompts: vec![i] })
            .collect(),
        Shape::Trie => vec![build_trie(&seqs)],
        Shape::Requests { request_of, head } => {
            let letters = |p: usize| prompts[idx[p]].letters.as_slice();
            request_forest(&seqs, &idx.iter().map(|&pi| request_of[pi]).collect::<Vec<_>>(), head, &letters)
        }
    };
    let unique = roots.iter().map(TrieNode::unique_tokens).sum();
    let mut wanted = HashSet::new();
    for root in &roots {
        mark_wanted(root, &|p| !done(idx[p]), &mut wanted);
    }
    let side_by_side = config.levers.side_by_side.unwrap_or(false);
    let mut walk =
        Walk { model, config, opts, prompts, idx, seqs: &seqs, wanted, readings, on_batch, computed: 0, side_by_side };
    let root = model.root();
    // A root that is a leaf (a prompt with nothing to share) is read on the empty prefix.
    let (leaves, inner): (Vec<&TrieNode>, Vec<&TrieNode>) = roots.iter().partition(|r| r.is_leaf());
    let mut finished = leaves.is_empty() || walk.read_leaves(&root, &leaves)?;
    if finished {
        finished = if config.mode == Mode::Readout {
            walk.walk(&inner, root)?
        } else {
            let mut go_on = true;
            for r in inner {
                go_on = walk.node(r, &root)?;
                if !go_on {
                    break;
                }
            }
            go_on
        };
    }
    Ok(Work { computed: walk.computed, unique, stopped: !finished })
}

/// How [`exec`] arranges its prompts into trees.
#[derive(Debug, Clone, Copy)]
pub enum Shape<'a> {
    /// One prompt tree over every prompt: the most sharing (a run).
    Trie,
    /// Prompts of several scoring requests (`request_of[prompt]`), each request's as the tree it
    /// has alone, cut after its first `head` tokens (the system turn; fewer where the request's
    /// prompts share fewer): units that are the same in two requests are computed once, the
    /// rest share passes. See [`request_forest`] for why the trees are not simply joined.
    Requests { request_of: &'a [usize], head: usize },
}

/// The trees of [`Shape::Requests`]: each request's prompts as one tree whose root is the
/// head (at most `head` tokens that all its prompts share), then its own prompt tree; then
/// units equal in every input (the same path from the root, the same stem, the same leaves
/// reading the same letters) merged, from the roots down.
///
/// Why not one prompt tree over every request's prompts: a tree's shape decides each unit's
/// stem and leaves, and a unit's numbers depend on them — the attention's softmax and its
/// product with the values sum over every key of the unit's segment, masked or not, in lanes
/// and blocks set by the segment's length, so a key that moves to another position (because a
/// stem was cut shorter where another request's prompt branches off, or a sibling leaf joined)
/// changes the rounding. Here a request's units are exactly those it has alone, and a unit's
/// numbers do not depend on which units share its pass, so every answer is bit for bit the
/// answer the request gets alone.
pub fn request_forest<'s>(
    seqs: &[&[u32]],
    request_of: &[usize],
    head: usize,
    letters: &dyn Fn(usize) -> &'s [u32],
) -> Vec<TrieNode> {
    let mut order: Vec<usize> = Vec::new();
    let mut members: HashMap<usize, Vec<usize>> = HashMap::new();
    for (p, &r) in request_of.iter().enumerate() {
        members
            .entry(r)
            .or_insert_with(|| {
                order.push(r);
                Vec::new()
            })
            .push(p);
    }
    let mut roots: Vec<TrieNode> = Vec::new();
    for r in order {
        let idx = members.remove(&r).unwrap_or_default();
        let tree = crate::pipeline::plan::build_trie_with_head(seqs, idx, head);
        merge_unit(&mut roots, tree, seqs, letters);
    }
    roots
}

/// Put `n` among `nodes`: into a node that is the same unit (its leaves' prompts joined, its
/// inner children merged in turn), else beside them.
fn merge_unit<'s>(nodes: &mut Vec<TrieNode>, n: TrieNode, seqs: &[&[u32]], letters: &dyn Fn(usize) -> &'s [u32]) {
    let tokens = |t: &TrieNode| &seqs[t.rep][t.start..t.end];
    let leaves = |t: &TrieNode| t.children.iter().filter(|c| c.is_leaf()).map(|c| c.rep).collect::<Vec<_>>();
    let same = |a: &TrieNode| {
        let (la, ln) = (leaves(a), leaves(&n));
        !a.is_leaf()
            && !n.is_leaf()
            && a.start == n.start
            && tokens(a) == tokens(&n)
            && la.len() == ln.len()
            && a.children.iter().filter(|c| c.is_leaf()).zip(n.children.iter().filter(|c| c.is_leaf())).all(|(x, y)| {
                x.start == y.start && tokens(x) == tokens(y) && letters(x.prompts[0]) == letters(y.prompts[0])
            })
    };
    let Some(at) = nodes.iter().position(same) else {
        nodes.push(n);
        return;
    };
    let (n_leaves, n_inner): (Vec<TrieNode>, Vec<TrieNode>) = n.children.into_iter().partition(TrieNode::is_leaf);
    let target = &mut nodes[at];
    for (mine, theirs) in target.children.iter_mut().filter(|c| c.is_leaf()).zip(n_leaves) {
        mine.prompts.extend(theirs.prompts);
    }
    for c in n_inner {
        merge_unit(&mut target.children, c, seqs, letters);
    }
}

/// Collect the nodes with a prompt left to read at or below them. Returns whether `n` is one.
fn mark_wanted(n: &TrieNode, want: &dyn Fn(usize) -> bool, out: &mut HashSet<*const TrieNode>) -> bool {
    let mut any = n.prompts.iter().any(|&p| want(p));
    for c in &n.children {
        any |= mark_wanted(c, want, out);
    }
    if any {
        out.insert(n as *const TrieNode);
    }
    any
}

struct Walk<'a, 'b, F: Forward> {
    model: &'a F,
    config: &'a RunConfig,
    opts: PassOptions,
    prompts: &'a [Prompt],
    idx: &'a [usize],
    seqs: &'a [&'a [u32]],
    /// Nodes with a prompt left to read at or below them (see `mark_wanted`).
    wanted: HashSet<*const TrieNode>,
    readings: &'a mut HashMap<usize, Reading>,
    on_batch: &'a mut OnBatch<'b>,
    computed: usize,
    /// Two passes at a time (CPU with more than one thread; see `walk`).
    side_by_side: bool,
}

type Pending<'n, P> = (&'n TrieNode, P);

impl<F: Forward> Walk<'_, '_, F> {
    /// The readout's walk of the prompt tree, depth first, in passes of up to `pass_tokens`
    /// new tokens. A unit is an inner node: its own tokens (the stem) computed on its parent's
    /// prefix, with its leaf children read in the same pass under a tree mask. A pass takes as
    /// many pending units as fit, so units of different parents (the states of several items,
    /// the questions of several rows) share one set of matmuls.
    ///
    /// Cache policy: the pending units form the frontier of the depth-first walk; each holds its
    /// parent's prefix, whose chunks are shared with its siblings, so memory is the keys and
    /// values of the current path plus one stem per pending unit.
    ///
    /// A unit's numbers depend only on the unit (attention runs per unit; the matmuls sum each
    /// output in an order fixed by the weights' shape), not on which units share its pass, so
    /// skipping the units with nothing left to read (a resumed run) changes no other unit's bits.
    /// `on_batch` is called after every pass, and after every chunk of a large unit's leaves.
    fn walk<'n>(&mut self, roots: &[&'n TrieNode], empty: F::Prefix) -> Result<bool> {
        let budget = if self.config.levers.batched_suffixes { self.opts.pass_tokens } else { 0 };
        let mut stack: Vec<Pending<'n, F::Prefix>> =
            roots.iter().rev().filter(|r| self.is_wanted(r)).map(|&r| (r, empty.clone())).collect();
        while !stack.is_empty() {
            let (batch, total) = self.take_batch(&mut stack, budget);
            if self.is_alone(&batch, total, budget) {
                // One unit alone: its stem in chunks, then its leaves in passes of their own,
                // each followed by `on_batch` (so the rows of a large unit finish as they are read).
                let (n, parent) = &batch[0];
                // The stem in passes, each followed by `on_batch` with nothing read: a long
                // state stops between its passes (a server's request past its deadline), not
                // only once all of it is computed. The passes are those `extend` makes of the
                // whole stem, so the bits are the same.
                let mut prefix = parent.clone();
                for chunk in self.seqs[n.rep][n.start..n.end].chunks(self.opts.pass_tokens.max(1)) {
                    prefix = self.model.extend(&prefix, chunk, self.opts)?;
                    if !(self.on_batch)(&[], self.readings)? {
                        return Ok(false);
                    }
                }
                self.computed += n.end - n.start;
                let leaves: Vec<&TrieNode> = n.children.iter().filter(|c| c.is_leaf()).collect();
                for chunk in self.leaf_chunks(&leaves) {
                    if !chunk.iter().any(|l| self.is_wanted(l)) {
                        continue;
                    }
                    let suffixes: Vec<Suffix<'_>> = chunk.iter().map(|l| self.leaf_suffix(l)).collect();
                    let read = self.model.read(&prefix, &suffixes, self.opts)?;
                    self.computed += chunk.iter().map(|l| l.end - l.start).sum::<usize>();
                    let mut read_now: Vec<usize> = Vec::new();
                    for (l, r) in chunk.iter().zip(read) {
                        self.record(l, &r, &mut read_now);
                    }
                    if !(self.on_batch)(&read_now, self.readings)? {
                        return Ok(false);
                    }
                }
                let inner = n.children.iter().filter(|c| !c.is_leaf() && self.is_wanted(c));
                let next: Vec<Pending<'_, F::Prefix>> = inner.map(|c| (c, prefix.clone())).collect();
                stack.extend(next.into_iter().rev());
                continue;
            }
            // On a CPU of several cores, a second pass from the frontier runs beside this one:
            // each pass has steps that run on one core (copies, the attention's small products),
            // and the other pass's work fills the idle core. Both passes' parents are computed
            // already, and a unit's numbers do not depend on its pass, so the bits are the same.
            let mut second = None;
            if self.side_by_side && !stack.is_empty() {
                let (b2, t2) = self.take_batch(&mut stack, budget);
                if self.is_alone(&b2, t2, budget) {
                    stack.extend(b2.into_iter().rev());
                } else {
                    second = Some((b2, t2));
                }
            }
            let units = self.units(&batch);
            let (outs, outs2) = match &second {
                None => (self.model.pass(&units, self.opts)?, None),
                Some((b2, _)) => {
                    let units2 = self.units(b2);
                    let (a, b) = self.model.pass_pair(&units, &units2, self.opts);
                    (a?, Some(b?))
                }
            };
            drop(units);
            if !self.finish_pass(&batch, outs, total, &mut stack)? {
                return Ok(false);
            }
            if let (Some((b2, t2)), Some(outs2)) = (&second, outs2) {
                if !self.finish_pass(b2, outs2, *t2, &mut stack)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The next pass from the top of the frontier: as many pending units as fit in `budget`
    /// new tokens (at least one), and their token count.
    fn take_batch<'n>(
        &self,
        stack: &mut Vec<Pending<'n, F::Prefix>>,
        budget: usize,
    ) -> (Vec<Pending<'n, F::Prefix>>, usize) {
        let mut batch: Vec<Pending<'n, F::Prefix>> = Vec::new();
        let mut total = 0;
        while let Some((n, _)) = stack.last() {
            let cost = self.unit_tokens(n);
            if !batch.is_empty() && total + cost > budget {
                break;
            }
            total += cost;
            if let Some(item) = stack.pop() {
                batch.push(item);
            }
        }
        (batch, total)
    }

    /// Whether a batch is one unit that takes passes of its own (larger than a pass, or
    /// batching off).
    fn is_alone(&self, batch: &[Pending<'_, F::Prefix>], total: usize, budget: usize) -> bool {
        batch.len() == 1 && (total > budget || !self.config.levers.batched_suffixes)
    }

    fn units<'s>(&'s self, batch: &'s [Pending<'_, F::Prefix>]) -> Vec<Unit<'s, F::Prefix>> {
        batch
            .iter()
            .map(|(n, parent)| Unit {
                parent,
                stem: &self.seqs[n.rep][n.start..n.end],
                leaves: self.leaf_suffixes(n),
                // Only a node with an inner child still to read is gone on from.
                keep: n.children.iter().any(|c| !c.is_leaf() && self.is_wanted(c)),
            })
            .collect()
    }

    /// Record a pass's readouts, push its units' inner children (first child on top), and call
    /// `on_batch`; false when the caller asked to stop.
    fn finish_pass<'n>(
        &mut self,
        batch: &[Pending<'n, F::Prefix>],
        outs: Vec<UnitOut<F::Prefix>>,
        total: usize,
        stack: &mut Vec<Pending<'n, F::Prefix>>,
    ) -> Result<bool> {
        self.computed += total;
        let mut read_now: Vec<usize> = Vec::new();
        let mut next: Vec<Pending<'n, F::Prefix>> = Vec::new();
        for ((n, _), out) in batch.iter().zip(outs) {
            let leaves = n.children.iter().filter(|c| c.is_leaf());
            for (l, r) in leaves.zip(&out.readouts) {
                self.record(l, r, &mut read_now);
            }
            for c in n.children.iter().filter(|c| !c.is_leaf() && self.is_wanted(c)) {
                next.push((c, out.prefix.clone()));
            }
        }
        // Pushed in reverse so the first child is taken first.
        stack.extend(next.into_iter().rev());
        (self.on_batch)(&read_now, self.readings)
    }

    /// Whether a node has a prompt left to read at or below it.
    fn is_wanted(&self, n: &TrieNode) -> bool {
        self.wanted.contains(&(n as *const TrieNode))
    }

    /// A large unit's leaves in the passes [`Forward::read`] makes of them (as many as fit in a
    /// pass; one each with batching off), so that each chunk is one pass of its own.
    fn leaf_chunks<'n>(&self, leaves: &[&'n TrieNode]) -> Vec<Vec<&'n TrieNode>> {
        let max = if self.config.levers.batched_suffixes { self.opts.pass_tokens } else { 0 };
        let mut chunks: Vec<Vec<&TrieNode>> = Vec::new();
        let mut total = 0;
        for &l in leaves {
            let len = l.end - l.start;
            match chunks.last_mut() {
                Some(c) if total + len <= max => {
                    c.push(l);
                    total += len;
                }
                _ => {
                    chunks.push(vec![l]);
                    total = len;
                }
            }
        }
        chunks
    }

    /// New tokens a unit puts in a pass: its stem and its leaves.
    fn unit_tokens(&self, n: &TrieNode) -> usize {
        (n.end - n.start) + n.children.iter().filter(|c| c.is_leaf()).map(|c| c.end - c.start).sum::<usize>()
    }

    fn leaf_suffixes(&self, n: &TrieNode) -> Vec<Suffix<'_>> {
        n.children.iter().filter(|c| c.is_leaf()).map(|l| self.leaf_suffix(l)).collect()
    }

    /// A leaf as a suffix: its own tokens and the letters its prompts read.
    fn leaf_suffix(&self, l: &TrieNode) -> Suffix<'_> {
        Suffix { tokens: &self.seqs[l.rep][l.start..l.end], read: &self.prompts[self.idx[l.prompts[0]]].letters }
    }

    /// Store a leaf's readout for every prompt that ends at it (identical prompts share a leaf),
    /// unless the leaf was read again only because its unit had other leaves left to read.
    fn record(&mut self, l: &TrieNode, r: &Readout, read_now: &mut Vec<usize>) {
        if !self.is_wanted(l) {
            return;
        }
        for &p in &l.prompts {
            let pi = self.idx[p];
            self.readings.insert(pi, Reading { logits: r.logits.clone(), mass: r.letter_mass, ..Default::default() });
            read_now.push(pi);
        }
    }

    /// Compute a node's tokens, read its leaves in one batch, recurse into the rest (generation,
    /// and the readout with batching of units off). Returns false when the caller asked to stop.
    fn node(&mut self, node: &TrieNode, parent: &F::Prefix) -> Result<bool> {
        if !self.is_wanted(node) {
            return Ok(true);
        }
        let tokens = &self.seqs[node.rep][node.start..node.end];
        let prefix = self.model.extend(parent, tokens, self.opts)?;
        self.computed += tokens.len();
        let leaves: Vec<&TrieNode> = node.children.iter().filter(|c| c.is_leaf()).collect();
        if !leaves.is_empty() && !self.read_leaves(&prefix, &leaves)? {
            return Ok(false);
        }
        for child in node.children.iter().filter(|c| !c.is_leaf()) {
            if !self.node(child, &prefix)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Read leaves on their prefix: the readout in one `read`, generation one leaf at a time
    /// (each leaf its own decode, `on_batch` after each). Leaves with nothing left to read are
    /// skipped. Returns false when the caller asked to stop.
    fn read_leaves(&mut self, prefix: &F::Prefix, leaves: &[&TrieNode]) -> Result<bool> {
        match self.config.mode {
            Mode::Readout => {
                if !leaves.iter().any(|l| self.is_wanted(l)) {
                    return Ok(true);
                }
                let mut read_now: Vec<usize> = Vec::new();
                self.computed += leaves.iter().map(|l| l.end - l.start).sum::<usize>();
                let suffixes: Vec<Suffix<'_>> = leaves.iter().map(|l| self.leaf_suffix(l)).collect();
                let out = self.model.read(prefix, &suffixes, self.opts)?;
                for (l, r) in leaves.iter().zip(out) {
                    self.record(l, &r, &mut read_now);
                }
                (self.on_batch)(&read_now, self.readings)
            }
            Mode::Generate => {
                let wanted: Vec<&TrieNode> = leaves.iter().copied().filter(|l| self.is_wanted(l)).collect();
                for l in wanted {
                    let tokens = &self.seqs[l.rep][l.start..l.end];
                    let letters = &self.prompts[self.idx[l.prompts[0]]].letters;
                    let (reading, steps) = self.generate(prefix, tokens, letters.len())?;
                    self.computed += tokens.len() + steps;
                    let mut read_now: Vec<usize> = Vec::new();
                    for &p in &l.prompts {
                        let pi = self.idx[p];
                        self.readings.insert(pi, reading.clone());
                        read_now.push(pi);
                    }
                    if !(self.on_batch)(&read_now, self.readings)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    /// Greedy decoding of up to `max_new_tokens`; the first standalone valid letter is the answer.
    fn generate(&self, prefix: &F::Prefix, tokens: &[u32], n_options: usize) -> Result<(Reading, usize)> {
        let stop_ids = self.model.stop_tokens();
        let (mut cur, mut logits) = self.model.next_logits(prefix, tokens)?;
        let mut out: Vec<u32> = Vec::new();
        let mut steps = 0;
        for step in 0..self.config.max_new_tokens {
            let next = argmax(&logits.iter().map(|&x| x as f64).collect::<Vec<_>>()) as u32;
            if stop_ids.contains(&next) {
                break;
            }
            out.push(next);
            if step + 1 == self.config.max_new_tokens {
                break;
            }
            let (c, l) = self.model.next_logits(&cur, &[next])?;
            steps += 1;
            cur = c;
            logits = l;
        }
        let reply = self.model.decode(&out)?;
        let parsed = parse_letter(&reply, n_options);
        Ok((Reading { logits: vec![], mass: None, reply: Some(reply), parsed }, steps))
    }
}

/// The first capital letter standing alone (not inside a word) among the first `n` letters.
pub fn parse_letter(reply: &str, n: usize) -> Option<usize> {
    let chars: Vec<char> = reply.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_alphanumeric() {
            let before = i > 0 && chars[i - 1].is_alphanumeric();
            let after = i + 1 < chars.len() && chars[i + 1].is_alphanumeric();
            if !before && !after && c.is_ascii_uppercase() {
                let slot = (c as u8 - b'A') as usize;
                if slot < n {
                    return Some(slot);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    //! The walk driven by a fake model: a prefix is its tokens, a readout a hash of the whole
    //! sequence read, so every reading can be checked against what a plain forward pass of the
    //! full prompt gives, and every pass is logged.
    use super::*;
    use crate::pipeline::plan::Variant;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Fake {
        /// Per pass: (units, new tokens, leaves).
        passes: Mutex<Vec<(usize, usize, usize)>>,
    }

    /// The "logit" of `letter` after `seq`.
    fn logit(seq: &[u32], letter: u32) -> f32 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for &t in seq.iter().chain([letter].iter()) {
            h = (h ^ t as u64).wrapping_mul(0x100_0000_01b3);
        }
        (h % 1000) as f32 / 100.0
    }

    fn readout(seq: &[u32], letters: &[u32]) -> Readout {
        Readout { logits: letters.iter().map(|&l| logit(seq, l)).collect(), letter_mass: None }
    }

    impl Forward for Fake {
        type Prefix = Vec<u32>;
        fn root(&self) -> Vec<u32> {
            vec![]
        }
        fn extend(&self, parent: &Vec<u32>, tokens: &[u32], opts: PassOptions) -> Result<Vec<u32>> {
            let mut cur = parent.clone();
            for chunk in tokens.chunks(opts.pass_tokens) {
                self.passes.lock().unwrap().push((1, chunk.len(), 0));
                cur.extend_from_slice(chunk);
            }
            Ok(cur)
        }
        fn read(&self, prefix: &Vec<u32>, suffixes: &[Suffix<'_>], opts: PassOptions) -> Result<Vec<Readout>> {
            let mut start = 0;
            while start < suffixes.len() {
                let (mut end, mut total) = (start, 0);
                while end < suffixes.len() && (end == start || total + suffixes[end].tokens.len() <= opts.pass_tokens) {
                    total += suffixes[end].tokens.len();
                    end += 1;
                }
                self.passes.lock().unwrap().push((1, total, end - start));
                start = end;
            }
            Ok(suffixes.iter().map(|s| readout(&[prefix.as_slice(), s.tokens].concat(), s.read)).collect())
        }
        fn pass(&self, units: &[Unit<'_, Vec<u32>>], _: PassOptions) -> Result<Vec<UnitOut<Vec<u32>>>> {
            let tokens = units.iter().map(|u| u.stem.len() + u.leaves.iter().map(|l| l.tokens.len()).sum::<usize>());
            let leaves = units.iter().map(|u| u.leaves.len()).sum();
            self.passes.lock().unwrap().push((units.len(), tokens.sum(), leaves));
            Ok(units
                .iter()
                .map(|u| {
                    let stem = [u.parent.as_slice(), u.stem].concat();
                    let readouts =
                        u.leaves.iter().map(|l| readout(&[stem.as_slice(), l.tokens].concat(), l.read)).collect();
                    UnitOut { prefix: stem, readouts }
                })
                .collect())
        }
        fn next_logits(&self, prefix: &Vec<u32>, tokens: &[u32]) -> Result<(Vec<u32>, Vec<f32>)> {
            let seq = [prefix.as_slice(), tokens].concat();
            let logits = (0..8).map(|t| logit(&seq, t)).collect();
            Ok((seq, logits))
        }
        fn stop_tokens(&self) -> Vec<u32> {
            vec![]
        }
        fn decode(&self, ids: &[u32]) -> Result<String> {
            Ok(ids.iter().map(|&i| char::from(b'A' + i as u8)).collect())
        }
    }

    /// A job's prompts: a shared head, then per item a state, then per criterion × ordering a tail.
    fn prompts() -> Vec<Prompt> {
        let mut out = Vec::new();
        for item in 0..5u32 {
            for c in 0..3u32 {
                for k in 0..3u32 {
                    let mut tokens = vec![1, 2, 3, 4, 5, 6];
                    tokens.extend((0..(4 + item)).map(|i| 100 + item * 10 + i));
                    tokens.extend([200 + c, 210 + c, 300 + k]);
                    out.push(Prompt {
                        row: (item * 3 + c) as usize,
                        variant: Variant::Real(k as usize),
                        text: String::new(),
                        tokens,
                        letters: vec![7, 8, 9],
                        codes: vec![],
                        sha: String::new(),
                    });
                }
            }
        }
        out
    }

    fn config(pass_tokens: usize, side_by_side: bool) -> RunConfig {
        RunConfig::builder().pass_tokens(pass_tokens).side_by_side(Some(side_by_side)).build().unwrap()
    }

    fn opts(c: &RunConfig) -> PassOptions {
        c.pass_options(false)
    }

    fn read_all(
        fake: &Fake,
        c: &RunConfig,
        done: &dyn Fn(usize) -> bool,
        stop_after: Option<usize>,
    ) -> (HashMap<usize, Reading>, Work) {
        let p = prompts();
        let idx: Vec<usize> = (0..p.len()).collect();
        let mut readings = HashMap::new();
        let mut calls = 0;
        let w = exec(fake, c, opts(c), &p, &idx, Shape::Trie, done, &mut readings, &mut |read, _| {
            calls += usize::from(!read.is_empty());
            Ok(stop_after.is_none_or(|n| calls < n))
        })
        .unwrap();
        (readings, w)
    }

    #[test]
    fn every_prompt_reads_what_a_plain_forward_pass_gives() {
        let p = prompts();
        for (pass_tokens, side) in [(1024, false), (16, false), (16, true), (5, true), (1, false)] {
            let fake = Fake::default();
            let c = config(pass_tokens, side);
            let (readings, w) = read_all(&fake, &c, &|_| false, None);
            assert_eq!(readings.len(), p.len(), "pass_tokens {pass_tokens}");
            for (i, pr) in p.iter().enumerate() {
                assert_eq!(readings[&i].logits, readout(&pr.tokens, &pr.letters).logits, "prompt {i}");
            }
            // Each shared prefix once: the head, each state, each criterion's stem, each leaf.
            assert_eq!(w.computed, w.unique, "pass_tokens {pass_tokens}");
            assert_eq!(w.unique, 6 + (4 + 5 + 6 + 7 + 8) + 5 * 3 * 2 + 5 * 3 * 3);
            for &(units, tokens, _) in fake.passes.lock().unwrap().iter() {
                assert!(units == 1 || tokens <= pass_tokens, "a batched pass of {tokens} > {pass_tokens} tokens");
            }
        }
    }

    #[test]
    fn units_of_different_parents_share_a_pass() {
        let fake = Fake::default();
        read_all(&fake, &config(1024, false), &|_| false, None);
        let passes = fake.passes.lock().unwrap();
        assert!(passes.iter().any(|&(units, _, _)| units > 1), "{passes:?}");
        // With one pass of 1024 tokens the tree is read in a few passes, not one per prompt.
        assert!(passes.len() < prompts().len() / 4, "{} passes", passes.len());
    }

    #[test]
    fn a_resumed_walk_skips_what_is_done_and_reads_the_rest_bit_for_bit() {
        let p = prompts();
        let (full, whole) = read_all(&Fake::default(), &config(16, true), &|_| false, None);
        // The first two items' rows are done.
        let done = |pi: usize| p[pi].row < 6;
        let fake = Fake::default();
        let (part, w) = read_all(&fake, &config(16, true), &done, None);
        assert_eq!(part.len(), p.len() - 18);
        for (i, r) in &part {
            assert!(!done(*i));
            assert_eq!(r.logits, full[i].logits);
        }
        assert!(w.computed < whole.computed, "{} vs {}", w.computed, whole.computed);
        // Nothing left: nothing computed.
        let (none, w) = read_all(&Fake::default(), &config(16, true), &|_| true, None);
        assert!(none.is_empty() && w == Work::default());
    }

    #[test]
    fn a_stop_ends_the_walk_after_the_pass_in_flight() {
        let fake = Fake::default();
        let (readings, w) = read_all(&fake, &config(16, false), &|_| false, Some(1));
        assert!(w.stopped);
        assert!(!readings.is_empty() && readings.len() < prompts().len());
        // The walk stopped at the first pass that read a prompt: the passes down to it, no more.
        let passes = fake.passes.lock().unwrap().len();
        let (_, all) = read_all(&Fake::default(), &config(16, false), &|_| false, None);
        assert!(!all.stopped);
        assert!(passes <= 4, "{passes} passes after a stop at the first reading");
    }

    #[test]
    fn batching_off_reads_one_suffix_a_pass() {
        let fake = Fake::default();
        let c = RunConfig::builder().batched_suffixes(false).side_by_side(Some(false)).build().unwrap();
        let (readings, _) = read_all(&fake, &c, &|_| false, None);
        assert_eq!(readings.len(), prompts().len());
        assert!(fake.passes.lock().unwrap().iter().all(|&(units, _, leaves)| units == 1 && leaves <= 1));
    }

    #[test]
    fn generation_parses_the_first_standalone_letter() {
        assert_eq!(parse_letter("B", 3), Some(1));
        assert_eq!(parse_letter("The answer is C.", 3), Some(2));
        assert_eq!(parse_letter("D", 3), None);
        assert_eq!(parse_letter("ABC", 3), None);
        let c = RunConfig::builder().mode(Mode::Generate).max_new_tokens(2).build().unwrap();
        let fake = Fake::default();
        let (readings, _) = read_all(&fake, &c, &|_| false, None);
        assert_eq!(readings.len(), prompts().len());
        assert!(readings.values().all(|r| r.reply.as_ref().is_some_and(|s| s.len() == 2)));
    }
}
