// Tensor cores through wmma: HMMA instructions.
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
extern "C" __global__ void hgemm_wmma(float *C, const half *A, const half *B, int n) {
  int tm = blockIdx.y * 16, tn = blockIdx.x * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < n; k += 16) {
    wmma::load_matrix_sync(a, A + tm * n + k, n);
    wmma::load_matrix_sync(b, B + tn * n + k, n);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + tm * n + tn, acc, n, wmma::mem_row_major);
}
