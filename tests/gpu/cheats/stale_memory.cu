// Cheat: writes nothing and hopes the output buffer still holds an answer.
extern "C" __global__ void axpb(float *y, const float *x, const float *w, float s, int n)
{
}
