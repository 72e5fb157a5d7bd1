//! Deciding a rubric for texts: the pipeline behind `readout score` and the app's Score page.
//! Each text × criterion × ordering becomes a prompt; the plan shares the system turn across all
//! texts and each text across its criteria; the engine reads the letters; orderings are combined
//! by option id.

use crate::engine::{Engine, Prefix, Suffix};
use crate::error::{Error, Result};
use crate::math::{argmax, softmax};
use crate::plan::{Plan, PlannedPrompt};
use crate::prompt;
use crate::rubric::{Criterion, QuestionKind, Rubric};
use crate::truncate::{fit_middle, Truncate};
use serde::Serialize;

/// A decision closer than this (top probability minus the runner-up) is flagged as close.
pub const CLOSE_MARGIN: f64 = 0.10;

/// Which orderings of the options to score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Orderings {
    /// The order written in the rubric.
    #[default]
    Single,
    /// Every cyclic rotation, averaged by option id.
    Cyclic,
}

/// One option's share of a decision.
#[derive(Debug, Clone, Serialize)]
pub struct OptionResult {
    pub id: String,
    pub description: String,
    pub probability: f64,
}

/// The decision on one criterion for one text.
#[derive(Debug, Clone, Serialize)]
pub struct CriterionResult {
    pub criterion: String,
    #[serde(rename = "type")]
    pub kind: QuestionKind,
    /// Options in the rubric's order, with probabilities.
    pub options: Vec<OptionResult>,
    pub chosen: String,
    pub probability: f64,
    /// For `score` questions: the probability-weighted level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_level: Option<f64>,
    /// The top probability minus the runner-up.
    pub margin: f64,
    pub close: bool,
    /// Whether the chosen option changed between orderings; `None` when one ordering was scored.
    pub order_unstable: Option<bool>,
    /// Share of the model's whole next-token distribution on the option letters (mean over orderings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub letter_mass: Option<f64>,
}

/// All decisions for one text.
#[derive(Debug, Clone, Serialize)]
pub struct TextResult {
    pub index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub criteria: Vec<CriterionResult>,
    /// Present when the text was cut from the middle to fit the context (`--truncate-middle`):
    /// how many tokens its longest prompt lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated_tokens: Option<usize>,
}

/// A text to score, with an optional id carried into its result.
#[derive(Debug, Clone)]
pub struct Text {
    pub id: Option<String>,
    pub text: String,
}

/// Score every text against every criterion of the rubric, refusing a text whose prompt is
/// longer than the model's context. `progress(done, total)` is called after each text; when it
/// returns false, scoring stops there and the texts scored so far are returned (fewer results
/// than texts: the caller stopped it).
pub fn score_texts(
    engine: &Engine,
    rubric: &Rubric,
    texts: &[Text],
    orderings: Orderings,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<Vec<TextResult>> {
    score_texts_with(engine, rubric, texts, orderings, Truncate::None, progress)
}

/// [`score_texts`], with a text too long for the context refused ([`Truncate::None`]) or cut
/// from the middle to fit ([`Truncate::Middle`], recorded in its result's `truncated_tokens`).
pub fn score_texts_with(
    engine: &Engine,
    rubric: &Rubric,
    texts: &[Text],
    orderings: Orderings,
    truncate: Truncate,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<Vec<TextResult>> {
    let budget = engine.info().config.context_length;
    // 1. Every prompt, tokenized, with its letters checked.
    let mut groups = Vec::with_capacity(texts.len());
    let mut layouts = Vec::with_capacity(texts.len());
    let mut cuts = Vec::with_capacity(texts.len());
    for (ti, t) in texts.iter().enumerate() {
        let layout: Vec<(usize, Vec<usize>)> = rubric
            .criteria
            .iter()
            .enumerate()
            .flat_map(|(ci, c)| order_list(c, orderings).into_iter().map(move |ord| (ci, ord)))
            .collect();
        let render = |text: &str, ci: usize, ord: &[usize]| -> Result<String> {
            engine.template().render(&prompt::messages(&[], prompt::user_turn(text, &rubric.criteria[ci], ord)))
        };
        let build = |text: &str| -> Result<Vec<PlannedPrompt>> {
            let mut prompts = Vec::with_capacity(layout.len());
            for (ci, ord) in &layout {
                let rendered = render(text, *ci, ord)?;
                let tokens = engine.tokenizer().encode(&rendered)?;
                let letters = engine.answer_tokens(&rendered, &tokens, rubric.criteria[*ci].options.len())?;
                prompts.push(PlannedPrompt { tokens, letters });
            }
            Ok(prompts)
        };
        let longest = |prompts: &[PlannedPrompt]| -> (usize, usize) {
            prompts.iter().enumerate().map(|(i, p)| (p.tokens.len(), i)).max().unwrap_or((0, 0))
        };
        let mut prompts = build(&t.text)?;
        let mut cut = None;
        let (tokens, at) = longest(&prompts);
        if tokens > budget {
            let len_at = |text: &str, i: usize| -> Result<usize> {
                let (ci, ord) = &layout[i];
                Ok(engine.tokenizer().encode(&render(text, *ci, ord)?)?.len())
            };
            let without = len_at("", at)?;
            let mut refit = None;
            if truncate == Truncate::Middle && without <= budget {
                // Cut against the longest prompt; should another still not fit (its tokens merge
                // differently at the cut), cut against all of them.
                let fit_build = |f: Option<String>| -> Result<Option<Vec<PlannedPrompt>>> {
                    match f {
                        Some(f) => build(&f).map(|p| (longest(&p).0 <= budget).then_some(p)),
                        None => Ok(None),
                    }
                };
                refit = fit_build(fit_middle(&t.text, budget, &mut |x| len_at(x, at))?)?;
                if refit.is_none() {
                    let mut all = |x: &str| (0..layout.len()).try_fold(0, |m, i| Ok(len_at(x, i)?.max(m)));
                    refit = fit_build(fit_middle(&t.text, budget, &mut all)?)?;
                }
            }
            match refit {
                Some(p) => {
                    cut = Some(tokens - longest(&p).0);
                    prompts = p;
                }
                None => {
                    let what = match &t.id {
                        Some(id) => format!("text {} (id `{id}`)", ti + 1),
                        None => format!("text {}", ti + 1),
                    };
                    let advice = if truncate == Truncate::Middle || without > budget {
                        format!("without the text the prompt (system turn, question and options) is still {without} tokens, so cutting the text cannot make it fit: shorten the rubric's questions or use a model with a longer context")
                    } else {
                        "shorten the text, or pass --truncate-middle to cut it from the middle (its head and tail are kept)".into()
                    };
                    return Err(Error::PromptTooLong {
                        what,
                        part: "text",
                        prompt_tokens: tokens,
                        state_tokens: tokens.saturating_sub(without),
                        budget,
                        reserved: String::new(),
                        advice,
                    });
                }
            }
        }
        groups.push(prompts);
        layouts.push(layout);
        cuts.push(cut);
    }
    // 2. The tree: root once, each text once, suffixes batched.
    let plan = Plan::new(groups);
    let root = engine.extend(&Prefix::empty(), plan.root_tokens())?;
    let mut results = Vec::with_capacity(texts.len());
    for (ti, (node, layout)) in plan.nodes.iter().zip(&layouts).enumerate() {
        let first = &node.prompts[0].tokens;
        let prefix = engine.extend(&root, &first[plan.root_len..node.prefix_len])?;
        let suffixes: Vec<Suffix<'_>> =
            node.prompts.iter().map(|p| Suffix { tokens: &p.tokens[node.prefix_len..], read: &p.letters }).collect();
        let reads = engine.read(&prefix, &suffixes)?;
        // 3. Combine orderings by option id.
        let mut criteria = Vec::with_capacity(rubric.criteria.len());
        for (ci, c) in rubric.criteria.iter().enumerate() {
            let mut sum = vec![0.0f64; c.options.len()];
            let mut picks = Vec::new();
            let mut mass = Vec::new();
            for ((_, ord), r) in layout.iter().zip(&reads).filter(|((i, _), _)| *i == ci) {
                let p = softmax(&r.logits);
                for (slot, &opt) in ord.iter().enumerate() {
                    sum[opt] += p[slot];
                }
                picks.push(ord[argmax(&p)]);
                if let Some(m) = r.letter_mass {
                    mass.push(m as f64);
                }
            }
            let n = picks.len().max(1) as f64;
            let probs: Vec<f64> = sum.iter().map(|s| s / n).collect();
            criteria.push(decide(c, &probs, &picks, &mass));
        }
        results.push(TextResult { index: ti, id: texts[ti].id.clone(), criteria, truncated_tokens: cuts[ti] });
        if !progress(ti + 1, texts.len()) {
            break;
        }
    }
    Ok(results)
}

fn order_list(c: &Criterion, orderings: Orderings) -> Vec<Vec<usize>> {
    match orderings {
        Orderings::Single => vec![(0..c.options.len()).collect()],
        Orderings::Cyclic => prompt::rotations(c.options.len()),
    }
}

fn decide(c: &Criterion, probs: &[f64], picks: &[usize], mass: &[f64]) -> CriterionResult {
    let best = argmax(probs);
    let runner_up = probs.iter().enumerate().filter(|(i, _)| *i != best).map(|(_, p)| *p).fold(0.0, f64::max);
    let margin = probs[best] - runner_up;
    CriterionResult {
        criterion: c.name.clone(),
        kind: c.kind,
        options: c
            .options
            .iter()
            .zip(probs)
            .map(|(o, p)| OptionResult { id: o.id.clone(), description: o.description.clone(), probability: *p })
            .collect(),
        chosen: c.options[best].id.clone(),
        probability: probs[best],
        expected_level: (c.kind == QuestionKind::Score)
            .then(|| probs.iter().enumerate().map(|(i, p)| i as f64 * p).sum()),
        margin,
        close: margin < CLOSE_MARGIN,
        order_unstable: (picks.len() > 1).then(|| picks.iter().any(|p| *p != picks[0])),
        letter_mass: (!mass.is_empty()).then(|| mass.iter().sum::<f64>() / mass.len() as f64),
    }
}
