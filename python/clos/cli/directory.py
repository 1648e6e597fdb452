"""`clos directory`: VL2's directory system (VL2 §4.3, §5.5) as a real service.

The service itself is Rust (crates/clos-directory): directory servers over an etcd store. These
commands find its `clos-directory` binary and run it, passing the output through, so that
`clos directory up` and `clos directory bench` work from the same tool as the simulator.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Annotated

import typer

app = typer.Typer(
    help="VL2's directory system: a local cluster on loopback and its benchmark.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

BUILD_HINT = (
    "install it with `cargo install --locked --path crates/clos-directory` from a clos checkout "
    "(or build it there with `cargo build --release -p clos-directory`, as ./test.sh does)"
)


class DirectoryError(Exception):
    """The binary is missing or cannot be run: a user-fixable problem, reported in one line."""


def binary() -> Path:
    """The clos-directory binary: $CLOS_DIRECTORY_BIN, this checkout's cargo target, or PATH."""
    explicit = os.environ.get("CLOS_DIRECTORY_BIN")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise DirectoryError(
                f"CLOS_DIRECTORY_BIN: {path} does not exist; unset it or {BUILD_HINT}"
            )
        return path
    root = Path(__file__).resolve().parents[3]
    target = Path(os.environ.get("CARGO_TARGET_DIR", root / "target"))
    for profile in ("release", "debug"):
        candidate = target / profile / "clos-directory"
        if candidate.is_file():
            return candidate
    found = shutil.which("clos-directory")
    if found:
        return Path(found)
    raise DirectoryError(f"the clos-directory binary was not found; {BUILD_HINT}")


def _pump(source: IO[str], err: bool) -> None:
    for line in source:
        typer.echo(line, nl=False, err=err)


def run_binary(args: list[str]) -> int:
    """Runs the binary with `args`, streaming its output through typer (so tests can read it)."""
    command = [str(binary()), *args]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        errors = threading.Thread(target=_pump, args=(process.stderr, True), daemon=True)
        errors.start()
        try:
            _pump(process.stdout, False)
            code = process.wait()
        except KeyboardInterrupt:
            # Ctrl-C reached the child too (same process group); let it stop its cluster.
            code = process.wait()
        errors.join(timeout=5)
    return code


def _run(args: list[str]) -> None:
    try:
        code = run_binary(args)
    except DirectoryError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    if code != 0:
        raise typer.Exit(code)


@app.command()
def up(
    etcd: Annotated[int, typer.Option(help="etcd members (VL2's RSM tier).")] = 3,
    servers: Annotated[int, typer.Option(help="Directory servers.")] = 3,
    folder: Annotated[
        Path | None, typer.Option("--dir", help="Folder for configs, data and logs.")
    ] = None,
    run_for: Annotated[
        str | None, typer.Option("--for", help='Stop after this long, e.g. "30s"; default: Ctrl-C.')
    ] = None,
    tls: Annotated[
        bool,
        typer.Option(
            help="TLS on every session, with a throwaway CA made for the cluster; "
            "--no-tls sends tokens in clear."
        ),
    ] = True,
) -> None:
    """Start a local directory system on loopback: etcd members plus directory servers."""
    args = ["up", "--etcd", str(etcd), "--servers", str(servers)]
    if folder is not None:
        args += ["--dir", str(folder)]
    if run_for is not None:
        args += ["--for", run_for]
    if not tls:
        args.append("--no-tls")
    _run(args)


@app.command()
def bench(
    servers: Annotated[int, typer.Option(help="Directory servers (VL2 §5.5: 3).")] = 3,
    etcd: Annotated[int, typer.Option(help="etcd members (VL2 §5.5: 3).")] = 3,
    workers: Annotated[int, typer.Option(help="Worker threads per directory server.")] = 1,
    agents: Annotated[int, typer.Option(help="Emulated agents.")] = 16,
    k: Annotated[int, typer.Option("--k", help="Servers per lookup (VL2: 2).")] = 2,
    burst: Annotated[int, typer.Option(help="Lookups per burst.")] = 10,
    update_rates: Annotated[
        str, typer.Option(help="Offered update rates, updates/s, comma-separated.")
    ] = "3000,6000,12000,24000",
    lookup_rates: Annotated[
        str, typer.Option(help="Offered lookup rates, lookups/s, comma-separated.")
    ] = "25000,50000,100000,150000,200000",
    step: Annotated[str, typer.Option(help='Length of each rate step, e.g. "3s".')] = "3s",
    out: Annotated[Path | None, typer.Option(help="Write the full results as JSON here.")] = None,
    tls: Annotated[bool, typer.Option(help="TLS on every session (--no-tls: in clear).")] = True,
    session_rate: Annotated[
        int, typer.Option(help="Each session's request rate limit, requests/s.")
    ] = 20_000,
) -> None:
    """Benchmark lookups and updates on a local cluster (bursty emulated agents, VL2 §5.5)."""
    args = [
        "bench",
        f"--servers={servers}",
        f"--etcd={etcd}",
        f"--workers={workers}",
        f"--agents={agents}",
        f"--k={k}",
        f"--burst={burst}",
        f"--update-rates={update_rates}",
        f"--lookup-rates={lookup_rates}",
        f"--step={step}",
        f"--session-rate={session_rate}",
    ]
    if not tls:
        args.append("--no-tls")
    if out is not None:
        args.append(f"--out={out}")
    _run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
