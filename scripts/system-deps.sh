#!/usr/bin/env bash
# The system programs the test command needs beyond the toolchains (Rust, Python 3.11, gcc), each
# installed when missing: rustfmt and clippy (through rustup), etcd (the directory service's replicated store, whose tests start real
# members) and etcdctl (its client, which docs/directory.md reads the store with), protoc with its well-known .proto files (the etcd client's generated code imports
# google/protobuf/*.proto), valgrind (the instruction-count gate), and as root ethtool (the
# kernel comparison's short form, tests/test_kernel.py, which needs root anyway). Installs with apt-get as
# root, with sudo when that is available, and otherwise stops with one line naming the command to
# run. run.sh needs none of them. Called by test.sh.
set -euo pipefail
# rustfmt and clippy (the formatting and lint checks) come with rustup's default profile; a
# minimal profile lacks them.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  if command -v rustup >/dev/null; then
    echo "installing rustfmt and clippy (the tests check formatting and lints)" >&2
    rustup component add rustfmt clippy
  else
    echo "error: the tests need cargo fmt and cargo clippy: install rustfmt and clippy for this toolchain" >&2
    exit 1
  fi
fi
missing=()
command -v etcd >/dev/null || missing+=(etcd-server)
command -v etcdctl >/dev/null || missing+=(etcd-client)
command -v protoc >/dev/null || missing+=(protobuf-compiler)
[ -f /usr/include/google/protobuf/timestamp.proto ] || missing+=(libprotobuf-dev)
command -v valgrind >/dev/null || missing+=(valgrind)
if [ "$(id -u)" -eq 0 ]; then
  command -v ethtool >/dev/null || missing+=(ethtool)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

command="apt-get install -y --no-install-recommends ${missing[*]}"
if ! command -v apt-get >/dev/null; then
  echo "error: the tests need ${missing[*]} (Debian's names), and this machine has no apt-get: install them with its package manager" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null; then
  sudo=(sudo)
else
  echo "error: the tests need ${missing[*]}: run \`apt-get update && $command\` as root" >&2
  exit 1
fi
echo "installing ${missing[*]} (the tests need them; see scripts/system-deps.sh)" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
