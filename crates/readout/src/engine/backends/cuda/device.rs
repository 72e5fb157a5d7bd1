//! The CUDA device: made (the driver's libraries loaded, the allocator tuned for one stream),
//! bound to the threads that free its tensors, and asked for its name and memory.

use candle_core::Device;

/// The CUDA device 0, set up for the engine; an error of one line when it cannot be had.
pub(crate) fn new_device() -> std::result::Result<Device, String> {
    // A binary built by `bench/cuda/build` loads the driver and cuBLAS with dlopen when the
    // device is first made, and cudarc panics when a library is missing: turn that into an error
    // (one line, not a panic report).
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    // A stream of our own (candle's `new_cuda` takes the legacy default stream, which
    // synchronises with every other stream of the context).
    let made = std::panic::catch_unwind(|| Device::new_cuda_with_stream(0));
    std::panic::set_hook(hook);
    match made {
        Ok(Ok(d)) => {
            tune(&d)?;
            Ok(d)
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("the CUDA libraries could not be loaded");
            // cudarc's message goes on to list every file name it tried; the first clause names
            // the library.
            let first = msg.split(" - searched").next().unwrap_or(msg).trim();
            Err(format!(
                "{first}; the driver (libcuda.so.1) and CUDA 13's cuBLAS and cuRAND must be on the loader's path"
            ))
        }
    }
}

/// Two settings for a process that uses one CUDA stream and synchronises once per pass:
/// - no per-allocation event tracking (cudarc records two CUDA events for every buffer so that
///   several streams can share it; candle's device uses one stream);
/// - the stream-ordered allocator keeps freed memory in its pool (release threshold: unlimited)
///   instead of returning it to the driver at every synchronisation, so the next pass does not
///   map it again.
fn tune(dev: &Device) -> std::result::Result<(), String> {
    use candle_core::cuda_backend::cudarc::driver::{result, sys};
    let Device::Cuda(d) = dev else { return Ok(()) };
    let ctx = d.cuda_stream().context().clone();
    // SAFETY: candle's CudaDevice runs everything on its one stream (`cuda_stream`), so no
    // buffer is ever shared between streams; that is the condition for turning tracking off.
    // It is done before any tensor of the model exists.
    unsafe { d.disable_event_tracking() };
    if ctx.has_async_alloc() {
        let mut threshold: u64 = u64::MAX;
        // SAFETY: the device handle comes from the live context; the attribute takes a u64.
        unsafe {
            let pool = result::device::get_default_mem_pool(ctx.cu_device()).map_err(|e| e.to_string())?;
            result::mem_pool::set_attribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
            .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Bytes of memory free on a CUDA device, as the driver reports them; `None` elsewhere.
pub(crate) fn free_memory(dev: &Device) -> Option<u64> {
    use candle_core::cuda_backend::cudarc::driver::result;
    let Device::Cuda(d) = dev else { return None };
    d.cuda_stream().context().bind_to_thread().ok()?;
    result::mem_get_info().ok().map(|(free, _total)| free as u64)
}

/// Make `dev`'s CUDA context current on this thread (nothing elsewhere). cudarc binds it
/// before its own calls but not when it frees a buffer, so a thread that drops GPU tensors needs
/// it current; the engine binds its pool's threads and the threads that call it.
pub(crate) fn bind_to_thread(dev: &Device) {
    if let Device::Cuda(d) = dev {
        // An error here (no such context) shows at the next operation on the device.
        let _ = d.cuda_stream().context().bind_to_thread();
    }
}

/// The most bytes allocated at once on a CUDA device so far (the stream-ordered pool's high-water
/// mark, which holds every tensor candle makes there); `None` elsewhere.
pub(crate) fn peak_memory(dev: &Device) -> Option<u64> {
    use candle_core::cuda_backend::cudarc::driver::{result, sys};
    let Device::Cuda(d) = dev else { return None };
    let ctx = d.cuda_stream().context().clone();
    ctx.bind_to_thread().ok()?;
    let mut high: u64 = 0;
    // SAFETY: the device handle comes from the live context; the attribute is a u64.
    unsafe {
        let pool = result::device::get_default_mem_pool(ctx.cu_device()).ok()?;
        result::mem_pool::get_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
            (&mut high as *mut u64).cast(),
        )
        .ok()?;
    }
    Some(high)
}

/// The GPU's name as the driver reports it (e.g. `NVIDIA H200`).
pub(crate) fn name(dev: &Device) -> Option<String> {
    match dev {
        Device::Cuda(d) => d.cuda_stream().context().name().ok(),
        _ => None,
    }
}
