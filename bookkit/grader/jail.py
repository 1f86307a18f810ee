"""Operating-system isolation of one grading child: namespaces, a private file view, seccomp.

Used by the zygote (``runner.py``) in each freshly forked child, before any student code runs:

1. ``unshare`` a new mount, PID, network, IPC and UTS namespace — as root directly, otherwise
   inside a new user namespace (the child's user id maps to root inside, with no power over
   anything outside); fork once more so that the student's process is PID 1 of its own PID
   namespace (it can signal or see no process outside it);
2. build a new root on an empty tmpfs holding, read-only and at their usual paths, exactly what the
   child needs (the standard library, the site-packages folders it imports from, ``mytorch/`` —
   a stub tree without the graded pieces, ``stubtree.py`` — and ``bookkit/``, ``/dev/null``,
   ``/dev/zero``, ``/dev/urandom``), plus an empty, size-limited private ``/tmp`` that is also
   HOME; ``pivot_root`` into it and detach the old root: no other student's folder, no solutions,
   no instructor files, no ``/proc``, no network interface;
3. a grader running as root hands the child to an unprivileged uid/gid of its own (``user``):
   it owns nothing and may signal nothing of anyone else's, and ``RLIMIT_NPROC`` binds it;
4. drop every capability, set ``no_new_privs`` and load a seccomp filter (libseccomp through the
   ``pyseccomp`` binding, which names the system calls) that allows only what a Python/NumPy
   computation makes: no ``mknod``/``mkfifo``, ``ptrace``, ``process_vm_*``, no new processes or
   threads, no ``execve``, no sockets, no ``kill`` of anything but itself, no executable memory
   (so no native code can be loaded or generated), no ``mount``/``unshare``/``setns``/``bpf``…

Nothing here runs in the grader's own process. Where namespaces or seccomp are not available (another
OS, a container that forbids user namespaces, no libseccomp), ``probe`` says why; ``make grade``
then refuses to grade unless the instructor says ``UNSAFE_NO_SANDBOX=1`` (``sandbox.require_isolation``),
and the child still switches user and sets its rlimits.
"""

from __future__ import annotations

import ctypes
import errno
import os

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_DUMPABLE = 1, 24, 4
PROT_EXEC = 4
TMP_SIZE = "32m"

# what a Python/NumPy computation needs; everything else fails with EPERM
ALLOWED = (
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
    "pwritev2", "lseek", "close", "close_range", "dup", "dup2", "dup3", "fcntl", "fstat", "newfstatat",
    "stat", "lstat", "statx", "fstatfs", "statfs", "access", "faccessat", "faccessat2", "open",
    "openat", "getdents", "getdents64", "readlink", "readlinkat", "getcwd", "chdir", "fchdir", "mkdir",
    "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "ftruncate",
    "fsync", "fdatasync", "fadvise64", "ioctl", "munmap", "mremap", "madvise", "brk", "msync",
    "mincore", "futex", "get_robust_list", "set_robust_list", "rseq", "sched_yield",
    "sched_getaffinity", "getcpu", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
    "rt_sigpending", "rt_sigsuspend", "rt_sigtimedwait", "gettid", "getpid", "getppid", "getuid",
    "geteuid", "getgid", "getegid", "getgroups", "getresuid", "getresgid", "getpgrp", "getpgid",
    "getsid", "uname", "sysinfo", "getrlimit", "getrusage", "times", "clock_gettime", "clock_getres",
    "clock_nanosleep", "nanosleep", "gettimeofday", "time", "getrandom", "pipe", "pipe2", "poll",
    "ppoll", "select", "pselect6", "exit", "exit_group", "wait4", "waitid", "umask", "arch_prctl",
)


class JailError(OSError):
    """A step of the isolation failed (the child then stops: it never runs student code half-isolated)."""


_libc = ctypes.CDLL(None, use_errno=True)
_machine = os.uname().machine


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise JailError(code, f"{what}: {os.strerror(code)}")


def _syscall(name: str, *args) -> int:
    """Call system call ``name`` through libc's wrapper, or by the number libseccomp knows it by
    (no system-call numbers in this file)."""
    wrapper = getattr(_libc, name, None)
    if wrapper is not None:
        return wrapper(*args)
    import pyseccomp

    return _libc.syscall(pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name), *args)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                       ctypes.c_ulong(flags), data and data.encode()), f"mount {target}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _seccomp_filter():
    """The child's seccomp filter (built once per zygote), or the reason there is none."""
    try:
        import pyseccomp as sc
    except Exception as exc:  # no binding, or no libseccomp on this machine
        return None, f"no seccomp ({type(exc).__name__}: {exc})"
    try:
        flt = sc.SyscallFilter(sc.ERRNO(errno.EPERM))
        for name in ALLOWED:
            try:
                flt.add_rule(sc.ALLOW, name)
            except Exception:  # not a system call of this architecture
                pass
        for name in ("mmap", "mprotect"):  # memory, but never executable: no new native code
            flt.add_rule(sc.ALLOW, name, sc.Arg(2, sc.MASKED_EQ, PROT_EXEC, 0))
        flt.add_rule(sc.ALLOW, "prlimit64", sc.Arg(2, sc.EQ, 0))  # reading limits, not raising them
        flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # glibc then tries clone, which is refused
        return (sc, flt), ""
    except Exception as exc:
        return None, f"seccomp filter could not be built ({exc})"


_FILTER, _FILTER_WHY = _seccomp_filter()


def _drop_capabilities(user: list[int] | None = None) -> None:
    """Empty the bounding set, switch to ``user`` (which clears every capability), empty the rest."""
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break
    _become(user)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    _check(_syscall("capset", header, data), "capset")


def _seccomp(pid: int) -> None:
    sc, flt = _FILTER
    flt.add_rule(sc.ALLOW, "kill", sc.Arg(0, sc.EQ, pid))  # abort() and raise() signal themselves
    flt.add_rule(sc.ALLOW, "tgkill", sc.Arg(0, sc.EQ, pid))
    flt.load()  # sets no_new_privs first


def _namespaces(uid: int, gid: int) -> None:
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC
                         | CLONE_NEWUTS), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"0 {uid} 1")
    _write("/proc/self/gid_map", f"0 {gid} 1")


def _new_root(base: str, binds: list[str], hide: list[str], owner: list[int] | None = None) -> None:
    """Build the child's file view in ``base`` (an empty folder) and make it the root; ``owner``
    (uid, gid) gets the private /tmp."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=755")
    # the private /tmp first: a bound tree that lives under /tmp (a checkout or venv there) then
    # lands inside it instead of being hidden by it, or making /tmp exist before its mount
    os.makedirs(base + "/tmp")
    _mount("tmpfs", base + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
           f"size={TMP_SIZE},nr_inodes=1024,mode=700" + (f",uid={owner[0]},gid={owner[1]}" if owner else ""))
    for path in binds:
        if not os.path.exists(path):
            continue
        target = base + path
        if os.path.isdir(path):
            os.makedirs(target, exist_ok=True)
        else:  # a single-file module (site-packages/typing_extensions.py): bind it onto a file
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o444))
        _mount(path, target, None, MS_BIND | MS_REC)
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    for path in hide:  # folders inside a bound tree that the child must not see (real torch)
        if os.path.isdir(base + path):
            _mount("tmpfs", base + path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k")
    os.makedirs(base + "/dev")
    for name in ("null", "zero", "urandom"):
        os.close(os.open(f"{base}/dev/{name}", os.O_CREAT | os.O_WRONLY, 0o666))
        _mount(f"/dev/{name}", f"{base}/dev/{name}", None, MS_BIND)
    os.makedirs(base + "/.old")
    _check(_syscall("pivot_root", base.encode(), (base + "/.old").encode()), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount old root")
    os.rmdir("/.old")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir("/tmp")


def _become(user: list[int] | None) -> None:
    """Run as ``user`` (uid, gid) from now on, when started as root: a user that owns nothing of
    the instructor's (no file to write, no process to signal) and has a process count of its own."""
    if not user or os.getuid() != 0:
        return
    uid, gid = user
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise JailError(errno.EPERM, f"could not switch to the unprivileged user {uid}")


def enter(spec: dict, limit=None) -> None:
    """Isolate this (forked, single-threaded) process as ``spec`` says; return in the isolated one.

    ``spec``: ``namespaces`` (bool), ``base`` (an empty folder for the new root), ``binds`` and
    ``hide`` (absolute paths), ``seccomp`` (bool), ``user``. ``limit()`` sets the rlimits, after the last
    fork and before seccomp (which refuses to change limits). With namespaces, the caller becomes
    a waiting middle process and only the new PID 1 returns from here. ``user``: (uid, gid) to
    switch to first when running as root (every layer then runs as that unprivileged user).
    """
    user = spec.get("user") if os.getuid() == 0 else None
    if spec.get("namespaces"):
        if user:  # root builds the view itself, then becomes the unprivileged user for good
            _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS),
                   "unshare")
        else:  # an ordinary user: a user namespace of its own gives it the right to build one
            _namespaces(os.getuid(), os.getgid())
        pid = os.fork()
        if pid:  # the middle process: wait, then report the worker's end as its own
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)
        _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
        _new_root(spec["base"], spec["binds"], spec["hide"], user)
        _drop_capabilities(user)
    else:
        _become(user)
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if limit is not None:
        limit()
    if spec.get("seccomp"):
        _seccomp(os.getpid())


def probe(spec: dict) -> dict:
    """Which layers work on this machine: ``{"namespaces": bool, "seccomp": bool, "why": str}``.

    Tries them in a throw-away forked child (a failed ``unshare`` leaves nothing behind).
    """
    result = {"namespaces": False, "seccomp": _FILTER is not None, "why": _FILTER_WHY}
    if spec.get("no_namespaces"):
        result["why"] = "; ".join(w for w in ("namespaces switched off (BOOKKIT_GRADER_NO_NAMESPACES=1)",
                                              result["why"]) if w)
        return result
    if os.uname().sysname != "Linux":
        result["why"] = f"no Linux namespaces on {os.uname().sysname} {_machine}"
        result["seccomp"] = False
        return result
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            enter(dict(spec, namespaces=True, seccomp=result["seccomp"]))
            message = b"ok"
        except BaseException as exc:
            message = f"{type(exc).__name__}: {exc}".encode()[:500]
        os.write(write, message)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        text = answer.read().decode("utf-8", "replace")
    os.waitpid(pid, 0)
    if text == "ok":
        result["namespaces"] = True
    else:
        reason = f"no user namespaces ({text or 'the probe died'})"
        result["why"] = "; ".join(w for w in (reason, result["why"]) if w)
    return result
