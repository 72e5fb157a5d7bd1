//! Log-likelihoods of continuations, as evaluation harnesses ask for them (lm-evaluation-harness's
//! `loglikelihood`: for each (context, continuation), the summed log probability of the
//! continuation's tokens after the context, and whether each was the most likely token).
//!
//! It exists because a harness scores a multiple-choice item as one request per choice, every
//! choice repeating the item's context (and the shots before it). Here every request of a call is
//! planned as one prefix tree, as a run's prompts are: the contexts are a radix trie computed once
//! per shared prefix, and each continuation is a leaf read at every one of its positions in the
//! same pass, the full vocabulary's log-softmax taken there ([`Engine::pass_rows`]).
//!
//! The token a continuation's first token is predicted from is the context's last, so a leaf is
//! the context's last token followed by all of the continuation but its last token: a request with
//! context `c` (n tokens) and continuation `t` (m tokens) is the trie path `c[..n-1]` and the leaf
//! `c[n-1] t[..m-1]`, whose m rows predict `t[0] … t[m-1]`. Choices of one item share the path; a
//! one-token continuation (the answer letters) makes one leaf of the context's last token for all
//! of an item's choices. [`loglikelihood_plain`] computes the same numbers one request at a time,
//! one token at a time, with nothing shared: the reference the tree is checked against.

use crate::engine::{Engine, PassOptions, Prefix, Suffix, TokenRead, Unit};
use crate::error::{Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// One request: the continuation's tokens after the context's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub context: Vec<u32>,
    pub continuation: Vec<u32>,
}

/// The answer to one request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LogLikelihood {
    /// Σ log p(continuation token | everything before it), natural log.
    pub logprob: f64,
    /// Whether every continuation token was the model's most likely next token.
    pub greedy: bool,
}

/// What one [`loglikelihood`] call put through the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Work {
    /// Tokens of every request's input counted in full (context and continuation but its last).
    pub request_tokens: usize,
    /// Tokens in the tree (each shared prefix once): what went through the model.
    pub computed_tokens: usize,
    /// Forward passes.
    pub passes: usize,
}

/// The log-likelihood of every request, planned as one prefix tree and walked in passes of at
/// most `opts.pass_tokens` new tokens (a unit larger than that alone). The numbers do not depend
/// on how the requests are batched.
pub fn loglikelihood(engine: &Engine, requests: &[Request], opts: PassOptions) -> Result<(Vec<LogLikelihood>, Work)> {
    check(engine, requests)?;
    if requests.is_empty() {
        return Ok((vec![], Work::default()));
    }
    // Each request's input: the context, then the continuation but its last token.
    let inputs: Vec<Vec<u32>> = requests
        .iter()
        .map(|r| r.context.iter().chain(&r.continuation[..r.continuation.len() - 1]).copied().collect())
        .collect();
    let paths: Vec<&[u32]> = inputs.iter().zip(requests).map(|(s, r)| &s[..r.context.len() - 1]).collect();
    let idx: Vec<usize> = (0..requests.len()).collect();
    let root = build(&paths, &inputs, requests, idx, 0);
    let mut walk = Walk {
        engine,
        opts,
        paths: &paths,
        requests,
        out: vec![None; requests.len()],
        work: Work { request_tokens: inputs.iter().map(Vec::len).sum(), ..Work::default() },
    };
    walk.run(&root)?;
    let work = walk.work;
    let out = walk.out.into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| {
        Error::Config("a log-likelihood request was left unread (a defect in the walk; please report it)".into())
    })?;
    Ok((out, work))
}

/// The same numbers one request at a time, a token at a time, nothing shared (the context in
/// one pass, then each continuation token on the cache): the reference for [`loglikelihood`].
pub fn loglikelihood_plain(engine: &Engine, requests: &[Request]) -> Result<Vec<LogLikelihood>> {
    check(engine, requests)?;
    requests
        .iter()
        .map(|r| {
            let (mut prefix, mut logits) = engine.next_logits(&Prefix::empty(), &r.context)?;
            let (mut logprob, mut greedy) = (0.0, true);
            for (j, &t) in r.continuation.iter().enumerate() {
                let read = crate::engine::token_read(&logits, &[t]);
                logprob += read.logits[0] as f64 - read.log_norm;
                greedy &= read.argmax == t;
                if j + 1 < r.continuation.len() {
                    (prefix, logits) = engine.next_logits(&prefix, &[t])?;
                }
            }
            Ok(LogLikelihood { logprob, greedy })
        })
        .collect()
}

/// Refuse what has no answer: an empty context (the harness gives the BOS or end-of-text token
/// for one), an empty continuation, an input longer than the model's context.
fn check(engine: &Engine, requests: &[Request]) -> Result<()> {
    let context = engine.info().config.context_length;
    for (i, r) in requests.iter().enumerate() {
        if r.context.is_empty() {
            return Err(Error::Config(format!(
                "log-likelihood request {i} has an empty context: give at least one token (lm-evaluation-harness gives the BOS or end-of-text token)"
            )));
        }
        if r.continuation.is_empty() {
            return Err(Error::Config(format!(
                "log-likelihood request {i} has an empty continuation: there is nothing to score"
            )));
        }
        let tokens = r.context.len() + r.continuation.len() - 1;
        if tokens > context {
            return Err(Error::ContextOverflow { tokens, context });
        }
    }
    Ok(())
}

/// A leaf: the requests whose leaf tokens are these, and the tokens read at its rows (every
/// continuation token of every request, sorted, once).
struct Leaf<'a> {
    tokens: &'a [u32],
    read: Vec<u32>,
    requests: Vec<usize>,
}

/// A node of the context trie: `paths[rep][start..end]` computed on the parent's prefix, the
/// leaves of the requests whose path ends here, and the longer paths below.
struct Node<'a> {
    rep: usize,
    start: usize,
    end: usize,
    leaves: Vec<Leaf<'a>>,
    children: Vec<Node<'a>>,
}

impl Node<'_> {
    /// New tokens the node puts in a pass: its stem and its leaves.
    fn cost(&self) -> usize {
        (self.end - self.start) + self.leaves.iter().map(|l| l.tokens.len()).sum::<usize>()
    }
}

/// The radix trie of the paths `idx`, which share `paths[i][..start]`.
fn build<'a>(
    paths: &[&'a [u32]],
    inputs: &'a [Vec<u32>],
    requests: &[Request],
    idx: Vec<usize>,
    start: usize,
) -> Node<'a> {
    let rep = idx[0];
    let first = paths[rep];
    let shortest = idx.iter().map(|&i| paths[i].len()).min().unwrap_or(start);
    let mut end = start;
    while end < shortest && idx.iter().all(|&i| paths[i][end] == first[end]) {
        end += 1;
    }
    let mut leaves: BTreeMap<&[u32], Vec<usize>> = BTreeMap::new();
    let mut below: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for &i in &idx {
        if paths[i].len() == end {
            leaves.entry(&inputs[i][end..]).or_default().push(i);
        } else {
            below.entry(paths[i][end]).or_default().push(i);
        }
    }
    let leaves = leaves
        .into_iter()
        .map(|(tokens, reqs)| {
            let mut read: Vec<u32> = reqs.iter().flat_map(|&i| requests[i].continuation.iter().copied()).collect();
            read.sort_unstable();
            read.dedup();
            Leaf { tokens, read, requests: reqs }
        })
        .collect();
    let children = below.into_values().map(|g| build(paths, inputs, requests, g, end)).collect();
    Node { rep, start, end, leaves, children }
}

struct Walk<'a> {
    engine: &'a Engine,
    opts: PassOptions,
    paths: &'a [&'a [u32]],
    requests: &'a [Request],
    out: Vec<Option<LogLikelihood>>,
    work: Work,
}

impl<'a> Walk<'a> {
    /// Depth first, as many pending nodes a pass as fit in `pass_tokens` (units of different
    /// parents share the pass); a node larger than that takes passes of its own: its stem in
    /// chunks, then its leaves a pass-full at a time. Memory: the current path's keys and values
    /// and one stem per pending node.
    fn run<'n>(&mut self, root: &'n Node<'a>) -> Result<()> {
        let budget = self.opts.pass_tokens;
        let mut stack: Vec<(&'n Node<'a>, Prefix)> = vec![(root, Prefix::empty())];
        while !stack.is_empty() {
            let mut batch: Vec<(&'n Node<'a>, Prefix)> = Vec::new();
            let mut total = 0;
            while let Some((n, _)) = stack.last() {
                if !batch.is_empty() && total + n.cost() > budget {
                    break;
                }
                total += n.cost();
                batch.extend(stack.pop());
            }
            let mut next: Vec<(&'n Node<'a>, Prefix)> = Vec::new();
            if let [(n, parent)] = &batch[..] {
                if total > budget {
                    let prefix = self.engine.extend_with(parent, self.stem(n), self.opts)?;
                    self.work.computed_tokens += n.end - n.start;
                    self.work.passes += (n.end - n.start).div_ceil(budget.max(1));
                    for chunk in chunks(&n.leaves, budget) {
                        let unit = Unit { parent: &prefix, stem: &[], leaves: suffixes(chunk), keep: false };
                        let out = self.engine.pass_rows(std::slice::from_ref(&unit), self.opts)?;
                        self.work.passes += 1;
                        self.work.computed_tokens += chunk.iter().map(|l| l.tokens.len()).sum::<usize>();
                        for o in out {
                            self.record(chunk, &o.rows);
                        }
                    }
                    next.extend(n.children.iter().map(|c| (c, prefix.clone())));
                    stack.extend(next.into_iter().rev());
                    continue;
                }
            }
            let units: Vec<Unit<'_>> = batch
                .iter()
                .map(|(n, parent)| Unit {
                    parent,
                    stem: self.stem(n),
                    leaves: suffixes(&n.leaves),
                    keep: !n.children.is_empty(),
                })
                .collect();
            let outs = self.engine.pass_rows(&units, self.opts)?;
            drop(units);
            self.work.passes += 1;
            self.work.computed_tokens += total;
            for ((n, _), o) in batch.iter().zip(outs) {
                self.record(&n.leaves, &o.rows);
                next.extend(n.children.iter().map(|c| (c, o.prefix.clone())));
            }
            // Pushed in reverse so that the first child is taken first.
            stack.extend(next.into_iter().rev());
        }
        Ok(())
    }

    fn stem(&self, n: &Node<'a>) -> &'a [u32] {
        &self.paths[n.rep][n.start..n.end]
    }

    /// Each request's answer from its leaf's rows (the leaves' rows one after another).
    fn record(&mut self, leaves: &[Leaf<'_>], rows: &[TokenRead]) {
        let mut at = 0;
        for l in leaves {
            let rows = &rows[at..at + l.tokens.len()];
            at += l.tokens.len();
            for &i in &l.requests {
                let (mut logprob, mut greedy) = (0.0, true);
                for (row, &t) in rows.iter().zip(&self.requests[i].continuation) {
                    let logit = l.read.binary_search(&t).map(|k| row.logits[k]).unwrap_or(f32::NEG_INFINITY);
                    logprob += logit as f64 - row.log_norm;
                    greedy &= row.argmax == t;
                }
                self.out[i] = Some(LogLikelihood { logprob, greedy });
            }
        }
    }
}

fn suffixes<'l>(leaves: &'l [Leaf<'_>]) -> Vec<Suffix<'l>> {
    leaves.iter().map(|l| Suffix { tokens: l.tokens, read: &l.read }).collect()
}

/// Leaves in runs of at most `budget` tokens (a longer leaf alone).
fn chunks<'l, 'a>(leaves: &'l [Leaf<'a>], budget: usize) -> Vec<&'l [Leaf<'a>]> {
    let mut out = Vec::new();
    let (mut from, mut total) = (0, 0);
    for (i, l) in leaves.iter().enumerate() {
        if i > from && total + l.tokens.len() > budget {
            out.push(&leaves[from..i]);
            (from, total) = (i, 0);
        }
        total += l.tokens.len();
    }
    if from < leaves.len() {
        out.push(&leaves[from..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(context: &[u32], continuation: &[u32]) -> Request {
        Request { context: context.to_vec(), continuation: continuation.to_vec() }
    }

    #[test]
    fn the_trie_shares_contexts_and_puts_each_continuation_in_a_leaf_of_its_read_rows() {
        // Two choices of one item (one token each), a two-token choice, another item.
        let rs = [req(&[1, 2, 3], &[7]), req(&[1, 2, 3], &[8]), req(&[1, 2, 3], &[9, 10]), req(&[1, 4], &[7])];
        let inputs: Vec<Vec<u32>> = rs
            .iter()
            .map(|r| r.context.iter().chain(&r.continuation[..r.continuation.len() - 1]).copied().collect())
            .collect();
        let paths: Vec<&[u32]> = inputs.iter().zip(&rs).map(|(s, r)| &s[..r.context.len() - 1]).collect();
        let root = build(&paths, &inputs, &rs, vec![0, 1, 2, 3], 0);
        // Root: the shared [1]; the second item's path ends there, its leaf is [4].
        assert_eq!((root.start, root.end), (0, 1));
        assert_eq!(root.leaves.len(), 1);
        assert_eq!((root.leaves[0].tokens, &root.leaves[0].requests[..]), (&[4u32][..], &[3usize][..]));
        // Below it [2]: the one-token choices share the leaf [3] reading 7 and 8; the two-token
        // choice is the leaf [3, 9] reading 9 and 10.
        let item = &root.children[0];
        assert_eq!((item.start, item.end), (1, 2));
        let leaves: Vec<(&[u32], Vec<u32>, Vec<usize>)> =
            item.leaves.iter().map(|l| (l.tokens, l.read.clone(), l.requests.clone())).collect();
        assert_eq!(leaves, vec![(&[3u32][..], vec![7, 8], vec![0, 1]), (&[3u32, 9][..], vec![9, 10], vec![2])]);
        // Unique tokens: [1] + [4] + [2] + [3] + [3, 9].
        let cost = |n: &Node<'_>| n.cost();
        assert_eq!(cost(&root) + cost(item), 6);
    }

    #[test]
    fn leaves_are_chunked_by_the_budget_and_a_long_one_goes_alone() {
        let toks = [1u32, 2, 3, 4, 5];
        let leaf = |n: usize| Leaf { tokens: &toks[..n], read: vec![], requests: vec![] };
        let leaves = [leaf(2), leaf(2), leaf(5), leaf(1)];
        let sizes: Vec<usize> = chunks(&leaves, 4).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, vec![2, 1, 1]);
    }
}
