//! The pipeline's first stage: what is to be judged, as rows. A row is one state (an eval-set
//! item's, or a text's) with one criterion; an eval set's rows carry a gold answer, a text's do
//! not. `run` and `score` differ only here: both hand a [`Job`] to the same later stages.
//!
//! Shots (worked examples) are chosen here too, from the whole eval set, before `--limit` picks
//! the rows to score: the limit chooses what is scored, not what the model is shown.

use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::formats::evalset::EvalSet;
use crate::formats::rubric::{Criterion, Rubric};
use crate::pipeline::prompt::{self, Shot};
use std::path::{Path, PathBuf};

/// One row to decide: a state with one criterion.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    /// `item` for a one-criterion item, `item/criterion` otherwise.
    pub id: String,
    /// Index of its item (an item's rows share its state, and are planned together).
    pub item: usize,
    pub family: String,
    pub group_id: String,
    pub state: &'a str,
    pub criterion: &'a Criterion,
    /// The gold option (eval sets); `None` for a text to score.
    pub gold: Option<usize>,
}

/// Where a job's rows came from, for the record and for messages naming a row.
#[derive(Debug, Clone)]
pub enum Source {
    /// An eval set: messages name its path and the item's id.
    EvalSet { path: PathBuf, item_ids: Vec<String>, criteria_per_item: Vec<usize> },
    /// Texts to score: messages name the text's number and id.
    Texts { ids: Vec<Option<String>> },
}

/// The worked examples of a job: a primary set and an alternate one for rows of the primary's
/// groups (so that no row is shown its own group as an example).
#[derive(Debug, Clone, Default)]
pub struct Shots {
    /// Row ids of the primary and the alternate shots.
    pub primary_ids: Vec<String>,
    pub alternate_ids: Vec<String>,
    pub primary: Vec<Shot>,
    pub alternate: Vec<Shot>,
    primary_groups: Vec<String>,
}

impl Shots {
    /// The shots a row is shown, and their ids.
    pub fn for_row(&self, r: &Row<'_>) -> (&[Shot], &[String]) {
        if self.primary.is_empty() {
            (&[], &[])
        } else if self.primary_groups.contains(&r.group_id) {
            (&self.alternate, &self.alternate_ids)
        } else {
            (&self.primary, &self.primary_ids)
        }
    }
}

/// A row's id, as result files record it: `item` for a one-criterion item, `item/criterion`
/// otherwise.
fn row_id(item: &crate::formats::evalset::Item, c: &Criterion) -> String {
    if item.criteria.len() == 1 {
        item.id.clone()
    } else {
        format!("{}/{}", item.id, c.name)
    }
}

/// Every row id of `eval_set` with the text (state) it judges: to show a result file's rows with
/// their texts, which the result file does not repeat.
pub fn row_texts(eval_set: &EvalSet) -> std::collections::BTreeMap<String, String> {
    eval_set
        .items
        .iter()
        .flat_map(|item| item.criteria.iter().map(move |c| (row_id(item, c), item.state.clone())))
        .collect()
}

/// Everything to decide, before any prompt is rendered.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    pub rows: Vec<Row<'a>>,
    pub shots: Shots,
    pub source: Source,
}

impl<'a> Job<'a> {
    /// The rows of `eval_set` that have a gold answer (of the first `limit` items), and the
    /// shots, chosen from the whole set.
    pub fn from_eval_set(eval_set: &'a EvalSet, config: &RunConfig, limit: Option<usize>) -> Result<Job<'a>> {
        let mut rows: Vec<Row<'a>> = Vec::new();
        for (ii, item) in eval_set.items.iter().enumerate() {
            for c in &item.criteria {
                let Some(gold) = c.gold else { continue };
                let id = row_id(item, c);
                rows.push(Row {
                    id,
                    item: ii,
                    family: item.family.clone(),
                    group_id: item.group_id.clone(),
                    state: &item.state,
                    criterion: c,
                    gold: Some(gold),
                });
            }
        }
        if rows.is_empty() {
            return Err(Error::BadFile {
                path: eval_set.path.clone(),
                reason: "no row has a gold answer to score".into(),
            });
        }
        let shots = choose_shots(&rows, config, &eval_set.path)?;
        if let Some(n) = limit {
            if n == 0 {
                return Err(Error::Config("a limit of 0 items leaves nothing to run".into()));
            }
            rows.retain(|r| r.item < n);
        }
        let source = Source::EvalSet {
            path: eval_set.path.clone(),
            item_ids: eval_set.items.iter().map(|i| i.id.clone()).collect(),
            criteria_per_item: eval_set.items.iter().map(|i| i.criteria.len()).collect(),
        };
        Ok(Job { rows, shots, source })
    }

    /// Every criterion of `rubric` for every text: rows without gold, no shots.
    pub fn from_texts(rubric: &'a Rubric, texts: &'a [Text]) -> Job<'a> {
        let mut rows = Vec::with_capacity(texts.len() * rubric.criteria.len());
        for (ti, t) in texts.iter().enumerate() {
            let item = t.id.clone().unwrap_or_else(|| format!("text-{}", ti + 1));
            for c in &rubric.criteria {
                rows.push(Row {
                    id: format!("{item}/{}", c.name),
                    item: ti,
                    family: String::new(),
                    group_id: item.clone(),
                    state: &t.text,
                    criterion: c,
                    gold: None,
                });
            }
        }
        Job {
            rows,
            shots: Shots::default(),
            source: Source::Texts { ids: texts.iter().map(|t| t.id.clone()).collect() },
        }
    }

    /// What the state of a job's item is called in messages: `state` or `text`.
    pub fn part(&self) -> &'static str {
        match self.source {
            Source::EvalSet { .. } => "state",
            Source::Texts { .. } => "text",
        }
    }

    /// A row as a message names it.
    pub fn describe(&self, r: &Row<'_>) -> String {
        match &self.source {
            Source::EvalSet { path, item_ids, criteria_per_item } => {
                let mut what = format!("{}: item `{}`", path.display(), item_ids[r.item]);
                if criteria_per_item[r.item] > 1 {
                    what.push_str(&format!(", criterion `{}`", r.criterion.name));
                }
                what
            }
            Source::Texts { ids } => match &ids[r.item] {
                Some(id) => format!("text {} (id `{id}`)", r.item + 1),
                None => format!("text {}", r.item + 1),
            },
        }
    }

    /// The file a bad input is reported against (the eval set; none for texts).
    pub fn path(&self) -> Option<&Path> {
        match &self.source {
            Source::EvalSet { path, .. } => Some(path),
            Source::Texts { .. } => None,
        }
    }
}

pub use crate::formats::texts::Text;

/// Seeded choice of `k` shot rows from distinct groups, and an alternate set from other groups.
/// The shuffle is the linear congruential one every committed result file's shots came from.
fn choose_shots(rows: &[Row<'_>], config: &RunConfig, path: &Path) -> Result<Shots> {
    let k = config.shots;
    if k == 0 {
        return Ok(Shots::default());
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let mut s = config.shot_seed ^ 0x5EED_5EED;
    for i in (1..order.len()).rev() {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let j = ((s >> 33) as usize) % (i + 1);
        order.swap(i, j);
    }
    let pick = |exclude: &[&str]| -> Vec<usize> {
        let mut chosen: Vec<usize> = Vec::new();
        for &i in &order {
            let g = rows[i].group_id.as_str();
            if chosen.len() == k {
                break;
            }
            if !exclude.contains(&g) && !chosen.iter().any(|&c| rows[c].group_id == g) {
                chosen.push(i);
            }
        }
        chosen
    };
    let primary = pick(&[]);
    let groups: Vec<&str> = primary.iter().map(|&i| rows[i].group_id.as_str()).collect();
    let alternate = pick(&groups);
    if primary.len() < k || alternate.len() < k {
        return Err(Error::BadFile {
            path: path.to_path_buf(),
            reason: format!("--shots {k} needs {} rows from distinct groups; the set has too few groups", 2 * k),
        });
    }
    let shot_msgs = |ids: &[usize]| -> Vec<Shot> {
        ids.iter()
            .map(|&i| {
                let r = &rows[i];
                let ident: Vec<usize> = (0..r.criterion.options.len()).collect();
                Shot {
                    user: prompt::user_turn_in(config.prompt_version, r.state, r.criterion, &ident),
                    answer: prompt::code(r.gold.unwrap_or(0), r.criterion.options.len()),
                }
            })
            .collect()
    };
    let ids = |v: &[usize]| v.iter().map(|&i| rows[i].id.clone()).collect::<Vec<_>>();
    Ok(Shots {
        primary_ids: ids(&primary),
        alternate_ids: ids(&alternate),
        primary: shot_msgs(&primary),
        alternate: shot_msgs(&alternate),
        primary_groups: primary.iter().map(|&i| rows[i].group_id.clone()).collect(),
    })
}
