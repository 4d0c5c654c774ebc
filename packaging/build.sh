#!/usr/bin/env bash
# Builds gpuslice's packages into dist/:
#   bash packaging/build.sh deb|rpm|all
# The version is the CMake project version (CMakeLists.txt), with +git.REV
# in a development build (a git checkout). Builds from the files git knows
# (tracked, and untracked but not ignored), so build dirs never leak in.
# Environment: GPUSLICE_WERROR=ON makes warnings errors; CC/CXX pick the
# compiler (CI: g++-11, the compiler of Ubuntu 22.04 and RHEL 9); DIST
# another output dir; GPUSLICE_NO_DEBUG_INFO=1 compiles without -g (the
# tests: a third of the build's time goes to debug info that the packages
# strip again, and gcc's -g never changes the code it generates).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-}
case $what in deb | rpm | all) ;; *) echo "usage: packaging/build.sh deb|rpm|all" >&2; exit 2 ;; esac

version=$(sed -n 's/^project(gpuslice VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[[ -n $version ]] || { echo "build.sh: no project version in CMakeLists.txt" >&2; exit 1; }
if rev=$(git rev-parse --short=12 HEAD 2>/dev/null); then
  version="$version+git.$rev"
fi
dist=$(mkdir -p "${DIST:-dist}" && cd "${DIST:-dist}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src="$work/gpuslice-$version"
mkdir -p "$src"
if git rev-parse --git-dir >/dev/null 2>&1; then
  git ls-files -z -co --exclude-standard | xargs -0 tar -cf - | tar -xf - -C "$src"
else
  tar --exclude='./build*' --exclude=./dist -cf - . | tar -xf - -C "$src"
fi

build_deb() {
  cp -r packaging/deb/debian "$src/debian"
  cat > "$src/debian/changelog" <<CHANGELOG
gpuslice ($version) unstable; urgency=medium

  * Package built from ${rev:-a source tree} by packaging/build.sh.

 -- gpuslice developers <packages@gpuslice.dev>  $(date -R)
CHANGELOG
  if [[ ${GPUSLICE_NO_DEBUG_INFO:-} == 1 ]]; then
    export DEB_CFLAGS_STRIP=-g DEB_CXXFLAGS_STRIP=-g
  fi
  (cd "$src" && dpkg-buildpackage -b -us -uc -j"$(nproc)") >"$work/deb.log" 2>&1 ||
    { tail -50 "$work/deb.log" >&2; echo "build.sh: dpkg-buildpackage failed" >&2; return 1; }
  rm -rf "$src/debian" "$src/obj-"*
  mv "$work"/*.deb "$dist/"
}

build_rpm() {
  local top="$work/rpmbuild" opts=()
  mkdir -p "$top/SOURCES"
  tar -czf "$top/SOURCES/gpuslice-$version.tar.gz" -C "$work" "gpuslice-$version"
  # Off an RPM system (Debian, CI) the build dependencies are Debian
  # packages that rpm's database does not know: scripts/install-deps.sh
  # installs them, --nodeps stops rpmbuild looking for them, and the static
  # archives the helpers need are there. Debian's rpm runs brp-compress
  # (bash syntax) with /bin/sh, which is dash there, so the man pages would
  # stay uncompressed: run it with bash.
  if ! rpm -q rpm >/dev/null 2>&1; then
    opts+=(--nodeps --with static_helpers
      --define "__brp_compress bash %{_rpmconfigdir}/brp-compress %{?_prefix}")
  fi
  if [[ ${GPUSLICE_NO_DEBUG_INFO:-} == 1 ]]; then
    opts+=(--define "optflags $(rpm --eval '%{optflags}' | sed -E 's/(^|[[:space:]])-g[^[:space:]]*//g')")
  fi
  rpmbuild -bb "${opts[@]}" --define "_topdir $top" --define "gpuslice_version $version" \
    packaging/rpm/gpuslice.spec >"$work/rpm.log" 2>&1 ||
    { tail -50 "$work/rpm.log" >&2; echo "build.sh: rpmbuild failed" >&2; return 1; }
  find "$top/RPMS" -name '*.rpm' -exec mv {} "$dist/" \;
}

case $what in
deb) build_deb ;;
rpm) build_rpm ;;
all) build_deb; build_rpm ;;
esac
ls -l "$dist"
