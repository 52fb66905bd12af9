/* kf_err: error codes and first-message-wins detail; see kf_err.h. */
#include "base/kf_err.h"

#include <stdio.h>
#include <string.h>

int kf_err_set(struct kf_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err || err->code != 0)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

void kf_err_clear(struct kf_err *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}

const char *kf_err_name(int code)
{
	switch (code) {
	case KF_OK: return "ok";
	case KF_EINVAL: return "invalid";
	case KF_ENOMEM: return "no_memory";
	case KF_EIO: return "io";
	case KF_ENOTFOUND: return "not_found";
	case KF_ETOOBIG: return "too_big";
	case KF_ETIMEOUT: return "timeout";
	case KF_ECANCELED: return "cancelled";
	case KF_EBUSY: return "busy";
	case KF_ENOGPU: return "no_gpu";
	case KF_ESANDBOX: return "sandbox";
	case KF_ECOMPILE: return "compile_error";
	case KF_EPERM: return "refused";
	case KF_EFAULT: return "fault";
	case KF_EDB: return "db";
	default: return "internal";
	}
}
