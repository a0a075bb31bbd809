// arm64 NEON variants: level 1 plain NEON (widening multiplies), level 2 with the dotprod
// extension's sdot, which only the level-2 functions are compiled for, so the binary still runs
// on cores without it (Cortex-A57/A72) and picks the level at run time.
#ifdef __aarch64__
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "kernels_impl.h"

#if defined(__APPLE__)
#include <sys/sysctl.h>
#elif defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif

#define F(n) neon_##n
#define DOTPROD 0
#include "kernels_arm64.h"
#undef F
#undef DOTPROD

// GCC compiles the level-2 functions alone for dotprod (GCC 12 inlines vdotq_s32 under an
// arch= target, not under a bare "+dotprod"). clang's arm_neon.h (clang 14 checked here)
// declares vdotq_s32 only when the whole file targets dotprod, as it does on every Apple arm64
// CPU; other clang builds leave level 2 out.
#if !defined(__clang__) || defined(__ARM_FEATURE_DOTPROD)
#define LAYA_DOTPROD_LEVEL 1
#ifndef __clang__
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
#endif
#define F(n) dotprod_##n
#define DOTPROD 1
#include "kernels_arm64.h"
#undef F
#undef DOTPROD
#ifndef __clang__
#pragma GCC pop_options
#endif
#endif

static int has_neon(void) {
#if defined(__linux__) && !defined(__APPLE__)
	return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
	return 1; // Advanced SIMD is part of every arm64 CPU that macOS runs on.
#endif
}

#ifdef LAYA_DOTPROD_LEVEL
static int has_dotprod(void) {
#if defined(__APPLE__)
	int v = 0;
	size_t n = sizeof v;
	return sysctlbyname("hw.optional.arm.FEAT_DotProd", &v, &n, 0, 0) == 0 && v != 0;
#elif defined(__linux__)
	return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
	return 0;
#endif
}
#endif

static laya_impl neon_impl;
#ifdef LAYA_DOTPROD_LEVEL
static laya_impl dotprod_impl;
#endif
static int filled;

const laya_impl *laya_simd(int level) {
	// laya_init runs first from the Go package's initialization, before any kernel can run, so
	// this one-time fill never races with a reader. Filling the dotprod table runs no sdot.
	if (!filled) {
		neon_fill(&neon_impl, laya_portable());
#ifdef LAYA_DOTPROD_LEVEL
		dotprod_fill(&dotprod_impl, laya_portable());
#endif
		filled = 1;
	}
	if (level == 1 && has_neon()) return &neon_impl;
#ifdef LAYA_DOTPROD_LEVEL
	if (level == 2 && has_neon() && has_dotprod()) return &dotprod_impl;
#endif
	return 0;
}
#else
#include "kernels_impl.h"

const laya_impl *laya_simd(int level) {
	(void)level;
	return 0;
}
#endif
