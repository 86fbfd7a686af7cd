"""Every process ibtool starts, started one way: it dies with ibtool, however ibtool dies.

ibsim, OpenSM, the infiniband-diags clients (ibnetdiscover, dump_fts, smpdump, saquery, perfquery,
smpquery), the benchmark launchers, make: each gets PR_SET_PDEATHSIG (SIGKILL) before it execs,
so the kernel kills it when ibtool ends — Ctrl-C and SIGTERM (which ibtool handles, stopping its
children in order) but also kill -9 and a crash, which nothing in ibtool can handle. A client
orphaned by a kill -9 would otherwise hold an ibsim socket open until it times out.

Children start in a session of their own by default, so a terminal's Ctrl-C reaches ibtool only
and `stop()` ends a child with its whole process group.

    from ibtool import children
    p = children.run(["smpdump", "-D", "0,1", "0x19", "1"], capture_output=True, timeout=60)
    daemon = children.popen(["opensm", "-F", conf], stdout=log)
    ...
    children.stop(daemon)

(PR_SET_PDEATHSIG fires when the *thread* that started the child ends; ibtool's worker threads
wait for the children they start, so a child never outlives its thread while ibtool runs.)

Ctrl-C, SIGTERM and SIGHUP are held back while a child is forked and while `run` lets go of its
Popen: the preexec_fn makes Python run its fork hooks (logging's lock), Popen.__del__ is Python
code, and a signal handled inside either raises there, where Python prints "Exception ignored"
and drops it. One Ctrl-C in a few hundred was lost that way, and a Slurm campaign then waited for
its job to end instead of cancelling it. Held back, the signal is handled just after, in ibtool's
own code (a child just forked is stopped first).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_libc = ctypes.CDLL(None, use_errno=True)
HELD = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}  # the signals ibtool stops on


def die_with_parent(mask: set | None = None):
    """A preexec_fn: the child gets SIGKILL when this process dies (and the signal mask `mask`,
    when the parent forked with signals held). It only calls sigprocmask, prctl and getppid (no
    lock a thread of the parent could hold), so it is safe in a threaded parent."""
    parent = os.getpid()

    def pre():
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
    return pre


def popen(argv: list[str], *, session: bool = True, outlive: bool = False, **kw) -> subprocess.Popen:
    """subprocess.Popen of a child that dies with ibtool (in its own session unless `session` is False).
    `outlive` is for the one kind of child meant to stay: the daemons of `ibtool sim up`, which
    record themselves in the run directory for `sim down` to stop."""
    if outlive:  # no preexec_fn: Python runs no code of its own around this fork
        return subprocess.Popen(argv, start_new_session=session, **kw)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        p = subprocess.Popen(argv, start_new_session=session, preexec_fn=die_with_parent(mask), **kw)  # noqa: PLW1509
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a signal held back is handled (raised) here
    except BaseException:
        stop(p, grace=0)
        raise
    return p


def run(argv: list[str], *, input=None, timeout: float | None = None, capture_output: bool = False,
        check: bool = False, **kw) -> subprocess.CompletedProcess:
    """subprocess.run of a child that dies with ibtool. On `timeout` the child's process group is
    stopped and subprocess.TimeoutExpired raised, as subprocess.run does."""
    if capture_output:
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    if input is not None:
        kw["stdin"] = subprocess.PIPE
    with popen(argv, **kw) as p:
        try:
            out, err = p.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(p, grace=0)
            raise
        except BaseException:  # Ctrl-C, SIGTERM: the child goes first
            stop(p, grace=0)
            raise
    done = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    del p  # Popen.__del__ is Python code too: a signal handled in it would be dropped
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # ... so it is handled (raised) here
    if check:
        done.check_returncode()
    return done


def stop(p: subprocess.Popen, grace: float = 3.0) -> None:
    """Stop a child: TERM its process group (its own session's), then KILL after `grace` s (at
    once when `grace` is 0)."""
    if p.poll() is not None:
        return
    try:
        own = os.getpgid(p.pid) == p.pid  # a child started with session=False shares ibtool's group

        def send(sig):
            os.killpg(p.pid, sig) if own else p.send_signal(sig)
        send(signal.SIGKILL if grace <= 0 else signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        p.wait(timeout=grace if grace > 0 else None)
    except subprocess.TimeoutExpired:
        try:
            send(signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
