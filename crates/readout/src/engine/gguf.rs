//! A bounded reader for the GGUF header: magic, version, the metadata key/values and the tensor
//! table. It exists because candle's `gguf_file::Content::read` trusts the lengths in the header:
//! it allocates a string, an array or a dimension list as long as the file says before reading a
//! byte of it, and multiplies dimensions without checking, so a truncated or hostile file can make
//! it ask for terabytes (the process aborts) or overflow (a panic). Here every length and count is
//! checked against the bytes left in the file and against caps no real model comes near, every
//! size is computed with checked arithmetic, and every tensor must lie wholly inside the file.
//! A refusal is an [`Error::Gguf`] that names the file, the key or tensor, and the byte offset,
//! and says what to do.
//!
//! What it returns is candle's own [`gguf_file::Content`], so a file that passes is handed to
//! candle to read the tensors this reader has already checked.

use crate::error::{Error, GgufProblem, Result};
use candle_core::quantized::gguf_file::{Content, TensorInfo, Value, VersionedMagic};
use candle_core::quantized::GgmlDType;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// Longest metadata key (the GGUF spec's limit).
pub const MAX_KEY_BYTES: u64 = 65_535;
/// Longest tensor name (llama.cpp allows 64 bytes; this is lenient).
pub const MAX_NAME_BYTES: u64 = 65_535;
/// Longest string value (a chat template is a few KiB).
pub const MAX_STRING_BYTES: u64 = 16 << 20;
/// Most metadata entries (a real model has about 40).
pub const MAX_ENTRIES: u64 = 1 << 16;
/// Most tensors (a real model has hundreds; a large mixture of experts a few thousand).
pub const MAX_TENSORS: u64 = 1 << 20;
/// Most array values in the whole header (a 152k-token vocabulary with its types and merges is
/// about 0.5 M).
pub const MAX_ARRAY_VALUES: u64 = 1 << 23;
/// Deepest nesting of arrays in arrays.
pub const MAX_NESTING: usize = 4;
/// Most dimensions of a tensor (ggml's `GGML_MAX_DIMS`).
pub const MAX_DIMS: u32 = 4;
/// Largest `general.alignment`.
pub const MAX_ALIGNMENT: u64 = 1 << 16;
/// Largest header (metadata and tensor table; a real one is a few MiB).
pub const MAX_HEADER_BYTES: u64 = 256 << 20;
/// The alignment of tensor data when the metadata does not give one.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// Read and check the header of GGUF bytes; `path` names the source in errors.
pub fn parse(bytes: &[u8], path: &Path) -> Result<Content> {
    read(bytes, bytes.len() as u64, path)
}

/// Read and check the header of a GGUF file; returns the open file (for the tensor reads) too.
pub fn open(path: &Path) -> Result<(std::fs::File, Content)> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut buffered = std::io::BufReader::with_capacity(1 << 16, file);
    let content = read(&mut buffered, len, path)?;
    Ok((buffered.into_inner(), content))
}

/// Read and check a GGUF header from `reader`, the start of a file of `file_len` bytes.
pub fn read(reader: impl Read, file_len: u64, path: &Path) -> Result<Content> {
    if file_len == 0 {
        return Err(Error::CorruptGguf { path: path.to_path_buf(), detail: "the file is empty (0 bytes)".into() });
    }
    let mut r = Reader { r: reader, pos: 0, len: file_len, path, values_left: MAX_ARRAY_VALUES, v1: false };
    let magic: [u8; 4] = r.bytes_up_to()?;
    if &magic != b"GGUF" {
        let n = file_len.min(4) as usize;
        return Err(Error::CorruptGguf {
            path: path.to_path_buf(),
            detail: format!(
                "it does not start with the GGUF magic bytes `GGUF` (it starts with {:?}), so it is not a GGUF model; pass a .gguf file, or a Hugging Face model directory",
                String::from_utf8_lossy(&magic[..n])
            ),
        });
    }
    let version = r.u32(&|| "the version".into())?;
    let (magic, v1) = match version {
        1 => (VersionedMagic::GgufV1, true),
        2 => (VersionedMagic::GgufV2, false),
        3 => (VersionedMagic::GgufV3, false),
        v if (1..=3).contains(&v.swap_bytes()) => {
            return Err(r.fail(&|| "the version".into(), GgufProblem::BigEndian(v)))
        }
        v => return Err(r.fail(&|| "the version".into(), GgufProblem::Version(v))),
    };
    r.v1 = v1;
    let tensor_count = r.count(&|| "the tensor count".into())?;
    // A tensor's entry takes at least a name length, a dimension count, a type and an offset.
    r.check_count(tensor_count, if v1 { 20 } else { 24 }, MAX_TENSORS, "the tensor count", &|| {
        "the tensor count".into()
    })?;
    let kv_count = r.count(&|| "the metadata count".into())?;
    // An entry takes at least a key length, a value type and one byte of value.
    r.check_count(kv_count, if v1 { 9 } else { 13 }, MAX_ENTRIES, "the metadata count", &|| {
        "the metadata count".into()
    })?;

    let mut metadata: HashMap<String, Value> = HashMap::with_capacity(kv_count as usize);
    for i in 0..kv_count {
        let at_key = || format!("the key of metadata entry {} of {kv_count}", i + 1);
        let key = r.string(MAX_KEY_BYTES, "a key's length", &at_key)?;
        let at = |what: &str| format!("metadata `{key}` (entry {} of {kv_count}){what}", i + 1);
        let ty = r.u32(&|| at("'s value type"))?;
        let value = r.value(ty, 0, &|| at(""))?;
        if metadata.contains_key(&key) {
            return Err(r.fail(&|| at(""), GgufProblem::Duplicate(key.clone())));
        }
        metadata.insert(key, value);
    }

    // Name, info, size in bytes, and where its offset is written (for errors).
    let mut infos: Vec<(String, TensorInfo, u64, u64)> = Vec::with_capacity(tensor_count as usize);
    let mut names: HashMap<String, usize> = HashMap::with_capacity(tensor_count as usize);
    for i in 0..tensor_count {
        let name = r.string(MAX_NAME_BYTES, "a tensor name's length", &|| {
            format!("the name of tensor {} of {tensor_count}", i + 1)
        })?;
        let at = |what: &str| format!("tensor `{name}` (tensor {} of {tensor_count}){what}", i + 1);
        let n_dims = r.u32(&|| at("'s dimension count"))?;
        if n_dims > MAX_DIMS {
            return Err(r.fail(&|| at("'s dimension count"), GgufProblem::Dimensions { dims: n_dims, max: MAX_DIMS }));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        let mut elements: u64 = 1;
        for _ in 0..n_dims {
            let d = r.count(&|| at("'s dimensions"))?;
            if d == 0 {
                return Err(r.fail(&|| at("'s dimensions"), GgufProblem::ZeroDimension));
            }
            elements = elements
                .checked_mul(d)
                .filter(|&e| usize::try_from(e).is_ok())
                .ok_or_else(|| r.fail(&|| at("'s dimensions"), GgufProblem::Overflow { what: "element count" }))?;
            dims.push(d as usize);
        }
        // GGUF lists the fastest-varying dimension first; candle's shapes are row-major.
        dims.reverse();
        let type_at = r.pos;
        let ty = r.u32(&|| at("'s type"))?;
        let dtype = tensor_type(ty).ok_or_else(|| Error::UnsupportedTensorType {
            path: path.to_path_buf(),
            tensor: name.clone(),
            dtype: type_name(ty),
        })?;
        let offset_at = r.pos;
        let offset = r.u64(&|| at("'s offset"))?;
        let block = dtype.block_size() as u64;
        if !elements.is_multiple_of(block) {
            return Err(Error::BadTensor {
                path: path.to_path_buf(),
                tensor: name.clone(),
                detail: format!("{elements} elements are not a whole number of {block}-element blocks"),
            });
        }
        // `elements` fits in usize and `type_size` ≥ the bytes per element of a block.
        let bytes = (elements / block).checked_mul(dtype.type_size() as u64).ok_or_else(|| Error::Gguf {
            path: path.to_path_buf(),
            field: at("'s size"),
            offset: type_at,
            problem: GgufProblem::Overflow { what: "size in bytes" },
        })?;
        if names.insert(name.clone(), i as usize).is_some() {
            return Err(r.fail(&|| at(""), GgufProblem::Duplicate(name.clone())));
        }
        infos.push((name, TensorInfo { ggml_dtype: dtype, shape: dims.into(), offset }, bytes, offset_at));
    }

    let alignment = match metadata.get("general.alignment") {
        Some(Value::U8(v)) => Some(*v as u64),
        Some(Value::U16(v)) => Some(*v as u64),
        Some(Value::U32(v)) => Some(*v as u64),
        Some(Value::U64(v)) => Some(*v),
        Some(Value::I8(v)) => Some(*v as i64 as u64),
        Some(Value::I16(v)) => Some(*v as i64 as u64),
        Some(Value::I32(v)) => Some(*v as i64 as u64),
        Some(Value::I64(v)) => Some(*v as u64),
        _ => None,
    };
    let alignment = match alignment {
        None => DEFAULT_ALIGNMENT,
        Some(a) if a.is_power_of_two() && a <= MAX_ALIGNMENT => a,
        Some(a) => {
            return Err(Error::Gguf {
                path: path.to_path_buf(),
                field: "metadata `general.alignment`".into(),
                offset: r.pos,
                problem: GgufProblem::Alignment { value: a, max: MAX_ALIGNMENT },
            })
        }
    };
    // `pos` ≤ MAX_HEADER_BYTES and `alignment` ≤ MAX_ALIGNMENT: no overflow.
    let tensor_data_offset = r.pos.div_ceil(alignment) * alignment;

    // Every tensor must lie wholly inside the file; name the first one (by offset) that does not.
    infos.sort_by(|(a, ai, ..), (b, bi, ..)| (ai.offset, a).cmp(&(bi.offset, b)));
    for (name, info, bytes, offset_at) in &infos {
        let start = tensor_data_offset.checked_add(info.offset);
        let (field, offset, problem) = match start.and_then(|s| s.checked_add(*bytes)) {
            None => (format!("tensor `{name}`'s offset"), *offset_at, GgufProblem::Overflow { what: "data offset" }),
            Some(end) if end > file_len => {
                (format!("tensor `{name}`"), start.unwrap_or_default(), GgufProblem::PastEnd { end, file_len })
            }
            Some(_) => continue,
        };
        return Err(Error::Gguf { path: path.to_path_buf(), field, offset, problem });
    }
    let tensor_infos = infos.into_iter().map(|(name, info, ..)| (name, info)).collect();
    Ok(Content { magic, metadata, tensor_infos, tensor_data_offset })
}

/// The tensor types candle can read from a GGUF file (`Q8_1` and `Q8_K` it cannot): the
/// encodings Readout reads (`backends/route.rs` checks each has a matmul on every device).
pub(crate) fn tensor_type(t: u32) -> Option<GgmlDType> {
    Some(match t {
        0 => GgmlDType::F32,
        1 => GgmlDType::F16,
        2 => GgmlDType::Q4_0,
        3 => GgmlDType::Q4_1,
        6 => GgmlDType::Q5_0,
        7 => GgmlDType::Q5_1,
        8 => GgmlDType::Q8_0,
        10 => GgmlDType::Q2K,
        11 => GgmlDType::Q3K,
        12 => GgmlDType::Q4K,
        13 => GgmlDType::Q5K,
        14 => GgmlDType::Q6K,
        30 => GgmlDType::BF16,
        _ => return None,
    })
}

/// ggml's name of a tensor type id (for types Readout cannot load).
fn type_name(t: u32) -> String {
    let name = match t {
        9 => "Q8_1",
        15 => "Q8_K",
        16 => "IQ2_XXS",
        17 => "IQ2_XS",
        18 => "IQ3_XXS",
        19 => "IQ1_S",
        20 => "IQ4_NL",
        21 => "IQ3_S",
        22 => "IQ2_S",
        23 => "IQ4_XS",
        24 => "I8",
        25 => "I16",
        26 => "I32",
        27 => "I64",
        28 => "F64",
        29 => "IQ1_M",
        34 => "TQ1_0",
        35 => "TQ2_0",
        _ => return format!("{t} (not a ggml type this program knows)"),
    };
    name.to_string()
}

/// Where a read is, for an error message (built only when one is needed).
type Field<'a> = &'a dyn Fn() -> String;

/// The header being read: a position, the file's length, and what is left of the value budget.
struct Reader<'p, R> {
    r: R,
    pos: u64,
    len: u64,
    path: &'p Path,
    values_left: u64,
    /// Version 1 writes lengths and counts as u32.
    v1: bool,
}

impl<R: Read> Reader<'_, R> {
    fn fail(&self, field: Field, problem: GgufProblem) -> Error {
        Error::Gguf { path: self.path.to_path_buf(), field: field(), offset: self.pos, problem }
    }

    /// Fail unless `n` more bytes are in the file and within the header's cap.
    fn need(&self, n: u64, field: Field) -> Result<()> {
        let left = self.len - self.pos;
        if n > left {
            return Err(self.fail(field, GgufProblem::Truncated { need: n, left, file_len: self.len }));
        }
        if self.pos + n > MAX_HEADER_BYTES {
            return Err(self.fail(
                field,
                GgufProblem::TooLarge { what: "the header", value: self.pos + n, limit: MAX_HEADER_BYTES },
            ));
        }
        Ok(())
    }

    fn fill(&mut self, buf: &mut [u8], field: Field) -> Result<()> {
        self.need(buf.len() as u64, field)?;
        self.r.read_exact(buf).map_err(|e| match e.kind() {
            // The file shrank under us.
            std::io::ErrorKind::UnexpectedEof => {
                self.fail(field, GgufProblem::Truncated { need: buf.len() as u64, left: 0, file_len: self.pos })
            }
            _ => Error::io(self.path, e),
        })?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn array<const N: usize>(&mut self, field: Field) -> Result<[u8; N]> {
        let mut b = [0u8; N];
        self.fill(&mut b, field)?;
        Ok(b)
    }

    /// The first `N` bytes, zero-padded when the file is shorter (for the magic).
    fn bytes_up_to<const N: usize>(&mut self) -> Result<[u8; N]> {
        let n = (N as u64).min(self.len) as usize;
        let mut b = [0u8; N];
        self.fill(&mut b[..n], &|| "the magic".into())?;
        Ok(b)
    }

    fn u8(&mut self, field: Field) -> Result<u8> {
        Ok(self.array::<1>(field)?[0])
    }

    fn u32(&mut self, field: Field) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }

    fn u64(&mut self, field: Field) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    /// A length or count: u32 in version 1, u64 after.
    fn count(&mut self, field: Field) -> Result<u64> {
        if self.v1 {
            Ok(self.u32(field)? as u64)
        } else {
            self.u64(field)
        }
    }

    /// Fail unless `n` items of at least `min_bytes` each fit in what is left, and `n` ≤ `limit`.
    fn check_count(&self, n: u64, min_bytes: u64, limit: u64, what: &'static str, field: Field) -> Result<()> {
        if n > limit {
            return Err(self.fail(field, GgufProblem::TooLarge { what, value: n, limit }));
        }
        self.need(n.saturating_mul(min_bytes), field)
    }

    fn string(&mut self, limit: u64, what: &'static str, field: Field) -> Result<String> {
        let n = self.count(field)?;
        if n > limit {
            return Err(self.fail(field, GgufProblem::TooLarge { what, value: n, limit }));
        }
        self.need(n, field)?;
        let mut v = vec![0u8; n as usize];
        self.fill(&mut v, field)?;
        // GGUF strings are not NUL-terminated, but some writers add one (as candle reads them).
        while v.last() == Some(&0) {
            v.pop();
        }
        Ok(match String::from_utf8(v) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    /// One value of type `ty`; `depth` counts the arrays around it.
    fn value(&mut self, ty: u32, depth: usize, field: Field) -> Result<Value> {
        Ok(match ty {
            0 => Value::U8(self.u8(field)?),
            1 => Value::I8(self.u8(field)? as i8),
            2 => Value::U16(u16::from_le_bytes(self.array(field)?)),
            3 => Value::I16(i16::from_le_bytes(self.array(field)?)),
            4 => Value::U32(self.u32(field)?),
            5 => Value::I32(i32::from_le_bytes(self.array(field)?)),
            6 => Value::F32(f32::from_le_bytes(self.array(field)?)),
            7 => match self.u8(field)? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => {
                    self.pos -= 1;
                    return Err(self.fail(field, GgufProblem::Bool(b)));
                }
            },
            8 => Value::String(self.string(MAX_STRING_BYTES, "a string's length", field)?),
            9 => {
                if depth >= MAX_NESTING {
                    return Err(self.fail(field, GgufProblem::Nesting { depth: depth + 1, max: MAX_NESTING }));
                }
                let elem_ty = self.u32(field)?;
                let n = self.count(field)?;
                let Some(min) = value_bytes(elem_ty, self.v1) else {
                    self.pos -= if self.v1 { 8 } else { 12 };
                    return Err(self.fail(field, GgufProblem::ValueType(elem_ty)));
                };
                if n > self.values_left {
                    return Err(self.fail(
                        field,
                        GgufProblem::TooLarge {
                            what: "the number of array values",
                            value: (MAX_ARRAY_VALUES - self.values_left).saturating_add(n),
                            limit: MAX_ARRAY_VALUES,
                        },
                    ));
                }
                self.need(n.saturating_mul(min), field)?;
                self.values_left -= n;
                let mut values = Vec::with_capacity(n as usize);
                for j in 0..n {
                    let at = || format!("{}, value {} of {n}", field(), j + 1);
                    values.push(self.value(elem_ty, depth + 1, &at)?);
                }
                Value::Array(values)
            }
            10 => Value::U64(self.u64(field)?),
            11 => Value::I64(i64::from_le_bytes(self.array(field)?)),
            12 => Value::F64(f64::from_le_bytes(self.array(field)?)),
            t => {
                self.pos -= 4;
                return Err(self.fail(field, GgufProblem::ValueType(t)));
            }
        })
    }
}

/// The fewest bytes a value of type `ty` takes; `None` for an unknown type.
fn value_bytes(ty: u32, v1: bool) -> Option<u64> {
    Some(match ty {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        10..=12 => 8,
        // A length.
        8 => {
            if v1 {
                4
            } else {
                8
            }
        }
        // An element type and a length.
        9 => {
            if v1 {
                8
            } else {
                12
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little GGUF v3 writer for hand-made headers.
    #[derive(Default)]
    struct W(Vec<u8>);

    impl W {
        fn header(tensors: u64, kvs: u64) -> W {
            let mut w = W(b"GGUF".to_vec());
            w.u32(3).u64(tensors).u64(kvs);
            w
        }
        fn u32(&mut self, v: u32) -> &mut Self {
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        fn u64(&mut self, v: u64) -> &mut Self {
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        fn str(&mut self, s: &str) -> &mut Self {
            self.u64(s.len() as u64);
            self.0.extend_from_slice(s.as_bytes());
            self
        }
    }

    fn parse_err(bytes: &[u8]) -> Error {
        parse(bytes, Path::new("m.gguf")).unwrap_err()
    }

    fn problem(bytes: &[u8]) -> (String, GgufProblem) {
        match parse_err(bytes) {
            Error::Gguf { field, problem, .. } => (field, problem),
            other => panic!("expected a GGUF header error, got {other:?}"),
        }
    }

    #[test]
    fn huge_lengths_are_refused_before_allocating() {
        // A key that claims 2^60 bytes.
        let mut w = W::header(0, 1);
        w.u64(1 << 60).u64(0);
        let (field, p) = problem(&w.0);
        assert_eq!(field, "the key of metadata entry 1 of 1");
        assert!(matches!(p, GgufProblem::TooLarge { .. }), "{p}");
        // An array that claims 2^40 u32 values in a tiny file.
        let mut w = W::header(0, 1);
        w.str("tokenizer.ggml.token_type").u32(9).u32(4).u64(1 << 40);
        let (field, p) = problem(&w.0);
        assert_eq!(field, "metadata `tokenizer.ggml.token_type` (entry 1 of 1)");
        assert!(matches!(p, GgufProblem::TooLarge { .. }), "{p}");
        let mut w = W::header(0, 1);
        w.str("a").u32(9).u32(4).u64(1000);
        let (_, p) = problem(&w.0);
        assert!(matches!(p, GgufProblem::Truncated { need: 4000, .. }), "{p}");
        // Counts that could not fit in the file.
        let (field, p) = problem(&W::header(1 << 50, 0).0);
        assert_eq!(field, "the tensor count");
        assert!(matches!(p, GgufProblem::TooLarge { .. }), "{p}");
        let (field, p) = problem(&W::header(3, 0).0);
        assert_eq!(field, "the tensor count");
        assert!(matches!(p, GgufProblem::Truncated { .. }), "{p}");
    }

    #[test]
    fn tensors_are_checked() {
        let tensor = |dims: &[u64], ty: u32, offset: u64| {
            let mut w = W::header(1, 0);
            w.str("w").u32(dims.len() as u32);
            for &d in dims {
                w.u64(d);
            }
            w.u32(ty).u64(offset);
            w.0.resize(w.0.len().div_ceil(32) * 32, 0);
            w
        };
        let mut ok = tensor(&[4, 2], 0, 0);
        ok.0.extend_from_slice(&[0u8; 32]);
        let c = parse(&ok.0, Path::new("m.gguf")).unwrap();
        assert_eq!(c.tensor_infos["w"].shape.dims(), &[2, 4]);
        let (field, p) = problem(&tensor(&[4, 2], 0, 0).0);
        assert_eq!(field, "tensor `w`");
        assert!(matches!(p, GgufProblem::PastEnd { .. }), "{p}");
        match parse_err(&tensor(&[4], 0, u64::MAX - 3).0) {
            Error::Gguf { field, offset, .. } => assert_eq!((field.as_str(), offset), ("tensor `w`'s offset", 49)),
            other => panic!("{other:?}"),
        }
        assert!(parse_err(&tensor(&[4, 2], 0, 0).0).to_string().contains("cut short"));
        let (_, p) = problem(&tensor(&[1 << 40, 1 << 40], 0, 0).0);
        assert!(matches!(p, GgufProblem::Overflow { .. }), "{p}");
        let (_, p) = problem(&tensor(&[4, 0], 0, 0).0);
        assert_eq!(p, GgufProblem::ZeroDimension);
        let (_, p) = problem(&tensor(&[1, 1, 1, 1, 1], 0, 0).0);
        assert_eq!(p, GgufProblem::Dimensions { dims: 5, max: MAX_DIMS });
        let (_, p) = problem(&tensor(&[4], 0, u64::MAX - 3).0);
        assert!(matches!(p, GgufProblem::Overflow { .. }), "{p}");
        match parse_err(&tensor(&[32], 9, 0).0) {
            Error::UnsupportedTensorType { tensor, dtype, .. } => {
                assert_eq!((tensor.as_str(), dtype.as_str()), ("w", "Q8_1"))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse_err(&tensor(&[31], 2, 0).0), Error::BadTensor { .. }));
    }

    #[test]
    fn small_problems_have_their_own_words() {
        let mut w = W(b"GGUF".to_vec());
        w.u32(3u32.swap_bytes());
        assert!(matches!(problem(&w.0).1, GgufProblem::BigEndian(_)));
        let mut w = W(b"GGUF".to_vec());
        w.u32(7);
        assert_eq!(problem(&w.0).1, GgufProblem::Version(7));
        let mut w = W::header(0, 1);
        w.str("b").u32(7).0.push(2);
        assert_eq!(problem(&w.0).1, GgufProblem::Bool(2));
        let mut w = W::header(0, 1);
        w.str("t").u32(13).u32(0);
        assert_eq!(problem(&w.0).1, GgufProblem::ValueType(13));
        let mut w = W::header(0, 2);
        w.str("k").u32(4).u32(1).str("k").u32(4).u32(2);
        assert_eq!(problem(&w.0).1, GgufProblem::Duplicate("k".into()));
        let mut w = W::header(0, 1);
        w.str("general.alignment").u32(4).u32(0);
        assert_eq!(problem(&w.0).1, GgufProblem::Alignment { value: 0, max: MAX_ALIGNMENT });
        let mut w = W::header(0, 1);
        w.str("n").u32(9);
        for _ in 0..MAX_NESTING {
            w.u32(9).u64(1);
        }
        w.u32(4).u64(0);
        assert_eq!(problem(&w.0).1, GgufProblem::Nesting { depth: MAX_NESTING + 1, max: MAX_NESTING });
        assert!(matches!(parse_err(b""), Error::CorruptGguf { .. }));
        assert!(parse_err(b"GG").to_string().contains("GGUF magic"));
        assert!(parse_err(b"GGUF\x03").to_string().contains("header ends early"));
    }
}
