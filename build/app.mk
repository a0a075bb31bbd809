# The macOS app bundle, the darwin type check and the arm64 cross-build; included by the top-level
# Makefile.
#
#   make app                build/Laya.app (macOS with the Xcode command line tools)
#   make check-darwin       type-check every package as it builds for darwin/arm64 (any OS)
#   make check-darwin-link  compile and link every darwin package for arm64 off a Mac: zig's C
#                           compiler against the macOS SDK set MACOS_SDK=DIR (Frameworks/, include/,
#                           lib/, e.g. a checkout of hexops/xcode-frameworks outside this
#                           repository); skipped without MACOS_SDK
#   make app-cross          build/Laya.app and build/out/Laya-arm64.zip from that cross-build
#
# LAYA_SIGN_IDENTITY names a codesigning identity (e.g. a self-signed "Laya Dev" certificate in
# the login keychain). Without it the bundle is signed ad hoc, and macOS forgets the
# Accessibility permission on every rebuild, because an ad-hoc signature changes with the binary.
# app-cross has no codesign: its executable carries the linker's ad-hoc signature only.

.PHONY: check-darwin-link app-cross

APP            := build/Laya.app
APP_VERSION    ?= 0.1.0
APP_BUILD      ?= $(shell git rev-list --count HEAD 2>/dev/null || echo 1)
APP_GOARCH     ?= arm64
DARWIN_OUT     := build/out/darwin-arm64
LAYA_SIGN_IDENTITY ?=
MACOS_SDK      ?=

# The bundle's layout, one recipe for both: $(call bundle,EXECUTABLE[,ZIP]).
bundle = $(GO) run ./build/darwin/bundle -exe $(1) -app $(APP) -version "$(APP_VERSION)" -build "$(APP_BUILD)" $(if $(2),-zip $(2))

app:
	@test "$$(uname -s)" = Darwin || { echo "make app: needs macOS (use make app-cross elsewhere)" >&2; exit 1; }
	CGO_ENABLED=1 GOOS=darwin GOARCH=$(APP_GOARCH) $(GO) build -trimpath -o build/out/darwin-$(APP_GOARCH)/app ./app
	$(call bundle,build/out/darwin-$(APP_GOARCH)/app)
	if [ -n "$(LAYA_SIGN_IDENTITY)" ]; then \
		codesign --force --options runtime --sign "$(LAYA_SIGN_IDENTITY)" $(APP); \
	else \
		echo "make app: signing ad hoc; set LAYA_SIGN_IDENTITY to keep the Accessibility grant across rebuilds"; \
		codesign --force --sign - $(APP); \
	fi
	codesign --verify --strict $(APP)

check-darwin:
	$(GO) run ./build/checkdarwin ./...

check-darwin-link:
	MACOS_SDK="$(MACOS_SDK)" GO="$(GO)" bash build/darwin/link.sh $(DARWIN_OUT)

app-cross:
	@test -n "$(MACOS_SDK)" || { echo "make app-cross: needs MACOS_SDK=DIR, a macOS SDK set (see make check-darwin-link)" >&2; exit 1; }
	MACOS_SDK="$(MACOS_SDK)" GO="$(GO)" bash build/darwin/link.sh $(DARWIN_OUT)
	$(call bundle,$(DARWIN_OUT)/app,build/out/Laya-arm64.zip)
	$(GO) run ./build/darwin/machocheck $(APP)/Contents/MacOS/Laya
	@echo "make app-cross: build/out/Laya-arm64.zip (signed ad hoc by the linker; not run here: there is no Mac)"
