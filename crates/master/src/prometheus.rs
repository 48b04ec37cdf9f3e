//! Prometheus metrics (`observability.enable_prometheus`): the HTTP request latency histogram
//! every matched route feeds, served with the process's other collectors at
//! `/debug/prom/metrics`, and the cluster-state gauges (agents, slots, slots in use, experiments
//! and trials by state, open tasks by type) built afresh from the loop's view and the store at
//! each scrape of `/prom/det-state-metrics`. Text exposition comes from the `prometheus` crate.

use prometheus::{Encoder, HistogramOpts, HistogramVec, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder};
use resolute_store::{StateCount, StateCounts};

use crate::cluster::ClusterView;

/// Latency buckets, in seconds: 1 ms to 60 s (log-ish steps, as client libraries default to).
const LATENCY_BUCKETS: [f64; 14] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0];

/// The master's long-lived metrics, present only when Prometheus is enabled.
pub struct Prometheus {
    registry: Registry,
    http_latency: HistogramVec,
}

impl Prometheus {
    pub fn new() -> Result<Prometheus, prometheus::Error> {
        let registry = Registry::new();
        let http_latency = HistogramVec::new(
            HistogramOpts::new("det_http_request_duration_seconds", "Time from a request's arrival to its response headers, by route")
                .buckets(LATENCY_BUCKETS.to_vec()),
            &["method", "route", "code"],
        )?;
        registry.register(Box::new(http_latency.clone()))?;
        Ok(Prometheus { registry, http_latency })
    }

    /// Records one request; `route` is the matched route pattern (`/api/v1/experiments/{id}`), so
    /// ids never become label values.
    pub fn observe_request(&self, method: &str, route: &str, code: u16, seconds: f64) {
        self.http_latency.with_label_values(&[method, route, &code.to_string()]).observe(seconds);
    }

    /// `/debug/prom/metrics`: the request latencies.
    pub fn render_process(&self) -> Result<String, prometheus::Error> {
        encode(&self.registry)
    }
}

/// `/prom/det-state-metrics`: gauges of the cluster as it stands.
pub fn render_state(view: &ClusterView, counts: &StateCounts) -> Result<String, prometheus::Error> {
    let registry = Registry::new();
    let agents = IntGauge::new("det_agents", "Agents connected to the master")?;
    let slots = IntGaugeVec::new(Opts::new("det_slots", "Slots on connected agents, by device type"), &["device_type", "resource_pool"])?;
    let used = IntGaugeVec::new(
        Opts::new("det_slots_in_use", "Slots running a task's container, by device type"),
        &["device_type", "resource_pool"],
    )?;
    agents.set(i64::try_from(view.agents.len()).unwrap_or(i64::MAX));
    for agent in view.agents.values() {
        for slot in agent.slots.values() {
            let labels = [slot.device_type.as_str(), agent.resource_pool.as_str()];
            slots.with_label_values(&labels).inc();
            // Touch the series so a pool with nothing running reports 0, not nothing.
            let in_use = used.with_label_values(&labels);
            if slot.container.is_some() {
                in_use.inc();
            }
        }
    }
    registry.register(Box::new(agents))?;
    registry.register(Box::new(slots))?;
    registry.register(Box::new(used))?;
    register_counts(&registry, "det_experiments", "Experiments by state", "state", &counts.experiments)?;
    register_counts(&registry, "det_trials", "Trials by state", "state", &counts.trials)?;
    register_counts(&registry, "det_open_tasks", "Tasks not yet ended, by type", "task_type", &counts.open_tasks)?;
    encode(&registry)
}

fn register_counts(registry: &Registry, name: &str, help: &str, label: &str, counts: &[StateCount]) -> Result<(), prometheus::Error> {
    let gauge = IntGaugeVec::new(Opts::new(name, help), &[label])?;
    for c in counts {
        gauge.with_label_values(&[c.state.as_str()]).set(c.count);
    }
    registry.register(Box::new(gauge))
}

fn encode(registry: &Registry) -> Result<String, prometheus::Error> {
    let mut out = Vec::new();
    TextEncoder::new().encode(&registry.gather(), &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_are_a_histogram_by_route_and_counts_are_gauges() {
        let p = Prometheus::new().unwrap();
        p.observe_request("GET", "/api/v1/experiments/{id}", 200, 0.003);
        p.observe_request("GET", "/api/v1/experiments/{id}", 200, 0.2);
        let text = p.render_process().unwrap();
        assert!(text.contains("# TYPE det_http_request_duration_seconds histogram"), "{text}");
        assert!(
            text.contains(r#"det_http_request_duration_seconds_count{code="200",method="GET",route="/api/v1/experiments/{id}"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"det_http_request_duration_seconds_bucket{code="200",method="GET",route="/api/v1/experiments/{id}",le="0.005"} 1"#
            ),
            "{text}"
        );

        let counts = StateCounts {
            experiments: vec![StateCount { state: "STATE_COMPLETED".into(), count: 3 }],
            trials: vec![StateCount { state: "STATE_RUNNING".into(), count: 2 }],
            open_tasks: vec![],
        };
        let text = render_state(&ClusterView::default(), &counts).unwrap();
        assert!(text.contains("det_agents 0"), "{text}");
        assert!(text.contains(r#"det_experiments{state="STATE_COMPLETED"} 3"#), "{text}");
        assert!(text.contains(r#"det_trials{state="STATE_RUNNING"} 2"#), "{text}");
    }
}
