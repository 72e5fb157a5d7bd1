//! A state (or a text to score) whose prompt is longer than the model's context.
//!
//! The policy: by default such a prompt is refused before anything is scored, naming the item
//! (eval set) or the text (score) and the token counts ([`crate::Error::PromptTooLong`], exit
//! code 5). With `--truncate-middle` ([`Truncate::Middle`]) the state is cut from the middle:
//! its head and tail are kept, [`MARKER`] stands for what was removed, and the fewest characters
//! are removed (at word boundaries) so that the longest prompt of the item fits. A run records
//! the choice in its configuration (`config.truncate`) and, per row, how many tokens its longest
//! prompt lost (`truncated_tokens`).

use crate::error::Result;
use serde::{Deserialize, Serialize};

/// What to do with a state whose prompt does not fit the model's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Truncate {
    /// Refuse, naming the item or text and the token counts.
    #[default]
    None,
    /// Cut the state from the middle, keeping its head and tail.
    Middle,
}

option_names!(Truncate, "truncation", "none or middle", { None => "none", Middle => "middle" });

/// What stands in a cut state for the removed middle: an editor's ellipsis, so that the model
/// (and a reader of the prompt) sees that text is missing.
pub const MARKER: &str = " […] ";

/// How far (in characters) a cut moves to land on whitespace, so that words stay whole.
const WORD_SLACK: usize = 24;

/// `state` with `remove` characters taken out of its middle (at least that many; a little more
/// to cut at whitespace), head and tail joined by [`MARKER`]. Removing every character leaves
/// the marker alone.
pub fn cut_middle(state: &str, remove: usize) -> String {
    let bounds: Vec<usize> = state.char_indices().map(|(i, _)| i).chain(std::iter::once(state.len())).collect();
    let n = bounds.len() - 1;
    let keep = n.saturating_sub(remove);
    let (mut head, mut tail) = (keep.div_ceil(2), n - keep / 2);
    let chars: Vec<char> = state.chars().collect();
    // Move the head's end back, and the tail's start forward, to whitespace when it is near.
    if let Some(back) = (0..WORD_SLACK.min(head)).find(|&d| chars[head - d - 1].is_whitespace()) {
        head -= back;
    }
    if let Some(fwd) = (0..WORD_SLACK.min(n - tail)).find(|&d| chars[tail + d].is_whitespace()) {
        tail += fwd;
    }
    let (h, t) = (state[..bounds[head]].trim_end(), state[bounds[tail]..].trim_start());
    format!("{h}{MARKER}{t}").trim().to_string()
}

/// The shortest middle cut of `state` whose prompt fits in `budget` tokens: `prompt_len` gives
/// the length of the longest prompt the state appears in. `None` when even the marker alone
/// does not fit (the rest of the prompt is too long). A binary search on the characters removed;
/// the answer it returns always fits.
pub fn fit_middle(
    state: &str,
    budget: usize,
    prompt_len: &mut dyn FnMut(&str) -> Result<usize>,
) -> Result<Option<String>> {
    let n = state.chars().count();
    if prompt_len(&cut_middle(state, n))? > budget {
        return Ok(None);
    }
    let (mut lo, mut hi) = (1usize, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if prompt_len(&cut_middle(state, mid))? <= budget {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(Some(cut_middle(state, hi)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_the_middle_at_word_boundaries() {
        let s = "alpha beta gamma delta epsilon zeta eta theta iota kappa";
        let c = cut_middle(s, 20);
        assert!(c.starts_with("alpha beta") && c.ends_with("iota kappa"), "{c}");
        assert!(c.contains("[…]"));
        assert!(c.chars().count() <= s.chars().count() - 20 + MARKER.chars().count());
        // Every word left is whole.
        for w in c.split_whitespace().filter(|w| *w != "[…]") {
            assert!(s.split_whitespace().any(|x| x == w), "{w} in {c}");
        }
        assert_eq!(cut_middle(s, 1000), "[…]");
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        let s = "ééééééééééééééééééééééééééééééééééééééééééééééééé";
        for k in 0..s.chars().count() + 2 {
            let c = cut_middle(s, k);
            assert!(c.contains("[…]"));
        }
    }

    #[test]
    fn fit_finds_the_shortest_cut_that_fits() {
        let s: String = (0..200).map(|i| format!("w{i} ")).collect();
        // A "prompt" of 10 tokens plus one per word.
        let mut len = |t: &str| -> Result<usize> { Ok(10 + t.split_whitespace().count()) };
        let fitted = fit_middle(&s, 60, &mut len).unwrap().unwrap();
        assert!(len(&fitted).unwrap() <= 60);
        assert!(len(&fitted).unwrap() >= 58, "cut more than needed: {fitted}");
        assert!(fitted.starts_with("w0 w1") && fitted.trim_end().ends_with("w199"));
        assert_eq!(fit_middle(&s, 10, &mut len).unwrap(), None);
    }
}
