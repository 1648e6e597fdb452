"""`clos report`: one run as a static HTML page of key numbers, plots and detail tables.

The page is written beside its PNGs (`plots/` next to `report.html`) and reads the run's saved
folder only, so a report can be made long after the run, on another machine, without the core.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clos import units
from clos.results import key_numbers, page, plots
from clos.results.fabric import draw_fabric
from clos.results.run_folder import SavedRun, load_run
from clos.results.saved_files import SCENARIO

REPORT = "report.html"
PLOTS = "plots"

Column = tuple[str, Callable[[dict[str, Any]], str]]


def write_report(results_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write the report of the run saved in `results_dir`; returns the HTML file's path.

    `out` is the HTML file if it ends in .html, else the folder for `report.html`; by default the
    report goes into the results folder itself.
    """
    run = load_run(results_dir)
    html = page.html_path(Path(out) if out is not None else run.folder, REPORT)
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text(render(run, html), encoding="utf-8")
    return html


def render(run: SavedRun, html: Path) -> str:
    """The page's HTML; draws the plots into `plots/` beside `html` as a side effect."""
    folder = html.parent / PLOTS
    runs = {run.name: run}
    figures = [
        draw_fabric(run.links, folder / "fabric.png"),
        plots.fct_cdf(runs, folder / "fct_cdf.png"),
        plots.slowdown_by_bucket(runs, folder / "slowdown_by_bucket.png"),
        plots.goodput_over_time(runs, folder / "goodput_over_time.png"),
        plots.per_hop_queueing(runs, folder / "per_hop_queueing.png"),
        plots.queue_length_cdf(run, folder / "queue_length_cdf.png"),
        plots.utilisation_cdf(run, folder / "utilisation_cdf.png"),
        plots.split_fairness_over_time(run, folder / "split_fairness.png"),
    ]
    body = [
        page.heading(f"clos report: {run.name}", 1),
        page.paragraph(f"results folder: {run.folder}", "note"),
        *_settings(run),
        page.heading("Key numbers"),
        page.table(
            ("section", "quantity", "value"),
            key_numbers.rows([run]),
            sections=True,
        ),
        page.heading("Plots"),
        *(page.figure(plot, html) for plot in figures),
        page.heading("Details"),
        *_details(run),
    ]
    return page.document(f"clos report: {run.name}", body)


def _settings(run: SavedRun) -> list[str]:
    """What was run: the scenario's name and seed, the overrides and the clos that ran it (for
    runs that recorded them), then the load balancer and workload as the summary describes them,
    flattened."""
    overrides = run.get("run", "overrides")
    identity = [
        ("scenario", run.name),
        ("seed", str(run.get("scenario", "seed"))),
        ("overrides", " ".join(overrides) if overrides else "none"),
        ("clos", str(run.get("run", "clos") or "not recorded")),
        ("time taken", _time_taken(run)),
        ("scenario file", "scenario.toml" if (run.folder / SCENARIO).is_file() else "not saved"),
    ]
    rows = identity + [
        (f"{section}.{key}", value)
        for section in ("load_balancer", "workload")
        for key, value in _flatten(run.get(section))
    ]
    if not rows:
        return []
    return [page.heading("Run"), page.table(("setting", "value"), rows)]


def _time_taken(run: SavedRun) -> str:
    wall, cpu = run.get("stats", "wall_seconds"), run.get("stats", "cpu_seconds")
    simulated = run.get("stats", "simulated_seconds")
    if not isinstance(wall, int | float):
        return "not recorded"
    return (
        f"{units.duration(wall)} wall, {units.duration(cpu)} CPU, for "
        f"{units.duration(simulated)} simulated"
    )


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, dict):
        return [
            item
            for key, inner in value.items()
            for item in _flatten(inner, f"{prefix}.{key}" if prefix else str(key))
        ]
    if value is None or not prefix:
        return []
    return [(prefix, str(value))]


def _get(fmt: Callable[[Any], str], *keys: str) -> Callable[[dict[str, Any]], str]:
    """A cell read from one row of a summary list; a missing or non-numeric value shows as "-"."""

    def cell(row: dict[str, Any]) -> str:
        value: Any = row
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str):
            return value
        return fmt(value if isinstance(value, int | float) else None)

    return cell


def _text(*keys: str) -> Callable[[dict[str, Any]], str]:
    return _get(lambda value: units.MISSING if value is None else str(value), *keys)


def _detail(title: str, rows: Any, columns: Sequence[Column], note: str = "") -> list[str]:
    """A titled table of summary rows, or nothing when the summary lacks that section."""
    if not isinstance(rows, list) or not rows:
        return []
    cells = [[cell(row) for _, cell in columns] for row in rows if isinstance(row, dict)]
    parts = [page.heading(title, 3)]
    if note:
        parts.append(page.paragraph(note, "note"))
    return [*parts, page.table([header for header, _ in columns], cells)]


def _fct_rows(run: SavedRun) -> list[dict[str, Any]]:
    buckets = run.get("fct", "buckets")
    rows = list(buckets) if isinstance(buckets, list) else []
    for group in ("short", "long", "all"):
        row = run.get("fct", group)
        if isinstance(row, dict):
            rows.append({"label": f"{group} flows", **row})
    return rows


def _fct_note(run: SavedRun) -> str:
    short, long = run.get("fct", "short_max_bytes"), run.get("fct", "long_min_bytes")
    if not isinstance(short, int | float) or not isinstance(long, int | float):
        return ""
    return f"Short flows: up to {units.count(short)} B; long flows: from {units.count(long)} B."


def _details(run: SavedRun) -> list[str]:
    d = units.duration
    parts = [
        *_detail(
            "Flow completion time by flow size",
            _fct_rows(run),
            [
                ("flows", _text("label")),
                ("count", _get(units.count, "count")),
                ("finished", _get(units.count, "finished")),
                ("FCT mean", _get(d, "fct_s", "mean")),
                ("FCT p50", _get(d, "fct_s", "p50")),
                ("FCT p99", _get(d, "fct_s", "p99")),
                ("FCT p99.9", _get(d, "fct_s", "p999")),
                ("FCT p99.99", _get(d, "fct_s", "p9999")),
                ("slowdown mean", _get(units.ratio, "slowdown", "mean")),
                ("slowdown p99", _get(units.ratio, "slowdown", "p99")),
                ("slowdown p99.9", _get(units.ratio, "slowdown", "p999")),
            ],
            _fct_note(run),
        ),
        *_detail(
            "Queueing delay per hop",
            run.get("queueing", "tiers"),
            [
                ("tier", _text("tier")),
                ("hop", _text("hop")),
                ("packets", _get(units.count, "packets")),
                ("drops", _get(units.count, "drops")),
                ("drop fraction", _get(units.percent, "drop_fraction")),
                ("mean", _get(d, "mean_s")),
                ("p50", _get(d, "p50_s")),
                ("p99", _get(d, "p99_s")),
                ("p99.9", _get(d, "p999_s")),
                ("max", _get(d, "max_s")),
            ],
            "The delay a packet waits in the queue of each tier's ports (DRILL Fig. 6c, 14c).",
        ),
        *_queue_details(run),
        *_detail(
            "Link utilisation per tier",
            run.get("links", "tiers"),
            [
                ("tier", _text("tier")),
                ("links", _get(units.count, "links")),
                ("mean", _get(units.percent, "utilisation_mean")),
                ("p50", _get(units.percent, "utilisation_p50")),
                ("p99", _get(units.percent, "utilisation_p99")),
                ("max", _get(units.percent, "utilisation_max")),
            ],
        ),
        *_split_jain(run),
        *_migrations(run),
        *_pushes(run),
        *_detail(
            "Services",
            run.get("services"),
            [
                ("service", _text("name")),
                ("flows", _get(units.count, "flows")),
                ("finished", _get(units.count, "finished")),
                ("delivered", _get(units.megabytes, "delivered_bytes")),
                ("goodput", _get(units.rate, "goodput_bps")),
            ],
        ),
        *_tenants(run),
        *_storage_service(run),
        *_updates(run),
    ]
    return parts or [page.paragraph("The summary holds no detail sections.", "note")]


def _tenants(run: SavedRun) -> list[str]:
    """Per tenant: weight, goodput (plain and per unit of weight), share and FCT; with the MMR."""
    mmr = run.get("tenants", "mmr")
    classes = run.get("tenants", "mmr_by_weight") or []
    within = ", ".join(
        f"weight {c['weight']:g}: {units.ratio(c['mmr'])}"
        for c in classes
        if isinstance(c, dict) and c.get("tenants", 0) > 1 and c.get("mmr") is not None
    )
    note = (
        f"Min-Max Ratio of goodput per unit of weight (Pisces): {units.ratio(mmr)}"
        + (f"; within weight classes, {within}" if within else "")
        + ". Goodput is over each tenant's active period (docs/tenants.md)."
        if isinstance(mmr, int | float)
        else ""
    )
    return _detail(
        "Tenants",
        run.get("tenants", "tenants"),
        [
            ("tenant", _text("name")),
            ("weight", _get(units.ratio, "weight")),
            ("flows", _get(units.count, "flows")),
            ("finished", _get(units.count, "finished")),
            ("goodput", _get(units.rate, "goodput_bps")),
            ("per unit of weight", _get(units.rate, "normalised_bps")),
            ("share", _get(units.percent, "share")),
            ("FCT p50", _get(units.duration, "fct_p50_s")),
            ("FCT p99", _get(units.duration, "fct_p99_s")),
        ],
        note,
    )


def _flow_versions(u: dict) -> str:
    """Two-phase and per-flow: flows moved between versions while they lasted (per-flow keeps
    them: docs/updates.md)."""
    moved, kept = u.get("flows_switched_version"), u.get("flows_kept_on_old_version")
    if moved is None:
        return ""
    text = f"{units.count(moved)} flows moved to a new version while they lasted"
    if kept is not None:
        text += f", {units.count(kept)} kept the old one until idle"
    return text + ". "


def _storage_service(run: SavedRun) -> list[str]:
    """The storage service (`[service]`, docs/tenants.md): per tenant its requests/s, per unit of
    weight, and request latency; with the MMR over the measured window."""
    mmr = run.get("service", "mmr")
    note = (
        f"Min-Max Ratio of requests/s per unit of weight (Pisces): {units.ratio(mmr)}, "
        f"least within a weight class {units.ratio(run.get('service', 'mmr_within_classes_min'))}, "
        f"from {units.duration(run.get('service', 'measure_from_s'))} to the end."
        if isinstance(mmr, int | float)
        else ""
    )
    rate = _get(lambda x: f"{x:,.0f}", "throughput_rps")
    columns = [
        ("tenant", _text("name")),
        ("weight", _get(units.ratio, "weight")),
        ("completed", _get(units.count, "completed")),
        ("requests/s", rate),
        ("per unit of weight", _get(lambda x: f"{x:,.0f}", "normalised_rps")),
        ("latency p50", _get(units.duration, "latency_p50_s")),
        ("latency p99", _get(units.duration, "latency_p99_s")),
    ]
    if run.get("service", "writes") is not None:
        # With writes (`service.write_fraction`): reads and writes apart.
        columns[3:4] = [
            ("reads/s", _get(lambda x: f"{x:,.0f}", "read_throughput_rps")),
            ("writes/s", _get(lambda x: f"{x:,.0f}", "write_throughput_rps")),
        ]
        columns[-2:] = [
            ("read p50", _get(units.duration, "read_latency_p50_s")),
            ("read p99", _get(units.duration, "read_latency_p99_s")),
            ("write p50", _get(units.duration, "write_latency_p50_s")),
            ("write p99", _get(units.duration, "write_latency_p99_s")),
        ]
    return _detail("Storage service", run.get("service", "tenants"), columns, note)


def _updates(run: SavedRun) -> list[str]:
    """Controller-mode routing updates (docs/updates.md): each update's times and rules, with the
    transient's losses and the rule space it took."""
    d = units.duration
    u = run.get("failures", "update")
    if not isinstance(u, dict):
        return []
    note = (
        f"Strategy {u.get('strategy')}: {units.count(u.get('mixed_version_packets'))} packets "
        f"forwarded by a mix of old and new rules, {units.count(u.get('looped'))} looped, "
        f"{units.count(u.get('black_holed'))} black-holed, "
        f"{units.count(u.get('stale_version_dropped'))} dropped with their version's rules gone. "
        + _flow_versions(u)
        + f"Rules held: {units.count(u.get('rules_at_start_total'))} at the start, "
        f"{units.count(u.get('peak_rules_total'))} at the peak "
        f"({units.count(u.get('peak_rules_max_switch'))} on the fullest switch, of "
        f"{units.count(u.get('table_size'))}); {len(u.get('table_overflows') or [])} refused for "
        "lack of table space. Times from detection (docs/updates.md)."
    )
    return _detail(
        "Routing updates",
        u.get("updates"),
        [
            ("version", _text("version")),
            ("detected", _get(d, "detected_s")),
            ("rounds", _get(units.count, "rounds")),
            ("rules written", _get(units.count, "rules_written")),
            ("most on one switch", _get(units.count, "most_rules_one_switch")),
            ("refused", _get(units.count, "refused_switches")),
            ("to complete", _get(d, "time_to_complete_s")),
            ("to remove old rules", _get(d, "time_to_remove_old_s")),
        ],
        note,
    )


def _migrations(run: SavedRun) -> list[str]:
    """VM migrations under the directory model: what each cost and how long it took to heal."""
    d = units.duration
    return _detail(
        "Directory: VM migrations",
        run.get("directory", "migrations"),
        [
            ("AA", _text("aa")),
            ("at", _get(d, "at_s")),
            ("from", _text("from")),
            ("to", _text("to")),
            ("update commits", _get(d, "directory_updated_s")),
            ("misdelivered", _get(units.count, "misdelivered")),
            ("reports", _get(units.count, "reports")),
            ("unanswered", _get(units.count, "reports_unanswered")),
            ("corrections", _get(units.count, "corrections")),
            ("stale senders", _get(units.count, "stale_senders")),
            ("caches converged", _get(d, "senders_converged_s")),
            ("first delivery", _get(d, "first_delivery_s")),
            ("stale at end", _get(units.count, "stale_caches_at_end")),
        ],
        "Times after the move. A sender is stale once it sends with the old mapping; its cache "
        "converges when the directory's correction arrives, which needs the update committed "
        "first. First delivery: the first packet to reach the VM at its new server. Stale at "
        "end: cached mappings never used again, so never corrected (docs/directory.md).",
    )


def _pushes(run: SavedRun) -> list[str]:
    """`directory.channel`: each migration's new mapping pushed to the agents through the control
    channel (docs/updates.md, "The VM migration through the channel")."""
    d = units.duration
    moves = run.get("directory", "migrations")
    rows = (
        [m for m in moves if isinstance(m, dict) and "push" in m] if isinstance(moves, list) else []
    )
    return _detail(
        "Directory: mappings pushed through the control channel",
        rows,
        [
            ("AA", _text("aa")),
            ("strategy", _text("push", "update")),
            ("agents", _get(units.count, "push", "agents")),
            ("sent (commit)", _get(d, "push", "sent_s")),
            ("all on new mapping", _get(d, "push", "completed_s")),
            ("old rules removed", _get(d, "push", "old_rules_removed_s")),
            ("rules written", _get(units.count, "push", "rules_written")),
            ("peak rules", _get(units.count, "push", "peak_rules")),
            ("refused (agents)", _refused),
            ("flows kept on old", _get(units.count, "push", "flows_kept_on_old_mapping")),
            ("sent to old place", _get(units.count, "stale_sends")),
            ("last sent there", _get(d, "last_stale_send_s")),
        ],
        "Times after the move. The directory pushes the new mapping to every agent that maps "
        "the AA elsewhere when its update commits; ToRs report nothing meanwhile "
        "(docs/updates.md). " + _agent_refusals(run),
    )


def _refused(row: dict[str, Any]) -> str:
    """A push's rules refused for want of table space at the agents, and how many agents (the
    summary names them only when some were)."""
    push = row.get("push")
    if not isinstance(push, dict):
        return "-"
    rules, agents = push.get("rules_refused", 0), push.get("agents_refused", 0)
    return f"{units.count(rules)} ({units.count(agents)})"


def _agent_refusals(run: SavedRun) -> str:
    """The agents whose tables refused pushed mappings (each then looked the AA up)."""
    size = run.get("directory", "agent_table_size")
    refusals = run.get("directory", "agent_table_refusals")
    if not isinstance(size, int) or not isinstance(refusals, list):
        return "No agent's table refused a mapping."
    named = ", ".join(
        f"{r.get('agent')} {units.count(r.get('rules_refused'))}"
        for r in refusals
        if isinstance(r, dict)
    )
    return (
        f"Agents' tables of {units.count(size)} rules refused mappings (rules per agent: "
        f"{named}); each such agent looked the AA up on its next packet."
    )


def _queue_details(run: SavedRun) -> list[str]:
    kb = units.kilobytes
    stdev = run.get("queues", "uplink_stdev")
    rows = run.get("queues", "tiers")
    if isinstance(stdev, dict) and isinstance(rows, list):
        rows = [*rows, {"tier": "uplink stdev", **stdev}]
    interval, samples = run.get("queues", "interval_s"), run.get("queues", "samples")
    note = "Switch-port queue lengths"
    if isinstance(interval, int | float) and isinstance(samples, int | float):
        note += f", {units.count(samples)} samples every {units.duration(interval)}"
    note += (
        ". The last row is the standard deviation of queue lengths across one switch's uplinks "
        "at one sample time: zero when the uplinks are evenly loaded (DRILL Fig. 2)."
    )
    return _detail(
        "Queue lengths",
        rows,
        [
            ("tier", _text("tier")),
            ("mean", _get(kb, "mean_bytes")),
            ("p50", _get(kb, "p50_bytes")),
            ("p99", _get(kb, "p99_bytes")),
            ("max", _get(kb, "max_bytes")),
        ],
        note,
    )


def _split_jain(run: SavedRun) -> list[str]:
    split = run.get("links", "split_jain")
    if not isinstance(split, dict):
        return []
    rows = [{"tier": tier, **row} for tier, row in split.items() if isinstance(row, dict)]
    return _detail(
        "Split fairness across uplinks",
        rows,
        [
            ("tier", _text("tier")),
            ("switches", _get(units.count, "switches")),
            ("bins", _get(units.count, "bins")),
            ("mean", _get(units.ratio, "mean")),
            ("min", _get(units.ratio, "min")),
            ("p1", _get(units.ratio, "p1")),
            ("p50", _get(units.ratio, "p50")),
        ],
        "Jain's index of the bytes each switch sends on each of its uplinks per time bin, over "
        "(switch, bin) pairs; 1 is a perfectly even split (VL2 §5.2).",
    )
