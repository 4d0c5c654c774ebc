#!/usr/bin/env bash
# `cmake --install` of a build gives a node whose programs find each other:
# installed into a DESTDIR, every path the installed `gpuslice version`
# names (hook, interposer, gpuslice-runtime, and gpuslice-shim beside the
# runtime) is there, the installed
# programs start, and the OCI hooks file names the installed hook.
#   check_install.sh BUILD_DIR
set -euo pipefail
build=$1
fail() { echo "check_install: $*" >&2; exit 1; }
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

DESTDIR=$dest cmake --install "$build" >/dev/null
installed=$(cd "$dest" && find . -type f -o -type l | sed 's|^\.||' | sort)
echo "installed:"; echo "$installed" | sed 's/^/  /'

gs=$(echo "$installed" | grep '/bin/gpuslice$') || fail "no bin/gpuslice installed"
out=$(GPUSLICE_CONFIG=/nonexistent/config.toml "$dest$gs" version)
echo "$out"
value() { echo "$out" | awk -v k="$1" '$1 == k { print $2 }'; }
for key in hook-path interposer-path gpuslice-runtime; do
  path=$(value "$key")
  [[ $path == /* ]] || fail "$key: no absolute path in \`gpuslice version\`"
  [[ -e $dest$path ]] || fail "$key $path is compiled in, but the install put nothing there"
done
[[ $(dirname "$gs") == $(dirname "$(value gpuslice-runtime)") ]] || fail "gpuslice and gpuslice-runtime in different dirs"

"$dest$(value hook-path)" --help >/dev/null || fail "the installed gpuslice-hook does not start"
"$dest$(value gpuslice-runtime)" --version >/dev/null || fail "the installed gpuslice-runtime does not start"
# gpuslice-runtime starts gpuslice-shim from its own directory.
shim="$dest$(dirname "$(value gpuslice-runtime)")/gpuslice-shim"
[[ -x $shim ]] || fail "no gpuslice-shim beside gpuslice-runtime ($shim)"
usage=$("$shim" 2>&1 || true)
[[ $usage == *"started by gpuslice-runtime, not by hand"* ]] || fail "the installed gpuslice-shim does not start: $usage"

for name in gpuslice gpuslice-poststop; do
  hooks=$(echo "$installed" | grep "/containers/oci/hooks.d/$name.json\$") || fail "no OCI hooks file $name.json installed"
  grep -q "\"path\": \"$(value hook-path)\"" "$dest$hooks" || fail "$hooks does not name $(value hook-path)"
done
echo "check_install: ok"
