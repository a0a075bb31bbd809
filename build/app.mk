# The macOS app bundle and the darwin type check; included by the top-level Makefile.
#
#   make app           build/Laya.app (macOS with the Xcode command line tools)
#   make check-darwin  type-check every package as it builds for darwin/arm64 (any OS)
#
# LAYA_SIGN_IDENTITY names a codesigning identity (e.g. a self-signed "Laya Dev" certificate in
# the login keychain). Without it the bundle is signed ad hoc, and macOS forgets the
# Accessibility permission on every rebuild, because an ad-hoc signature changes with the binary.

APP            := build/Laya.app
APP_VERSION    ?= 0.1.0
APP_BUILD      ?= $(shell git rev-list --count HEAD 2>/dev/null || echo 1)
APP_GOARCH     ?= arm64
APP_ICONSET    := build/out/AppIcon.iconset
BUNDLED_MODEL  := assets/models/laya-code
LAYA_SIGN_IDENTITY ?=

app:
	@test "$$(uname -s)" = Darwin || { echo "make app: needs macOS (use make check-darwin elsewhere)" >&2; exit 1; }
	rm -rf $(APP) $(APP_ICONSET)
	mkdir -p $(APP)/Contents/MacOS $(APP)/Contents/Resources/models $(APP_ICONSET)
	CGO_ENABLED=1 GOOS=darwin GOARCH=$(APP_GOARCH) $(GO) build -trimpath -o $(APP)/Contents/MacOS/Laya ./app
	cp Info.plist $(APP)/Contents/Info.plist
	plutil -replace CFBundleShortVersionString -string "$(APP_VERSION)" $(APP)/Contents/Info.plist
	plutil -replace CFBundleVersion -string "$(APP_BUILD)" $(APP)/Contents/Info.plist
	cp assets/icons/StatusIcon.png $(APP)/Contents/Resources/
	for s in 16 32 128 256 512; do \
		sips -z $$s $$s assets/icons/AppIcon.png --out $(APP_ICONSET)/icon_$${s}x$${s}.png >/dev/null && \
		sips -z $$((s*2)) $$((s*2)) assets/icons/AppIcon.png --out $(APP_ICONSET)/icon_$${s}x$${s}@2x.png >/dev/null || exit 1; \
	done
	iconutil -c icns -o $(APP)/Contents/Resources/AppIcon.icns $(APP_ICONSET)
	if [ -d $(BUNDLED_MODEL) ]; then cp -R $(BUNDLED_MODEL) $(APP)/Contents/Resources/models/; fi
	if [ -n "$(LAYA_SIGN_IDENTITY)" ]; then \
		codesign --force --options runtime --sign "$(LAYA_SIGN_IDENTITY)" $(APP); \
	else \
		echo "make app: signing ad hoc; set LAYA_SIGN_IDENTITY to keep the Accessibility grant across rebuilds"; \
		codesign --force --sign - $(APP); \
	fi
	codesign --verify --strict $(APP)

check-darwin:
	$(GO) run ./build/checkdarwin ./...
