//! SentencePiece tokenization against llama.cpp on Gemma 3 270M's vocabulary, built from the
//! GGUF's metadata alone (the model need not run): token ids identical to llama.cpp's
//! (`Llama(vocab_only=True).tokenize(text, add_bos=True, special=True)`) on every prompt the
//! fidelity set renders with the `gemma` chat template (authored144, every cyclic ordering; a few
//! of them with three worked examples), the README's rubric example (every text of
//! examples/support-tickets.txt, every criterion, every cyclic ordering) and strings chosen to be
//! hard (spaces, newlines, tabs, byte fallback, CJK, digits, control tokens in the text).
//!
//! The fixture (numbers only) is made by `bench/make-tokenizer-fixture`; each prompt's ids are
//! stored as how many it shares with the previous prompt's, then the rest.

use crate::common;

use readout::debias::{orderings, DebiasMode};
use readout::engine::template::{choose, TemplateSource};
use readout::formats::evalset::{EvalSet, LoadOptions};
use readout::formats::rubric::Rubric;
use readout::pipeline::prompt::{self, Shot, LETTERS};

const GEMMA: &str = "models/gemma-3-270m-q4_k_m.gguf";

/// Strings that have tripped tokenizers: spaces where SentencePiece puts `▁`, the whitespace
/// runs Gemma keeps as tokens of their own, characters only bytes can spell, scripts without
/// spaces, digits, and the control and user-defined tokens written in the text.
const HARD: [&str; 32] = [
    "",
    " ",
    "  ",
    " leading space",
    "   three leading spaces",
    "trailing space ",
    "trailing spaces   ",
    "several   spaces  between    words",
    "\n",
    "\nline\n\nbreaks\n\n\n",
    "windows\r\nline\r\nends",
    "\ttab\tand\t\ttabs",
    " \t \n mixed \n\t ",
    "emoji 😀🎉👍🏽 and 👩‍👩‍👧 family",
    "ÿ é ñ ü ß — “quotes” … ¡¿",
    "中文字符和日本語のテキスト，한국어 텍스트",
    "digits 0123456789 3.14159 1,000,000 2026-01-01",
    "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
    "text <start_of_turn> inside<end_of_turn>text",
    "<start_of_turn <end_of_turn> <bos><eos> <unk><pad><mask>",
    "<b>bold</b> <table><tr><td>cell</td></tr></table>",
    "<0x41> written out, ▁ written out",
    "private use \u{e000}\u{f8ff} and \u{10ffff}",
    "nul \u{0} bell \u{7} escape \u{1b} delete \u{7f}",
    "zero\u{200b}width\u{200d}joiner\u{feff}bom",
    "combining e\u{301} a\u{308}\u{304}",
    "rare 𠀀𪚥 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "السلام عليكم",
    "Ελληνικά кириллица עברית हिन्दी",
    "                                          forty-two spaces",
    "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n forty newlines",
    "a\u{a0}non-breaking\u{3000}ideographic space",
];

/// One text to tokenize: its id in the fixture, the text, and how many option letters follow it
/// (0 for the hard strings).
struct Prompt {
    id: String,
    text: String,
    letters: usize,
}

/// Every prompt the test compares, in the fixture's order.
fn prompts() -> Vec<Prompt> {
    let chosen = choose(Some(&TemplateSource::Name("gemma".into())), None, std::path::Path::new(GEMMA)).unwrap();
    let template = prompt::ChatTemplate::new(&chosen, Some("<bos>".into()), Some("<eos>".into())).unwrap();
    let render = |shots: &[Shot], user: String| template.render(&prompt::messages(shots, user)).unwrap();
    let mut out = Vec::new();
    let set = EvalSet::load(&common::repo().join("bench/evalsets/authored144.jsonl"), &LoadOptions::default()).unwrap();
    for item in &set.items {
        for c in &item.criteria {
            for (oi, ord) in orderings(DebiasMode::Cyclic, c.options.len()).unwrap().iter().enumerate() {
                let text = render(&[], prompt::user_turn(&item.state, c, ord));
                out.push(Prompt { id: format!("{}/{}#{oi}", item.id, c.name), text, letters: ord.len() });
            }
        }
    }
    // Three worked examples (the next three items, in their given order, with their gold
    // letters) before every twelfth item: the model turns a few-shot run adds.
    let n = set.items.len();
    for i in (0..n).step_by(12) {
        let shots: Vec<Shot> = (1..=3)
            .map(|k| {
                let other = &set.items[(i + k) % n];
                let c = &other.criteria[0];
                let identity: Vec<usize> = (0..c.options.len()).collect();
                Shot { user: prompt::user_turn(&other.state, c, &identity), answer: LETTERS[c.gold.unwrap()].into() }
            })
            .collect();
        let item = &set.items[i];
        let c = &item.criteria[0];
        let identity: Vec<usize> = (0..c.options.len()).collect();
        let text = render(&shots, prompt::user_turn(&item.state, c, &identity));
        out.push(Prompt { id: format!("{}/{}#3shot", item.id, c.name), text, letters: identity.len() });
    }
    let rubric = Rubric::load(&common::repo().join("examples/support-ticket.rubric.json")).unwrap();
    let texts = std::fs::read_to_string(common::repo().join("examples/support-tickets.txt")).unwrap();
    for (ti, text) in texts.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        for c in &rubric.criteria {
            for (oi, ord) in orderings(DebiasMode::Cyclic, c.options.len()).unwrap().iter().enumerate() {
                let text = render(&[], prompt::user_turn(text, c, ord));
                out.push(Prompt { id: format!("rubric:{ti}/{}#{oi}", c.name), text, letters: ord.len() });
            }
        }
    }
    for (i, s) in HARD.iter().enumerate() {
        out.push(Prompt { id: format!("hard:{i}"), text: s.to_string(), letters: 0 });
    }
    out
}

/// sha256 over every (id, text), so a fixture made from other prompts is told apart from a
/// tokenizer that went wrong.
fn digest(prompts: &[Prompt]) -> String {
    let mut all = String::new();
    for p in prompts {
        all.push_str(&p.id);
        all.push('\0');
        all.push_str(&p.text);
        all.push('\0');
    }
    readout::hash::sha256_bytes(all.as_bytes())
}

#[derive(serde::Deserialize)]
struct Fixture {
    model_sha256: String,
    prompts_sha256: String,
    /// llama.cpp's ids of `A`, `B`, … each alone (no BOS).
    letters: Vec<u32>,
    prompts: Vec<FixturePrompt>,
}

#[derive(serde::Deserialize)]
struct FixturePrompt {
    id: String,
    /// How many leading ids are the previous prompt's.
    shared: usize,
    rest: Vec<u32>,
}

#[test]
fn gemma_token_ids_match_llama_cpp_on_every_prompt() {
    let path = common::repo().join(GEMMA);
    assert!(path.exists(), "{} is missing: run `models/fetch gemma3-270m`", path.display());
    let fixture: Fixture =
        serde_json::from_str(include_str!("../fixtures/llamacpp-gemma3-270m-tokens.json")).expect("fixture parses");
    assert_eq!(
        fixture.model_sha256,
        readout::hash::sha256_file(&path).unwrap(),
        "the fixture was made on another model file"
    );
    let prompts = prompts();
    assert_eq!(
        fixture.prompts_sha256,
        digest(&prompts),
        "the prompts changed since the fixture was made: run bench/make-tokenizer-fixture"
    );
    assert_eq!(fixture.prompts.len(), prompts.len());
    let tokenizer = readout::engine::read_tokenizer(&path).unwrap();
    // The design's figures: the bare letters, and `▁A` another token.
    assert_eq!(&fixture.letters[..3], &[236776, 236799, 236780]);
    assert_eq!(tokenizer.token_id("▁A"), Some(562));
    let mut previous: Vec<u32> = Vec::new();
    let mut tokens = 0;
    for (p, f) in prompts.iter().zip(&fixture.prompts) {
        let (id, text) = (&p.id, &p.text);
        assert_eq!(id, &f.id);
        let mut theirs = previous[..f.shared].to_vec();
        theirs.extend(&f.rest);
        let ours = tokenizer.encode(text).unwrap();
        if ours != theirs {
            let at = ours.iter().zip(&theirs).position(|(a, b)| a != b).unwrap_or(ours.len().min(theirs.len()));
            let tail = |v: &[u32]| v[at.saturating_sub(2)..(at + 6).min(v.len())].to_vec();
            panic!(
                "{id}: token ids differ from llama.cpp's from token {at}: ours {:?}, llama.cpp {:?}",
                tail(&ours),
                tail(&theirs)
            );
        }
        // Every letter the prompt offers is one token after it, the one llama.cpp gives.
        for (k, letter) in LETTERS.iter().take(p.letters).enumerate() {
            let with = tokenizer.encode(&format!("{text}{letter}")).unwrap();
            assert_eq!(with[..ours.len()], ours[..], "{id}: the letter {letter} changes the prompt's tokens");
            assert_eq!(&with[ours.len()..], &[fixture.letters[k]], "{id}: letter {letter}");
        }
        tokens += ours.len();
        previous = theirs;
    }
    eprintln!("sentencepiece: {} prompts, {tokens} tokens, identical to llama.cpp's", prompts.len());
}

/// Writes the prompts for `bench/make-tokenizer-fixture` (a tool, not a test: run only by that
/// script, which names the output in `READOUT_TOKENIZER_PROMPTS`).
#[test]
#[ignore = "run by bench/make-tokenizer-fixture"]
fn write_prompts_for_the_fixture() {
    let out = std::env::var_os("READOUT_TOKENIZER_PROMPTS").expect("READOUT_TOKENIZER_PROMPTS names the output file");
    let prompts = prompts();
    let doc = serde_json::json!({
        "prompts_sha256": digest(&prompts),
        "prompts": prompts.iter().map(|p| serde_json::json!({"id": p.id, "text": p.text})).collect::<Vec<_>>(),
    });
    std::fs::write(out, serde_json::to_string(&doc).unwrap()).unwrap();
}
