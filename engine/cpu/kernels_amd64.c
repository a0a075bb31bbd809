// x86-64 SIMD variants. Each level is compiled under its own target pragma, so the package builds
// with baseline flags and the binary still runs (portable kernels) on CPUs without AVX2.
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels_impl.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#define F(n) avx2_##n
#define VNNI 0
#include "kernels_x86.h"
#undef F
#undef VNNI
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")
#define F(n) vnni_##n
#define VNNI 1
#include "kernels_x86.h"
#undef F
#undef VNNI
#pragma GCC pop_options

const laya_impl *laya_simd(int level) {
	__builtin_cpu_init();
	int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
	if (level == 1 && avx2) return &avx2_impl;
	if (level == 2 && avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
		__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"))
		return &vnni_impl;
	return 0;
}
