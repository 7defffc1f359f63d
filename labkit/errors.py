"""Every error labkit raises on purpose, in one place. Each says what went wrong and what to
do; the modules that raise them re-export their own (labkit.core.worker.KernelCrashError...)."""


class KernelCrashError(RuntimeError):
    """The code measured (a switch kernel, labkit's or a user's, or a peer) killed its worker
    process (the message names the entry, the parameters and the signal)."""


class MeasurementTimeout(TimeoutError):
    """A worker did not answer in time and was killed."""


class WorkerError(RuntimeError):
    """The worker answered with an error (the message carries it)."""


class EntryUnavailableError(ValueError):
    """The entry (a kernel or a peer) exists but cannot run on this machine (the message says
    why and what to install)."""


class SwitchCountError(RuntimeError):
    """The two contexts' counters disagree with the number of switches the loop should make."""


class ToolMissingError(RuntimeError):
    """valgrind (or the counting driver) is not installed here; the message says how to get it."""


class UnsupportedInstructionError(RuntimeError):
    """valgrind cannot decode an instruction of this build (-march=native may emit AVX-512,
    which valgrind 3.19 does not know)."""


class CountError(RuntimeError):
    """A callgrind count failed: `reason` says why in one line, `log` holds valgrind's own
    output (empty when there is none); the message is both."""

    def __init__(self, reason: str, log: str = ""):
        super().__init__(f"{reason}: {log}" if log else reason)
        self.reason, self.log = reason, log


class EchoError(RuntimeError):
    """A server dropped, corrupted or refused a message, died, or would not stop."""


class ServerUnavailableError(ValueError):
    """The server exists but cannot run here (the message says why and what to install)."""


class UserSwitchBuildError(ValueError):
    """A user's switch did not build with the lab's flags: the message gives the compiler's
    first error line (file:line: error: ...); `log` holds the compiler's whole output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class UserSwitchError(ValueError):
    """A user's switch failed a correctness check (the message names the check and, for a
    register, the register): it is not measured. `checks` holds every check's result."""

    def __init__(self, message: str, checks=None):
        super().__init__(message)
        self.checks = checks


class ParameterError(ValueError):
    """A bad value of one parameter: `param` names it as the function takes it, `message`
    says what is wrong, reading on from the name ("must be at least 1; got 0"). `other`,
    (a parameter, its value), is the setting of another parameter that accepts this value
    after all. A caller that knows the parameters under other names (the command line's
    options) says it in those without cutting the text."""

    def __init__(self, param: str, message: str, *, other: tuple[str, object] | None = None):
        allow = f"; pass {other[0]}={other[1]!r} to allow it" if other else ""
        super().__init__(f"{param} {message}{allow}")
        self.param, self.message, self.other = param, message, other


class ParameterTypeError(ParameterError, TypeError):
    """A ParameterError about a value of the wrong kind: a TypeError as well."""


class BundleError(ParameterError):
    """A bundle folder that cannot be read (missing, damaged, incomplete): `path` is the
    folder, `reason` what is wrong with it."""

    def __init__(self, path, reason: str):
        super().__init__("path", f"{path}: {reason}")
        self.path, self.reason = path, reason
