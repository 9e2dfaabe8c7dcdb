//! `LogManager.metrics()`: the engine's gauge snapshot (`manager/metrics.rs`) as frozen
//! classes, each gauge under Kafka's MBean name.
//!
//! Thread-safety: the classes are frozen, shareable.

use std::fmt::Write as _;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::results::py_result;
use crate::manager::metrics::{self, GROUP};

py_result! { sequence
    /// One gauge of a metrics snapshot, named as Kafka registers it in JMX (its MBean
    /// `kafka.log:type=<type_name>,name=<name>,<tags>`).
    #[module = "kafkalog"]
    pub struct Gauge {
        /// The MBean's `type` key: `Log`, `LogManager`, `LogCleaner` or `LogCleanerManager`.
        type_name: String,
        /// The MBean's `name` key: `Size`, `max-dirty-percent`, ...
        name: String,
        /// The MBean's other keys, in Kafka's order: `(("topic", "t"), ("partition", "0"))`.
        tags: Py<PyTuple>,
        value: i64,
    }
    impl {
        /// The JMX domain, `kafka.log`.
        #[getter]
        #[allow(clippy::unused_self)]
        fn group(&self) -> &'static str {
            GROUP
        }

        /// The whole MBean name: `kafka.log:type=Log,name=Size,topic=t,partition=0`.
        #[getter]
        fn mbean_name(&self, py: Python<'_>) -> PyResult<String> {
            let mut out = format!("{GROUP}:type={},name={}", self.type_name, self.name);
            for pair in self.tags.bind(py).iter() {
                let (k, v): (String, String) = pair.extract()?;
                let _ = write!(out, ",{k}={v}");
            }
            Ok(out)
        }
    }
}

py_result! { record
    /// Every gauge of a `LogManager` at one moment (`LogManager.metrics()`).
    #[module = "kafkalog"]
    pub struct MetricsSnapshot {
        /// The manager's clock when the snapshot was taken (ms).
        time_ms: i64,
        /// Logs in topic-partition order (current, then future), then the manager's gauges,
        /// then the cleaner's.
        gauges: Py<PyTuple>,
    }
    impl {
        /// The value of the gauge whose MBean name is `mbean_name`, or None.
        fn value(&self, py: Python<'_>, mbean_name: &str) -> PyResult<Option<i64>> {
            for g in self.gauges.bind(py).iter() {
                let g = g.cast_into::<Gauge>()?;
                if g.get().mbean_name(py)? == mbean_name {
                    return Ok(Some(g.get().value));
                }
            }
            Ok(None)
        }
    }
}

impl MetricsSnapshot {
    pub(crate) fn new(py: Python<'_>, s: &metrics::MetricsSnapshot) -> PyResult<Self> {
        let gauges = s
            .gauges
            .iter()
            .map(|g| {
                let tags: Vec<(&str, &str)> = g.tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let gauge = Gauge {
                    type_name: g.type_name.to_string(),
                    name: g.name.to_string(),
                    tags: PyTuple::new(py, tags)?.unbind(),
                    value: g.value,
                };
                Py::new(py, gauge)
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(MetricsSnapshot { time_ms: s.time_ms, gauges: PyTuple::new(py, gauges)?.unbind() })
    }
}
