//! The tokenizer, from `tokenizer.json` or built from GGUF metadata so that it tokenizes exactly
//! as llama.cpp does. Two GGUF vocabularies:
//! - `gpt2`: a byte-level BPE over `tokenizer.ggml.tokens` / `merges`, with the pre-tokenizer
//!   that `tokenizer.ggml.pre` names (candle's own GGUF tokenizer adds a prefix space on SmolLM2;
//!   llama.cpp does not);
//! - `llama` (SentencePiece: Gemma, Llama 2, Mistral): llama.cpp's `llm_tokenizer_spm`, a merge
//!   of adjacent symbols by the score of the token they make, highest first, leftmost on a tie;
//!   characters left outside the vocabulary become their `<0xXX>` byte tokens; spaces are `▁`,
//!   and one is put before the text when `tokenizer.ggml.add_space_prefix` says so. It is the
//!   `tokenizers` crate's BPE with the merges made from the scores, as transformers converts a
//!   SentencePiece model (`convert_slow_tokenizer.py`): every split of a token into two tokens is
//!   a merge, ranked by the score of the whole; the text is one word (no pre-tokenizer).
//!
//! In both, control, user-defined and unknown tokens are matched whole in the text, as llama.cpp
//! does with `special = true`, and the BOS token is put first when `add_bos_token` says so.

use super::load::GgufVocab;
use crate::error::{Error, Result};
use serde_json::json;
use std::path::{Path, PathBuf};

/// A loaded tokenizer and the file it came from.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
    /// Prepend this id to every prompt (GGUF `add_bos_token`), unless the prompt starts with it.
    bos: Option<u32>,
    /// How a vocabulary entry spells its bytes.
    spelling: Spelling,
}

/// How a vocabulary entry's string spells the bytes of its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spelling {
    /// GPT-2's byte-level alphabet: each byte one printable character.
    ByteLevel,
    /// SentencePiece: `▁` for a space, `<0xNN>` for a byte outside the vocabulary.
    SentencePiece,
    /// A tokenizer.json of another kind: the entry decoded alone.
    Decoded,
}

// llama.cpp's pre-tokenizer regexes (llama-vocab.cpp), by `tokenizer.ggml.pre`.
const GPT2_RE: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
const QWEN2_RE: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const LLAMA3_RE: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

impl Tokenizer {
    /// Load a `tokenizer.json`.
    pub fn from_json_file(path: &Path) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| Error::Tokenizer { path: path.to_path_buf(), detail: e.to_string() })?;
        Ok(Tokenizer { inner, path: path.to_path_buf(), bos: None, spelling: Spelling::Decoded })
    }

    /// Build the tokenizer llama.cpp would use for this GGUF vocabulary.
    pub(crate) fn from_gguf(v: &GgufVocab, path: &Path) -> Result<Self> {
        match v.model.as_str() {
            "gpt2" => Self::byte_level_bpe(v, path),
            "llama" => Self::sentencepiece(v, path),
            other => Err(Error::Tokenizer {
                path: path.to_path_buf(),
                detail: format!(
                    "tokenizer model `{other}` is not supported from GGUF metadata (Readout builds `gpt2`, byte-level BPE, and `llama`, SentencePiece); use a Hugging Face directory with tokenizer.json"
                ),
            }),
        }
    }

    fn byte_level_bpe(v: &GgufVocab, path: &Path) -> Result<Self> {
        let err = |detail: String| Error::Tokenizer { path: path.to_path_buf(), detail };
        let (pre, ignore_merges) = match v.pre.as_str() {
            "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone" | "minerva-7b" => (
                json!({"type": "Sequence", "pretokenizers": [
                    {"type": "Digits", "individual_digits": true},
                    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}]}),
                false,
            ),
            "qwen2" | "qwen35" => (split_then_bytes(QWEN2_RE), false),
            "llama3" | "llama-bpe" | "llama-v3" | "smaug-bpe" => (split_then_bytes(LLAMA3_RE), true),
            "gpt-2" | "gpt2" | "default" | "phi-2" | "jina-es" | "jina-de" | "olmo" | "jais" => (split_then_bytes(GPT2_RE), false),
            other => return Err(err(format!("pre-tokenizer `{other}` (tokenizer.ggml.pre) is not supported; use a Hugging Face directory with tokenizer.json"))),
        };
        let mut vocab = serde_json::Map::with_capacity(v.tokens.len());
        let mut added = Vec::new();
        for (i, t) in v.tokens.iter().enumerate() {
            vocab.insert(t.clone(), json!(i));
            // 3 = control, 4 = user-defined: matched whole in the text, as llama.cpp does with special=true.
            let ty = v.token_types.get(i).copied().unwrap_or(1);
            if ty == 3 || ty == 4 {
                added.push(json!({"id": i, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": ty == 3}));
            }
        }
        let spec = json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": null,
            "pre_tokenizer": pre,
            "post_processor": null,
            "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
            "model": {
                "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": ignore_merges,
                "vocab": vocab, "merges": v.merges,
            }
        });
        let inner: tokenizers::Tokenizer = serde_json::from_value::<tokenizers::Tokenizer>(spec)
            .map_err(|e| err(format!("building BPE from metadata: {e}")))?;
        // llama.cpp adds no BOS to a byte-level vocabulary unless the file says so.
        let bos = if v.add_bos.unwrap_or(false) { v.bos_id } else { None };
        Ok(Tokenizer { inner, path: path.to_path_buf(), bos, spelling: Spelling::ByteLevel })
    }

    /// llama.cpp's SentencePiece tokenizer (`llm_tokenizer_spm`) as a `tokenizers` BPE.
    fn sentencepiece(v: &GgufVocab, path: &Path) -> Result<Self> {
        use tokenizers::decoders::{byte_fallback::ByteFallback, fuse::Fuse, sequence::Sequence, strip::Strip};
        use tokenizers::normalizers::{Prepend, Replace};
        use tokenizers::{AddedToken, DecoderWrapper, NormalizerWrapper};
        let err = |detail: String| Error::Tokenizer { path: path.to_path_buf(), detail };
        let n = v.tokens.len();
        if v.scores.len() != n {
            return Err(err(format!(
                "`tokenizer.ggml.scores` has {} entries for {n} tokens; a SentencePiece vocabulary needs one score per token. Convert the model again with llama.cpp's convert_hf_to_gguf.py",
                v.scores.len()
            )));
        }
        let ty = |i: usize| v.token_types.get(i).copied().unwrap_or(TYPE_NORMAL);
        let merges = spm_merges(&v.tokens, &v.scores, &ty);
        let mut vocab = tokenizers::models::bpe::Vocab::with_capacity(n);
        for (i, t) in v.tokens.iter().enumerate() {
            // As llama.cpp's text-to-token map: a text given twice is the later id.
            vocab.insert(t.clone(), i as u32);
        }
        let mut bpe = tokenizers::models::bpe::BPE::builder().vocab_and_merges(vocab, merges).byte_fallback(true);
        // llama.cpp's defaults for a `llama` vocabulary when the keys are absent: unknown 0, BOS 1,
        // BOS added, a space put before the text.
        let unk = v.unk_id.unwrap_or(0) as usize;
        if let Some(t) = v.tokens.get(unk) {
            bpe = bpe.unk_token(t.clone());
        }
        let bpe = bpe.build().map_err(|e| err(format!("building the SentencePiece merges: {e}")))?;
        let mut inner = tokenizers::Tokenizer::new(bpe);
        let space = Replace::new(" ", "▁").map_err(|e| err(e.to_string()))?;
        let prefix = v.add_space_prefix.unwrap_or(true);
        let normalizer: NormalizerWrapper = if prefix {
            tokenizers::normalizers::Sequence::new(vec![Prepend::new("▁".into()).into(), space.into()]).into()
        } else {
            space.into()
        };
        inner.with_normalizer(Some(normalizer));
        let mut decoders: Vec<DecoderWrapper> = vec![
            Replace::new("▁", " ").map_err(|e| err(e.to_string()))?.into(),
            ByteFallback::new().into(),
            Fuse::new().into(),
        ];
        if prefix {
            decoders.push(Strip::new(' ', 1, 0).into());
        }
        inner.with_decoder(Some(Sequence::new(decoders)));
        // Control, user-defined and unknown tokens are cut out of the text first, whole, as
        // llama.cpp does with `special = true`; each piece between them is tokenized alone (and
        // gets its own space prefix, as in llama.cpp, where each follows a special token).
        let whole: Vec<AddedToken> = (0..n)
            .filter(|&i| is_matched_whole(ty(i)) && !v.tokens[i].is_empty())
            .map(|i| AddedToken::from(v.tokens[i].clone(), ty(i) != TYPE_USER_DEFINED).normalized(false))
            .collect();
        inner.add_special_tokens(&whole);
        let bos = if v.add_bos.unwrap_or(true) { Some(v.bos_id.unwrap_or(1)) } else { None };
        Ok(Tokenizer { inner, path: path.to_path_buf(), bos, spelling: Spelling::SentencePiece })
    }

    /// Token ids of `text`, special tokens matched, the BOS token first when the model wants it.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids = self.encode_plain(text)?;
        if let Some(b) = self.bos {
            if ids.first() != Some(&b) {
                ids.insert(0, b);
            }
        }
        Ok(ids)
    }

    /// Token ids of `text`, special tokens matched, no BOS token added (a continuation's tokens).
    pub fn encode_plain(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode_fast(text, false)
            .map_err(|e| Error::Tokenizer { path: self.path.clone(), detail: format!("encoding failed: {e}") })?;
        Ok(enc.get_ids().to_vec())
    }

    /// The BOS token's text, when the model puts one before every prompt.
    pub fn bos_token(&self) -> Option<String> {
        self.bos.and_then(|b| self.inner.id_to_token(b))
    }

    /// The bytes of token `id`'s text (a byte-level token may hold part of a character);
    /// empty for an id outside the vocabulary.
    pub fn token_bytes(&self, id: u32) -> Vec<u8> {
        let Some(entry) = self.inner.id_to_token(id) else { return Vec::new() };
        let special = self.inner.get_added_tokens_decoder().get(&id).is_some_and(|t| t.special);
        if special {
            return entry.into_bytes();
        }
        match self.spelling {
            Spelling::ByteLevel => entry
                .chars()
                .flat_map(|c| byte_of_char(c).map_or_else(|| c.to_string().into_bytes(), |b| vec![b]))
                .collect(),
            Spelling::SentencePiece => match spm_byte(&entry) {
                Some(b) => vec![b],
                None => entry.replace('▁', " ").into_bytes(),
            },
            Spelling::Decoded => self.decode(&[id]).unwrap_or_default().into_bytes(),
        }
    }

    /// Token `id`'s text, a part of a character written as `bytes:\xNN` (as OpenAI does).
    pub fn token_text(&self, id: u32) -> String {
        let bytes = self.token_bytes(id);
        match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => e.into_bytes().iter().fold(String::from("bytes:"), |mut s, b| {
                s.push_str(&format!("\\x{b:02x}"));
                s
            }),
        }
    }

    /// Text of `ids`, special tokens kept.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, false)
            .map_err(|e| Error::Tokenizer { path: self.path.clone(), detail: format!("decoding failed: {e}") })
    }

    /// The last special token in `text` that the tokenizer cuts out whole, and the text after it.
    ///
    /// The tokenizer cuts such tokens out of the text first and encodes each piece between them
    /// alone (a piece that does not start the text is never treated as its start), so the text
    /// after the last one encodes the same whatever came before it. `None` when `text` holds none.
    pub fn after_last_special<'a>(&self, text: &'a str) -> Option<(&'a str, &'a str)> {
        let (at, len) = self
            .inner
            .get_added_tokens_decoder()
            .values()
            .filter(|t| t.special && !t.single_word && !t.normalized && !t.content.is_empty())
            .filter_map(|t| text.rfind(t.content.as_str()).map(|i| (i, t.content.len())))
            // the one that ends last; of two ending there, the longer
            .max_by_key(|&(i, len)| (i + len, len))?;
        Some((&text[at..at + len], &text[at + len..]))
    }

    /// The id of `token` when it is one vocabulary entry.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Number of entries, specials included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Where the tokenizer came from (a tokenizer.json or the model file).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

// GGUF token types (llama.cpp's `llama_token_type`).
const TYPE_NORMAL: i32 = 1;
const TYPE_UNKNOWN: i32 = 2;
const TYPE_CONTROL: i32 = 3;
const TYPE_USER_DEFINED: i32 = 4;
const TYPE_BYTE: i32 = 6;

/// Tokens llama.cpp cuts out of the text whole before tokenizing the rest (`special = true`).
fn is_matched_whole(ty: i32) -> bool {
    matches!(ty, TYPE_UNKNOWN | TYPE_CONTROL | TYPE_USER_DEFINED)
}

/// The BPE merges that reproduce llama.cpp's score-driven merging: every split of a token into
/// two tokens, ranked by the whole token's score, highest first (then as transformers orders
/// them: the longer left part first, then by ids, so the order is total).
///
/// llama.cpp merges any two adjacent symbols whose text is a token, the highest score first and
/// the leftmost of equal scores. A BPE ranks pairs, so the two agree wherever no two different
/// splits of one token compete at overlapping places (scores of a SentencePiece vocabulary's
/// normal tokens are distinct). Tokens cut out whole (control, user-defined, unknown) never occur
/// inside a piece of text, so they take no part; byte tokens are never a part (a character
/// outside the vocabulary stays bytes, as in llama.cpp).
fn spm_merges(tokens: &[String], scores: &[f32], ty: &dyn Fn(usize) -> i32) -> Vec<(String, String)> {
    let index: std::collections::HashMap<&str, usize> =
        tokens.iter().enumerate().filter(|&(i, _)| !is_matched_whole(ty(i))).map(|(i, t)| (t.as_str(), i)).collect();
    let part = |s: &str| index.get(s).copied().filter(|&i| ty(i) != TYPE_BYTE);
    // (whole, left, right, left length in chars)
    let mut found: Vec<(usize, usize, usize, usize)> = Vec::new();
    for (whole, t) in tokens.iter().enumerate() {
        if is_matched_whole(ty(whole)) {
            continue;
        }
        for (chars, (at, _)) in t.char_indices().enumerate().skip(1) {
            if let (Some(l), Some(r)) = (part(&t[..at]), part(&t[at..])) {
                found.push((whole, l, r, chars));
            }
        }
    }
    found.sort_by(|a, b| {
        let by_score = scores[b.0].partial_cmp(&scores[a.0]).unwrap_or(std::cmp::Ordering::Equal);
        by_score.then(b.3.cmp(&a.3)).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1))
    });
    found.into_iter().map(|(_, l, r, _)| (tokens[l].clone(), tokens[r].clone())).collect()
}

fn split_then_bytes(re: &str) -> serde_json::Value {
    json!({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": re}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]})
}

/// The byte GPT-2's byte-level alphabet spells as `c` (bytes that print stand for themselves;
/// the others were moved to 256 and up, in order).
fn byte_of_char(c: char) -> Option<u8> {
    let printable = |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let code = c as u32;
    if code < 256 && printable(code) {
        return Some(code as u8);
    }
    let k = code.checked_sub(256)?;
    (0u32..256).filter(|&b| !printable(b)).nth(k as usize).map(|b| b as u8)
}

/// A SentencePiece byte token `<0xNN>`'s byte.
fn spm_byte(entry: &str) -> Option<u8> {
    let hex = entry.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn byte_level_characters_spell_their_bytes() {
        // Printable bytes stand for themselves; 0..=32 moved to U+0100..=U+0120 in order.
        assert_eq!(super::byte_of_char('a'), Some(b'a'));
        assert_eq!(super::byte_of_char('\u{120}'), Some(b' ')); // Ġ
        assert_eq!(super::byte_of_char('\u{10a}'), Some(b'\n')); // Ċ
        assert_eq!(super::byte_of_char('\u{100}'), Some(0));
        assert_eq!(super::byte_of_char('\u{121}'), Some(127)); // after the 33 below the space
        assert_eq!(super::byte_of_char('\u{4e00}'), None);
        assert_eq!(super::spm_byte("<0x0A>"), Some(10));
        assert_eq!(super::spm_byte("<0x0>"), None);
    }

    use super::*;

    /// A tiny SentencePiece vocabulary: unknown, BOS, EOS, the 256 byte tokens (`<0xXX>` is id
    /// 3 + XX), then `▁` a b c, and three merged tokens whose scores put `bc` before `ab` before
    /// `▁a`.
    fn tiny(add_space_prefix: bool) -> Tokenizer {
        let mut tokens = vec!["<unk>".to_string(), "<s>".into(), "</s>".into()];
        let mut types = vec![TYPE_UNKNOWN, TYPE_CONTROL, TYPE_CONTROL];
        let mut scores = vec![0.0, 0.0, 0.0];
        for b in 0..=255u8 {
            tokens.push(format!("<0x{b:02X}>"));
            types.push(TYPE_BYTE);
            scores.push(0.0);
        }
        for (t, s) in [("▁", -10.0), ("a", -11.0), ("b", -12.0), ("c", -13.0), ("bc", -1.0), ("ab", -2.0), ("▁a", -3.0)]
        {
            tokens.push(t.into());
            types.push(TYPE_NORMAL);
            scores.push(s);
        }
        let v = GgufVocab {
            model: "llama".into(),
            tokens,
            token_types: types,
            scores,
            add_space_prefix: Some(add_space_prefix),
            bos_id: Some(1),
            ..Default::default()
        };
        Tokenizer::from_gguf(&v, Path::new("tiny.gguf")).unwrap()
    }

    // Ids of the tiny vocabulary's normal tokens.
    const SPACE: u32 = 259;
    const A: u32 = 260;
    const B: u32 = 261;
    const BC: u32 = 263;
    const AB: u32 = 264;
    const SPACE_A: u32 = 265;

    #[test]
    fn sentencepiece_merges_the_highest_score_first() {
        let t = tiny(true);
        // "▁abc": bc (-1) before ab (-2) before ▁a (-3); ▁abc and abc are not tokens.
        assert_eq!(t.encode("abc").unwrap(), vec![1, SPACE_A, BC]);
        // "▁ab▁a": ab first; then ▁+a at 0 is stale (a is inside ab), ▁+a at 3 merges.
        assert_eq!(t.encode("ab a").unwrap(), vec![1, SPACE, AB, SPACE_A]);
        // Two spaces are two ▁, the first joining nothing.
        assert_eq!(t.encode("a  b").unwrap(), vec![1, SPACE_A, SPACE, SPACE, B]);
    }

    #[test]
    fn sentencepiece_falls_back_to_bytes() {
        // 😀 is F0 9F 98 80, none of them a character of the vocabulary.
        assert_eq!(t_ids(&tiny(true), "a😀"), vec![1, SPACE_A, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80]);
        assert_eq!(t_ids(&tiny(false), "é"), vec![1, 3 + 0xC3, 3 + 0xA9]);
    }

    fn t_ids(t: &Tokenizer, s: &str) -> Vec<u32> {
        t.encode(s).unwrap()
    }

    #[test]
    fn sentencepiece_space_prefix_and_specials() {
        let t = tiny(false);
        assert_eq!(t.encode("ab").unwrap(), vec![1, AB]);
        assert_eq!(t.encode(" a").unwrap(), vec![1, SPACE_A]);
        assert_eq!(t.encode("").unwrap(), vec![1]);
        // Control tokens are matched whole; with the prefix on, each piece after one gets its ▁
        // (llama.cpp prefixes every piece that follows a special token).
        assert_eq!(tiny(true).encode("</s>b").unwrap(), vec![1, 2, SPACE, B]);
        assert_eq!(t.encode("</s>b").unwrap(), vec![1, 2, B]);
        // A prompt that starts with BOS gets no second one.
        assert_eq!(t.encode("<s>a").unwrap(), vec![1, A]);
        // Decoding puts the spaces back, and drops the prefix the encoder added.
        assert_eq!(tiny(true).decode(&[SPACE_A, BC]).unwrap(), "abc");
        assert_eq!(t.decode(&[AB, SPACE_A, 3 + 0xC3, 3 + 0xA9]).unwrap(), "ab aé");
    }

    #[test]
    fn the_text_after_the_last_special_token() {
        let t = tiny(true);
        assert_eq!(t.after_last_special("a</s>b<s>ab"), Some(("<s>", "ab")));
        assert_eq!(t.after_last_special("a<s></s>"), Some(("</s>", "")));
        assert_eq!(t.after_last_special("ab a"), None);
        // What follows the last one encodes the same whatever came before it: ▁ b a.
        let (x, y) = (t.encode("ab</s>ba").unwrap(), t.encode("b a a</s>ba").unwrap());
        assert_eq!(x[x.len() - 4..], [2, SPACE, B, A]);
        assert_eq!(x[x.len() - 4..], y[y.len() - 4..]);
    }

    #[test]
    fn sentencepiece_needs_a_score_per_token() {
        let v = GgufVocab {
            model: "llama".into(),
            tokens: vec!["a".into(), "b".into()],
            scores: vec![0.0],
            ..Default::default()
        };
        let e = Tokenizer::from_gguf(&v, Path::new("x.gguf")).err().unwrap().to_string();
        assert!(e.contains("has 1 entries for 2 tokens"), "{e}");
        let v = GgufVocab { model: "bert".into(), ..Default::default() };
        let e = Tokenizer::from_gguf(&v, Path::new("x.gguf")).err().unwrap().to_string();
        assert!(e.contains("`bert` is not supported"), "{e}");
    }
}
