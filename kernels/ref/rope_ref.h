/* rope_ref: the float64 specification of kernels/rope.cu (rotary position
 * embedding) and its cost model. Plain C, no CUDA. x, y (T, H, Dh);
 * cos, sin (T, Dh/2). For pair k of head h of token t with c = cos[t,k],
 * s = sin[t,k] and (a, b) the pair's two elements,
 *   NeoX:  a = x[t,h,k], b = x[t,h,k + Dh/2];  GPT-J: a = x[t,h,2k], b = x[t,h,2k+1]
 *   y at a's place = a*c - b*s, at b's place = b*c + a*s. */
#ifndef KF_ROPE_REF_H
#define KF_ROPE_REF_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

/* neox != 0: NeoX layout, else GPT-J. Borrows all. Returns 0, or KF_EINVAL
 * (with err) for T < 0, H < 0, Dh odd or < 2, or a NULL pointer. */
int rope_ref(int neox, double *y, const double *x, const double *cos_t, const double *sin_t,
	     int64_t T, int64_t H, int64_t Dh, struct kf_err *err)
	__attribute__((warn_unused_result));

/* x/y of esize bytes per element, tables f32:
 * bytes = 2*T*H*Dh * esize + 2*T*(Dh/2) * 4, flops = 3*T*H*Dh. */
void rope_cost(int64_t T, int64_t H, int64_t Dh, size_t esize, double *bytes, double *flops);

#endif
