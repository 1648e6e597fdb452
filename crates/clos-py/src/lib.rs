//! The thin PyO3 layer over clos-core: JSON in, numpy columns out. No model logic lives here.

use clos_core::lb::params::PARAMS;
use clos_core::lb::Scheme;
use clos_core::metrics::Report;
use clos_core::scenario::Scenario;
use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

create_exception!(_core, ScenarioError, PyValueError, "A scenario the core rejects; the message names the field and the fix.");

fn to_py_err(e: clos_core::Error) -> PyErr {
    match e {
        clos_core::Error::Scenario { .. } => ScenarioError::new_err(e.to_string()),
        clos_core::Error::Invariant(_) => PyRuntimeError::new_err(e.to_string()),
    }
}

#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The normalised scenario (every default filled in) as JSON.
#[pyfunction]
fn validate(scenario_json: &str) -> PyResult<String> {
    Scenario::from_json(scenario_json).map(|s| s.to_json()).map_err(to_py_err)
}

/// `(name, description, [(parameter, default, doc)])` of every load-balancing scheme.
#[pyfunction]
fn schemes() -> Vec<(String, String, Vec<(String, String, String)>)> {
    Scheme::ALL
        .iter()
        .map(|(s, d)| {
            let params = PARAMS
                .iter()
                .filter(|p| p.schemes.contains(s))
                .map(|p| (p.name.to_string(), p.default.to_string(), p.doc.to_string()))
                .collect();
            (s.name().to_string(), d.to_string(), params)
        })
        .collect()
}

/// Run a scenario; the GIL is released while the simulation runs.
#[pyfunction]
fn run<'py>(py: Python<'py>, scenario_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let scenario = Scenario::from_json(scenario_json).map_err(to_py_err)?;
    let report = py.detach(|| clos_core::run(&scenario)).map_err(to_py_err)?;
    report_to_dict(py, report)
}

fn report_to_dict(py: Python<'_>, r: Report) -> PyResult<Bound<'_, PyDict>> {
    let flows = PyDict::new(py);
    let f = r.flows;
    flows.set_item("id", f.id.into_pyarray(py))?;
    flows.set_item("src", f.src.into_pyarray(py))?;
    flows.set_item("dst", f.dst.into_pyarray(py))?;
    flows.set_item("bytes", f.bytes.into_pyarray(py))?;
    flows.set_item("delivered", f.delivered.into_pyarray(py))?;
    flows.set_item("start_ps", f.start_ps.into_pyarray(py))?;
    flows.set_item("end_ps", f.end_ps.into_pyarray(py))?;
    flows.set_item("finished", f.finished.into_pyarray(py))?;
    flows.set_item("fct_ps", f.fct_ps.into_pyarray(py))?;
    flows.set_item("retransmits", f.retransmits.into_pyarray(py))?;
    flows.set_item("timeouts", f.timeouts.into_pyarray(py))?;
    flows.set_item("dupacks", f.dupacks.into_pyarray(py))?;
    flows.set_item("out_of_order", f.out_of_order.into_pyarray(py))?;
    let links = PyDict::new(py);
    let l = r.links;
    links.set_item("id", l.id.into_pyarray(py))?;
    links.set_item("src", l.src)?;
    links.set_item("dst", l.dst)?;
    links.set_item("tier", l.tier)?;
    links.set_item("rate_bps", l.rate_bps.into_pyarray(py))?;
    links.set_item("bytes", l.bytes.into_pyarray(py))?;
    links.set_item("packets", l.packets.into_pyarray(py))?;
    links.set_item("drops", l.drops.into_pyarray(py))?;
    links.set_item("ecn_marks", l.ecn_marks.into_pyarray(py))?;
    let goodput = PyDict::new(py);
    goodput.set_item("bin_start_ps", r.goodput_bin_start_ps.into_pyarray(py))?;
    goodput.set_item("bytes", r.goodput_bytes.into_pyarray(py))?;
    let out = PyDict::new(py);
    out.set_item("summary", r.summary.to_string())?;
    out.set_item("flows", flows)?;
    out.set_item("links", links)?;
    out.set_item("goodput", goodput)?;
    Ok(out)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    Ok(())
}
