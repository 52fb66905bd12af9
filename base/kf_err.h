/* kf_err: the one error enum and error-detail struct shared by every module.
 * A function that can fail returns 0 or a negative KF_E* code and writes the
 * detail into a caller-provided struct kf_err (NULL allowed). The function that
 * finds the problem writes the message; the first message wins. Only server/
 * maps codes to JSON-RPC errors or isError results. */
#ifndef KF_ERR_H
#define KF_ERR_H

#include <stdarg.h>

enum {
	KF_OK = 0,
	KF_EINVAL = -1,	   /* bad argument or input: names the field and reason */
	KF_ENOMEM = -2,	   /* allocation failed */
	KF_EIO = -3,	   /* file, pipe or socket error */
	KF_ENOTFOUND = -4, /* unknown id, name, path */
	KF_ETOOBIG = -5,   /* input or output over its cap */
	KF_ETIMEOUT = -6,  /* a job ran past its wall-clock limit */
	KF_ECANCELED = -7, /* the request was cancelled */
	KF_EBUSY = -8,	   /* queue full: retry later */
	KF_ENOGPU = -9,	   /* no usable GPU on this host */
	KF_ESANDBOX = -10, /* the sandbox could not be set up */
	KF_ECOMPILE = -11, /* the compiler rejected the source */
	KF_EDB = -12,	   /* sqlite error */
	KF_EPERM = -13,	   /* refused: not allowed (flag, path, auth) */
	KF_EFAULT = -14,   /* the untrusted job crashed or faulted */
	KF_EINTERNAL = -15 /* a bug in kforge */
};

struct kf_err {
	int code;      /* KF_E* of the first error recorded, 0 if none */
	char msg[256]; /* human-readable, names the bad value and the fix */
};

/* Records code and a printf-style message into err unless err is NULL or
 * already holds an error (first message wins). Returns code, so callers can
 * write `return kf_err_set(err, KF_EINVAL, "...")`. */
int kf_err_set(struct kf_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Clears err (code 0, empty message). err may be NULL. */
void kf_err_clear(struct kf_err *err);

/* Returns a static lowercase name for a KF_E* code ("invalid", "not_found"...). */
const char *kf_err_name(int code);

#endif
