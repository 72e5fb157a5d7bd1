//! The pipeline's second stage: every prompt a job needs, rendered and tokenized, fitted to the
//! model's context, and arranged as one radix tree of token sequences (the prompt tree), so that
//! every shared prefix — the system turn and shots once per job, each state once per item — is
//! computed once. This is the only planner: `run` and `score` both plan here.
//!
//! A row's prompts: one per ordering its debias mode scores (PriDe: every permutation for its
//! sample rows, one ordering for the rest), and for `calibrate` each ordering's content-free
//! prompts after it. An item whose longest prompt does not fit is refused, naming it and the
//! token counts, or (with [`Truncate::Middle`]) has its state cut from the middle until every
//! prompt fits.

use crate::config::{Mode, RunConfig};
use crate::debias::{self, DebiasMode, CONTENT_FREE};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::pipeline::input::{Job, Row};
use crate::pipeline::prompt;
use crate::truncate::{fit_middle, Truncate};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;

/// Which prompt of a row.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Variant {
    /// The row's own state in ordering `k` of its ordering list.
    Real(usize),
    /// Content-free state `s` in ordering `k` (calibration).
    ContentFree(usize, usize),
    /// Ordering `k`'s prompt followed by the first token `f` (an index into its `letters`) of
    /// two-token codes: the branch on which those codes' second tokens are read.
    Code(usize, usize),
}

/// One prompt, rendered and tokenized, with the letter tokens read at its end.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub row: usize,
    pub variant: Variant,
    pub text: String,
    pub tokens: Vec<u32>,
    pub letters: Vec<u32>,
    /// sha256 of `text`, recorded per ordering.
    pub sha: String,
    /// Past 26 options ([`crate::engine::code`]), how each slot's code is read: the index of
    /// its first token in `letters`, and of its second in the letters of the [`Variant::Code`]
    /// branch on that first token, if it has one. Empty for letters (slot `s` is `letters[s]`).
    pub codes: Vec<(usize, Option<usize>)>,
}

/// Every prompt of a job's rows, in order: per row, per ordering, the real prompt, then its
/// content-free calibration prompts.
#[derive(Debug, Clone)]
pub struct Planned {
    pub prompts: Vec<Prompt>,
    /// The orderings of every row.
    pub row_orderings: Vec<Vec<Vec<usize>>>,
    /// PriDe's sample rows (scored in every permutation).
    pub pride_sample: Vec<usize>,
    /// Rows whose state was cut from the middle: how many tokens their longest prompt lost.
    pub cuts: HashMap<usize, usize>,
}

impl Planned {
    /// Tokens of every prompt counted in full.
    pub fn prompt_tokens(&self) -> usize {
        self.prompts.iter().map(|p| p.tokens.len()).sum()
    }
}

/// One prompt of a job as text, for feeding the very same prompt to peers (`readout prompts`).
#[derive(Debug, Clone, Serialize)]
pub struct RenderedPrompt {
    /// `row id#ordering index`, with `#cf<state>` for a content-free calibration prompt.
    pub id: String,
    pub prompt: String,
    pub letters: Vec<String>,
}

impl Planned {
    /// The prompts as text, in order.
    pub fn rendered(&self, job: &Job<'_>) -> Vec<RenderedPrompt> {
        self.prompts
            .iter()
            // A code's branch is its prompt and a token: no prompt of its own.
            .filter(|s| !matches!(s.variant, Variant::Code(..)))
            .map(|s| {
                let r = &job.rows[s.row];
                let id = match s.variant {
                    Variant::Real(k) => format!("{}#{k}", r.id),
                    Variant::ContentFree(si, k) => format!("{}#{k}#cf{si}", r.id),
                    Variant::Code(k, f) => format!("{}#{k}#code{f}", r.id),
                };
                let n = r.criterion.options.len();
                let letters = (0..n).map(|slot| prompt::code(slot, n)).collect();
                RenderedPrompt { id, prompt: s.text.clone(), letters }
            })
            .collect()
    }
}

/// One item's prompts, and the (row, tokens cut) of each state cut from the middle.
type PlannedItem = (Vec<Prompt>, Vec<(usize, usize)>);

/// Render and tokenize the prompts of every row of `job`, an item's rows together (they share
/// its state), the items on all of the engine's threads, then in row order.
pub fn plan(engine: &Engine, job: &Job<'_>, config: &RunConfig) -> Result<Planned> {
    let rows = &job.rows;
    let version = config.prompt_version;
    let bad_set = |reason: String| match job.path() {
        Some(p) => Error::BadFile { path: p.to_path_buf(), reason },
        None => Error::Config(reason),
    };
    let pride_sample: Vec<usize> = if config.debias == DebiasMode::Pride {
        debias::pride_sample(rows.len(), config.pride_share, config.pride_seed)
    } else {
        vec![]
    };
    let row_orderings = (0..rows.len())
        .map(|i| {
            let mode = match config.debias {
                DebiasMode::Pride if pride_sample.contains(&i) => DebiasMode::Permutation,
                DebiasMode::Pride => DebiasMode::None,
                m => m,
            };
            debias::orderings(mode, rows[i].criterion.options.len()).map_err(bad_set)
        })
        .collect::<Result<Vec<_>>>()?;
    let context = engine.info().config.context_length;
    let reserved = if config.mode == Mode::Generate { config.max_new_tokens } else { 0 };
    let budget = context.saturating_sub(reserved);
    let part = job.part();
    // A prompt rendered and tokenized, before its letters are checked.
    struct Draft {
        row: usize,
        k: usize,
        text: String,
        tokens: Vec<u32>,
    }
    let render = |r: &Row<'_>, state: &str, ord: &[usize]| -> Result<String> {
        let user = prompt::user_turn_in(version, state, r.criterion, ord);
        engine.template().render(&prompt::messages(job.shots.for_row(r).0, user))
    };
    let draft = |ri: usize, k: usize, state: &str| -> Result<Draft> {
        let text = render(&rows[ri], state, &row_orderings[ri][k])?;
        let tokens = engine.tokenizer().encode(&text)?;
        Ok(Draft { row: ri, k, text, tokens })
    };
    let longest = |d: &[Draft]| d.iter().map(|d| (d.tokens.len(), d.row, d.k)).max().unwrap_or_default();
    let too_long = |ri: usize, k: usize, prompt_tokens: usize, cut_tried: bool| -> Result<Error> {
        let without = draft(ri, k, "")?.tokens.len();
        Ok(Error::PromptTooLong {
            what: job.describe(&rows[ri]),
            part,
            prompt_tokens,
            state_tokens: prompt_tokens.saturating_sub(without),
            budget,
            reserved: if reserved > 0 {
                format!(" ({context} less {reserved} kept for the generated reply)")
            } else {
                String::new()
            },
            without,
            cut_helps: !cut_tried && without <= budget,
        })
    };
    let mut items: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let end = (start..rows.len()).find(|&j| rows[j].item != rows[start].item).unwrap_or(rows.len());
        items.push(start..end);
        start = end;
    }
    let letters = crate::engine::LetterCache::default();
    let plan_item = |item: std::ops::Range<usize>| -> Result<PlannedItem> {
        let mut specs: Vec<Prompt> = Vec::new();
        let mut cuts: Vec<(usize, usize)> = Vec::new();
        let group: Vec<usize> = item.collect();
        let Some(&first) = group.first() else { return Ok((specs, cuts)) };
        let state = rows[first].state;
        let keys: Vec<(usize, usize)> =
            group.iter().flat_map(|&ri| (0..row_orderings[ri].len()).map(move |k| (ri, k))).collect();
        let drafts_of = |state: &str| keys.iter().map(|&(ri, k)| draft(ri, k, state)).collect::<Result<Vec<_>>>();
        let mut drafts = drafts_of(state)?;
        let (tokens, ri, k) = longest(&drafts);
        if tokens > budget {
            // A model whose letters merge with the prompt is refused for that, not for the length.
            if let Some(d) = drafts.iter().find(|d| (d.row, d.k) == (ri, k)) {
                engine.answer_tokens(&d.text, &d.tokens, rows[ri].criterion.options.len())?;
            }
            if config.truncate == Truncate::None {
                return Err(too_long(ri, k, tokens, false)?);
            }
            // Cut against the longest prompt; should another prompt of the item still not fit
            // (its tokens merge differently at the cut), cut against all of them.
            let fit_with = |len: &mut dyn FnMut(&str) -> Result<usize>| -> Result<Option<Vec<Draft>>> {
                match fit_middle(state, budget, len)? {
                    Some(f) => drafts_of(&f).map(|d| (longest(&d).0 <= budget).then_some(d)),
                    None => Ok(None),
                }
            };
            let mut fitted = fit_with(&mut |s| Ok(draft(ri, k, s)?.tokens.len()))?;
            if fitted.is_none() {
                fitted =
                    fit_with(&mut |s| keys.iter().try_fold(0, |m, &(ri, k)| Ok(draft(ri, k, s)?.tokens.len().max(m))))?;
            }
            let Some(fitted) = fitted else { return Err(too_long(ri, k, tokens, true)?) };
            for &ri in &group {
                let max_of = |d: &[Draft]| d.iter().filter(|d| d.row == ri).map(|d| d.tokens.len()).max().unwrap_or(0);
                cuts.push((ri, max_of(&drafts).saturating_sub(max_of(&fitted))));
            }
            drafts = fitted;
        }
        let finish = |row: usize, variant: Variant, text: String, tokens: Vec<u32>| -> Result<Vec<Prompt>> {
            let n = rows[row].criterion.options.len();
            let sha = crate::hash::sha256_bytes(text.as_bytes());
            if n <= prompt::LETTERS.len() {
                let letters = engine.answer_tokens_cached(&text, &tokens, n, &letters)?;
                return Ok(vec![Prompt { row, variant, text, tokens, letters, sha, codes: vec![] }]);
            }
            if !matches!(variant, Variant::Real(_)) {
                return Err(Error::Config(format!(
                    "{n} options are read as two-letter codes, which `{}` does not take; use `none` or `cyclic`",
                    config.debias
                )));
            }
            code_prompts(engine.answer_codes(&text, &tokens, n, &letters)?, row, variant, text, tokens, sha)
        };
        // Per row, per ordering: the real prompt, then its content-free calibration prompts.
        for d in drafts {
            specs.extend(finish(d.row, Variant::Real(d.k), d.text, d.tokens)?);
            if config.debias == DebiasMode::Calibrate {
                let ord = &row_orderings[d.row][d.k];
                for (si, cf) in CONTENT_FREE.iter().enumerate() {
                    let text = render(&rows[d.row], cf, ord)?;
                    let tokens = engine.tokenizer().encode(&text)?;
                    for spec in finish(d.row, Variant::ContentFree(si, d.k), text, tokens)? {
                        if spec.tokens.len() > budget {
                            return Err(too_long(d.row, d.k, spec.tokens.len(), true)?);
                        }
                        specs.push(spec);
                    }
                }
            }
        }
        Ok((specs, cuts))
    };
    let planned: Vec<Result<PlannedItem>> = items.into_par_iter().map(plan_item).collect();
    let mut prompts: Vec<Prompt> = Vec::new();
    let mut cuts: HashMap<usize, usize> = HashMap::new();
    // The first item's error, in order, whatever thread found it first.
    for p in planned {
        let (s, c) = p?;
        prompts.extend(s);
        cuts.extend(c);
    }
    Ok(Planned { prompts, row_orderings, pride_sample, cuts })
}

/// The prompts that read codes ([`crate::engine::code`]): the real prompt, reading every code's
/// first token, then per first token that opens two-token codes a [`Variant::Code`] branch
/// reading their second tokens. P(code) is then the product of its tokens' probabilities, each
/// among the tokens that may come there ([`crate::pipeline::combine`]).
fn code_prompts(
    codes: Vec<Vec<u32>>,
    row: usize,
    variant: Variant,
    text: String,
    tokens: Vec<u32>,
    sha: String,
) -> Result<Vec<Prompt>> {
    let Variant::Real(k) = variant else { return Err(Error::Config("codes are read on a real prompt".into())) };
    let mut firsts: Vec<u32> = Vec::new();
    let mut seconds: Vec<Vec<u32>> = Vec::new();
    let mut map = Vec::with_capacity(codes.len());
    for c in &codes {
        let f = match firsts.iter().position(|&t| t == c[0]) {
            Some(f) => f,
            None => {
                firsts.push(c[0]);
                seconds.push(Vec::new());
                firsts.len() - 1
            }
        };
        let second = c.get(1).map(|&t| {
            seconds[f].push(t);
            seconds[f].len() - 1
        });
        map.push((f, second));
    }
    // A first token that ends one code and opens another would make the codes ambiguous.
    if map.iter().any(|&(f, s)| s.is_none() && !seconds[f].is_empty()) {
        return Err(Error::Config("the model's tokenizer makes one option code the start of another".into()));
    }
    let mut out = Vec::with_capacity(1 + firsts.len());
    for (f, second) in seconds.into_iter().enumerate().filter(|(_, s)| !s.is_empty()) {
        let mut branch = tokens.clone();
        branch.push(firsts[f]);
        out.push(Prompt {
            row,
            variant: Variant::Code(k, f),
            text: String::new(),
            tokens: branch,
            letters: second,
            sha: sha.clone(),
            codes: vec![],
        });
    }
    out.insert(0, Prompt { row, variant, text, tokens, letters: firsts, sha, codes: map });
    Ok(out)
}

/// Length of the longest common prefix of `seqs`, leaving at least `keep` tokens of each.
pub fn common_prefix(seqs: &[&[u32]], keep: usize) -> usize {
    let Some(first) = seqs.first() else { return 0 };
    let mut n = first.len();
    for s in &seqs[1..] {
        n = n.min(s.len());
        n = first[..n].iter().zip(&s[..n]).take_while(|(a, b)| a == b).count();
    }
    let shortest = seqs.iter().map(|s| s.len()).min().unwrap_or(0);
    n.min(shortest.saturating_sub(keep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_prefix_keeps_a_token() {
        assert_eq!(common_prefix(&[&[1, 2, 3], &[1, 2, 4]], 1), 2);
        assert_eq!(common_prefix(&[&[1, 2, 3], &[1, 2, 3]], 1), 2);
        assert_eq!(common_prefix(&[&[1, 2, 3]], 1), 2);
        assert_eq!(common_prefix(&[&[5], &[6]], 1), 0);
    }
}

/// A node of the prompt tree (a radix trie over token sequences). The node's tokens are
/// `seqs[rep][start..end]`; a leaf ends one or more identical prompts.
#[derive(Debug, Clone)]
pub struct TrieNode {
    pub rep: usize,
    pub start: usize,
    pub end: usize,
    pub children: Vec<TrieNode>,
    /// Prompts that end at this node (leaves only).
    pub prompts: Vec<usize>,
}

impl TrieNode {
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }

    /// Tokens on every edge: what the model computes when each node is computed once.
    pub fn unique_tokens(&self) -> usize {
        (self.end - self.start) + self.children.iter().map(|c| c.unique_tokens()).sum::<usize>()
    }
}

/// Build the prompt tree. Every leaf keeps at least one token, so a leaf is always read as a
/// suffix on its parent's prefix; identical prompts share a leaf.
pub fn build_trie(seqs: &[&[u32]]) -> TrieNode {
    let idx: Vec<usize> = (0..seqs.len()).collect();
    build(seqs, idx, 0)
}

/// The prompt tree of `seqs[idx]` with its root cut after at most `head` tokens: the root's
/// stem is the head (what every prompt shares of it, leaving each at least one token), and below
/// it the tree [`build_trie`] makes of the rest. Scoring requests are planned so (see
/// [`crate::pipeline::exec::Shape::Requests`]): the same head is then the same unit in every request.
pub fn build_trie_with_head(seqs: &[&[u32]], idx: Vec<usize>, head: usize) -> TrieNode {
    let mine: Vec<&[u32]> = idx.iter().map(|&i| seqs[i]).collect();
    let cut = head.min(common_prefix(&mine, 1));
    let rep = idx[0];
    let below = build(seqs, idx, cut);
    if cut == 0 {
        return below;
    }
    // An empty node below the head (its prompts part right after it) gives its children.
    let children = if below.start == below.end && !below.is_leaf() { below.children } else { vec![below] };
    TrieNode { rep, start: 0, end: cut, children, prompts: vec![] }
}

fn build(seqs: &[&[u32]], idx: Vec<usize>, d: usize) -> TrieNode {
    let first = seqs[idx[0]];
    if idx.iter().all(|&i| seqs[i] == first) {
        return TrieNode { rep: idx[0], start: d, end: first.len(), children: vec![], prompts: idx };
    }
    let min_len = idx.iter().map(|&i| seqs[i].len()).min().unwrap_or(0);
    let mut l = d;
    while l + 1 < min_len && idx.iter().all(|&i| seqs[i][l] == first[l]) {
        l += 1;
    }
    let mut groups: std::collections::BTreeMap<u32, Vec<usize>> = std::collections::BTreeMap::new();
    for &i in &idx {
        groups.entry(seqs[i][l]).or_default().push(i);
    }
    let children: Vec<TrieNode> = if groups.len() == 1 && l == d {
        // One prompt is a strict prefix of another: give each distinct prompt its own leaf.
        let mut seen: Vec<usize> = Vec::new();
        let mut leaves: Vec<TrieNode> = Vec::new();
        for &i in &idx {
            match seen.iter().position(|&j| seqs[j] == seqs[i]) {
                Some(k) => leaves[k].prompts.push(i),
                None => {
                    seen.push(i);
                    leaves.push(TrieNode { rep: i, start: d, end: seqs[i].len(), children: vec![], prompts: vec![i] });
                }
            }
        }
        leaves
    } else {
        groups.into_values().map(|g| build(seqs, g, l)).collect()
    };
    TrieNode { rep: idx[0], start: d, end: l, children, prompts: vec![] }
}

#[cfg(test)]
mod trie_tests {
    use super::*;

    #[test]
    fn trie_shares_prefixes_and_counts_unique_tokens() {
        let a = [1u32, 2, 3, 4, 5];
        let b = [1u32, 2, 3, 6];
        let c = [1u32, 7, 8];
        let d = [1u32, 2, 3, 4, 5];
        let t = build_trie(&[&a, &b, &c, &d]);
        assert_eq!((t.start, t.end), (0, 1));
        // unique tokens: [1] + [2,3] + [4,5] + [6] + [7,8]
        assert_eq!(t.unique_tokens(), 1 + 2 + 2 + 1 + 2);
        let leaves: Vec<Vec<usize>> = collect(&t);
        assert!(leaves.contains(&vec![0, 3]));
        for n in all(&t) {
            if n.is_leaf() {
                assert!(n.end > n.start, "every leaf keeps a token");
            }
        }
    }

    #[test]
    fn strict_prefix_and_single_prompt() {
        let a = [1u32, 2];
        let b = [1u32, 2, 3];
        let t = build_trie(&[&a, &b]);
        let leaves = collect(&t);
        assert_eq!(leaves.len(), 2);
        let one = build_trie(&[&a]);
        assert!(one.is_leaf() && one.end == 2);
    }

    fn all(t: &TrieNode) -> Vec<&TrieNode> {
        let mut v = vec![t];
        for c in &t.children {
            v.extend(all(c));
        }
        v
    }

    fn collect(t: &TrieNode) -> Vec<Vec<usize>> {
        all(t).into_iter().filter(|n| n.is_leaf()).map(|n| n.prompts.clone()).collect()
    }
}
