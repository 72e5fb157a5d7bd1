//! Uploads of a pass's small tables (the tree-attention kernel's segment and chunk table, one a
//! layer) from page-locked host memory, so that queuing them never waits for the GPU.
//!
//! Why it exists: a copy from ordinary (pageable) host memory goes through a staging buffer, and
//! the driver may synchronise the stream before it, so a table uploaded between two layers' kernels
//! can hold the host until the GPU has run everything queued before it: the host then queues the
//! next layer while the GPU idles. A copy from page-locked memory is queued like a kernel. The
//! buffers are a ring: a slot is written again only after its last copy has run (cudarc's event
//! on each page-locked buffer says when), which with [`SLOTS`] slots is many layers later.
//!
//! Every slot is made at the first upload, large enough for any pass's table but the largest:
//! making page-locked memory (`cuMemHostAlloc`) waits for the device, so a slot made or grown in
//! the middle of a pass holds the host until the GPU is idle (measured on an H100: with slots
//! made at the size of the first tables, every layer of the larger passes made one, and a pass
//! was queued no faster than the GPU ran it; `passlog-limit-*`).

use candle_core::cuda_backend::cudarc::driver::{CudaSlice, CudaStream, PinnedHostSlice};
use candle_core::cuda_backend::WrapErr;
use std::sync::{Arc, Mutex};

/// Page-locked buffers in turn; more than a pass's layers, so that the slot written next was
/// copied out a pass ago.
const SLOTS: usize = 128;
/// The size every slot is made with, in values (128 KiB; 16 MiB of page-locked memory for the ring): the
/// table of a 16,384-token pass of 100 segments on 2,000 cached chunks fits.
const MIN_LEN: usize = 1 << 14;

struct Ring {
    slots: Vec<PinnedHostSlice<u64>>,
    next: usize,
}

static RING: Mutex<Ring> = Mutex::new(Ring { slots: Vec::new(), next: 0 });

/// `data` on the device in a new buffer (at least `data.len()` values; those past it are not
/// written), copied from a page-locked buffer in stream order.
pub(crate) fn upload_u64(stream: &Arc<CudaStream>, data: &[u64]) -> candle_core::Result<CudaSlice<u64>> {
    let len = data.len().next_power_of_two().max(MIN_LEN);
    let mut ring = RING.lock().map_err(|_| candle_core::Error::Msg("the upload ring's lock is poisoned".into()))?;
    if ring.slots.is_empty() {
        for _ in 0..SLOTS {
            // SAFETY: a slot's values are written before any copy reads them (below).
            let made = unsafe { stream.context().alloc_pinned::<u64>(MIN_LEN) }.w()?;
            ring.slots.push(made);
        }
    }
    let i = ring.next;
    ring.next = (i + 1) % SLOTS;
    let pinned = &mut ring.slots[i];
    if pinned.len() < len || !Arc::ptr_eq(pinned.context(), stream.context()) {
        // SAFETY: the buffer's values are written below before any copy reads them.
        *pinned = unsafe { stream.context().alloc_pinned::<u64>(len) }.w()?;
    }
    // Waits for this buffer's previous copy (queued SLOTS uploads ago) to have run.
    pinned.as_mut_slice().w()?[..data.len()].copy_from_slice(data);
    // SAFETY: every value the kernel reads (the first `data.len()`) is copied in below.
    let mut dst = unsafe { stream.alloc::<u64>(pinned.len()) }.w()?;
    stream.memcpy_htod(&*pinned, &mut dst).w()?;
    Ok(dst)
}
