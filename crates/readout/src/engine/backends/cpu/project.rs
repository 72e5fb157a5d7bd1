//! The CPU projections `x · Wᵀ` (q/k/v, o, gate/up, down) over weights laid out once, at load,
//! in panels of 64 output columns.
//!
//! Why it is ours: a matmul library packs the weight into its kernel's layout on every call.
//! At the size of a single prompt (about a hundred rows against weights of 576 to 3072 columns)
//! that repacking was a sixth of the time. Here the weight is stored as `[panels, in, 64]`: for
//! `gemm`, each panel is a 64-column left operand already in the layout it would pack it into,
//! so it reads it as it is. The panels (and, for long passes, blocks of rows) are shared out
//! among the threads, each panel and block of at most 64 rows a single-threaded `gemm` call. A
//! row's sums then depend neither on how many rows share its pass nor on the thread count (the
//! tests check it bit for bit); against one whole `gemm` product they differ by rounding only.
//!
//! Weights kept in the file's encoding (`weights.rs`) take the same road: each task decodes its
//! panel into a buffer of its thread (a few hundred KiB, in cache) and runs the pass's rows
//! through it. A pass has hundreds of rows, so decoding each weight once a pass costs little next
//! to the arithmetic, and reading 4-bit weights streams an eighth of the memory f32 ones do. The
//! decoded values equal candle's `dequantize`, so the products equal those over f32 panels bit
//! for bit.

use super::fused::f32_slice;
use super::int8::{Integer, Kernel};
use super::PANEL;
use crate::engine::profile::{self, Stage};
use crate::engine::weights::Stacked;
use candle_core::{CpuStorage, CustomOp1, CustomOp2, Device, Layout, Shape, Tensor};
use rayon::prelude::*;
use std::cell::RefCell;

/// The most rows one gemm call takes (see `cpu_fwd`).
const MAX_BLOCK_ROWS: usize = 64;

/// `w [out, in]` as panels `[ceil(out / 64), in, 64]` on the CPU, the last panel zero-padded.
pub(crate) fn pack(w: &Tensor) -> candle_core::Result<Tensor> {
    let (out, k) = w.dims2()?;
    let w = w.to_dtype(candle_core::DType::F32)?.to_device(&Device::Cpu)?.contiguous()?;
    let rows: Vec<f32> = w.flatten_all()?.to_vec1()?;
    let panels = out.div_ceil(PANEL);
    let mut p = vec![0f32; panels * k * PANEL];
    // Panel by panel, on all threads: loading a model packs every weight once.
    p.par_chunks_mut(k * PANEL).zip(rows.par_chunks(k * PANEL)).for_each(|(panel, ws)| {
        for (j, row) in ws.chunks_exact(k).enumerate() {
            for (kk, &v) in row.iter().enumerate() {
                panel[kk * PANEL + j] = v;
            }
        }
    });
    Tensor::from_vec(p, (panels, k, PANEL), &Device::Cpu)
}

/// `x [rows, in] · W [out, in]ᵀ -> [rows, out]` on CPU, W given as [`pack`] made it.
pub(crate) fn project(x: &Tensor, panels: &Tensor, out: usize) -> candle_core::Result<Tensor> {
    x.apply_op2_no_bwd(panels, &Project { out })
}

struct Project {
    out: usize,
}

/// The output buffer, written by the tasks at disjoint places.
struct Dst(*mut f32);
// SAFETY: each task writes only its own panel's columns of its own rows (see `cpu_fwd`).
unsafe impl Send for Dst {}
unsafe impl Sync for Dst {}

impl CustomOp2 for Project {
    fn name(&self) -> &'static str {
        "readout-project"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s1, l1, "projection activations")?;
        let w = f32_slice(s2, l2, "projection weights")?;
        let (rows, k) = l1.shape().dims2()?;
        let (panels, k2, width) = l2.shape().dims3()?;
        let out = self.out;
        if k != k2 || k == 0 || width != PANEL || out == 0 || out.div_ceil(PANEL) != panels {
            candle_core::bail!(
                "projection: activations [{rows}, {k}] do not match weights of {out} outputs in panels [{panels}, {k2}, {width}]"
            );
        }
        let _t = profile::time(Stage::Projections);
        Ok((CpuStorage::F32(products(x, (rows, k, out), Panels::Packed(w))), Shape::from((rows, out))))
    }
}

/// `x [rows, in] · W [out, in]ᵀ -> [rows, out]` on CPU, W in its file's encoding.
/// With `integer`, through the integer kernel with activations of that width (`int8.rs`; the
/// caller checks that the weights and the CPU allow it); otherwise decoded to f32 panels.
pub(crate) fn project_encoded(x: &Tensor, w: &Stacked, integer: Option<Integer>) -> candle_core::Result<Tensor> {
    x.apply_op1_no_bwd(&ProjectEncoded { w, integer })
}

struct ProjectEncoded<'a> {
    w: &'a Stacked,
    integer: Option<Integer>,
}

impl CustomOp1 for ProjectEncoded<'_> {
    fn name(&self) -> &'static str {
        "readout-project-encoded"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(s, l, "projection activations")?;
        let (rows, k) = l.shape().dims2()?;
        let out = self.w.rows();
        if k != self.w.cols() || k == 0 || out == 0 {
            candle_core::bail!("projection: activations [{rows}, {k}] do not match weights [{out}, {}]", self.w.cols());
        }
        let _t = profile::time(Stage::Projections);
        let y = match self.integer {
            Some(Integer { width, kernel }) => {
                let acts = {
                    let _t = profile::time(Stage::Quantize);
                    super::int8::quantize_acts(x, k, width, kernel)
                };
                products(x, (rows, k, out), Panels::Int8(self.w, &acts))
            }
            None => products(x, (rows, k, out), Panels::Decoded(self.w)),
        };
        Ok((CpuStorage::F32(y), Shape::from((rows, out))))
    }
}

/// Where a product's panels come from.
enum Panels<'a> {
    /// Laid out at load (`[panels, in, 64]`).
    Packed(&'a [f32]),
    /// Decoded from the file's encoding by each task.
    Decoded(&'a Stacked),
    /// Decoded into bytes and block scales by each task, for the integer kernel, with the
    /// pass's activations quantised once.
    Int8(&'a Stacked, &'a super::int8::Acts),
}

thread_local! {
    /// A task's decoded panel and one decoded row, kept between passes.
    static DECODED: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
    /// A task's panel for the integer kernel, kept between passes.
    static DECODED_INT8: RefCell<super::int8::Panel> = RefCell::new(super::int8::Panel::default());
}

/// Rows `pi * 64 ..` of `w` (at most 64) decoded into `panel` as `[in, 64]`; the columns past
/// the weight's last row are left as they are (gemm is never asked for them).
fn decode_panel(w: &Stacked, pi: usize, k: usize, panel: &mut Vec<f32>, row: &mut Vec<f32>) {
    panel.resize(k * PANEL, 0.0);
    row.resize(k, 0.0);
    let r0 = pi * PANEL;
    for j in 0..(w.rows() - r0).min(PANEL) {
        w.decode_row(r0 + j, row);
        for (column, &v) in panel.chunks_exact_mut(PANEL).zip(row.iter()) {
            column[j] = v;
        }
    }
}

/// The product of `x` (`rows × k`) with every panel, as `rows × out`.
fn products(x: &[f32], (rows, k, out): (usize, usize, usize), w: Panels<'_>) -> Vec<f32> {
    if rows == 0 {
        return Vec::new();
    }
    let panels = out.div_ceil(PANEL);
    // Every panel times blocks of at most 64 rows (evenly cut, so none is a single row): gemm sums
    // a block of up to 64 rows in one order whatever its size; past that its blocking changes,
    // and a token's numbers would depend on the rows sharing its pass. Neither the cut nor the
    // sums depend on the thread count. A task takes one panel and a run of its blocks: packed
    // panels one block each; decoded ones as many blocks as leave two tasks a thread, so that a
    // panel is decoded once a pass when there are enough panels to go round.
    let blocks = rows.div_ceil(MAX_BLOCK_ROWS);
    let per_task = match w {
        Panels::Packed(_) => 1,
        Panels::Decoded(_) | Panels::Int8(..) => {
            blocks.div_ceil((2 * rayon::current_num_threads()).div_ceil(panels).clamp(1, blocks))
        }
    };
    let runs = blocks.div_ceil(per_task);
    profile::count_macs((rows * k * out) as u64, !matches!(w, Panels::Int8(..)));
    let mut dst: Vec<f32> = Vec::with_capacity(rows * out);
    let d = Dst(dst.as_mut_ptr());
    (0..panels * runs).into_par_iter().for_each(|t| {
        let (pi, run) = (t / runs, t % runs);
        let cols = (out - pi * PANEL).min(PANEL);
        let d = &d;
        let multiply = |panel: &[f32]| {
            let _t = profile::time(Stage::DenseMultiply);
            for bi in run * per_task..((run + 1) * per_task).min(blocks) {
                let (r0, r1) = (rows * bi / blocks, rows * (bi + 1) / blocks);
                // SAFETY: dst has room for rows * out elements; this call writes element (i, j)
                // of its product, output column pi*64 + i of row r0 + j, at
                // (r0 + j) * out + pi*64 + i, for i < cols and j < r1 - r0: inside dst, and no
                // other call writes there (each (panel, block) belongs to one task). The lhs
                // (the panel, element (i, kk) at kk * 64 + i, k * 64 values) and the rhs (x
                // transposed, element (kk, j) at j * k + kk) lie inside their slices. With
                // read_dst false and k > 0 gemm writes every element of its block, so all of
                // dst is written before the length is set.
                unsafe {
                    product(
                        (cols, r1 - r0, k),
                        d.0.add(r0 * out + pi * PANEL),
                        out,
                        panel.as_ptr(),
                        PANEL,
                        x.as_ptr().add(r0 * k),
                        gemm::Parallelism::None,
                    );
                }
            }
        };
        match w {
            Panels::Packed(all) => multiply(&all[pi * k * PANEL..(pi + 1) * k * PANEL]),
            Panels::Decoded(w) => DECODED.with_borrow_mut(|(panel, row)| {
                {
                    let _t = profile::time(Stage::Decode);
                    decode_panel(w, pi, k, panel, row);
                    profile::count_decoded((cols * k) as u64);
                }
                multiply(panel);
            }),
            Panels::Int8(w, acts) => DECODED_INT8.with_borrow_mut(|panel| {
                {
                    let _t = profile::time(Stage::Decode);
                    super::int8::decode_panel(w, pi, k, acts.width, acts.kernel, panel);
                    profile::count_decoded((cols * k) as u64);
                }
                let _t = profile::time(Stage::Multiply);
                let first = rows * (run * per_task) / blocks;
                let last = rows * ((run + 1) * per_task).min(blocks) / blocks;
                let multiply = match acts.kernel {
                    Kernel::Amx => super::amx::multiply,
                    Kernel::Avx512 => super::int8::multiply,
                    Kernel::Neon => super::neon::multiply,
                };
                // SAFETY: the integer kernel runs on this CPU (`int8::ready` chose this path
                // only where `cpu::runs(kernel)`); this task alone writes
                // columns pi*64 .. pi*64 + cols of rows first .. last, all inside dst (rows * out
                // values); every element is written before the length is set below.
                unsafe { multiply(panel, acts, (first, last), d.0, out, pi * PANEL, cols) };
            }),
        }
    });
    // SAFETY: every element was written above.
    unsafe { dst.set_len(rows * out) };
    dst
}

/// `dst = lhs · rhs` through gemm for `(m, n, k)`, every operand with unit row stride: `dst`
/// element (i, j) at `j * dst_cs + i`, `lhs` (i, kk) at `kk * lhs_cs + i`, `rhs` (kk, j) at
/// `j * k + kk` (rows of the activations). Nothing is read from `dst`; every element is written.
///
/// # Safety
/// Every element those formulas reach, for i < m, j < n, kk < k, must lie in its buffer, and
/// `dst`'s elements must not be written by anything else meanwhile.
unsafe fn product(
    (m, n, k): (usize, usize, usize),
    dst: *mut f32,
    dst_cs: usize,
    lhs: *const f32,
    lhs_cs: usize,
    rhs: *const f32,
    parallelism: gemm::Parallelism,
) {
    gemm::gemm(
        m,
        n,
        k,
        dst,
        dst_cs as isize,
        1,
        false,
        lhs,
        lhs_cs as isize,
        1,
        rhs,
        k as isize,
        1,
        0.0,
        1.0,
        false,
        false,
        false,
        parallelism,
    );
}

/// A panel is already in the layout gemm packs its left operand into: tell gemm not to pack it
/// again on a single thread (the default packs it once a pass has more than 48 rows). It only
/// changes where gemm reads from, never a sum. Set once, before the first projection.
pub(crate) fn read_panels_in_place() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| gemm::set_lhs_packing_threshold_single_thread(usize::MAX / (4 * PANEL)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole_gemm(x: &Tensor, w: &Tensor) -> candle_core::Result<Vec<f32>> {
        // One gemm product over the whole weight, as the engine computed before panels.
        let (rows, k) = x.dims2()?;
        let out = w.dim(0)?;
        let wt: Vec<f32> = w.t()?.contiguous()?.flatten_all()?.to_vec1()?;
        let xs: Vec<f32> = x.flatten_all()?.to_vec1()?;
        let mut dst = vec![0f32; rows * out];
        // SAFETY: the same index arithmetic as in `cpu_fwd`, over whole, owned buffers.
        unsafe {
            product((out, rows, k), dst.as_mut_ptr(), out, wt.as_ptr(), out, xs.as_ptr(), gemm::Parallelism::Rayon(2));
        }
        Ok(dst)
    }

    #[test]
    fn equals_a_hand_computed_product() -> candle_core::Result<()> {
        // x = [[1, 2], [3, 4], [5, 6]], W = [[1, 0], [0, 1], [1, 1]] ([out=3, in=2]).
        let x = Tensor::new(&[[1f32, 2.], [3., 4.], [5., 6.]], &Device::Cpu)?;
        let w = Tensor::new(&[[1f32, 0.], [0., 1.], [1., 1.]], &Device::Cpu)?;
        let y = project(&x, &pack(&w)?, 3)?;
        assert_eq!(y.to_vec2::<f32>()?, vec![vec![1., 2., 3.], vec![3., 4., 7.], vec![5., 6., 11.]]);
        Ok(())
    }

    #[test]
    fn equals_one_whole_product() -> candle_core::Result<()> {
        read_panels_in_place();
        for (rows, k, out) in
            [(2, 576, 960), (37, 576, 1536), (110, 576, 576), (300, 1536, 576), (1030, 64, 48), (257, 96, 130)]
        {
            let x = Tensor::randn(0f32, 1., (rows, k), &Device::Cpu)?;
            let w = Tensor::randn(0f32, 1., (out, k), &Device::Cpu)?;
            let ours: Vec<f32> = project(&x, &pack(&w)?, out)?.flatten_all()?.to_vec1()?;
            for (a, b) in ours.iter().zip(&whole_gemm(&x, &w)?) {
                assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{a} vs {b} at {rows}x{k}x{out}");
            }
        }
        Ok(())
    }

    #[test]
    fn a_row_gets_the_same_bits_in_any_pass() -> candle_core::Result<()> {
        // What the engine needs: a token's numbers do not depend on how many rows share its
        // pass, nor on the thread count (the split into tasks does not depend on it).
        read_panels_in_place();
        for (k, out) in [(576, 960), (1536, 576), (3072, 1024)] {
            let x = Tensor::randn(0f32, 1., (1030, k), &Device::Cpu)?;
            let w = pack(&Tensor::randn(0f32, 1., (out, k), &Device::Cpu)?)?;
            let first = |rows: usize| -> candle_core::Result<Vec<f32>> {
                project(&x.narrow(0, 0, rows)?, &w, out)?.narrow(0, 0, 2)?.flatten_all()?.to_vec1()
            };
            let want = first(2)?;
            for rows in [3, 7, 37, 64, 65, 110, 129, 300, 1030] {
                assert_eq!(first(rows)?, want, "first rows of a {rows}-row pass, {k} -> {out}");
            }
        }
        Ok(())
    }

    #[test]
    fn decoded_panels_give_the_bits_of_f32_panels() -> candle_core::Result<()> {
        // Weights in a file's encoding, multiplied panel by panel as decoded, against the same
        // weights expanded to f32 and packed at load: the same sums on the same values.
        use crate::engine::weights::{Encoded, Stacked};
        use candle_core::quantized::{GgmlDType, QTensor};
        read_panels_in_place();
        for (rows, k, parts) in [(1030, 256, vec![128, 64, 64]), (37, 512, vec![200]), (2, 256, vec![64, 3])] {
            let ws: Vec<Tensor> =
                parts.iter().map(|&o| Tensor::randn(0f32, 1., (o, k), &Device::Cpu)).collect::<Result<_, _>>()?;
            let qs: Vec<QTensor> = ws.iter().map(|w| QTensor::quantize(w, GgmlDType::Q4K)).collect::<Result<_, _>>()?;
            let bytes: Vec<u8> =
                qs.iter().map(|q| q.data().map(|d| d.to_vec())).collect::<Result<Vec<_>, _>>()?.concat();
            let mut map = memmap2::MmapMut::map_anon(bytes.len()).unwrap();
            map.copy_from_slice(&bytes);
            let map = std::sync::Arc::new(map.make_read_only().unwrap());
            let mut offset = 0;
            let mut encoded = Vec::new();
            for (&o, q) in parts.iter().zip(&qs) {
                encoded.push(Encoded::new(map.clone(), offset, GgmlDType::Q4K, o, k).unwrap());
                offset += q.data()?.len();
            }
            let stacked = Stacked::new(encoded)?;
            let dense = Tensor::cat(&qs.iter().map(|q| q.dequantize(&Device::Cpu)).collect::<Result<Vec<_>, _>>()?, 0)?;
            let x = Tensor::randn(0f32, 1., (rows, k), &Device::Cpu)?;
            let want: Vec<f32> = project(&x, &pack(&dense)?, dense.dim(0)?)?.flatten_all()?.to_vec1()?;
            let got: Vec<f32> = project_encoded(&x, &stacked, None)?.flatten_all()?.to_vec1()?;
            assert_eq!(got, want, "{rows} rows, {k} -> {parts:?}");
        }
        Ok(())
    }

    #[test]
    fn mismatched_shapes_are_an_error() -> candle_core::Result<()> {
        let x = Tensor::zeros((2, 3), candle_core::DType::F32, &Device::Cpu)?;
        let w = pack(&Tensor::zeros((4, 5), candle_core::DType::F32, &Device::Cpu)?)?;
        assert!(project(&x, &w, 4).is_err());
        assert!(project(&Tensor::zeros((2, 5), candle_core::DType::F32, &Device::Cpu)?, &w, 70).is_err());
        Ok(())
    }
}
