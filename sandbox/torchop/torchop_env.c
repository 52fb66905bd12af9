/* torchop_env: the host's PyTorch as the build and the verification see it,
 * probed once per process by a trusted `python3 -c` that only imports torch:
 * the interpreter, torch's version and C++ ABI, its include and library
 * folders, and the sys.path folders the jail binds read-only. */
#include "sandbox/torchop/torchop_int.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define PROBE_OUT_MAX 65536 /* bytes of the probe's answer */

static const char PROBE[] =
	"python3 -c 'import json, os, sys, torch; d = os.path.dirname(torch.__file__); "
	"print(json.dumps({\"python\": os.path.realpath(sys.executable), "
	"\"version\": torch.__version__, \"cuda\": torch.version.cuda, "
	"\"abi\": int(torch._C._GLIBCXX_USE_CXX11_ABI), "
	"\"include\": [os.path.join(d, \"include\"), "
	"os.path.join(d, \"include\", \"torch\", \"csrc\", \"api\", \"include\")], "
	"\"lib\": os.path.join(d, \"lib\"), "
	"\"paths\": [os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)]}))' "
	"2>&1";

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct torchop_torch probed;
static char why[512];

static void copy_str(char *dst, size_t cap, const json_t *v)
{
	snprintf(dst, cap, "%s", json_is_string(v) ? json_string_value(v) : "");
}

static void probe(void)
{
	static char buf[PROBE_OUT_MAX];
	FILE *f = popen(PROBE, "r");
	size_t n = 0;
	if (!f) {
		snprintf(why, sizeof why, "python3 could not be started");
		return;
	}
	while (n < sizeof buf - 1) {
		size_t k = fread(buf + n, 1, sizeof buf - 1 - n, f);
		if (!k)
			break;
		n += k;
	}
	buf[n] = '\0';
	int st = pclose(f);
	const char *last = buf;
	for (char *p = buf; *p; p++)
		if (p[0] == '\n' && p[1])
			last = p + 1;
	json_t *j = st == 0 ? json_loads(last, 0, NULL) : NULL;
	if (!j) {
		size_t l = strlen(buf);
		snprintf(why, sizeof why, "python3 -c 'import torch' failed on this host: %.300s",
			 l > 300 ? buf + l - 300 : buf);
		return;
	}
	struct torchop_torch *t = &probed;
	copy_str(t->python, sizeof t->python, json_object_get(j, "python"));
	copy_str(t->version, sizeof t->version, json_object_get(j, "version"));
	t->cxx11_abi = (int)json_integer_value(json_object_get(j, "abi"));
	copy_str(t->include[0], sizeof t->include[0],
		 json_array_get(json_object_get(j, "include"), 0));
	copy_str(t->include[1], sizeof t->include[1],
		 json_array_get(json_object_get(j, "include"), 1));
	copy_str(t->lib, sizeof t->lib, json_object_get(j, "lib"));
	size_t i, pp = 0;
	json_t *v;
	json_array_foreach(json_object_get(j, "paths"), i, v) {
		if (t->paths_len >= sizeof t->paths / sizeof t->paths[0] || !json_is_string(v))
			break;
		copy_str(t->paths[t->paths_len++], PATH_MAX, v);
		pp += (size_t)snprintf(t->pythonpath + pp, sizeof t->pythonpath - pp, "%s%s",
				       pp ? ":" : "", json_string_value(v));
		if (pp >= sizeof t->pythonpath)
			pp = sizeof t->pythonpath - 1;
	}
	json_decref(j);
	if (!t->python[0] || !t->include[0][0] || !t->lib[0]) {
		t->python[0] = '\0';
		snprintf(why, sizeof why,
			 "python3's torch did not name its include and lib folders");
	}
}

int torchop_torch_get(const struct torchop_torch **out, struct kf_err *err)
{
	pthread_once(&once, probe);
	*out = NULL;
	if (!probed.python[0])
		return kf_err_set(err, KF_ENOTFOUND,
				  "torch not available: %s; build_torch_op needs PyTorch (with its "
				  "C++ headers, as pip installs it) for python3 on the GPU host",
				  why);
	*out = &probed;
	return 0;
}

size_t torchop_torch_binds(const struct torchop_torch *t, struct jail_bind *binds, size_t cap)
{
	size_t n = 0;
	if (n < cap)
		binds[n++] = (struct jail_bind){.src = t->python, .dst = NULL};
	for (size_t k = 0; k < t->paths_len && n < cap; k++)
		binds[n++] = (struct jail_bind){.src = t->paths[k], .dst = NULL};
	return n;
}
