// The learned model's matrix-vector products on AVX: the same additions as GainModel.multiply's
// SIMD8 (two SSE registers on the baseline target), one 8-float register per row instead of two,
// so half the multiplies, additions and loads. No multiply-add is fused (the target is "avx", not
// "fma", and contraction is off), so every rounding is the baseline's and the output is
// bit-identical whichever path runs: a plugin's sound does not depend on the processor.
// Nothing here allocates, locks or traps; GainModel calls it on the audio thread.
#include "CHearKernels.h"

#pragma STDC FP_CONTRACT OFF

#if defined(__x86_64__)
#include <immintrin.h>

int hear_kernels_have_avx(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") ? 1 : 0;
}

// A row's 8 lane sums added in lane order from -0, as Swift's SIMD8.sum(), then the bias.
__attribute__((target("avx"))) static inline float lanes_sum(__m256 lanes, float bias) {
    float l[8];
    _mm256_storeu_ps(l, lanes);
    float total = -0.0f;
    for (int i = 0; i < 8; i++) total += l[i];
    return total + bias;
}

__attribute__((target("avx")))
void hear_product_avx(const float *w, int rows, int columns, const float *x, const float *bias, float *out) {
    const int blocks = columns / 8;
    int r = 0;
    // Four rows at a time: four independent sums share each load of x.
    for (; r + 3 < rows; r += 4) {
        const float *w0 = w + (long)r * columns, *w1 = w0 + columns, *w2 = w1 + columns, *w3 = w2 + columns;
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
        for (int j = 0; j < blocks; j++) {
            const __m256 v = _mm256_loadu_ps(x + 8 * j);
            s0 = _mm256_add_ps(s0, _mm256_mul_ps(_mm256_loadu_ps(w0 + 8 * j), v));
            s1 = _mm256_add_ps(s1, _mm256_mul_ps(_mm256_loadu_ps(w1 + 8 * j), v));
            s2 = _mm256_add_ps(s2, _mm256_mul_ps(_mm256_loadu_ps(w2 + 8 * j), v));
            s3 = _mm256_add_ps(s3, _mm256_mul_ps(_mm256_loadu_ps(w3 + 8 * j), v));
        }
        out[r] = lanes_sum(s0, bias[r]);
        out[r + 1] = lanes_sum(s1, bias[r + 1]);
        out[r + 2] = lanes_sum(s2, bias[r + 2]);
        out[r + 3] = lanes_sum(s3, bias[r + 3]);
    }
    for (; r < rows; r++) {
        const float *row = w + (long)r * columns;
        __m256 s = _mm256_setzero_ps();
        for (int j = 0; j < blocks; j++) s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_loadu_ps(row + 8 * j), _mm256_loadu_ps(x + 8 * j)));
        out[r] = lanes_sum(s, bias[r]);
    }
}

#else

int hear_kernels_have_avx(void) { return 0; }

// Never called (hear_kernels_have_avx() is 0 here); the portable product, so that the symbol exists.
void hear_product_avx(const float *w, int rows, int columns, const float *x, const float *bias, float *out) {
    for (int r = 0; r < rows; r++) {
        float lanes[8] = {0};
        for (int j = 0; j < columns; j++) lanes[j % 8] += w[(long)r * columns + j] * x[j];
        float total = -0.0f;
        for (int i = 0; i < 8; i++) total += lanes[i];
        out[r] = total + bias[r];
    }
}

#endif
