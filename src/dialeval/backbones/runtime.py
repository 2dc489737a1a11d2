"""Threads and device, decided once for every backbone.

Thread policy: the idle cores (`dialeval.models.threads.default_threads`: $OMP_NUM_THREADS when
set, else the cores minus the 1-minute load average, at least 1). Chosen over MME's former
"always one thread" because it gives the same answer on a loaded machine (where the idle cores
are 1: the case MME measured, two threads several times slower when the CPU is busy) and does
not waste an idle multi-core machine; and because two policies in one process fought (each
family set the torch thread count to its own value on every call). The count is decided once per
process (the first time it is needed) and re-applied whenever a backbone runs; $OMP_NUM_THREADS,
when set, is the user's decision and wins. An explicit count (`train lm --threads N`,
`train dialogue-encoder --threads N`) applies to that training run only.
"""

from __future__ import annotations

import os

_count: int | None = None


def default_threads() -> int:
    from ..models.threads import default_threads as idle

    return idle()


def thread_count() -> int:
    """The process's torch thread count under the policy, decided the first time it is asked
    (so every backbone call of a process runs with the same count: the idle-core count can
    change with the load, and a float's last bits can change with the count)."""
    global _count
    if _count is None:
        _count = default_threads()
    return _count


def apply_thread_policy() -> None:
    """Set torch's intra-op thread count to the process's count (see above). Called at every
    load, encoding pass and training run, so that a count another library or command set in
    between (an explicit `threads=` of a training run) does not leak into backbone work."""
    import torch

    count = thread_count()
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)


def resolve_device(device: str | None) -> str:
    """"cpu" (the default) or "cuda"/"cuda:N"; a clear error when CUDA is asked for but absent."""
    from ..errors import DialevalError

    name = (device or "cpu").strip().lower()
    if name == "cpu":
        return "cpu"
    if name == "cuda" or name.startswith("cuda:"):
        import torch

        if not torch.cuda.is_available():
            raise DialevalError(f"device {device!r}: CUDA is not available here; use --device cpu")
        return name
    raise DialevalError(f"device {device!r}: choose cpu or cuda")


def available_devices() -> list[str]:
    """The torch devices this process can use: cpu, and cuda, cuda:0 .. when torch sees a GPU."""
    import torch

    names = ["cpu"]
    if torch.cuda.is_available():
        names += ["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return names


def check_device(option: str, value: str | None) -> str:
    """The device `value` of option `option` (e.g. "lm_device"), normalised ("cpu" when None),
    or one line naming the option and the devices there are: every metric that takes a device
    calls this in its constructor, so a device that is not here stops the run before any work
    (`--lm-device cuda: torch sees no CUDA device here (available: cpu)`). "cpu" needs no torch."""
    from ..errors import DialevalError

    flag = "--" + option.replace("_", "-")
    name = "cpu" if value is None else str(value).strip().lower()
    if name == "cpu":
        return "cpu"
    here = available_devices()
    if name == "cuda" or (name.startswith("cuda:") and name[5:].isdigit()):
        if name in here:
            return name
        if len(here) == 1:
            raise DialevalError(f"{flag} {value}: torch sees no CUDA device here (available: cpu)")
        raise DialevalError(f"{flag} {value}: no such CUDA device here (available: {', '.join(here)})")
    raise DialevalError(f"{flag} {value}: not a device (available: {', '.join(here)})")


# Weight dtypes of a backbone (`--sentence-precision`, `--bertscore-precision`): fp32, the
# default, or bfloat16 (a private bf16 copy of the model; outputs are read back as float32).
PRECISIONS = {"fp32": "float32", "bf16": "bfloat16"}


def check_precision(option: str, value: str | None) -> str:
    """fp32 (for None) or bf16; one line naming the option for anything else."""
    from ..errors import DialevalError

    name = "fp32" if value is None else str(value).strip().lower()
    if name not in PRECISIONS:
        raise DialevalError(f"--{option.replace('_', '-')} {value}: choose from {', '.join(PRECISIONS)}")
    return name


def offline_environment() -> None:
    """Never the model hub: local folders only, and no progress bars of our libraries on stderr
    (dialeval's own progress and --json output are the only things a user should see)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
