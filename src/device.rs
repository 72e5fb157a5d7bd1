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

/// Resolve a request to a candle device. `auto` never fails.
pub fn select(req: DeviceRequest) -> Result<Device> {
    match req {
        DeviceRequest::Cpu => Ok(Device::Cpu),
        DeviceRequest::Cuda => cuda().map_err(|reason| Error::Device { requested: "cuda".into(), reason }),
        DeviceRequest::Metal => metal().map_err(|reason| Error::Device { requested: "metal".into(), reason }),
        DeviceRequest::Auto => {
            if cfg!(feature = "cuda") {
                match cuda() {
                    Ok(d) => return Ok(d),
                    Err(reason) => eprintln!("readout: CUDA not usable ({reason}); running on CPU"),
                }
            }
            if cfg!(feature = "metal") {
                match metal() {
                    Ok(d) => return Ok(d),
                    Err(reason) => {
                        eprintln!("readout: Metal not usable ({reason}); running on CPU")
                    }
                }
            }
            Ok(Device::Cpu)
        }
    }
}

/// A short human name for a device, as result files record it.
pub fn describe(dev: &Device) -> String {
    match dev {
        Device::Cpu => format!("cpu ({} threads)", candle_core::utils::get_num_threads()),
        Device::Cuda(_) => "cuda:0".to_string(),
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
    Device::new_cuda(0).map_err(|e| e.to_string())
}

fn metal() -> std::result::Result<Device, String> {
    if !cfg!(feature = "metal") {
        return Err("this binary was built without the `metal` feature; rebuild on macOS with `cargo build --release --features metal`".into());
    }
    Device::new_metal(0).map_err(|e| e.to_string())
}
