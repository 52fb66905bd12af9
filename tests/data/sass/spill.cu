// Register spills (LDL/STL) under __launch_bounds__(1024), and a shared-memory kernel.
__constant__ float coef[64];
__global__ void __launch_bounds__(256, 2) sm(float *x) {
  __shared__ float t[1024];
  t[threadIdx.x] = x[threadIdx.x] * coef[threadIdx.x % 64]; __syncthreads(); x[threadIdx.x] = t[(threadIdx.x+1)%1024];
}
extern "C" __global__ void __launch_bounds__(1024) spill(float *out, const float *in, int n) {
  float a[64];
  #pragma unroll
  for (int i = 0; i < 64; i++) a[i] = in[threadIdx.x * 64 + i];
  float s = 0;
  for (int k = 0; k < n; k++) {
    #pragma unroll
    for (int i = 0; i < 64; i++) s += a[i] * a[(i * 7 + k) & 63];
  }
  out[threadIdx.x] = s;
}
