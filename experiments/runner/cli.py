"""The ``frictionsim`` command line: subcommands and ``run NAME`` for every experiment.

The parser is built from the table of :mod:`frictionsim.experiments.runner.registry`; only the
module of the command named on the command line is imported (to add its arguments
and run it), so ``frictionsim --help`` imports nothing heavy. Everything after the
interpreter's start-up runs inside :func:`main`'s error handling, including that
import, so Ctrl-C at any moment, bad input or a failed simulation ends with one line
on stderr and an exit code, never a traceback (``FRICTIONSIM_DEBUG=1`` shows the
traceback of an unexpected error).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import time
import warnings

from frictionsim.experiments.common import interrupts
from frictionsim.experiments.runner.registry import COMMANDS, Command

DESCRIPTION = """\
frictionsim: servo actuators with extended friction models (M1-M6).

Simulate bench logs with a parameter file, compare parameter files, process raw
logs, identify friction models, cross-check against the event-driven solver,
measure the compiled simulator's speed, run the demo on built-in data, record
bench logs from a servo, or serve a virtual servo on a pseudo-terminal.
Every command takes --help."""


def requested(argv: list[str]) -> tuple[str | None, str | None]:
    """The command named in ``argv``, and the experiment named after ``run``."""
    words = [a for a in argv if not a.startswith("-")]
    command = words[0] if words else None
    experiment = words[1] if command == "run" and len(words) > 1 else None
    return command, experiment


class _Distinct(argparse.Action):
    """A list of choices (``--with``, ``--engines``, …) naming each at most once: a second
    mention does nothing, so it is refused rather than dropped without a word."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        twice = next((v for n, v in enumerate(values) if v in values[:n]), None)
        if twice is not None:
            parser.error(f"argument {option_string or self.dest}: {twice} is named twice")
        setattr(namespace, self.dest, values)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose "expected one argument" says how to pass a value that starts
    with '-' (``--setup=-1:0.1``): argparse takes ``--setup -1:0.1`` for two options; and
    whose lists of choices refuse a choice named twice (:class:`_Distinct`)."""

    argv: tuple[str, ...] = ()

    def add_argument(self, *args, **kwargs):
        if kwargs.get("nargs") in ("+", "*") and kwargs.get("choices") and "action" not in kwargs:
            kwargs["action"] = _Distinct
        return super().add_argument(*args, **kwargs)

    def error(self, message: str):
        m = re.match(r"argument (-[^\s:/]+)(?:/\S+)?: expected (?:one|\d+) arguments?", message)
        if m and any(a == m.group(1) and re.match(r"-\.?\d", b)
                     for a, b in zip(self.argv, self.argv[1:])):
            message += f" (a value that starts with '-' is written {m.group(1)}=VALUE)"
        super().error(message)


def _add(sub, command: Command, full: bool) -> None:
    """A sub-parser for ``command``: with its arguments when ``full``, else only its name."""
    if not full:
        sub.add_parser(command.name, help=command.help)
        return
    module = command.load()
    p = sub.add_parser(command.name, help=command.help, description=module.DESCRIPTION)
    module.add_arguments(p)
    p.set_defaults(command_module=module)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser, complete for the command ``argv`` names (every command's when None)."""
    named, experiment = requested(argv) if argv is not None else (None, None)
    every = argv is None
    _Parser.argv = tuple(argv or ())
    parser = _Parser(prog="frictionsim", description=DESCRIPTION,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        if command.subcommand:
            _add(sub, command, every or command.name == named)
    run = sub.add_parser("run", help="list the experiments, or run one: run NAME [ARGS]",
                         description="Without NAME, list the experiments; with it, run one.")
    run_sub = run.add_subparsers(dest="experiment_name", metavar="NAME")
    for command in COMMANDS:
        _add(run_sub, command, every or (named == "run" and command.name == experiment))
    return parser


def list_experiments() -> None:
    width = max(len(c.name) for c in COMMANDS)
    print("experiments (frictionsim run NAME --help):")
    for command in COMMANDS:
        print(f"  {command.name:<{width}}  {command.help}")




def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """frictionsim's own warnings (implausible values, a scheme mismatch…) as one line."""
    if category.__module__.split(".")[0] == "frictionsim":
        print(f"warning: {message}", file=sys.stderr)
    else:
        _default_show(message, category, filename, lineno, file, line)


_default_show = warnings.showwarning


def _user_error(error: BaseException) -> bool:
    """Whether ``error`` is the user's to fix: one of frictionsim's own
    (:class:`frictionsim.errors.FrictionsimError`: a file, a value, a servo, a missing extra),
    or an ``OSError`` on a file (one the user named: missing, unreadable, a full disk). Any
    other error is a bug."""
    from frictionsim.errors import FrictionsimError

    if isinstance(error, FrictionsimError):
        return True
    return isinstance(error, OSError) and (error.filename is not None
                                           or error.filename2 is not None)


def _said(error: BaseException) -> str:
    """A user's error as its line: an ``OSError`` on a file as "FILE: what the system said"
    (the file first, without Python's ``[Errno N]``), any other as its message."""
    from frictionsim.errors import FrictionsimError

    if isinstance(error, OSError) and not isinstance(error, FrictionsimError) and error.strerror:
        names = [str(n) for n in (error.filename, error.filename2) if n is not None]
        return f"{' → '.join(names)}: {error.strerror}"
    return str(error)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, so every ``finally`` runs (a recording
    releases the servo's torque and closes its log) exactly as for Ctrl-C."""


#: The first signal received (its number), or None. Later ones are ignored while the
#: command unwinds: a second Ctrl-C must not cut short the cleanup of the first.
_SIGNALLED: int | None = None
#: Signals held back while Numba compiled (:func:`_inside_the_compiler`), not yet raised.
_PENDING: list[int] = []
#: How long (s) a signal that landed in a compile waits for it to end: a cold compile under
#: load takes 5-15 s, and an interrupt is honoured within a second. Past it the program
#: leaves at once (:func:`_leave_during_compile`), never returning into the compiler.
COMPILE_GRACE = 0.5
#: When the first held-back signal arrived (time.monotonic), and whether this process may
#: leave without unwinding: the ``frictionsim`` program (not ``main`` called in-process, a
#: test say), and a command that drives no servo (whose torque its unwinding releases).
_HELD_SINCE: list[float] = []
_MAY_LEAVE = {"program": False, "command": True}
_COMMAND = ["frictionsim"]
#: Commands that hold a servo's torque: their interrupt always unwinds.
HARDWARE_COMMANDS = ("record", "record-campaign", "virtual-servo")
_NAMES = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated (SIGTERM)",
          signal.SIGHUP: "terminated (SIGHUP)"}


_COMPILER_FILES = (f"{os.sep}numba{os.sep}", f"{os.sep}llvmlite{os.sep}")


def _inside_the_compiler(frame) -> bool:
    """Whether the interrupted code is Numba's or llvmlite's (compiling, loading a cached
    kernel, freeing LLVM objects): an exception raised there leaves LLVM objects half built
    or half freed, and the process crashes later (seen: exit −11 on Ctrl-C while kernels
    compiled with both cores busy). A compiled kernel itself is never interrupted: Python
    runs the handler once it returns."""
    # a module still being imported (the signal landed in numba's own import) has no lock
    # yet: the frames below are numba's then
    lock = getattr(sys.modules.get("numba.core.compiler_lock"), "global_compiler_lock", None)
    if lock is not None and (lock.is_locked() or _compiling_elsewhere(lock)):
        return True
    while frame is not None:
        if any(part in frame.f_code.co_filename for part in _COMPILER_FILES):
            return True
        frame = frame.f_back
    return False


def _compiling_elsewhere(compiler_lock) -> bool:
    """Whether another thread holds Numba's compiler lock: a worker compiling a kernel
    (the robot fit's evaluator threads) while the main thread waits for it. Raising there
    would leave the main thread joining the workers for the whole compile (46-68 s seen on
    2 busy cores); held back instead, the signal leaves after the grace."""
    rlock = getattr(compiler_lock, "_lock", None)
    if rlock is None or not rlock.acquire(blocking=False):
        return rlock is not None
    rlock.release()
    return False


def _deliver_later(signum: int) -> None:
    """Signal the main thread again in a moment; the handler decides anew. A real signal to
    the main thread (where the platform has one): a main thread that waits on a lock (for
    the worker threads that compile) wakes only for a signal, not for a simulated one."""
    import _thread

    main = threading.main_thread().ident

    def again() -> None:
        time.sleep(0.02)
        if hasattr(signal, "pthread_kill") and main is not None:
            signal.pthread_kill(main, signum)
        else:  # pragma: no cover - Windows
            _thread.interrupt_main(signum)

    threading.Thread(target=again, name="frictionsim-signal", daemon=True).start()


def _on_signal(signum, frame) -> None:
    global _SIGNALLED
    if _SIGNALLED is not None:
        return
    if _inside_the_compiler(frame):
        if not _PENDING:
            _HELD_SINCE[:] = [time.monotonic()]
        elif all(_MAY_LEAVE.values()) and time.monotonic() - _HELD_SINCE[0] > COMPILE_GRACE:
            _leave_during_compile(signum)
        _PENDING.append(signum)  # counted at the end if the command ends first
        _deliver_later(signum)
        return
    _SIGNALLED = signum
    _staging("name_interrupted")()
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated


def _staging(name: str):
    """The staged folders' ``name`` function, or one doing nothing when that module is not
    loaded, or still being imported when the signal lands (no folder is staged yet then)."""
    staging = sys.modules.get("frictionsim.experiments.common.staging")
    return getattr(staging, name, None) or (lambda: None)


def _leave_during_compile(signum: int) -> None:
    """Leave now, from inside a compile that would outlast the grace: the output folders
    being written are settled as an interrupt settles them (the earlier result kept, this
    run's partial one kept beside it or in its place:
    :func:`~frictionsim.experiments.common.staging.settle_interrupted`), one line said, and
    the process ends without unwinding (the compiler is never re-entered)."""
    global _SIGNALLED
    _SIGNALLED = signum
    _staging("settle_interrupted")()
    # the one line every interrupt says: what was saved so far is kept, as always
    print(_interrupt_line(_COMMAND[0], signum), file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(128 + int(signum))


def _quiet_unraisable(unraisable) -> None:
    """An interrupt that landed in a finaliser (llvmlite's, while a kernel was compiling) is
    the interrupt already being handled, not a second error to print."""
    if _SIGNALLED is not None or issubclass(unraisable.exc_type, KeyboardInterrupt):
        return
    _default_unraisable(unraisable)


_default_unraisable = sys.unraisablehook


#: The watchdog's end of the pipe the interpreter writes each signal's number to, made once.
_WAKEUP: list[int] = []


def _watch_for_a_stuck_main_thread(read: int) -> None:
    """The watchdog (:func:`_start_watchdog` says why): each signal's number as
    the interpreter's C handler writes it, then the grace; a signal whose Python handler has
    not run by then leaves the program as one held back in a compile does."""
    while True:
        try:
            data = os.read(read, 64)
        except OSError:
            return
        if not data:
            return
        signum = data[-1]
        if signum not in _NAMES:
            continue
        time.sleep(COMPILE_GRACE)
        if _SIGNALLED is None and not _PENDING and all(_MAY_LEAVE.values()):
            _leave_during_compile(signum)


def _start_watchdog() -> int:
    """The write end of the signals' wakeup pipe, its watchdog thread started (once).

    Python runs a signal's handler in the main thread between bytecodes: a main thread inside
    one long native call (Warp compiling a module through ctypes, about 2.5 s cold on busy
    cores; a nogil kernel that runs for seconds) runs it only when the call returns. The
    interpreter's C handler writes the signal's number to the wakeup pipe at once, and this
    thread sees it while that call leaves the GIL free: past :data:`COMPILE_GRACE` with the
    handler still not run, the program leaves (the output folders settled, one line said).
    A native call that holds the GIL stops this thread too: it is answered when it returns."""
    if not _WAKEUP:
        read, write = os.pipe()
        os.set_blocking(write, False)
        _WAKEUP.append(write)
        threading.Thread(target=_watch_for_a_stuck_main_thread, args=(read,), daemon=True,
                         name="frictionsim-watchdog").start()
    return _WAKEUP[0]


def _install_signals() -> dict:
    """Our handlers for SIGINT, SIGTERM, SIGHUP (main thread only), the watchdog's wakeup
    pipe where the program itself runs (:func:`_start_watchdog`); the previous ones."""
    global _SIGNALLED
    _SIGNALLED = None
    _PENDING.clear()
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {}
    for sig in _NAMES:
        previous[sig] = signal.signal(sig, _on_signal)
    if _MAY_LEAVE["program"]:
        previous["wakeup"] = signal.set_wakeup_fd(_start_watchdog(), warn_on_full_buffer=False)
    sys.unraisablehook = _quiet_unraisable
    return previous


def _restore_signals(previous: dict) -> None:
    for sig, handler in previous.items():
        if sig == "wakeup":
            signal.set_wakeup_fd(handler)
        else:
            signal.signal(sig, handler)
    sys.unraisablehook = _default_unraisable


def _interrupt_line(command: str, signum: int) -> str:
    """``frictionsim CMD: interrupted``, and what the command kept
    (:mod:`~frictionsim.experiments.common.interrupts`)."""
    detail = interrupts.said()
    return f"{command}: {_NAMES.get(signum, 'interrupted')}" + (f"; {detail}" if detail else "")


def _signal_exit(command: str) -> int:
    """One line, and the shell's exit code for the signal (130 for Ctrl-C)."""
    signum = _SIGNALLED if _SIGNALLED is not None else signal.SIGINT
    print(_interrupt_line(command, signum), file=sys.stderr)
    return 128 + int(signum)


def _from_kernel_cache(error: BaseException) -> bool:
    """Whether ``error`` was raised while Numba read a cached kernel (a truncated or damaged
    ``.nbi``/``.nbc`` file, however it got so)."""
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.replace("\\", "/").endswith("numba/core/caching.py"):
            return True
        tb = tb.tb_next
    return False


def _run_with_sound_cache(args: argparse.Namespace) -> int:
    """Run the command; if a damaged cached kernel stops it, remove the project's cached
    kernels, say so, and run it once more (compiling afresh)."""
    pristine = argparse.Namespace(**vars(args))  # a command may complete its arguments
    try:
        return args.command_module.run(args)
    except Exception as e:
        if isinstance(e, KeyboardInterrupt) or not _from_kernel_cache(e):
            raise
        from frictionsim import kernel_cache

        removed = kernel_cache.purge_all()
        print(f"warning: a cached compiled kernel was damaged ({type(e).__name__}: {e}); "
              f"removed the {removed} cached kernel files, compiling again", file=sys.stderr)
        return pristine.command_module.run(pristine)


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv``; returns the exit code (130 when interrupted)."""
    global _SIGNALLED
    os.environ.setdefault("MPLBACKEND", "Agg")  # figures go to files, never a window
    argv = sys.argv[1:] if argv is None else list(argv)
    from frictionsim.startup import command_name

    command = command_name(argv)  # named before parsing: an interrupt may land there
    _COMMAND[0] = command
    interrupts.clear()
    previous = _install_signals()
    try:
        warnings.showwarning = _show_warning
        parser = build_parser(argv)
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        action = getattr(args, "robot_command", None)  # robot's own sub-commands
        command = _COMMAND[0] = f"frictionsim {args.command}" + (f" {action}" if action else "")
        _MAY_LEAVE["command"] = args.command not in HARDWARE_COMMANDS
        if args.command == "run":
            if args.experiment_name is None:
                list_experiments()
                return 0
            command = _COMMAND[0] = f"frictionsim run {args.experiment_name}"
        from frictionsim.experiments.runner.arguments import prepare

        prepare(args)
        code = _run_with_sound_cache(args)
        if _SIGNALLED is None and _PENDING:  # held back, and the command finished first
            _SIGNALLED = _PENDING[0]
        if _SIGNALLED is not None:  # an interrupt swallowed on the way (by a finaliser)
            return _signal_exit(command)
        if interrupts.said() is not None:  # the command caught it and said what it kept
            return _signal_exit(command)
        return code
    except KeyboardInterrupt:
        return _signal_exit(command)
    except BrokenPipeError:
        # The reader went away (| head): say nothing more, and let no flush at exit complain.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return 141
    except MemoryError:
        print(f"{command}: error: out of memory", file=sys.stderr)
        return 1
    except Exception as e:
        if _SIGNALLED is not None:  # a consequence of the interrupt (a compilation cut short)
            return _signal_exit(command)
        if _user_error(e):
            print(f"{command}: error: {_said(e)}", file=sys.stderr)
            return 1
        if os.environ.get("FRICTIONSIM_DEBUG"):
            raise
        print(f"{command}: internal error: {type(e).__name__}: {e}\n(this is a bug: please "
              "report it with the command line; FRICTIONSIM_DEBUG=1 shows the traceback)",
              file=sys.stderr)
        return 2
    finally:
        warnings.showwarning = _default_show
        _restore_signals(previous)
        interrupts.clear()  # said: the next command line (in this process) starts afresh


def entry() -> None:
    """The ``frictionsim`` command. After a signal the process ends at once, once its outputs
    are written or removed and its streams flushed: the interpreter's teardown would run the
    finalisers of a kernel whose compilation the signal cut short, and those can crash."""
    _MAY_LEAVE["program"] = True  # the program itself: it may end without unwinding
    code = main()
    for sig in _NAMES:  # a signal held back and re-sent now must not interrupt the exit
        signal.signal(sig, signal.SIG_IGN)
    if _SIGNALLED is not None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
