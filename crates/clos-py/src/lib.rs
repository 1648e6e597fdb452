//! The thin PyO3 layer over clos-core: JSON in, numpy columns out. No model logic lives here.

use clos_core::lb::params::PARAMS;
use clos_core::lb::Scheme;
use clos_core::metrics::{parquet, Report};
use clos_core::scenario::Scenario;
use clos_core::units::seconds;
use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyAny, PyDict};

create_exception!(_core, ScenarioError, PyValueError, "A scenario the core rejects; the message names the field and the fix.");

fn to_py_err(e: clos_core::Error) -> PyErr {
    match e {
        clos_core::Error::Scenario { .. } => ScenarioError::new_err(e.to_string()),
        clos_core::Error::Invariant(_) => PyRuntimeError::new_err(e.to_string()),
        clos_core::Error::Interrupted => PyKeyboardInterrupt::new_err(e.to_string()),
    }
}

#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The commit the extension was built from (crates/clos-py/build.rs), or "unknown".
#[pyfunction]
fn commit() -> &'static str {
    env!("CLOS_COMMIT")
}

/// The normalised scenario (every default filled in) as JSON. With `build`, the simulation is
/// also set up (fabric, routes, workload, load balancer) and dropped without running, so that
/// every check a run makes before its first event is made (`clos validate`).
#[pyfunction]
#[pyo3(signature = (scenario_json, build = false))]
fn validate(scenario_json: &str, build: bool) -> PyResult<String> {
    let s = Scenario::from_json(scenario_json).map_err(to_py_err)?;
    if build {
        clos_core::sim::World::new(&s).map_err(to_py_err)?;
    }
    Ok(s.to_json())
}

/// The JSON Schema (draft 7) of scenario files, as JSON text: what `clos schema` writes for TOML
/// editors (`clos_core::scenario::schema`).
#[pyfunction]
fn schema() -> String {
    clos_core::scenario::schema::scenario_schema().to_string()
}

/// A load-balancing scheme as Python sees it: `(name, description, [(parameter, default, doc)])`.
type SchemeRow = (String, String, Vec<(String, String, String)>);

/// Every load-balancing scheme.
#[pyfunction]
fn schemes() -> Vec<SchemeRow> {
    Scheme::ALL
        .iter()
        .map(|(s, d)| {
            let params = PARAMS.iter().filter(|p| p.schemes.contains(s)).map(|p| (p.name.to_string(), p.default.to_string(), p.doc.to_string())).collect();
            (s.name().to_string(), d.to_string(), params)
        })
        .collect()
}

/// Run a scenario; the GIL is released while the simulation runs. `progress`, if given, is
/// called as `progress(simulated_s, end_s, flows_done, flows, events)` every
/// `clos_core::PROGRESS_EVERY` events; what it raises is ignored, so a failing display cannot
/// abort a run. At the same pauses the run stops, raising KeyboardInterrupt, when `cancel` (a
/// `threading.Event`) is set, or with the error of a signal handler (Ctrl-C) when it runs on
/// the main thread: the pauses are where Python's handlers get to run.
///
/// With `held`, the result is a `CoreRun` that keeps the tables in the core: `clos run` then
/// writes them as Parquet from here (`CoreRun.write_tables`) without importing numpy or polars.
#[pyfunction]
#[pyo3(signature = (scenario_json, progress=None, cancel=None, held=false))]
fn run<'py>(py: Python<'py>, scenario_json: &str, progress: Option<Py<PyAny>>, cancel: Option<Py<PyAny>>, held: bool) -> PyResult<Bound<'py, PyAny>> {
    let scenario = Scenario::from_json(scenario_json).map_err(to_py_err)?;
    let mut signal = None;
    let report = py.detach(|| {
        clos_core::run_with_progress(&scenario, &mut |p| {
            Python::attach(|py| {
                if let Some(f) = &progress {
                    let args = (seconds(p.now), seconds(p.end), p.flows_done, p.flows, p.events);
                    // A failing progress display must not abort the simulation; but Ctrl-C
                    // may be raised in it, as its Python code is where the handler runs.
                    if let Err(e) = f.call1(py, args) {
                        if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                            signal = Some(e);
                            return false;
                        }
                    }
                }
                if let Err(e) = py.check_signals() {
                    signal = Some(e);
                    return false;
                }
                let cancelled = cancel.as_ref().is_some_and(|c| c.call_method0(py, "is_set").and_then(|v| v.extract::<bool>(py)).unwrap_or(false));
                !cancelled
            })
        })
    });
    if let Some(e) = signal {
        return Err(e);
    }
    let report = report.map_err(to_py_err)?;
    if held {
        return Ok(Bound::new(py, CoreRun { report: Some(report) })?.into_any());
    }
    Ok(report_to_dict(py, report)?.into_any())
}

/// A finished run whose tables stay in the core until asked for (`run(..., held=True)`).
#[pyclass(module = "clos._core")]
struct CoreRun {
    /// Taken by `columns`.
    report: Option<Report>,
}

impl CoreRun {
    fn report(&self) -> PyResult<&Report> {
        self.report.as_ref().ok_or_else(|| PyRuntimeError::new_err("the run's tables were handed over already (CoreRun.columns)"))
    }
}

#[pymethods]
impl CoreRun {
    /// The summary, as JSON text.
    fn summary(&self) -> PyResult<String> {
        Ok(self.report()?.summary.to_string())
    }

    /// The sum of a flows-table counter over every flow, for the run table (`retransmits` or
    /// `timeouts`).
    fn flow_total(&self, column: &str) -> PyResult<u64> {
        let flows = &self.report()?.flows;
        let counts = match column {
            "retransmits" => &flows.retransmits,
            "timeouts" => &flows.timeouts,
            _ => return Err(pyo3::exceptions::PyValueError::new_err(format!("no flow total {column:?}: retransmits or timeouts"))),
        };
        Ok(counts.iter().sum())
    }

    /// Rows in the packet trace (`output.trace`), which `write_tables` does not write.
    fn trace_rows(&self) -> PyResult<usize> {
        Ok(self.report()?.trace.time_ps.len())
    }

    /// Write the flat tables (flows, links, queues, timeseries, link_timeseries) into `folder`
    /// as `<table>.parquet` (`clos_core::metrics::parquet`); the GIL is released meanwhile.
    fn write_tables(&self, py: Python<'_>, folder: std::path::PathBuf) -> PyResult<()> {
        let r = self.report()?;
        py.detach(|| -> std::io::Result<()> {
            for (name, columns) in flat_tables(r) {
                parquet::write(&folder.join(format!("{name}.parquet")), &columns)?;
            }
            Ok(())
        })
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("cannot write results to {}: {e}", folder.display())))
    }

    /// The tables as `run` returns them without `held` (numpy columns); once only.
    fn columns<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.report()?;
        report_to_dict(py, self.report.take().expect("checked above"))
    }
}

/// A table's columns for the Parquet writer, named by the struct's fields.
/// Hands the flows table's columns, in their order, to `table!` or `parquet_columns!`: one list
/// for the dict Python reads and the Parquet files the core writes.
macro_rules! flow_columns {
    ($m:ident!($($args:tt)*)) => {
        $m!(
            $($args)*,
            id,
            src,
            dst,
            service,
            bytes,
            mss,
            delivered,
            start_ps,
            end_ps,
            finished,
            fct_ps,
            ideal_fct_ps,
            slowdown,
            retransmits,
            timeouts,
            dupacks,
            out_of_order,
            reordered,
            spurious_retransmits,
            drops
        )
    };
}

macro_rules! parquet_columns {
    ($t:expr, $($field:ident),* $(,)?) => {{
        let t = $t;
        vec![$((stringify!($field), parquet::Column::from(&t.$field[..]))),*]
    }};
}

/// The tables `CoreRun.write_tables` writes, with the columns `report_to_dict` hands over.
fn flat_tables(r: &Report) -> Vec<(&'static str, Vec<(&'static str, parquet::Column<'_>)>)> {
    vec![
        ("flows", flow_columns!(parquet_columns!(&r.flows))),
        ("links", parquet_columns!(&r.links, id, src, dst, tier, rate_bps, bytes, packets, drops, ecn_marks, queueing_ps, utilisation)),
        ("queues", parquet_columns!(&r.queues, time_ps, link, bytes)),
        ("timeseries", parquet_columns!(&r.timeseries, bin_start_ps, service, bytes, goodput_bps)),
        ("link_timeseries", parquet_columns!(&r.link_timeseries, bin_start_ps, link, bytes, utilisation)),
    ]
}

/// The multicast control plane's statistical evaluation (`clos_core::multicast`,
/// docs/multicast.md): a dict of parameters (every default is the paper's setup) in, a dict of
/// results out. The GIL is released while it runs.
#[pyfunction]
fn multicast_eval<'py>(py: Python<'py>, params: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyAny>> {
    let json = py.import("json")?;
    let text: String = json.call_method1("dumps", (params,))?.extract()?;
    let out = py.detach(|| clos_core::multicast::evaluate_json(&text)).map_err(to_py_err)?;
    json.call_method1("loads", (out.to_string(),))
}

/// How a scenario's fabric is cut for a parallel engine (`clos_core::topology::partition`), as
/// JSON; with `threads`, also the run analysed per window of the lookahead
/// (`clos_core::sim::windows`) and the speedup estimated at each thread count. The GIL is
/// released while it runs.
#[pyfunction]
#[pyo3(signature = (scenario_json, threads = None))]
fn partition(py: Python<'_>, scenario_json: &str, threads: Option<Vec<usize>>) -> PyResult<String> {
    let s = Scenario::from_json(scenario_json).map_err(to_py_err)?;
    let out = py
        .detach(|| match &threads {
            Some(t) => clos_core::analyse_partitions(&s, t),
            None => clos_core::sim::windows::describe(&s),
        })
        .map_err(to_py_err)?;
    Ok(out.to_string())
}

/// A column goes to Python as a numpy array (numbers, booleans) or a list (text).
trait Column {
    fn into_column(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>>;
}

macro_rules! numeric_columns {
    ($($t:ty),*) => {$(
        impl Column for Vec<$t> {
            fn into_column(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
                Ok(self.into_pyarray(py).into_any())
            }
        }
    )*};
}
numeric_columns!(u8, u32, u64, f64, bool);

impl Column for Vec<String> {
    fn into_column(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        self.into_pyobject(py).map(Bound::into_any)
    }
}

/// A dict of columns from a struct of column vectors, named by its fields.
macro_rules! table {
    ($py:expr, $t:expr, $($field:ident),* $(,)?) => {{
        let d = PyDict::new($py);
        let t = $t;
        $(d.set_item(stringify!($field), t.$field.into_column($py)?)?;)*
        d
    }};
}

fn report_to_dict(py: Python<'_>, r: Report) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("summary", r.summary.to_string())?;
    out.set_item("flows", flow_columns!(table!(py, r.flows)))?;
    out.set_item("links", table!(py, r.links, id, src, dst, tier, rate_bps, bytes, packets, drops, ecn_marks, queueing_ps, utilisation))?;
    out.set_item("queues", table!(py, r.queues, time_ps, link, bytes))?;
    out.set_item("timeseries", table!(py, r.timeseries, bin_start_ps, service, bytes, goodput_bps))?;
    out.set_item("link_timeseries", table!(py, r.link_timeseries, bin_start_ps, link, bytes, utilisation))?;
    out.set_item("trace", table!(py, r.trace, time_ps, flow, event, seg, sacked, link, ecn, ece, cwr, sack))?;
    Ok(out)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(commit, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_class::<CoreRun>()?;
    m.add_function(wrap_pyfunction!(multicast_eval, m)?)?;
    m.add_function(wrap_pyfunction!(partition, m)?)?;
    Ok(())
}
