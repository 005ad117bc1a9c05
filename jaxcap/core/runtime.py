"""Process-level JAX settings a run depends on: compilation cache, matmul precision, x64, and the
XLA options of the programs a bucket runs once or a few times.

Kept in one place so that config.json records them and tests, benchmarks and launches set them
the same way.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import platform
import tempfile
import time
from pathlib import Path

import jax

from jaxcap.fields import Bool, ConfigError, Float, Int, Str, setting

DEFAULT_CACHE = Path(os.environ.get("JAXCAP_CACHE", Path.home() / ".cache" / "jaxcap" / "xla"))
MATMUL_PRECISIONS = ("default", "highest", "high", "float32", "tensorfloat32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class Runtime:
    """How a run is carried out, never what it computes (config.runtime; left out of config.json's
    identity, so a resume may change it). The config section is generated from these fields."""

    # a checkpoint every checkpoint_minutes of wall time, every checkpoint_every chunks
    # (0: never by count), and at the end
    checkpoint_every: int = setting(0, Int(0))
    checkpoint_minutes: float = setting(10.0, Float(0.0))
    progress: bool = setting(True, Bool())
    # event files in <workdir>/tensorboard (pip install 'jaxcap[tracking]')
    tensorboard: bool = setting(False, Bool())
    # a W&B project name logs the run there ('': off; pip install 'jaxcap[wandb]')
    wandb: str = setting("", Str())
    compilation_cache: str = setting("default", Str())
    # devices the population is split over; 0: automatic (jaxcap/core/sharding.py)
    devices: int = setting(0, Int(0))
    # several processes: 'host:port' of process 0, or 'auto' (TPU pod, Slurm)
    coordinator: str = setting("", Str())
    num_processes: int = setting(1, Int(1))
    process_id: int = setting(0, Int(0))
    # a sweep worker silent this long is dead: its trials go to the others (hpo/claims.py)
    worker_grace_minutes: float = setting(10.0, Float(0.01))


def enable_compilation_cache(directory: str | os.PathLike | None = None) -> None:
    """Persistent XLA cache: a second process reuses compiled programs (15 s -> 0.5 s on CPU)."""
    if directory == "":
        return
    directory = Path(directory or DEFAULT_CACHE).expanduser()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=directory).close()  # writable for real (modes, read-only mounts)
    except OSError as e:
        raise ConfigError(
            f"config.runtime.compilation_cache: cannot write {directory} ({e.strerror}); allowed: a "
            "writable directory, 'default' ($JAXCAP_CACHE or ~/.cache/jaxcap/xla) or 'off'"
        ) from None
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


@contextlib.contextmanager
def numerics(matmul_precision: str, needs_x64: bool):
    """Scope a run's numerics: fp32 matmul precision (GPUs default to TF32) and x64 if needed."""
    with contextlib.ExitStack() as stack:
        if matmul_precision != "default":
            stack.enter_context(jax.default_matmul_precision(matmul_precision))
        if needs_x64:
            stack.enter_context(jax.enable_x64(True))
        yield


def intra_op_threads() -> int:
    """The size of XLA:CPU's intra-op thread pool: $NPROC if it is a positive integer, else the
    cores this process may run on (XLA's DefaultThreadPoolSize). A contraction with a long inner
    dimension rounds differently at another size, so CPU numbers repeat bit for bit only at the
    same count (docs/engine.md, "bfloat16 on the CPU: same command, same numbers")."""
    text = os.environ.get("NPROC", "")
    return int(text) if text.isdigit() and int(text) > 0 else len(os.sched_getaffinity(0))


def describe_devices() -> str:
    devices = jax.devices()
    kinds = sorted({d.device_kind for d in devices})
    cpu = ""
    if devices[0].platform == "cpu":
        cpu = f", {os.cpu_count()} CPU cores, {intra_op_threads()} intra-op threads"
    where = f"{len(devices)} x {'/'.join(kinds)} ({devices[0].platform}{cpu})"
    if jax.process_count() > 1:
        where += f" in {jax.process_count()} processes (this is process {jax.process_index()})"
    return f"{where}, jax {jax.__version__}, Python {platform.python_version()}"


class PhaseClock:
    """Wall seconds per phase of a host loop, for the line a run prints at its end.

    `with clock("eval"): ...` adds the block's time to its phase. The first chunk and eval,
    which compile their programs, go to a phase of their own ("compile"), so the training rate
    of the later chunks ("train") is the one `python -m jaxcap.bench` measures.
    """

    def __init__(self):
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.count: dict[str, int] = collections.defaultdict(int)

    @contextlib.contextmanager
    def __call__(self, phase: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] += time.perf_counter() - start
            self.count[phase] += 1

    def summary(
        self, members: int, chunk_steps: int, step_flops: int = 0, peak: tuple[str, float] | None = None
    ) -> str:
        """'N model-steps/s training (M members), F TFLOP/s model (x % of <peak> peak); T s: train
        x%, eval y%, ...' (shares of T). `step_flops`: the model FLOPs of one model-step (0: no
        FLOPs rate); `peak`: the name and TFLOP/s of the devices' peak, if known (the MFU)."""
        # one chunk only: its time includes the compile, so there is no training rate
        trained = self.count["train"]
        rate = members * chunk_steps * trained / self.seconds["train"] if trained else 0
        head = f"{rate:,.0f} model-steps/s" if rate else "- model-steps/s"
        head += f" training ({members} members)"
        if rate and step_flops:
            tflops = rate * step_flops / 1e12
            head += f", {_flops_rate(tflops)} model"
            if peak:
                head += f" ({100 * tflops / peak[1]:.1f} % of {peak[0]} peak)"
        total = sum(self.seconds.values())
        shares = ", ".join(f"{name} {100 * s / total:.1f}%" for name, s in self.seconds.items() if s)
        return f"{head}; {total:.1f} s: {shares}"


def _flops_rate(tflops: float) -> str:
    """'1.23 TFLOP/s', or '45.6 GFLOP/s' below one TFLOP/s (a CPU's): 3 digits, or whole ones."""
    value, unit = (tflops, "TFLOP/s") if tflops >= 1 else (1000 * tflops, "GFLOP/s")
    return f"{value:.3g} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def init_options() -> dict | None:
    """XLA options for init, which a bucket runs once: on the CPU, LLVM at -O1, not XLA's -O3. Its
    run time is nothing, its compile time was not (the threefry rounds; times:
    docs/tests.md#compile-levels-measured), with bit-identical parameters
    (`test_init_compiles_to_the_same_bits`). Not -O0, and not the baselines program:
    there the last bits of logs and sums change with the level. Other backends: their defaults."""
    return {"xla_backend_optimization_level": 1} if jax.default_backend() == "cpu" else None


# LLVM's optimization level on the CPU for the programs a bucket runs once or once per eval (data,
# baselines, evaluate), where compile time is most of their cost; unset: XLA's default. Only for
# compile-bound runs whose numbers are compared among themselves (the tests set it to 0): the last
# bits of a loss or a baseline change with the level, so a table then differs from a default run's.
FEW_LEVEL_ENV = "JAXCAP_XLA_FEW_LEVEL"


def few_options() -> dict | None:
    """XLA options for the data, baselines and evaluate programs: `$JAXCAP_XLA_FEW_LEVEL` on the
    CPU (what 0 saves: docs/tests.md#compile-levels-measured); a run's training steps, the program
    that runs most, keep the default."""
    level = os.environ.get(FEW_LEVEL_ENV, "")
    if not level or jax.default_backend() != "cpu":
        return None
    if level not in ("0", "1", "2", "3"):
        raise ConfigError(
            f"${FEW_LEVEL_ENV}: got {level!r}; allowed: 0, 1, 2 or 3 (LLVM's -O level), or unset"
        )
    return {"xla_backend_optimization_level": int(level)}
