use resolute_scheduler::{FittingPolicy, SchedulingPolicy};
use serde_json::{Value, json};

use super::*;

fn parse(yaml: &str) -> Result<(ResourcePools, Vec<String>), ConfigError> {
    let tree: Value = serde_norway::from_str(yaml).unwrap();
    ResourcePools::from_tree(&tree)
}

fn error(yaml: &str) -> (String, String) {
    match parse(yaml) {
        Err(ConfigError::Invalid { field, message }) => (field, message),
        other => panic!("expected an error for {yaml}, got {other:?}"),
    }
}

#[test]
fn without_pools_there_is_one_default_pool() {
    let (pools, warnings) = parse("port: 8080").unwrap();
    assert_eq!(pools, ResourcePools::default());
    assert_eq!(pools.names(), ["default"]);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(pools.resolve("", 1), "default");
    assert_eq!(pools.resolve("", 0), "default");
}

#[test]
fn pools_with_schedulers_defaults_and_inheritance() {
    let (pools, warnings) = parse(
        r"
resource_manager:
  type: agent
  default_compute_resource_pool: gpu
  default_aux_resource_pool: cpu
  scheduler: {type: priority, preemption: true, default_priority: 50, fitting_policy: worst}
resource_pools:
  - pool_name: gpu
    description: the GPU machines
  - pool_name: cpu
    scheduler: {type: fair_share}
    max_aux_containers_per_agent: 7
  - pool_name: urgent
    scheduler: {default_priority: 10, fitting_policy: best}
    max_cpu_containers_per_agent: 3
",
    )
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(pools.names(), ["gpu", "cpu", "urgent"]);
    assert_eq!((pools.default_compute_pool.as_str(), pools.default_aux_pool.as_str()), ("gpu", "cpu"));
    assert_eq!((pools.resolve("", 2), pools.resolve("", 0), pools.resolve("urgent", 0)), ("gpu", "cpu", "urgent"));
    let gpu = pools.get("gpu").unwrap();
    assert_eq!(gpu.description, "the GPU machines");
    assert_eq!(gpu.scheduler.policy, SchedulingPolicy::Priority { preemption: true }, "inherited from resource_manager.scheduler");
    assert_eq!((gpu.default_priority, gpu.scheduler.fitting_policy), (50, FittingPolicy::Worst));
    assert_eq!(gpu.scheduler.max_aux_containers_per_agent, 100);
    let cpu = pools.get("cpu").unwrap();
    assert_eq!(cpu.scheduler.policy, SchedulingPolicy::FairShare { preemption: true }, "fair share always preempts");
    assert_eq!(cpu.scheduler.fitting_policy, FittingPolicy::Worst);
    assert_eq!(cpu.scheduler.max_aux_containers_per_agent, 7);
    let urgent = pools.get("urgent").unwrap();
    assert_eq!(urgent.scheduler.policy, SchedulingPolicy::Priority { preemption: true });
    assert_eq!((urgent.default_priority, urgent.scheduler.fitting_policy), (10, FittingPolicy::Best));
    assert_eq!(urgent.scheduler.max_aux_containers_per_agent, 3, "the older key name is honoured");
}

#[test]
fn keys_we_do_not_act_on_are_warned_about_by_path() {
    let (_, warnings) = parse(
        r"
resource_manager: {type: agent, no_default_resource_pools: true, scheduler: {type: priority, allow_heterogeneous_fits: true}}
resource_pools:
  - pool_name: default
    provider: {type: aws}
    agent_reattach_enabled: true
    scheduler: {type: fair_share, preemption: false, default_priority: 3}
",
    )
    .unwrap();
    let joined = warnings.join("\n");
    for expected in [
        "`resource_manager.no_default_resource_pools`",
        "`resource_manager.scheduler.allow_heterogeneous_fits`",
        "`resource_pools[0].provider`",
        "`resource_pools[0].agent_reattach_enabled`",
        "`resource_pools[0].scheduler.preemption` is ignored: the fair_share scheduler always preempts",
        "`resource_pools[0].scheduler.default_priority` is ignored",
    ] {
        assert!(joined.contains(expected), "missing {expected} in {joined}");
    }
    assert_eq!(warnings.len(), 6, "{joined}");
}

#[test]
fn every_error_names_its_field() {
    let cases: &[(&str, &str, &str)] = &[
        ("resource_manager: [1]", "resource_manager", "expected a mapping"),
        ("resource_manager: {type: kubernetes}", "resource_manager.type", "only \"agent\""),
        ("resource_manager: {scheduler: {type: lottery}}", "resource_manager.scheduler.type", "unknown scheduler type \"lottery\""),
        ("resource_pools: {a: 1}", "resource_pools", "expected a list"),
        ("resource_pools: [gpu]", "resource_pools[0]", "expected a mapping"),
        ("resource_pools: [{description: x}]", "resource_pools[0].pool_name", "is required"),
        ("resource_pools: [{pool_name: ''}]", "resource_pools[0].pool_name", "non-empty"),
        ("resource_pools: [{pool_name: a/b}]", "resource_pools[0].pool_name", "not a valid pool name"),
        ("resource_pools: [{pool_name: a}, {pool_name: a}]", "resource_pools[1].pool_name", "unique"),
        ("resource_pools: [{pool_name: a, description: 3}]", "resource_pools[0].description", "expected text"),
        ("resource_pools: [{pool_name: a}, {pool_name: b, scheduler: {type: round_robin}}]", "resource_pools[1].scheduler.type", "removed"),
        ("resource_pools: [{pool_name: a, scheduler: {type: 3}}]", "resource_pools[0].scheduler.type", "expected \"priority\""),
        ("resource_pools: [{pool_name: a, scheduler: fast}]", "resource_pools[0].scheduler", "expected a mapping"),
        (
            "resource_pools: [{pool_name: a, scheduler: {preemption: yes please}}]",
            "resource_pools[0].scheduler.preemption",
            "true or false",
        ),
        ("resource_pools: [{pool_name: a, scheduler: {default_priority: 0}}]", "resource_pools[0].scheduler.default_priority", "from 1"),
        ("resource_pools: [{pool_name: a, scheduler: {default_priority: 100}}]", "resource_pools[0].scheduler.default_priority", "to 99"),
        (
            "resource_pools: [{pool_name: a, scheduler: {fitting_policy: tight}}]",
            "resource_pools[0].scheduler.fitting_policy",
            "\"best\" or \"worst\"",
        ),
        (
            "resource_pools: [{pool_name: a, max_aux_containers_per_agent: -1}]",
            "resource_pools[0].max_aux_containers_per_agent",
            "non-negative",
        ),
        (
            "resource_pools: [{pool_name: a}]",
            "resource_manager.default_compute_resource_pool",
            "\"default\" is not a configured resource pool; the pools are: a",
        ),
        (
            "resource_manager: {default_compute_resource_pool: a}\nresource_pools: [{pool_name: a}]",
            "resource_manager.default_aux_resource_pool",
            "the pools are: a",
        ),
        ("resource_manager: {default_compute_resource_pool: 7}", "resource_manager.default_compute_resource_pool", "expected a pool name"),
    ];
    for (yaml, field, message) in cases {
        let (got_field, got_message) = error(yaml);
        assert_eq!(&got_field, field, "{yaml}: {got_message}");
        assert!(got_message.contains(message), "{yaml}: {got_message:?} lacks {message:?}");
    }
}

#[test]
fn unknown_pool_names_are_refused_with_the_pools_that_exist() {
    let (pools, _) = parse(
        "resource_manager: {default_compute_resource_pool: gpu, default_aux_resource_pool: cpu}\n\
         resource_pools: [{pool_name: gpu}, {pool_name: cpu}]",
    )
    .unwrap();
    assert!(pools.check_exists("resources.resource_pool", "").is_ok());
    assert!(pools.check_exists("resources.resource_pool", "cpu").is_ok());
    let err = pools.check_exists("resources.resource_pool", "tpu").unwrap_err();
    assert_eq!(err, "resources.resource_pool: resource pool \"tpu\" does not exist; the resource pools are: gpu, cpu");
}

#[test]
fn upstream_rendering_fills_defaults() {
    let (pools, _) = parse("resource_pools: [{pool_name: default, scheduler: {type: priority, preemption: true}}]").unwrap();
    let (manager, list) = pools.to_upstream();
    assert_eq!(manager["type"], "agent");
    assert_eq!(manager["default_compute_resource_pool"], "default");
    assert_eq!(
        list,
        json!([{"pool_name": "default", "description": "", "max_aux_containers_per_agent": 100,
            "scheduler": {"type": "priority", "fitting_policy": "best", "preemption": true, "default_priority": 42}}])
    );
}
