//! The prompt: how a state and a criterion become the text the model reads, rendered with the
//! model's own chat template (minijinja), thinking turned off where the template has it.
//!
//! Layout (version [`PROMPT_VERSION`]): one system message asking for one option letter; any
//! shots as user/assistant turns; then a user turn with the state first, the criterion, and the
//! lettered options; then the generation prompt. The state comes before the criterion so that
//! every criterion and ordering of one item shares the state as a prefix.

pub use crate::engine::template::{ChatTemplate, Message};
use crate::formats::rubric::{Criterion, QuestionKind};

pub use crate::config::{PromptVersion, PROMPT_VERSION};
pub use crate::engine::{code, LETTERS};

const SYSTEM: &str = "You judge texts. Read the text and the question, then answer with the letter of exactly one option and nothing else.";

/// A worked example put before the scored item: the user turn and the answer letter.
#[derive(Debug, Clone)]
pub struct Shot {
    pub user: String,
    pub answer: String,
}

/// The user turn for a state and a criterion shown in `ordering` (indices into its options), in
/// the default layout.
pub fn user_turn(state: &str, criterion: &Criterion, ordering: &[usize]) -> String {
    user_turn_in(PromptVersion::V1, state, criterion, ordering)
}

/// The user turn in the given layout.
pub fn user_turn_in(version: PromptVersion, state: &str, criterion: &Criterion, ordering: &[usize]) -> String {
    if version == PromptVersion::TerseV1 {
        return terse_user_turn(state, criterion, ordering);
    }
    let mut s = String::with_capacity(state.len() + 256);
    s.push_str("Text:\n");
    s.push_str(state.trim_end());
    s.push_str("\n\nQuestion: ");
    s.push_str(criterion.instructions.trim());
    if let Some(rule) = &criterion.rule {
        s.push_str("\nRule: ");
        s.push_str(rule.trim());
    }
    if criterion.kind == QuestionKind::Score {
        s.push_str("\n(The options are levels, lowest first.)");
    }
    s.push_str("\n\nOptions:\n");
    let n = ordering.len();
    for (slot, &opt) in ordering.iter().enumerate() {
        s.push_str(&code(slot, n));
        s.push_str(". ");
        s.push_str(criterion.options[opt].description.trim());
        s.push('\n');
    }
    // Past 26 options the codes are two letters ([`code`]).
    s.push_str(if n <= LETTERS.len() { "\nAnswer with one letter." } else { "\nAnswer with one code." });
    s
}

/// `readout-terse-v1`: the state, a blank line, the question (and rule), the lettered options.
fn terse_user_turn(state: &str, criterion: &Criterion, ordering: &[usize]) -> String {
    let mut s = String::with_capacity(state.len() + 192);
    s.push_str(state.trim_end());
    s.push_str("\n\n");
    s.push_str(criterion.instructions.trim());
    if let Some(rule) = &criterion.rule {
        s.push(' ');
        s.push_str(rule.trim());
    }
    if criterion.kind == QuestionKind::Score {
        s.push_str(" (lowest first)");
    }
    for (slot, &opt) in ordering.iter().enumerate() {
        s.push('\n');
        s.push_str(&code(slot, ordering.len()));
        s.push_str(". ");
        s.push_str(criterion.options[opt].description.trim());
    }
    s
}

/// The messages of a prompt: system, shots, then the scored user turn.
pub fn messages(shots: &[Shot], user: String) -> Vec<Message> {
    let mut m = Vec::with_capacity(2 + 2 * shots.len());
    m.push(Message::new("system", SYSTEM));
    for shot in shots {
        m.push(Message::new("user", shot.user.clone()));
        m.push(Message::new("assistant", shot.answer.clone()));
    }
    m.push(Message::new("user", user));
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::rubric::OptionSpec;

    fn crit() -> Criterion {
        Criterion {
            name: "c".into(),
            kind: QuestionKind::Choice,
            instructions: "Which?".into(),
            rule: None,
            options: vec![
                OptionSpec { id: "x".into(), description: "Ex".into() },
                OptionSpec { id: "y".into(), description: "Why".into() },
            ],
            gold: None,
        }
    }

    #[test]
    fn state_first_then_lettered_options_in_order() {
        let u = user_turn("The text.", &crit(), &[1, 0]);
        assert_eq!(u, "Text:\nThe text.\n\nQuestion: Which?\n\nOptions:\nA. Why\nB. Ex\n\nAnswer with one letter.");
    }

    #[test]
    fn terse_layout_drops_the_labels() {
        let u = user_turn_in(PromptVersion::TerseV1, "The text.", &crit(), &[1, 0]);
        assert_eq!(u, "The text.\n\nWhich?\nA. Why\nB. Ex");
        assert_eq!("terse".parse::<PromptVersion>(), Ok(PromptVersion::TerseV1));
        assert_eq!("readout-v1".parse::<PromptVersion>(), Ok(PromptVersion::V1));
        assert!("v2".parse::<PromptVersion>().is_err());
    }

    fn template(source: &str) -> ChatTemplate {
        let chosen = crate::engine::template::choose(None, Some(source.into()), std::path::Path::new("m")).unwrap();
        ChatTemplate::new(&chosen, Some("<s>".into()), None).unwrap()
    }

    #[test]
    fn chatml_renders_generation_prompt() {
        let t = template(crate::engine::template::builtin("chatml").unwrap());
        let s = t.render(&messages(&[], "hi".into())).unwrap();
        assert!(s.starts_with("<|im_start|>system\n"));
        assert!(s.ends_with("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"));
    }

    #[test]
    fn templates_see_thinking_off_and_the_bos_token() {
        // A qwen3-style switch: thinking off leaves an empty think block before the answer.
        let qwen3 = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}";
        let s = template(qwen3).render(&[Message::new("user", "q")]).unwrap();
        assert_eq!(s, "<s>q<|im_start|>assistant\n<think>\n\n</think>\n\n");
    }
}
