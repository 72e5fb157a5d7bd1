//! Weights in the file's own encoding (F32, F16, BF16, Q4_0 … Q8_0, Q2_K … Q6_K), read in
//! place from a read-only memory map of the model file.
//!
//! Why it exists: a judge of 0.6B to 4B parameters is downloaded as a 4- or 5-bit file; expanded
//! to f32 at load it takes six to eight times the file, more than the laptop it is meant for.
//! Here a weight matrix is only a view of the file's bytes: nothing is read at load, the pages
//! the kernels touch are the file's (shared with the page cache, dropped by the kernel under
//! pressure), and no weight exists twice — q, k and v (and gate and up) are one matrix of
//! several parts, not a joined copy. The kernels decode the rows they multiply as they go
//! (`backends/cpu/project.rs`); the values they decode are exactly those candle's `dequantize`
//! gives, so a product over decoded panels is bit for bit the product over weights expanded at
//! load.

use candle_core::quantized::k_quants::{
    BlockQ2K, BlockQ3K, BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5K, BlockQ5_0, BlockQ5_1, BlockQ6K, BlockQ8K, BlockQ8_0,
    BlockQ8_1, GgmlType,
};
use candle_core::quantized::GgmlDType;
use candle_core::{Device, Tensor};
use half::{bf16, f16};
use std::sync::Arc;

/// A model file mapped read-only.
pub(crate) type Mapped = Arc<memmap2::Mmap>;

/// One tensor `[rows, cols]` in its file encoding: `rows` rows of `cols` values each, one after
/// the other, each row a whole number of the encoding's blocks.
#[derive(Clone)]
pub(crate) struct Encoded {
    map: Mapped,
    offset: usize,
    dtype: GgmlDType,
    rows: usize,
    cols: usize,
    /// Q4_1 blocks whose scales are f32 values (ONNX MatMulNBits with f32 scales): each block's
    /// f32 scale and zero point, `w = scale · (u − zero)`, row by row from entry `.1`; the bytes'
    /// own f16 `d` and `m` are then only those values rounded, and never read.
    exact: Option<(Arc<[[f32; 2]]>, usize)>,
}

impl Encoded {
    /// The tensor at `offset` of `map`; an error (what is wrong, for the caller to name the
    /// tensor) when its rows are not whole blocks or its bytes run past the file.
    pub(crate) fn new(
        map: Mapped,
        offset: usize,
        dtype: GgmlDType,
        rows: usize,
        cols: usize,
    ) -> std::result::Result<Self, String> {
        if !cols.is_multiple_of(dtype.block_size()) {
            return Err(format!("rows of {cols} values are not whole {dtype:?} blocks of {}", dtype.block_size()));
        }
        let e = Encoded { map, offset, dtype, rows, cols, exact: None };
        let end = offset.checked_add(rows.saturating_mul(e.row_bytes()));
        if end.is_none_or(|end| end > e.map.len()) {
            return Err(format!("its {rows} x {cols} {dtype:?} values run past the end of the file"));
        }
        Ok(e)
    }

    /// These Q4_1 blocks with f32 scales and zero points: `blocks[from..]`, one `[scale, zero]`
    /// a block, row by row; an error when the tensor is not Q4_1 or the table is too short.
    pub(crate) fn with_f32_scales(mut self, blocks: Arc<[[f32; 2]]>, from: usize) -> std::result::Result<Self, String> {
        let need = self.rows * self.cols / 32;
        if self.dtype != GgmlDType::Q4_1 || blocks.len() < from + need {
            return Err(format!(
                "f32 block scales for {:?} {} x {}: {} given from {from}",
                self.dtype,
                self.rows,
                self.cols,
                blocks.len()
            ));
        }
        self.exact = Some((blocks, from));
        Ok(self)
    }

    /// Row `r`'s f32 `[scale, zero]` a block, where the blocks have f32 scales.
    fn row_f32_scales(&self, r: usize) -> Option<&[[f32; 2]]> {
        self.exact.as_ref().map(|(t, from)| {
            let n = self.cols / 32;
            &t[from + r * n..from + (r + 1) * n]
        })
    }

    /// Whether the blocks' scales are f32 values (no candle kernel multiplies them).
    pub(crate) fn has_f32_scales(&self) -> bool {
        self.exact.is_some()
    }

    pub(crate) fn dims(&self) -> [usize; 2] {
        [self.rows, self.cols]
    }

    fn row_bytes(&self) -> usize {
        self.cols / self.dtype.block_size() * self.dtype.type_size()
    }

    /// The bytes of the whole tensor.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map[self.offset..self.offset + self.rows * self.row_bytes()]
    }

    /// The encoded bytes of row `r`.
    fn row(&self, r: usize) -> &[u8] {
        let n = self.row_bytes();
        let start = self.offset + r * n;
        &self.map[start..start + n]
    }

    /// Row `r` decoded into `out` (`cols` values).
    pub(crate) fn decode_row(&self, r: usize, out: &mut [f32]) {
        match self.row_f32_scales(r) {
            // `scale · (u − zero)`, one rounding: the value MatMulNBits stands for.
            Some(blocks) => {
                for ((blk, o), &[scale, zero]) in self.row(r).chunks_exact(20).zip(out.chunks_exact_mut(32)).zip(blocks)
                {
                    for (i, &q) in blk[4..].iter().enumerate() {
                        o[i] = scale * ((q & 0x0F) as f32 - zero);
                        o[i + 16] = scale * ((q >> 4) as f32 - zero);
                    }
                }
            }
            None => decode(self.dtype, self.row(r), out),
        }
    }

    /// The whole tensor as f32 `[rows, cols]` on `device`: for the f32 path and small tensors.
    pub(crate) fn to_dense(&self, device: &Device) -> candle_core::Result<Tensor> {
        let mut v = vec![0f32; self.rows * self.cols];
        if self.cols > 0 {
            use rayon::prelude::*;
            v.par_chunks_mut(self.cols).enumerate().for_each(|(r, row)| self.decode_row(r, row));
        }
        Tensor::from_vec(v, (self.rows, self.cols), device)
    }

    /// The encoding.
    pub(crate) fn dtype(&self) -> GgmlDType {
        self.dtype
    }

    /// A candle quantised tensor on `device` holding a copy of these bytes: for candle's own
    /// quantised kernels (`model/linear.rs`'s `quantised_matmul`, which decides when).
    pub(crate) fn to_qtensor(&self, device: &Device) -> candle_core::Result<candle_core::quantized::QTensor> {
        if self.exact.is_some() {
            candle_core::bail!("4-bit blocks with f32 scales have no candle kernel; decode them to f32");
        }
        candle_core::quantized::ggml_file::qtensor_from_ggml(
            self.dtype,
            self.bytes(),
            vec![self.rows, self.cols],
            device,
        )
    }
}

/// A weight matrix of one or more encoded parts stacked along the rows (q, k and v; gate and
/// up), each part kept where it lies in the file.
#[derive(Clone)]
pub(crate) struct Stacked {
    parts: Vec<Encoded>,
    rows: usize,
    cols: usize,
}

impl Stacked {
    /// Parts with the same number of columns, stacked in order.
    pub(crate) fn new(parts: Vec<Encoded>) -> candle_core::Result<Self> {
        let cols = parts.first().map(|p| p.cols).unwrap_or(0);
        if parts.iter().any(|p| p.cols != cols) {
            candle_core::bail!("stacked weights of different widths");
        }
        let rows = parts.iter().map(|p| p.rows).sum();
        Ok(Stacked { parts, rows, cols })
    }

    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    pub(crate) fn cols(&self) -> usize {
        self.cols
    }

    /// The encodings of the parts, in order.
    pub(crate) fn dtypes(&self) -> impl Iterator<Item = GgmlDType> + '_ {
        self.parts.iter().map(|p| p.dtype)
    }

    /// The encoding and bytes of row `r` of the stack.
    pub(crate) fn row_bytes(&self, mut r: usize) -> (GgmlDType, &[u8]) {
        for p in &self.parts {
            if r < p.rows {
                return (p.dtype, p.row(r));
            }
            r -= p.rows;
        }
        unreachable!("row {r} past the stack's {} rows", self.rows)
    }

    /// Row `r`'s f32 `[scale, zero]` a block, where its part's blocks have f32 scales.
    pub(crate) fn row_f32_scales(&self, mut r: usize) -> Option<&[[f32; 2]]> {
        for p in &self.parts {
            if r < p.rows {
                return p.row_f32_scales(r);
            }
            r -= p.rows;
        }
        None
    }

    /// Row `r` of the stack decoded into `out`.
    pub(crate) fn decode_row(&self, mut r: usize, out: &mut [f32]) {
        for p in &self.parts {
            if r < p.rows {
                return p.decode_row(r, out);
            }
            r -= p.rows;
        }
    }
}

/// Decode whole blocks of `dtype` in `bytes` into `out` (their values, in order).
pub(crate) fn decode(dtype: GgmlDType, bytes: &[u8], out: &mut [f32]) {
    match dtype {
        GgmlDType::F32 => blocks::<f32>(bytes, out),
        GgmlDType::F16 => blocks::<f16>(bytes, out),
        GgmlDType::BF16 => blocks::<bf16>(bytes, out),
        GgmlDType::Q4_0 => blocks::<BlockQ4_0>(bytes, out),
        GgmlDType::Q4_1 => blocks::<BlockQ4_1>(bytes, out),
        GgmlDType::Q5_0 => blocks::<BlockQ5_0>(bytes, out),
        GgmlDType::Q5_1 => blocks::<BlockQ5_1>(bytes, out),
        GgmlDType::Q8_0 => blocks::<BlockQ8_0>(bytes, out),
        GgmlDType::Q8_1 => blocks::<BlockQ8_1>(bytes, out),
        GgmlDType::Q2K => blocks::<BlockQ2K>(bytes, out),
        GgmlDType::Q3K => blocks::<BlockQ3K>(bytes, out),
        GgmlDType::Q4K => blocks::<BlockQ4K>(bytes, out),
        GgmlDType::Q5K => blocks::<BlockQ5K>(bytes, out),
        GgmlDType::Q6K => blocks::<BlockQ6K>(bytes, out),
        GgmlDType::Q8K => blocks::<BlockQ8K>(bytes, out),
    }
}

/// candle's own decoding of `T`'s blocks (the one `dequantize` uses), on bytes that may be
/// unaligned for `T`.
fn blocks<T: GgmlType>(bytes: &[u8], out: &mut [f32]) {
    let size = std::mem::size_of::<T>();
    let n = bytes.len() / size;
    debug_assert_eq!(n * size, bytes.len());
    debug_assert_eq!(out.len(), n * T::BLCK_SIZE);
    if (bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()) {
        // SAFETY: `bytes` holds `n` whole values of `T`, suitably aligned (checked above); `T` is
        // plain data (floats, halves and byte arrays) for which every bit pattern is a value,
        // and the slice borrows `bytes` for no longer than this call.
        let xs = unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), n) };
        T::to_float(xs, out);
    } else {
        // A file whose tensor data is not aligned for its type: decode through an aligned copy.
        let mut v: Vec<T> = Vec::with_capacity(n);
        // SAFETY: `v` has room for `n` values of `T` (n * size bytes), the source holds exactly
        // that many bytes, the two do not overlap, and every bit pattern is a value of `T`.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr().cast::<u8>(), n * size);
            v.set_len(n);
        }
        T::to_float(&v, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::QTensor;

    fn mapped(bytes: &[u8]) -> Mapped {
        let mut m = memmap2::MmapMut::map_anon(bytes.len().max(1)).unwrap();
        m[..bytes.len()].copy_from_slice(bytes);
        Arc::new(m.make_read_only().unwrap())
    }

    #[test]
    fn decoding_equals_candles_dequantize_for_every_type() -> candle_core::Result<()> {
        let (rows, cols) = (3, 512);
        let w = Tensor::randn(0f32, 1., (rows, cols), &Device::Cpu)?;
        for dtype in [
            GgmlDType::F32,
            GgmlDType::F16,
            GgmlDType::BF16,
            GgmlDType::Q4_0,
            GgmlDType::Q4_1,
            GgmlDType::Q5_0,
            GgmlDType::Q5_1,
            GgmlDType::Q8_0,
            GgmlDType::Q2K,
            GgmlDType::Q3K,
            GgmlDType::Q4K,
            GgmlDType::Q5K,
            GgmlDType::Q6K,
        ] {
            let q = QTensor::quantize(&w, dtype)?;
            let want: Vec<f32> = q.dequantize(&Device::Cpu)?.flatten_all()?.to_vec1()?;
            let bytes = q.data()?;
            // At offset 1 as well: data that is not aligned for the block type.
            for pad in [0usize, 1] {
                let mut file = vec![0u8; pad];
                file.extend_from_slice(&bytes);
                let e = Encoded::new(mapped(&file), pad, dtype, rows, cols).unwrap();
                let got: Vec<f32> = e.to_dense(&Device::Cpu)?.flatten_all()?.to_vec1()?;
                assert_eq!(got, want, "{dtype:?} at offset {pad}");
            }
        }
        Ok(())
    }

    #[test]
    fn a_tensor_past_the_end_or_of_broken_blocks_is_refused() {
        let m = mapped(&[0u8; 100]);
        let err = |r: std::result::Result<Encoded, String>| r.err().unwrap_or_default();
        assert!(err(Encoded::new(m.clone(), 0, GgmlDType::Q4_0, 2, 48)).contains("whole"));
        // Two rows of one Q4_0 block (18 bytes each) from offset 70 end at 106.
        assert!(err(Encoded::new(m.clone(), 70, GgmlDType::Q4_0, 2, 32)).contains("past the end"));
        assert!(Encoded::new(m, 64, GgmlDType::Q4_0, 2, 32).is_ok());
    }

    #[test]
    fn stacked_rows_come_from_their_parts() -> candle_core::Result<()> {
        let a: Vec<f32> = (0..8).map(|v| v as f32).collect();
        let b: Vec<f32> = (8..12).map(|v| v as f32).collect();
        let bytes: Vec<u8> = a.iter().chain(&b).flat_map(|v| v.to_le_bytes()).collect();
        let m = mapped(&bytes);
        let s = Stacked::new(vec![
            Encoded::new(m.clone(), 0, GgmlDType::F32, 2, 4).unwrap(),
            Encoded::new(m, 32, GgmlDType::F32, 1, 4).unwrap(),
        ])?;
        let mut row = [0f32; 4];
        s.decode_row(2, &mut row);
        assert_eq!(row, [8., 9., 10., 11.]);
        s.decode_row(1, &mut row);
        assert_eq!(row, [4., 5., 6., 7.]);
        assert_eq!((s.rows(), s.cols()), (3, 4));
        Ok(())
    }
}
