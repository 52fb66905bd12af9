// Shared-memory tiled fp32 matmul: FFMA + LDS + BAR, no tensor cores.
#define T 32
extern "C" __global__ void sgemm_tiled(float *C, const float *A, const float *B, int n) {
  __shared__ float As[T][T], Bs[T][T];
  int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < n; k0 += T) {
    As[threadIdx.y][threadIdx.x] = A[r * n + k0 + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * n + c];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[r * n + c] = acc;
}
