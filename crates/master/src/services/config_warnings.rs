//! Warnings about an experiment config that only the cluster can raise: keys the schema accepts
//! but this cluster's resource manager ignores (a Kubernetes `pod_spec` on agents, Slurm/PBS
//! options). `expconf` stays pure and knows nothing of the cluster; the create response carries
//! these beside its own warnings (`configWarnings`), so the user sees them, not only the log.

use resolute_expconf::ExperimentConfig;

/// The resource manager here runs processes on agents; nothing reads pod specs or batch-system
/// options. Each warning is `path: message`, as `resolute_expconf::Warning` renders.
pub fn cluster_warnings(config: &ExperimentConfig) -> Vec<String> {
    let mut warnings = Vec::new();
    if config.environment.pod_spec.is_some() {
        warnings.push("environment.pod_spec: ignored: this cluster runs trials as processes on agents, not as Kubernetes pods".to_owned());
    }
    for key in ["slurm", "pbs"] {
        if config.passthrough.contains_key(key) {
            warnings.push(format!("{key}: ignored: this cluster runs trials on agents, not through {}", key.to_uppercase()));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use resolute_expconf::{Defaults, parse_experiment_config};

    use super::*;

    fn config(yaml: &str) -> ExperimentConfig {
        let defaults = Defaults::new(1).with_checkpoint_storage(serde_json::json!({"type": "shared_fs", "host_path": "/tmp"}));
        parse_experiment_config(yaml, &defaults).unwrap_or_else(|e| panic!("{e:?}")).config
    }

    #[test]
    fn pod_spec_and_batch_options_are_named() {
        let base = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n";
        assert!(cluster_warnings(&config(base)).is_empty());
        let with = format!(
            "{base}environment:\n  pod_spec: {{spec: {{containers: [{{name: determined-container}}]}}}}\nslurm: {{gpu_type: a100}}\n"
        );
        let warnings = cluster_warnings(&config(&with));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("environment.pod_spec: ignored"), "{warnings:?}");
        assert!(warnings[1].starts_with("slurm: ignored"), "{warnings:?}");
    }
}
