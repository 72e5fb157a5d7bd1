//! Re-encoding a model's weights: `readout quantize IN -o OUT.gguf --mode ...`. Reads a GGUF
//! file or a Hugging Face directory (converted as llama.cpp's `convert_hf_to_gguf.py` would, see
//! [`hf`]), writes a GGUF with candle's writer: the same metadata (for a GGUF source) and every
//! matrix re-encoded; 1-D tensors (norms) stay F32. Deterministic: the same input and mode give
//! the same bytes.

mod hf;

pub use hf::quantize_hf_dir;

use crate::error::{Error, Result};
use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::Device;
use std::path::Path;

/// Target encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QuantMode {
    F32,
    F16,
    Q8_0,
    Q4_0,
    Q4_1,
    Q4K,
    Q6K,
}

impl std::str::FromStr for QuantMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "f32" => Self::F32,
            "f16" => Self::F16,
            "q8_0" => Self::Q8_0,
            "q4_0" => Self::Q4_0,
            "q4_1" => Self::Q4_1,
            "q4_k" => Self::Q4K,
            "q6_k" => Self::Q6K,
            other => return Err(format!("unknown mode `{other}` (expected f32, f16, q8_0, q4_0, q4_1, q4_k or q6_k)")),
        })
    }
}

impl QuantMode {
    fn dtype(self) -> GgmlDType {
        match self {
            Self::F32 => GgmlDType::F32,
            Self::F16 => GgmlDType::F16,
            Self::Q8_0 => GgmlDType::Q8_0,
            Self::Q4_0 => GgmlDType::Q4_0,
            Self::Q4_1 => GgmlDType::Q4_1,
            Self::Q4K => GgmlDType::Q4K,
            Self::Q6K => GgmlDType::Q6K,
        }
    }
}

/// The encoding a matrix whose rows hold `width` values gets when `target` is asked for. The
/// k-quants pack rows in blocks of 256, which many small models' widths are not a multiple of
/// (SmolLM2-135M's 576); such matrices get the nearest 32-block encoding of at least the
/// target's precision, as llama.cpp does (Q4_K → Q5_0, Q6_K → Q8_0), and F32 only when even a
/// 32-block does not fit.
fn encoding_for(width: usize, target: GgmlDType) -> GgmlDType {
    let fits = |t: GgmlDType| width > 0 && width.is_multiple_of(t.block_size());
    if fits(target) {
        return target;
    }
    let fallback = match target {
        GgmlDType::Q4K => GgmlDType::Q5_0,
        GgmlDType::Q6K => GgmlDType::Q8_0,
        other => other,
    };
    if fits(fallback) {
        fallback
    } else {
        GgmlDType::F32
    }
}

/// Re-encode the model at `input` (a GGUF file or a Hugging Face directory) into the GGUF
/// `output`. Returns the number of tensors written.
pub fn quantize(input: &Path, output: &Path, mode: QuantMode) -> Result<usize> {
    if input.is_dir() {
        quantize_hf_dir(input, output, mode)
    } else {
        quantize_gguf(input, output, mode)
    }
}

/// The encoding of a tensor of shape `dims` under `target`: 1-D tensors (norms) stay F32,
/// matrices get [`encoding_for`] their row width.
fn tensor_encoding(dims: &[usize], target: GgmlDType) -> GgmlDType {
    if dims.len() == 1 {
        GgmlDType::F32
    } else {
        encoding_for(dims.last().copied().unwrap_or(0), target)
    }
}

/// Write a GGUF: first to `OUTPUT.gguf.part`, then renamed, so a failed run leaves no
/// half-written model under the name asked for.
fn write_gguf_file(output: &Path, md: &[(&str, &gguf_file::Value)], tensors: &[(String, QTensor)]) -> Result<()> {
    let tmp = output.with_extension("gguf.part");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?);
        let refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
        gguf_file::write(&mut w, md, &refs)?;
        use std::io::{Seek, SeekFrom, Write};
        for at in empty_string_array_types(md) {
            w.seek(SeekFrom::Start(at)).map_err(|e| Error::io(&tmp, e))?;
            w.write_all(&GGUF_TYPE_STRING.to_le_bytes()).map_err(|e| Error::io(&tmp, e))?;
        }
        w.flush().map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::rename(&tmp, output).map_err(|e| Error::io(output, e))
}

/// GGUF's value type of a string.
const GGUF_TYPE_STRING: u32 = 8;

/// Where candle's writer put the element type of each empty array among the keys llama.cpp
/// reads as arrays of strings. candle writes an empty array's element type as U32, and llama.cpp
/// refuses `tokenizer.ggml.merges` of any type but string, even empty (a byte-level vocabulary
/// has no merges); the caller overwrites these with the string type.
fn empty_string_array_types(md: &[(&str, &gguf_file::Value)]) -> Vec<u64> {
    use gguf_file::Value as V;
    fn encoded_len(v: &V) -> u64 {
        match v {
            V::U8(_) | V::I8(_) | V::Bool(_) => 1,
            V::U16(_) | V::I16(_) => 2,
            V::U32(_) | V::I32(_) | V::F32(_) => 4,
            V::U64(_) | V::I64(_) | V::F64(_) => 8,
            V::String(s) => 8 + s.len() as u64,
            V::Array(a) => 4 + 8 + a.iter().map(encoded_len).sum::<u64>(),
        }
    }
    // Magic, version, tensor count, key count; then each key: its name (u64 length and bytes),
    // its u32 value type, its value (an array: u32 element type, u64 length, elements).
    let mut at = 4 + 4 + 8 + 8;
    let mut found = Vec::new();
    for (key, value) in md {
        let value_at = at + 8 + key.len() as u64 + 4;
        if matches!(value, V::Array(a) if a.is_empty())
            && matches!(*key, "tokenizer.ggml.tokens" | "tokenizer.ggml.merges")
        {
            found.push(value_at);
        }
        at = value_at + encoded_len(value);
    }
    found
}

/// Re-encode the GGUF at `input` into `output`. Returns the number of tensors written.
pub fn quantize_gguf(input: &Path, output: &Path, mode: QuantMode) -> Result<usize> {
    let corrupt = |detail: String| Error::CorruptGguf { path: input.to_path_buf(), detail };
    let (mut f, content) = crate::engine::gguf::open(input)?;
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    let target = mode.dtype();
    let mut tensors = Vec::with_capacity(names.len());
    for name in names {
        let q = content.tensor(&mut f, name, &Device::Cpu).map_err(|e| corrupt(format!("tensor `{name}`: {e}")))?;
        let ty = tensor_encoding(q.shape().dims(), target);
        let out = if q.dtype() == ty { q } else { QTensor::quantize(&q.dequantize(&Device::Cpu)?, ty)? };
        tensors.push((name.clone(), out));
    }
    let mut keys: Vec<&String> = content.metadata.keys().filter(|k| k.as_str() != "general.file_type").collect();
    keys.sort();
    let md: Vec<(&str, &gguf_file::Value)> = keys.iter().map(|k| (k.as_str(), &content.metadata[*k])).collect();
    write_gguf_file(output, &md, &tensors)?;
    Ok(tensors.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_quants_fall_back_by_row_width() {
        assert_eq!(encoding_for(1024, GgmlDType::Q4K), GgmlDType::Q4K);
        assert_eq!(encoding_for(576, GgmlDType::Q4K), GgmlDType::Q5_0);
        assert_eq!(encoding_for(576, GgmlDType::Q6K), GgmlDType::Q8_0);
        assert_eq!(encoding_for(576, GgmlDType::Q4_1), GgmlDType::Q4_1);
        assert_eq!(encoding_for(100, GgmlDType::Q4_0), GgmlDType::F32);
    }

    #[test]
    fn empty_merges_are_written_as_an_array_of_strings() {
        use gguf_file::Value;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("m.gguf");
        let (a, merges, tokens) =
            (Value::String("xy".into()), Value::Array(vec![]), Value::Array(vec![Value::String("t".into())]));
        let md = [("a", &a), ("tokenizer.ggml.tokens", &tokens), ("tokenizer.ggml.merges", &merges)];
        write_gguf_file(&out, &md, &[]).unwrap();
        let bytes = std::fs::read(&out).unwrap();
        // Header 24, "a" = 8+1+4+(8+2), tokens = 8+21+4+(4+8+(8+1)), merges' key = 8+21+4.
        let at = 24 + 23 + 54 + 33;
        assert_eq!(empty_string_array_types(&md), vec![at as u64]);
        assert_eq!(&bytes[at..at + 12], &[8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let (_, content) = crate::engine::gguf::open(&out).unwrap();
        assert_eq!(content.metadata["tokenizer.ggml.merges"].to_vec().unwrap().len(), 0);
        assert_eq!(content.metadata["a"].to_string().unwrap(), "xy");
    }
}
