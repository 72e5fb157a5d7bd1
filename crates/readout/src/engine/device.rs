//! Device choice: CPU always, CUDA and Metal when the binary was built with their features and
//! the machine has them. `auto` falls back to CPU with one line saying so. What is particular to
//! CUDA (making the device, its memory, binding it to threads) is in `backends/cuda`.

use crate::engine::backends::cuda;
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
            cuda::new_device().map(|d| (d, None)).map_err(|reason| Error::Device { requested: "cuda".into(), reason })
        }
        DeviceRequest::Metal => {
            metal().map(|d| (d, None)).map_err(|reason| Error::Device { requested: "metal".into(), reason })
        }
        DeviceRequest::Auto => {
            let mut why = Vec::new();
            if cuda::BUILT {
                match cuda::new_device() {
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
        Device::Cuda(_) => cuda::name(dev).map_or_else(|| "cuda:0".to_string(), |n| format!("cuda:0 ({n})")),
        Device::Metal(_) => "metal:0".to_string(),
    }
}

/// Bytes of memory free on a CUDA device, as the driver reports them; `None` elsewhere.
pub fn free_memory(dev: &Device) -> Option<u64> {
    cuda::free_memory(dev)
}

/// Make `dev`'s CUDA context current on this thread (nothing elsewhere). cudarc binds it
/// before its own calls but not when it frees a buffer, so a thread that drops GPU tensors needs
/// it current; the engine binds its pool's threads and the threads that call it.
pub(crate) fn bind_to_thread(dev: &Device) {
    cuda::bind_to_thread(dev)
}

/// The most bytes allocated at once on a CUDA device so far (the stream-ordered pool's high-water
/// mark, which holds every tensor candle makes there); `None` elsewhere.
pub fn peak_memory(dev: &Device) -> Option<u64> {
    cuda::peak_memory(dev)
}

fn metal() -> std::result::Result<Device, String> {
    if !cfg!(feature = "metal") {
        return Err("this binary was built without the `metal` feature; rebuild on macOS with `cargo build --release --features metal`".into());
    }
    Device::new_metal(0).map_err(|e| e.to_string())
}
