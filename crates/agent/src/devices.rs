//! Device detection: which slots this agent offers. CUDA GPUs from `nvidia-smi`, else one CPU slot
//! covering all cores, or `artificial_slots` fake CPU slots. Probing the machine
//! ([`DeviceSources::probe`]) is kept apart from choosing the slots ([`select_devices`]), so the
//! rules are testable with sample outputs.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{AgentConfig, ConfigError, SlotType};

/// A slot as the master sees it (upstream `device.Device`; `id` is the slot id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    pub id: u32,
    pub brand: String,
    pub uuid: String,
    #[serde(rename = "type")]
    pub device_type: DeviceType,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceType {
    Cpu,
    Cuda,
}

#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("cannot parse nvidia-smi output line {line:?}: {reason}")]
    NvidiaSmiParse { line: String, reason: &'static str },
    #[error("slot_type is cuda but nvidia-smi found no GPUs{filter}; install the NVIDIA driver or set slot_type to auto or cpu")]
    NoCudaGpus { filter: String },
    #[error("visible_gpus lists {0:?}, which matches no GPU nvidia-smi reports")]
    UnknownVisibleGpu(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The raw facts device selection works from.
#[derive(Debug, Clone, Default)]
pub struct DeviceSources {
    /// Output of `nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader`; `None` when the
    /// command is missing, fails or times out.
    pub nvidia_smi: Option<String>,
    /// Contents of `/proc/cpuinfo`, empty when unreadable.
    pub cpuinfo: String,
}

/// How long `nvidia-smi` may take; a wedged driver must not hang agent start-up.
const NVIDIA_SMI_TIMEOUT: Duration = Duration::from_secs(30);

impl DeviceSources {
    /// Reads the machine. Never fails: a missing or failing `nvidia-smi` means "no GPUs".
    pub async fn probe() -> DeviceSources {
        // /proc reads never block on I/O.
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        DeviceSources { nvidia_smi: run_nvidia_smi().await, cpuinfo }
    }
}

async fn run_nvidia_smi() -> Option<String> {
    let mut command = tokio::process::Command::new("nvidia-smi");
    command.args(["--query-gpu=index,name,uuid", "--format=csv,noheader"]).stdin(std::process::Stdio::null()).kill_on_drop(true);
    match tokio::time::timeout(NVIDIA_SMI_TIMEOUT, command.output()).await {
        Err(_) => {
            tracing::warn!("nvidia-smi did not answer within {NVIDIA_SMI_TIMEOUT:?}; assuming no GPUs");
            None
        }
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
        Ok(Err(e)) => {
            tracing::warn!("cannot run nvidia-smi ({e}); assuming no GPUs");
            None
        }
        Ok(Ok(output)) if !output.status.success() => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            tracing::warn!("nvidia-smi failed ({}): {}; assuming no GPUs", output.status, stderr.trim());
            None
        }
        Ok(Ok(output)) => Some(String::from_utf8_lossy(&output.stdout).into_owned()),
    }
}

/// Probes the machine and applies the configuration.
pub async fn detect_devices(config: &AgentConfig) -> Result<Vec<Device>, DeviceError> {
    let sources = if config.artificial_slots > 0 || config.slot_type == SlotType::None {
        DeviceSources::default()
    } else {
        DeviceSources::probe().await
    };
    select_devices(config, &sources)
}

/// Chooses the slots from probed facts, as upstream: artificial slots win, then `slot_type`.
pub fn select_devices(config: &AgentConfig, sources: &DeviceSources) -> Result<Vec<Device>, DeviceError> {
    if config.artificial_slots > 0 {
        return Ok(artificial_devices(&config.agent_id(), config.artificial_slots));
    }
    let visible = config.visible_gpu_list()?;
    let gpus = || -> Result<Vec<Device>, DeviceError> {
        let all = match &sources.nvidia_smi {
            Some(output) => parse_nvidia_smi(output)?,
            None => Vec::new(),
        };
        filter_visible(all, &visible)
    };
    match config.slot_type {
        SlotType::None => Ok(Vec::new()),
        SlotType::Cpu => Ok(vec![cpu_device(&sources.cpuinfo)]),
        SlotType::Cuda => {
            let gpus = gpus()?;
            if gpus.is_empty() {
                let filter = config.visible_gpus.as_ref().map(|v| format!(" (visible_gpus: {v})")).unwrap_or_default();
                return Err(DeviceError::NoCudaGpus { filter });
            }
            Ok(gpus)
        }
        SlotType::Auto => {
            let gpus = gpus()?;
            Ok(if gpus.is_empty() { vec![cpu_device(&sources.cpuinfo)] } else { gpus })
        }
    }
}

/// Parses `nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader`. The name is everything
/// between the first and the last comma, since nvidia-smi does not quote names.
pub fn parse_nvidia_smi(output: &str) -> Result<Vec<Device>, DeviceError> {
    let mut devices = Vec::new();
    for line in output.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let bad = |reason| DeviceError::NvidiaSmiParse { line: line.to_string(), reason };
        let (index, rest) = line.split_once(',').ok_or_else(|| bad("expected 3 comma-separated fields"))?;
        let (name, uuid) = rest.rsplit_once(',').ok_or_else(|| bad("expected 3 comma-separated fields"))?;
        let id = index.trim().parse::<u32>().map_err(|_| bad("the GPU index is not a number"))?;
        let (brand, uuid) = (name.trim(), uuid.trim());
        if uuid.is_empty() {
            return Err(bad("the GPU UUID is empty"));
        }
        devices.push(Device { id, brand: brand.to_string(), uuid: uuid.to_string(), device_type: DeviceType::Cuda });
    }
    Ok(devices)
}

fn filter_visible(gpus: Vec<Device>, visible: &[String]) -> Result<Vec<Device>, DeviceError> {
    if visible.is_empty() {
        return Ok(gpus);
    }
    if let Some(unknown) = visible.iter().find(|v| !gpus.iter().any(|g| matches_gpu(g, v))) {
        // Only an error when GPUs exist at all: with none, the caller decides (auto falls back to CPU).
        if !gpus.is_empty() {
            return Err(DeviceError::UnknownVisibleGpu(unknown.clone()));
        }
    }
    Ok(gpus.into_iter().filter(|g| visible.iter().any(|v| matches_gpu(g, v))).collect())
}

fn matches_gpu(gpu: &Device, wanted: &str) -> bool {
    gpu.id.to_string() == wanted || gpu.uuid == wanted
}

/// One CPU slot covering every core: brand `"<model> x N cores"` per model (logical processors, as
/// listed in `/proc/cpuinfo`), uuid the vendor id, as upstream.
pub fn cpu_device(cpuinfo: &str) -> Device {
    let mut models: Vec<(String, usize)> = Vec::new();
    let mut vendor = None;
    for block in cpuinfo.split("\n\n").filter(|b| b.lines().any(|l| field(l, "processor").is_some())) {
        let model = block.lines().find_map(|l| field(l, "model name")).unwrap_or("Unknown CPU").to_string();
        if vendor.is_none() {
            vendor = block.lines().find_map(|l| field(l, "vendor_id")).map(str::to_string);
        }
        match models.iter_mut().find(|(m, _)| *m == model) {
            Some((_, count)) => *count += 1,
            None => models.push((model, 1)),
        }
    }
    if models.is_empty() {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        models.push(("Unknown CPU".to_string(), cores));
    }
    let brand = models.iter().map(|(model, count)| format!("{model} x {count} cores")).collect::<Vec<_>>().join(", ");
    Device { id: 0, brand, uuid: vendor.unwrap_or_else(|| "cpu".to_string()), device_type: DeviceType::Cpu }
}

fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let (key, value) = line.split_once(':')?;
    (key.trim() == name).then(|| value.trim())
}

/// `count` fake CPU slots whose UUIDs stay the same across restarts of the same agent id, so the
/// master recognises them after a reconnect.
pub fn artificial_devices(agent_id: &str, count: u32) -> Vec<Device> {
    (0..count)
        .map(|id| {
            let digest = Sha256::new().chain_update(agent_id.as_bytes()).chain_update(id.to_be_bytes()).finalize();
            let mut bytes = [0u8; 16];
            bytes.copy_from_slice(&digest[..16]);
            let uuid = uuid::Builder::from_random_bytes(bytes).into_uuid().to_string();
            Device { id, brand: "Artificial".to_string(), uuid, device_type: DeviceType::Cpu }
        })
        .collect()
}
