# kforge's sandboxed python for {"torch": ...} references: a fork server.
#
# Started by the daemon in the jail (no GPU, no network) as
#   python3 torch_worker.py MODE TAG
# (MODE "bwrap" or "none": the jail's mode; TAG names the daemon's worker
# directory, so `ps` tells whose worker this is). It imports torch and numpy
# once, says so on fd 3 (a SOCK_SEQPACKET socket to the daemon), then serves
# one job at a time: for each {"run": ...} message it forks a child that
# evaluates the job's expression in a fresh namespace in ./work and exits.
# The parent never runs a job's code, so nothing a job changes (torch
# monkeypatched, modules, globals, environment) reaches the next job: it
# died with the child. After each child the parent kills whatever the job
# left running and, in bubblewrap, empties the jail's /tmp and /dev/shm; the
# daemon empties ./work.
#
# Messages (JSON, one per packet). Worker -> daemon: {"ready": true,
# "torch": version} or {"error": "torch not available: ..."} (then exit 3);
# per job {"status": "exited", "code": n} | {"status": "signal", "signal": n}
# | {"status": "timeout"} | {"status": "canceled"}, with "ms" (the child's
# wall time), and {"pong": true} to each ping. Daemon -> worker: {"ping":
# true} (before a job: is this worker alive?), {"run": {"wall_ms": n,
# "cpu_s": n}}; during a job any packet (or EOF) cancels it; EOF between
# jobs ends the worker.
import ctypes
import json
import os
import select
import signal
import socket
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
MSG_MAX = 65536

# The job, run in the child. ns is fresh per job: the spec's sizes and
# scalars, the trial's inputs, torch, F and math. Outputs are written as
# float64 files the daemon reads.

def run_job(torch):
    import math
    job = json.load(open('torch_job.json'))
    DT = {'f32': torch.float32, 'f16': torch.float16, 'bf16': torch.bfloat16,
          'f64': torch.float64, 'i8': torch.int8, 'u8': torch.uint8,
          'i32': torch.int32, 'i64': torch.int64}
    outs = job['outputs']
    for tr in job['trials']:
        ns = {'torch': torch, 'F': torch.nn.functional, 'math': math}
        ns.update(job['sizes'])
        ns.update(job['scalars'])
        for t in tr['inputs']:
            raw = bytearray(open(t['file'], 'rb').read())
            ns[t['name']] = torch.frombuffer(raw, dtype=DT[t['dtype']]).reshape(
                t['shape']).clone()
        try:
            res = eval(job['expr'], ns)
        except SyntaxError:
            exec(job['expr'], ns)
            res = {o['name']: ns[o['name']] for o in outs}
        if not isinstance(res, (tuple, list, dict)):
            res = {outs[0]['name']: res}
        elif isinstance(res, (tuple, list)):
            res = {o['name']: r for o, r in zip(outs, res)}
        for o in outs:
            r = torch.as_tensor(res[o['name']]).detach().to('cpu', torch.float64).reshape(-1)
            n = 1
            for d in o['shape']:
                n *= d
            if r.numel() != n:
                print(json.dumps({'error': 'torch reference: %s has %d elements, the spec '
                                  'says %d' % (o['name'], r.numel(), n)}))
                return 4
            open(o['file'] % tr['trial'], 'wb').write(r.numpy().tobytes())
    print(json.dumps({'ok': True}))
    return 0


def child(torch, libc, parent, run):
    """After the fork: dies with the parent, its own limits and scratch."""
    code = 1
    try:
        os.setpgid(0, 0)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(125)
        # Dumpable again (the parent stays not): the job's own /proc/self
        # entries belong to it, as in any python process.
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGPIPE, signal.SIGCHLD):
            signal.signal(s, signal.SIG_DFL)
        import resource
        cpu = int(run.get('cpu_s', 180))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        os.chdir('work')
        log = os.open('torch.log', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(3)
        scratch = os.path.join(os.getcwd(), 'scratch')
        os.mkdir(scratch, 0o700)
        # Every cache a job's torch may write (torch.compile, Triton,
        # XDG) goes to the job's own scratch, removed with it.
        for k in ('HOME', 'TMPDIR', 'XDG_CACHE_HOME', 'TORCHINDUCTOR_CACHE_DIR',
                  'TRITON_CACHE_DIR'):
            os.environ[k] = scratch
        code = run_job(torch)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def children():
    """The live and zombie children of this process (the subreaper's:
    orphans of a job are reparented here)."""
    me, kids = os.getpid(), []
    try:
        for tid in os.listdir('/proc/self/task'):
            with open('/proc/self/task/%s/children' % tid) as f:
                kids += [int(p) for p in f.read().split()]
        return kids
    except OSError:
        pass
    for p in os.listdir('/proc'):
        if not p.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % p) as f:
                st = f.read()
            if int(st[st.rindex(')') + 2:].split()[1]) == me:
                kids.append(int(p))
        except (OSError, ValueError):
            pass
    return kids


def start_guard(libc):
    """Without bubblewrap (MODE "none") no pid namespace ends a job's
    processes with the worker: a guard process kills the worker's session
    (the jail made the worker its leader) when the worker dies, by
    PR_SET_PDEATHSIG, so a SIGKILLed daemon leaves nothing a job started
    in it. Returns the guard's pid."""
    server = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        # Its own group: the daemon's kill of the worker's group leaves it
        # to kill the rest; it holds none of the worker's pipes.
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(3)
        if os.getppid() == server:
            signal.sigwait({signal.SIGTERM})
        sid, me = os.getsid(0), os.getpid()
        for p in os.listdir('/proc'):
            if p.isdigit() and int(p) != me:
                try:
                    if os.getsid(int(p)) == sid:
                        os.kill(int(p), signal.SIGKILL)
                except OSError:
                    pass
    finally:
        os._exit(0)


def reap_all(keep):
    """Kills and reaps every descendant left (a job's background
    processes) but keep."""
    for _ in range(10000):
        kids = [k for k in children() if k != keep]
        if not kids:
            return
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for k in kids:
            try:
                os.waitpid(k, 0)
            except ChildProcessError:
                pass


def empty_dir(path):
    """Removes what is in path (never following links); errors are left."""
    try:
        names = os.listdir(path)
    except OSError:
        return
    for n in names:
        p = os.path.join(path, n)
        try:
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
                empty_dir(p)
                os.rmdir(p)
            else:
                os.unlink(p)
        except OSError:
            pass


def serve_one(sock, torch, libc, run, guard):
    t0 = time.monotonic()
    wall = int(run.get('wall_ms', 180000)) / 1000.0
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        child(torch, libc, me, run)
    pfd = os.pidfd_open(pid)
    status, eof = None, False
    try:
        while True:
            left = t0 + wall - time.monotonic()
            if left <= 0:
                status = {'status': 'timeout'}
                break
            ready, _, _ = select.select([pfd, sock], [], [], left)
            if pfd in ready:
                _, st = os.waitpid(pid, 0)
                if os.WIFSIGNALED(st):
                    status = {'status': 'signal', 'signal': os.WTERMSIG(st)}
                else:
                    status = {'status': 'exited', 'code': os.WEXITSTATUS(st)}
                pid = 0
                break
            if sock in ready:
                eof = not sock.recv(MSG_MAX)
                status = {'status': 'canceled'}
                break
    finally:
        os.close(pfd)
    if pid:  # timed out or canceled: the job's group, then the rest
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    reap_all(guard)
    if sys.argv[1] == 'bwrap':  # the jail's own /tmp and /dev/shm
        empty_dir('/tmp')
        empty_dir('/dev/shm')
    status['ms'] = round((time.monotonic() - t0) * 1000, 3)
    return status, eof


def main():
    sock = socket.socket(fileno=3)
    try:
        import numpy  # noqa: F401 (the job's .numpy())
        import torch
        import torch.nn.functional  # noqa: F401
    except Exception as e:
        sock.send(json.dumps({'error': 'torch not available: %s' % e}).encode())
        sys.exit(3)
    libc = ctypes.CDLL(None, use_errno=True)
    # Not dumpable: a job (same uid) cannot ptrace or write /proc/PID/mem of
    # this parent. A subreaper: a job's orphans come back here to be killed.
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    guard = start_guard(libc) if sys.argv[1] != 'bwrap' else 0
    sock.send(json.dumps({'ready': True, 'torch': str(torch.__version__)}).encode())
    while True:
        msg = sock.recv(MSG_MAX)
        if not msg:
            return 0
        msg = json.loads(msg)
        if msg.get('ping'):
            sock.send(b'{"pong": true}')
            continue
        run = msg.get('run')
        if not isinstance(run, dict):
            continue
        status, eof = serve_one(sock, torch, libc, run, guard)
        if eof:
            return 0
        sock.send(json.dumps(status).encode())


if __name__ == '__main__':
    sys.exit(main())
