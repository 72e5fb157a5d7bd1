//! Completions as the OpenAI API's clients ask for them: the log-probability of every prompt
//! token (`echo`, what lm-evaluation-harness's `local-completions` reads its log-likelihoods
//! from), the most likely alternatives at each position (`top_logprobs`, what G-Eval weighs its
//! scores by), and a greedy continuation up to a length, an end-of-turn token or a stop text.
//!
//! It exists because such clients send many prompts that share most of their tokens (the shots,
//! the question, every choice of an item) and read the full distribution at every position.
//! Here all the prompts of a call are one radix trie, as a run's prompts are: each shared prefix
//! is computed once, and its rows are read once for every prompt through it — the full
//! vocabulary's log-softmax taken at a row only where a prompt asks for it (every row when it
//! echoes, its last row when it generates). The trie's nodes go through the model in passes of at
//! most `pass_tokens` new tokens; then every prompt still generating takes one token a pass, all of
//! them in the same pass, each on its own cached prefix. [`complete_plain`] computes the same
//! numbers one prompt at a time with nothing shared: the reference the trie is checked against.

use crate::engine::{Engine, PassOptions, Prefix, StemRead, TokenRead, Unit};
use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// The most alternatives a position may ask for (OpenAI's limit for `top_logprobs`).
pub const MAX_TOP: usize = 20;

/// One prompt to complete.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    /// The prompt's tokens (at least one).
    pub prompt: Vec<u32>,
    /// Tokens to generate at most (0: none; with `echo`, the prompt's log-probabilities alone).
    pub max_tokens: usize,
    /// Read every prompt token's log-probability (the first token has none: nothing before it).
    pub echo: bool,
    /// Alternatives kept at every position read (at most [`MAX_TOP`]).
    pub top: usize,
    /// Texts that end the generation: the text is cut before the first one found.
    pub stop: Vec<String>,
}

/// One token and how likely it was where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    pub token: u32,
    /// Natural log of its probability given everything before it; `None` for a prompt's first
    /// token.
    pub logprob: Option<f64>,
    /// The most likely tokens at its position, with their log-probabilities, highest first.
    pub top: Vec<(u32, f64)>,
}

/// Why the generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// `max_tokens` reached, or the model's context full.
    Length,
    /// An end-of-turn token or a stop text.
    Stop,
}

impl Finish {
    /// The name OpenAI's `finish_reason` gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Finish::Length => "length",
            Finish::Stop => "stop",
        }
    }
}

/// A completed prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// Every prompt token with its log-probability (`echo`), else empty.
    pub prompt: Vec<TokenLogprob>,
    /// The generated tokens, an end-of-turn token that ended it the last (its text not in `text`:
    /// a client reading log-probabilities counts it, as OpenAI's and vLLM's do).
    pub tokens: Vec<TokenLogprob>,
    /// The generated text, cut before a stop text.
    pub text: String,
    pub finish: Finish,
}

/// What one [`complete`] call put through the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Tokens of every prompt counted in full.
    pub prompt_tokens: usize,
    /// Prompt tokens that went through the model (each shared prefix once).
    pub computed_tokens: usize,
    /// Tokens generated.
    pub generated_tokens: usize,
    /// Forward passes.
    pub passes: usize,
}

/// Complete every request, the prompts planned as one trie (see the module's comment).
/// `wanted(i)` is asked before every pass: a request no longer wanted (its client gone) is not
/// computed further, and the call returns early when none is; such a request's completion is
/// whatever was done. The numbers do not depend on how the requests are batched.
pub fn complete(
    engine: &Engine,
    requests: &[Request],
    opts: PassOptions,
    wanted: &dyn Fn(usize) -> bool,
) -> Result<(Vec<Completion>, Work)> {
    check(engine, requests)?;
    let mut work = Work { prompt_tokens: requests.iter().map(|r| r.prompt.len()).sum(), ..Work::default() };
    let mut state: Vec<State> = requests.iter().map(|_| State::default()).collect();
    if !requests.is_empty() {
        let paths: Vec<&[u32]> = requests.iter().map(|r| r.prompt.as_slice()).collect();
        let root = build(&paths, (0..requests.len()).collect(), 0);
        let mut walk = Walk { engine, opts, requests, state: &mut state, work: &mut work, wanted };
        walk.run(&root)?;
    }
    generate(engine, requests, &mut state, &mut work, opts, wanted)?;
    let stops = stop_tokens(engine);
    let completions =
        requests.iter().zip(state).map(|(r, s)| finish(engine, r, s, &stops)).collect::<Result<Vec<_>>>()?;
    Ok((completions, work))
}

/// The same completions one request at a time, one token at a time, nothing shared: the
/// reference for [`complete`].
pub fn complete_plain(engine: &Engine, requests: &[Request]) -> Result<Vec<Completion>> {
    check(engine, requests)?;
    let stops = stop_tokens(engine);
    let top = |r: &Request| r.top.max(1);
    requests
        .iter()
        .map(|r| {
            let mut s = State::default();
            let mut prefix = Prefix::empty();
            let mut logits = Vec::new();
            for (i, &t) in r.prompt.iter().enumerate() {
                if i > 0 && r.echo {
                    let read = crate::engine::token_read_top(&logits, &[t], top(r));
                    s.prompt.insert(i, logprob_of(&read, t, read.logits[0], r.top));
                }
                (prefix, logits) = engine.next_logits(&prefix, &[t])?;
            }
            let mut next = crate::engine::token_read_top(&logits, &[], top(r));
            let mut out = Vec::new();
            let context = engine.info().config.context_length;
            while out.len() < r.max_tokens {
                let t = next.argmax;
                out.push(greedy(&next, r.top));
                if stops.contains(&t) || stopped_by_text(engine, r, &out)? || out.len() == r.max_tokens {
                    break;
                }
                if prefix.len() + 1 > context {
                    break;
                }
                (prefix, logits) = engine.next_logits(&prefix, &[t])?;
                next = crate::engine::token_read_top(&logits, &[], top(r));
            }
            s.generated = out;
            s.done = true;
            finish(engine, r, s, &stops)
        })
        .collect()
}

/// Tokens that end a generated reply: the end-of-turn and end-of-text tokens the vocabulary has.
pub fn stop_tokens(engine: &Engine) -> Vec<u32> {
    ["<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>", "<end_of_turn>", "<eos>"]
        .iter()
        .filter_map(|t| engine.tokenizer().token_id(t))
        .collect()
}

/// Refuse what has no answer: an empty prompt, more alternatives than [`MAX_TOP`], a prompt
/// longer than the model's context.
fn check(engine: &Engine, requests: &[Request]) -> Result<()> {
    let context = engine.info().config.context_length;
    for (i, r) in requests.iter().enumerate() {
        if r.prompt.is_empty() {
            return Err(Error::Config(format!("prompt {i} is empty: give at least one token")));
        }
        if r.top > MAX_TOP {
            return Err(Error::Config(format!(
                "prompt {i} asks for {} alternatives a position; at most {MAX_TOP} are given",
                r.top
            )));
        }
        if r.prompt.len() > context {
            return Err(Error::ContextOverflow { tokens: r.prompt.len(), context });
        }
    }
    Ok(())
}

/// A request's progress: what was read of its prompt, the distribution after it, its prefix
/// when it goes on generating, and what it generated.
#[derive(Default)]
struct State {
    prompt: BTreeMap<usize, TokenLogprob>,
    next: Option<TokenRead>,
    prefix: Option<Prefix>,
    generated: Vec<TokenLogprob>,
    done: bool,
}

/// `t` (whose logit is `logit`) as a [`TokenLogprob`] of the row `read`, with its first `top`
/// alternatives.
fn logprob_of(read: &TokenRead, t: u32, logit: f32, top: usize) -> TokenLogprob {
    TokenLogprob {
        token: t,
        logprob: Some(logit as f64 - read.log_norm),
        top: read.top.iter().take(top).map(|&(id, l)| (id, l as f64 - read.log_norm)).collect(),
    }
}

/// The row's most likely token as a [`TokenLogprob`] (the row read with at least one
/// alternative, so the first is it).
fn greedy(read: &TokenRead, top: usize) -> TokenLogprob {
    let logit = read.top.first().map_or(f32::NEG_INFINITY, |&(_, l)| l);
    logprob_of(read, read.argmax, logit, top)
}

/// A node of the prompts' trie: `paths[rep][start..end]` computed on the parent's prefix, the
/// requests through it (`all`) and those whose prompt ends at `end` (`ends`), and the longer
/// paths below.
struct Node {
    rep: usize,
    start: usize,
    end: usize,
    all: Vec<usize>,
    ends: Vec<usize>,
    children: Vec<Node>,
}

/// The radix trie of the prompts `idx`, which share `paths[i][..start]`; a node ends where a
/// prompt ends, so that its last row is that prompt's.
fn build(paths: &[&[u32]], idx: Vec<usize>, start: usize) -> Node {
    let rep = idx[0];
    let first = paths[rep];
    let shortest = idx.iter().map(|&i| paths[i].len()).min().unwrap_or(start);
    let mut end = start;
    while end < shortest && idx.iter().all(|&i| paths[i][end] == first[end]) {
        end += 1;
    }
    let mut ends = Vec::new();
    let mut below: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for &i in &idx {
        if paths[i].len() == end {
            ends.push(i);
        } else {
            below.entry(paths[i][end]).or_default().push(i);
        }
    }
    let children = below.into_values().map(|g| build(paths, g, end)).collect();
    Node { rep, start, end, all: idx, ends, children }
}

struct Walk<'a, 'w> {
    engine: &'a Engine,
    opts: PassOptions,
    requests: &'a [Request],
    state: &'w mut [State],
    work: &'w mut Work,
    wanted: &'a dyn Fn(usize) -> bool,
}

/// A piece of a node's stem waiting for a pass: stem rows `from..to`, on `parent`.
struct Piece<'n> {
    node: &'n Node,
    from: usize,
    to: usize,
    parent: Prefix,
}

impl<'n> Walk<'_, '_> {
    /// Depth first, as many pending pieces a pass as fit in `pass_tokens`; a node longer than
    /// that goes in pieces, one after another on the prefix the last one made.
    fn run(&mut self, root: &'n Node) -> Result<()> {
        let budget = self.opts.pass_tokens.max(1);
        let mut stack: Vec<Piece<'n>> = self.pieces(root, Prefix::empty(), 0, budget);
        while !stack.is_empty() {
            let mut batch: Vec<Piece<'n>> = Vec::new();
            let mut total = 0;
            while let Some(p) = stack.last() {
                let n = p.to - p.from;
                if !batch.is_empty() && total + n > budget {
                    break;
                }
                total += n;
                batch.extend(stack.pop());
            }
            batch.retain(|p| p.node.all.iter().any(|&i| (self.wanted)(i)));
            if batch.is_empty() {
                continue;
            }
            let rows: Vec<Vec<usize>> = batch.iter().map(|p| self.rows_of(p)).collect();
            let reads: Vec<Vec<u32>> = batch.iter().map(|p| self.read_set(p)).collect();
            let top = self.requests.iter().map(|r| r.top).max().unwrap_or(0).max(1);
            let stems: Vec<&[u32]> =
                batch.iter().map(|p| &self.requests[p.node.rep].prompt[p.node.start..][p.from..p.to]).collect();
            let outs = {
                let units: Vec<Unit<'_>> = batch
                    .iter()
                    .zip(&stems)
                    .map(|(p, stem)| Unit { parent: &p.parent, stem, leaves: vec![], keep: self.keeps(p) })
                    .collect();
                let reads_of: Vec<StemRead<'_>> =
                    rows.iter().zip(&reads).map(|(rows, read)| StemRead { rows, read }).collect();
                self.engine.pass_rows_with(&units, &reads_of, top, self.opts)?
            };
            self.work.passes += 1;
            self.work.computed_tokens += total;
            let mut next: Vec<Piece<'n>> = Vec::new();
            for (((p, rows), read_set), out) in batch.into_iter().zip(&rows).zip(&reads).zip(outs) {
                for (&r, read) in rows.iter().zip(&out.rows) {
                    self.record(p.node, p.from + r, read, read_set);
                }
                if p.to < p.node.end - p.node.start {
                    next.push(Piece {
                        node: p.node,
                        from: p.to,
                        to: (p.to + budget).min(p.node.end - p.node.start),
                        parent: out.prefix,
                    });
                } else {
                    for &i in &p.node.ends {
                        if self.requests[i].max_tokens > 1 {
                            self.state[i].prefix = Some(out.prefix.clone());
                        }
                    }
                    for c in &p.node.children {
                        next.extend(self.pieces(c, out.prefix.clone(), 0, budget));
                    }
                }
            }
            // Pushed in reverse so that the first child is taken first.
            stack.extend(next.into_iter().rev());
        }
        Ok(())
    }

    /// The first piece of `node` (all of it when it fits the budget); an empty stem (the root
    /// of prompts that differ from their first token) gives its children's.
    fn pieces(&self, node: &'n Node, parent: Prefix, from: usize, budget: usize) -> Vec<Piece<'n>> {
        let len = node.end - node.start;
        if len == 0 {
            return node.children.iter().flat_map(|c| self.pieces(c, parent.clone(), 0, budget)).collect();
        }
        vec![Piece { node, from, to: (from + budget).min(len), parent }]
    }

    /// Whether the piece's keys and values are needed after it: more of its node, nodes below,
    /// or a request ending here that generates more than one token.
    fn keeps(&self, p: &Piece<'_>) -> bool {
        p.to < p.node.end - p.node.start
            || !p.node.children.is_empty()
            || p.node.ends.iter().any(|&i| self.requests[i].max_tokens > 1)
    }

    /// The stem rows of the piece to read (relative to the piece): every row when a request
    /// through the node echoes; else the node's last row when a prompt ending there generates.
    fn rows_of(&self, p: &Piece<'_>) -> Vec<usize> {
        let len = p.node.end - p.node.start;
        let wanted = |i: &usize| (self.wanted)(*i);
        if p.node.all.iter().filter(|i| wanted(i)).any(|&i| self.requests[i].echo) {
            return (0..p.to - p.from).collect();
        }
        let generates = p.node.ends.iter().filter(|i| wanted(i)).any(|&i| self.requests[i].max_tokens > 0);
        if generates && p.to == len {
            vec![p.to - p.from - 1]
        } else {
            vec![]
        }
    }

    /// The tokens whose logits the piece's rows keep: every token that follows one of its rows
    /// (the stem's own, and the first token of each node below), sorted.
    fn read_set(&self, p: &Piece<'_>) -> Vec<u32> {
        let prompt = &self.requests[p.node.rep].prompt;
        let end = (p.node.start + p.to + 1).min(p.node.end);
        let mut read: Vec<u32> = prompt[p.node.start + p.from + 1..end.max(p.node.start + p.from + 1)].to_vec();
        if p.to == p.node.end - p.node.start {
            read.extend(p.node.children.iter().map(|c| self.requests[c.rep].prompt[p.node.end]));
        }
        read.sort_unstable();
        read.dedup();
        read
    }

    /// Row `r` of `node`'s stem, read with `read_set`: the log-probability of the next token of
    /// every echoing prompt through the node, or the distribution after a prompt ending there.
    fn record(&mut self, node: &Node, r: usize, read: &TokenRead, read_set: &[u32]) {
        let at = node.start + r + 1;
        for &i in &node.all {
            let req = &self.requests[i];
            if at < req.prompt.len() {
                if req.echo {
                    let t = req.prompt[at];
                    let logit = read_set.binary_search(&t).map_or(f32::NEG_INFINITY, |k| read.logits[k]);
                    self.state[i].prompt.insert(at, logprob_of(read, t, logit, req.top));
                }
            } else if at == req.prompt.len() {
                self.state[i].next = Some(read.clone());
            }
        }
    }
}

/// Greedy generation: every request still generating takes its next token, all of them in one
/// pass a token, each on its own prefix.
fn generate(
    engine: &Engine,
    requests: &[Request],
    state: &mut [State],
    work: &mut Work,
    opts: PassOptions,
    wanted: &dyn Fn(usize) -> bool,
) -> Result<()> {
    let stops = stop_tokens(engine);
    let context = engine.info().config.context_length;
    // The first token of each: from the row after its prompt.
    for (i, r) in requests.iter().enumerate() {
        let s = &mut state[i];
        if r.max_tokens == 0 || !wanted(i) {
            s.done = true;
            continue;
        }
        let Some(next) = s.next.take() else {
            s.done = true;
            continue;
        };
        s.done = take(engine, r, s, &next, &stops, context)?;
    }
    loop {
        let active: Vec<usize> = (0..requests.len()).filter(|&i| !state[i].done && wanted(i)).collect();
        if active.is_empty() {
            return Ok(());
        }
        let last: Vec<[u32; 1]> = active.iter().map(|&i| [state[i].generated.last().map_or(0, |t| t.token)]).collect();
        let top = active.iter().map(|&i| requests[i].top).max().unwrap_or(0).max(1);
        let outs = {
            let prefixes: Vec<Prefix> =
                active.iter().map(|&i| state[i].prefix.clone().unwrap_or_else(Prefix::empty)).collect();
            let units: Vec<Unit<'_>> = prefixes
                .iter()
                .zip(&last)
                .map(|(parent, t)| Unit { parent, stem: t, leaves: vec![], keep: true })
                .collect();
            let stems: Vec<StemRead<'_>> = active.iter().map(|_| StemRead { rows: &[0], read: &[] }).collect();
            engine.pass_rows_with(&units, &stems, top, opts)?
        };
        work.passes += 1;
        for (&i, out) in active.iter().zip(outs) {
            let s = &mut state[i];
            s.prefix = Some(out.prefix);
            match out.rows.first() {
                Some(read) => s.done = take(engine, &requests[i], s, read, &stops, context)?,
                None => s.done = true,
            }
        }
        work.generated_tokens += active.len();
    }
}

/// Take the most likely token of `read` as the request's next; whether it is done then (an
/// end token, a stop text, `max_tokens`, or no room left in the context).
fn take(engine: &Engine, r: &Request, s: &mut State, read: &TokenRead, stops: &[u32], context: usize) -> Result<bool> {
    let t = read.argmax;
    s.generated.push(greedy(read, r.top));
    let room = s.prefix.as_ref().map_or(0, Prefix::len) + 1 < context;
    Ok(stops.contains(&t) || s.generated.len() >= r.max_tokens || stopped_by_text(engine, r, &s.generated)? || !room)
}

/// Whether the generated text holds one of the request's stop texts.
fn stopped_by_text(engine: &Engine, r: &Request, generated: &[TokenLogprob]) -> Result<bool> {
    if r.stop.is_empty() {
        return Ok(false);
    }
    let ids: Vec<u32> = generated.iter().map(|t| t.token).collect();
    let text = engine.tokenizer().decode(&ids)?;
    Ok(r.stop.iter().any(|s| !s.is_empty() && text.contains(s.as_str())))
}

/// A request's completion from its state: the echoed prompt in order, the generated text cut
/// before a stop text, an end token dropped, and why it ended.
fn finish(engine: &Engine, r: &Request, s: State, stops: &[u32]) -> Result<Completion> {
    let prompt = if r.echo {
        r.prompt
            .iter()
            .enumerate()
            .map(|(k, &t)| s.prompt.get(&k).cloned().unwrap_or(TokenLogprob { token: t, logprob: None, top: vec![] }))
            .collect()
    } else {
        vec![]
    };
    let tokens = s.generated;
    let mut finish = if tokens.len() >= r.max_tokens { Finish::Length } else { Finish::Stop };
    let mut ids: Vec<u32> = tokens.iter().map(|t| t.token).collect();
    if ids.last().is_some_and(|t| stops.contains(t)) {
        ids.pop();
        finish = Finish::Stop;
    }
    let mut text = engine.tokenizer().decode(&ids)?;
    if let Some(cut) = r.stop.iter().filter(|s| !s.is_empty()).filter_map(|s| text.find(s.as_str())).min() {
        text.truncate(cut);
        finish = Finish::Stop;
    }
    Ok(Completion { prompt, tokens, text, finish })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trie_ends_a_node_where_a_prompt_ends_and_shares_the_rest() {
        // [1 2 3] is a prefix of [1 2 3 4 5]; [1 2 6] parts after [1 2].
        let prompts: [&[u32]; 3] = [&[1, 2, 3], &[1, 2, 3, 4, 5], &[1, 2, 6]];
        let root = build(&prompts, vec![0, 1, 2], 0);
        assert_eq!((root.start, root.end, root.ends.clone()), (0, 2, vec![]));
        assert_eq!(root.children.len(), 2);
        let three = &root.children[0];
        assert_eq!((three.start, three.end, three.ends.clone(), three.all.clone()), (2, 3, vec![0], vec![0, 1]));
        let five = &three.children[0];
        assert_eq!((five.start, five.end, five.ends.clone()), (3, 5, vec![1]));
        let six = &root.children[1];
        assert_eq!((six.start, six.end, six.ends.clone()), (2, 3, vec![2]));
    }

    #[test]
    fn a_token_s_log_probability_is_its_logit_less_the_normaliser() {
        let read = TokenRead { log_norm: 2.0, argmax: 7, logits: vec![0.5], top: vec![(7, 1.5), (3, 0.5)] };
        let lp = logprob_of(&read, 3, 0.5, 1);
        assert_eq!(lp.logprob, Some(-1.5));
        assert_eq!(lp.top, vec![(7, -0.5)]);
        assert_eq!(greedy(&read, 0), TokenLogprob { token: 7, logprob: Some(-0.5), top: vec![] });
        assert_eq!(Finish::Length.as_str(), "length");
    }
}
