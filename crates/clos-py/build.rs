//! Records the commit the extension is built from, for `clos --version`: `$CLOS_COMMIT` when the
//! build sets it (scripts/wheel.sh does), otherwise what git says of the checkout at build time,
//! otherwise "unknown" (a source tree without git). An editable install in a checkout asks git
//! at run time instead (python/clos/build_info.py), so this value only matters for wheels.
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=CLOS_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    let commit = std::env::var("CLOS_COMMIT").ok().filter(|c| !c.is_empty()).or_else(|| {
        let head = git(&["rev-parse", "--short=12", "HEAD"])?;
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        Some(if dirty { format!("{head}-dirty") } else { head })
    });
    println!("cargo:rustc-env=CLOS_COMMIT={}", commit.unwrap_or_else(|| "unknown".into()));
}
