#!/usr/bin/env bash
# Environment for the real-editor test (tests/vscode, pytest marker `vscode`):
#   - Debian packages: chromium, ripgrep, libkrb5-dev and a native build toolchain
#   - code-server 4.100.3 from npm, in .cache/code-server
#   - vscode-client npm deps (npm ci) and the packaged extension vscode-client/horovodize-0.1.0.vsix,
#     which bundles the server (horovodize from server/, pygls, lsprotocol, parso, ...: PyPI)
#   - tests/vscode npm deps (playwright-core, pinned)
# Idempotent: each step is stamped under .cache/vscode-env/ and is redone only when
# its inputs changed; the .vsix is rebuilt whenever a vscode-client or server source changed.
# A first run works from nothing (only the Debian and npm registries are needed).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache"
STAMPS="$CACHE/vscode-env"
CS_VERSION="4.100.3"
CS_DIR="$CACHE/code-server"
CS_BIN="$CS_DIR/node_modules/.bin/code-server"
CLIENT="$ROOT/vscode-client"
E2E="$ROOT/tests/vscode"
VSIX="$CLIENT/horovodize-0.1.0.vsix"
# @vscode/ripgrep (a code-server dependency) downloads rg from GitHub in its
# postinstall unless its cache already holds the archive: seed it with Debian's rg.
RG_PKG_VERSION="1.15.11"
RG_ASSET="ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"

log() { printf '[vscode-env] %s\n' "$*"; }
die() { printf '[vscode-env] ERROR: %s\n' "$*" >&2; exit 1; }
t0=$SECONDS

mkdir -p "$STAMPS"

# Hash of files (paths + contents), order-independent of the filesystem.
hash_files() {
  (cd "$1" && shift && find "$@" -type f -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}
stamp_ok() { [[ -f "$STAMPS/$1" && "$(cat "$STAMPS/$1")" == "$2" ]]; }
stamp_set() { printf '%s' "$2" >"$STAMPS/$1"; }

# Quiet npm: the machine's user npmrc may carry keys newer npm warns about.
npm_q() { npm --no-audit --no-fund --loglevel=error "$@"; }
if [[ -f /usr/include/node/node.h ]]; then
  # Build native modules against the installed Node headers (no header download).
  export npm_config_nodedir=/usr
fi

# ------------------------------------------------------------------ 1. Debian packages
APT_PACKAGES=(chromium ripgrep libkrb5-dev build-essential python3 pkg-config fonts-dejavu-core ca-certificates)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || die "need root (or sudo) to install: ${missing[*]}"
    SUDO="sudo"
  fi
  log "apt-get install ${missing[*]}"
  # (`make test` builds the Horovod environment at the same time: apt takes turns on this lock)
  mkdir -p "$CACHE"
  flock "$CACHE/apt.lock" $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive flock "$CACHE/apt.lock" $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v chromium >/dev/null || die "chromium not found after apt install"

command -v node >/dev/null || die "node not found (code-server $CS_VERSION needs Node 20)"
NODE_MAJOR="$(node -p 'process.versions.node.split(".")[0]')"
[[ "$NODE_MAJOR" == "20" ]] || die "code-server $CS_VERSION needs Node 20, found $(node --version)"

# ------------------------------------------------------------------ 2. code-server
if stamp_ok code-server "$CS_VERSION" && [[ -x "$CS_BIN" ]]; then
  log "code-server $CS_VERSION: cached"
else
  log "installing code-server $CS_VERSION into .cache/code-server (takes a few minutes)"
  tmp="$CS_DIR.partial"
  rm -rf "$tmp" "$CS_DIR"
  mkdir -p "$tmp/tmp/vscode-ripgrep-cache-$RG_PKG_VERSION" "$tmp/rg"
  cp "$(command -v rg)" "$tmp/rg/rg"
  tar czf "$tmp/tmp/vscode-ripgrep-cache-$RG_PKG_VERSION/$RG_ASSET" -C "$tmp/rg" rg
  printf '{"private": true}\n' >"$tmp/package.json"
  # Its postinstall runs nested `npm install`s (native modules: kerberos, node-pty,
  # spdlog, argon2, ...), which need install scripts allowed and unsafe-perm as root.
  (
    cd "$tmp"
    export TMPDIR="$tmp/tmp" npm_config_unsafe_perm=true npm_config_yes=true \
      npm_config_dangerously_allow_all_scripts=true
    npm_q install --no-save "code-server@$CS_VERSION" >"$tmp/install.log" 2>&1
  ) || { tail -n 60 "$tmp/install.log" >&2; die "code-server install failed (log: $tmp/install.log)"; }
  rg_bin="$tmp/node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg"
  [[ -x "$rg_bin" ]] || die "code-server installed without ripgrep ($rg_bin)"
  rm -rf "$tmp/tmp" "$tmp/rg"
  mv "$tmp" "$CS_DIR"
  "$CS_BIN" --version >/dev/null 2>&1 || die "code-server does not start: $CS_BIN --version"
  stamp_set code-server "$CS_VERSION"
fi

# ------------------------------------------------------------------ 3. the extension
deps_hash="$(hash_files "$CLIENT" package.json package-lock.json .npmrc)"
if stamp_ok client-deps "$deps_hash" && [[ -d "$CLIENT/node_modules" ]]; then
  log "vscode-client npm deps: cached"
else
  log "vscode-client: npm ci"
  (cd "$CLIENT" && npm_q ci)
  stamp_set client-deps "$deps_hash"
fi

client_hash="$(hash_files "$CLIENT" src package.json package-lock.json tsconfig.json esbuild.mjs .vscodeignore README.md CHANGELOG.md LICENSE scripts bundled/tool)"
# The bundled server: its sources (not the __pycache__ the test runs leave next to them).
server_hash="$(cd "$ROOT" && find server pyproject.toml -type f -not -path '*/__pycache__/*' -not -path '*.egg-info/*' -print0 |
  LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
src_hash="$client_hash-$server_hash"
if stamp_ok vsix "$src_hash" && [[ -f "$VSIX" ]]; then
  log "vsix: up to date ($(basename "$VSIX"))"
else
  log "vscode-client: npm run package (its vscode:prepublish runs the strict tsc check, the esbuild bundle and bundles the server)"
  rm -f "$VSIX"
  (cd "$CLIENT" && npm_q run package) >"$STAMPS/vsix-build.log" 2>&1 ||
    { tail -n 60 "$STAMPS/vsix-build.log" >&2; die "building the .vsix failed"; }
  [[ -f "$VSIX" ]] || die "npm run package did not produce $VSIX"
  stamp_set vsix "$src_hash"
fi

# ------------------------------------------------------------------ 4. the test driver
e2e_hash="$(hash_files "$E2E" package.json package-lock.json .npmrc)"
if stamp_ok e2e-deps "$e2e_hash" && [[ -d "$E2E/node_modules/playwright-core" ]]; then
  log "tests/vscode npm deps: cached"
else
  log "tests/vscode: npm ci"
  (cd "$E2E" && npm_q ci)
  stamp_set e2e-deps "$e2e_hash"
fi

log "ready in $((SECONDS - t0))s: $CS_BIN ($CS_VERSION), $(basename "$VSIX"), $(command -v chromium)"
