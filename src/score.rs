//! Deciding a rubric for texts: the pipeline behind `readout score` and the app's Score page.
//! Each text × criterion × ordering becomes a prompt; the plan shares the system turn across all
//! texts and each text across its criteria; the engine reads the letters; orderings are combined
//! by option id.

use crate::engine::{Engine, Prefix, Suffix};
use crate::error::Result;
use crate::math::{argmax, softmax};
use crate::plan::{Plan, PlannedPrompt};
use crate::prompt;
use crate::rubric::{Criterion, QuestionKind, Rubric};
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
}

/// A text to score, with an optional id carried into its result.
#[derive(Debug, Clone)]
pub struct Text {
    pub id: Option<String>,
    pub text: String,
}

/// Score every text against every criterion of the rubric. `progress(done, total)` is called after each text.
pub fn score_texts(
    engine: &Engine,
    rubric: &Rubric,
    texts: &[Text],
    orderings: Orderings,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<TextResult>> {
    // 1. Every prompt, tokenized, with its letters checked.
    let mut groups = Vec::with_capacity(texts.len());
    let mut layouts = Vec::with_capacity(texts.len());
    for t in texts {
        let mut prompts = Vec::new();
        let mut layout = Vec::new();
        for (ci, c) in rubric.criteria.iter().enumerate() {
            for ord in order_list(c, orderings) {
                let text = engine.template().render(&prompt::messages(&[], prompt::user_turn(&t.text, c, &ord)))?;
                let tokens = engine.tokenizer().encode(&text)?;
                let letters = engine.answer_tokens(&text, &tokens, c.options.len())?;
                prompts.push(PlannedPrompt { tokens, letters });
                layout.push((ci, ord));
            }
        }
        groups.push(prompts);
        layouts.push(layout);
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
        results.push(TextResult { index: ti, id: texts[ti].id.clone(), criteria });
        progress(ti + 1, texts.len());
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
