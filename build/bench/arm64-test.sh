#!/usr/bin/env bash
# Runs the CPU backend's tests as an arm64 Linux binary under qemu, twice: on a CPU model with the
# dotprod extension (-cpu max: levels portable, NEON, NEON dotprod) and on one without it
# (-cpu cortex-a57: portable and plain NEON), and checks from the test log that the NEON levels
# ran; then once more built by clang for a dotprod CPU, as Apple's compiler builds it for every
# Apple-Silicon Mac (the whole file targets dotprod, a path gcc never takes). qemu measures
# correctness only, never speed. Installs the cross compiler, clang and qemu with apt when they
# are missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"

if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null ||
	! command -v clang-19 >/dev/null || [ ! -d /usr/aarch64-linux-gnu/lib ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends \
		gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user clang-19
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build() {
	CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC="$2" go test -c -o "$tmp/$1.test" ./engine/cpu
}
build gcc aarch64-linux-gnu-gcc
build clang "clang-19 --target=aarch64-linux-gnu -march=armv8.2-a+dotprod"
bin=$tmp/gcc.test

# run CPU WANT runs the tests in $bin on qemu's CPU model and requires the level list WANT in
# the log.
run() {
	local log
	log=$bin.$1.log
	echo "== qemu-aarch64 -cpu $1"
	# A run takes about 10 s. Go programs under qemu-user have been seen to hang (rarely), which
	# says nothing about the kernels: a run past the time limit is retried once, a failing one not.
	local rc=0
	for attempt in 1 2; do
		rc=0
		(cd engine/cpu && timeout 300 qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu "$1" "$bin" -test.count=1 -test.v) >"$log" 2>&1 || rc=$?
		[ "$rc" -eq 124 ] || break
		echo "qemu run timed out (attempt $attempt)" >&2
	done
	if [ "$rc" -ne 0 ]; then
		grep -v '^=== RUN' "$log" | tail -40
		echo "arm64 tests failed on -cpu $1" >&2
		return 1
	fi
	if ! grep -qF "kernel levels $2" "$log"; then
		grep -m1 'kernel levels' "$log" || true
		echo "-cpu $1: expected kernel levels $2" >&2
		return 1
	fi
	grep -m1 'kernel levels' "$log"
	tail -1 "$log"
}
run max '[0 (portable C) 1 (NEON) 2 (NEON dotprod)]'
run cortex-a57 '[0 (portable C) 1 (NEON)]'
bin=$tmp/clang.test
echo "== built by clang"
run max '[0 (portable C) 1 (NEON) 2 (NEON dotprod)]'
