//go:build !amd64 && !arm64

// Architectures without a SIMD variant yet run the portable kernels, which gcc and clang
// auto-vectorize at -O3.
#include "kernels_impl.h"

const laya_impl *laya_simd(int level) {
	(void)level;
	return 0;
}
