// Vector kernels the learned model runs with instructions that the baseline x86-64 target (SSE2)
// lacks, chosen when the library loads from what the processor reports (see kernels.c).
#ifndef CHEARKERNELS_H
#define CHEARKERNELS_H

/// 1 where the processor and the system run AVX (8-float registers), else 0 (and on every other
/// architecture).
int hear_kernels_have_avx(void);

/// out[r] = W[r] . x + bias[r] for a row-major W whose rows are `columns` long (a multiple of 8),
/// with the very additions of GainModel.multiply in Swift, in the same order (bit-identical): each
/// of a row's 8 lanes sums its products over the row's blocks of 8, then the lanes are added in
/// order from -0, then the bias. Call only where hear_kernels_have_avx() is 1.
void hear_product_avx(const float *w, int rows, int columns, const float *x, const float *bias, float *out);

#endif
