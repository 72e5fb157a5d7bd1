//! Device choice: CPU always, CUDA and Metal when the binary was built with their features and
//! the machine has them. `auto` falls back to CPU with one line saying so.

use crate::error::{Error, Result};
use candle_core::Device;
use std::str::FromStr;

/// What the user asked for on the command line or in the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceRequest {
    Auto,
    Cpu,
    Cuda,
    Metal,
}

impl FromStr for DeviceRequest {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "cuda" => Ok(Self::Cuda),
            "metal" => Ok(Self::Metal),
            other => Err(format!("unknown device `{other}` (expected auto, cpu, cuda or metal)")),
        }
    }
}

/// Resolve a request to a candle device. `auto` never fails: when the binary has a GPU feature
/// but the GPU cannot be used, it gives the CPU and, beside it, why (for the shell to show).
pub fn select(req: DeviceRequest) -> Result<(Device, Option<String>)> {
    match req {
        DeviceRequest::Cpu => Ok((Device::Cpu, None)),
        DeviceRequest::Cuda => {
            cuda().map(|d| (d, None)).map_err(|reason| Error::Device { requested: "cuda".into(), reason })
        }
        DeviceRequest::Metal => {
            metal().map(|d| (d, None)).map_err(|reason| Error::Device { requested: "metal".into(), reason })
        }
        DeviceRequest::Auto => {
            let mut why = Vec::new();
            if cfg!(feature = "cuda") {
                match cuda() {
                    Ok(d) => return Ok((d, None)),
                    Err(reason) => why.push(format!("CUDA not usable ({reason})")),
                }
            }
            if cfg!(feature = "metal") {
                match metal() {
                    Ok(d) => return Ok((d, None)),
                    Err(reason) => why.push(format!("Metal not usable ({reason})")),
                }
            }
            let note = (!why.is_empty()).then(|| format!("{}; running on CPU", why.join("; ")));
            Ok((Device::Cpu, note))
        }
    }
}

/// A short human name for a device, as result files record it (`threads`: the CPU threads the
/// work runs on).
pub fn describe(dev: &Device, threads: usize) -> String {
    match dev {
        Device::Cpu => format!("cpu ({threads} threads)"),
        Device::Cuda(_) => cuda_name(dev).map_or_else(|| "cuda:0".to_string(), |n| format!("cuda:0 ({n})")),
        Device::Metal(_) => "metal:0".to_string(),
    }
}

fn cuda() -> std::result::Result<Device, String> {
    if !cfg!(feature = "cuda") {
        return Err(
            "this binary was built without the `cuda` feature; rebuild with `cargo build --release --features cuda`"
                .into(),
        );
    }
    // A binary built by `bench/cuda/build` loads the driver and cuBLAS with dlopen when the
    // device is first made, and cudarc panics when a library is missing: turn that into an error
    // (one line, not a panic report).
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let made = std::panic::catch_unwind(|| Device::new_cuda(0));
    std::panic::set_hook(hook);
    match made {
        Ok(Ok(d)) => {
            tune_cuda(&d)?;
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
#[cfg(feature = "cuda")]
fn tune_cuda(dev: &Device) -> std::result::Result<(), String> {
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

#[cfg(not(feature = "cuda"))]
fn tune_cuda(_dev: &Device) -> std::result::Result<(), String> {
    Ok(())
}

/// Bytes of memory free on a CUDA device, as the driver reports them; `None` elsewhere.
#[cfg(feature = "cuda")]
pub fn free_memory(dev: &Device) -> Option<u64> {
    use candle_core::cuda_backend::cudarc::driver::result;
    let Device::Cuda(d) = dev else { return None };
    d.cuda_stream().context().bind_to_thread().ok()?;
    result::mem_get_info().ok().map(|(free, _total)| free as u64)
}

/// Make `dev`'s CUDA context current on this thread (nothing elsewhere). cudarc binds it
/// before its own calls but not when it frees a buffer, so a thread that drops GPU tensors needs
/// it current; the engine binds its pool's threads and the threads that call it.
#[cfg(feature = "cuda")]
pub(crate) fn bind_to_thread(dev: &Device) {
    if let Device::Cuda(d) = dev {
        // An error here (no such context) shows at the next operation on the device.
        let _ = d.cuda_stream().context().bind_to_thread();
    }
}

#[cfg(not(feature = "cuda"))]
pub(crate) fn bind_to_thread(_dev: &Device) {}

#[cfg(not(feature = "cuda"))]
pub fn free_memory(_dev: &Device) -> Option<u64> {
    None
}

/// The most bytes allocated at once on a CUDA device so far (the stream-ordered pool's high-water
/// mark, which holds every tensor candle makes there); `None` elsewhere.
#[cfg(feature = "cuda")]
pub fn peak_memory(dev: &Device) -> Option<u64> {
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

#[cfg(not(feature = "cuda"))]
pub fn peak_memory(_dev: &Device) -> Option<u64> {
    None
}

/// The GPU's name as the driver reports it (e.g. `NVIDIA H200`).
#[cfg(feature = "cuda")]
fn cuda_name(dev: &Device) -> Option<String> {
    match dev {
        Device::Cuda(d) => d.cuda_stream().context().name().ok(),
        _ => None,
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_name(_dev: &Device) -> Option<String> {
    None
}

fn metal() -> std::result::Result<Device, String> {
    if !cfg!(feature = "metal") {
        return Err("this binary was built without the `metal` feature; rebuild on macOS with `cargo build --release --features metal`".into());
    }
    Device::new_metal(0).map_err(|e| e.to_string())
}
