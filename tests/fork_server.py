"""The fork server of the tests that start many entry points (test_cli, test_launch,
test_bad_commands, test_bad_workdirs): one process imports JAX and jaxcap's libraries once, and
each command line runs in a child forked from it, as `python -m` would run it."""

import subprocess
import sys
from pathlib import Path

from helpers import ENV, ROOT

# The fork server: see ForkServer. Its children run the entry point as `python -m` would, as
# __main__ with its own flags, stdout, stderr and exit status; the server itself only imports.
FORK_SERVER = """
import gc, json, os, runpy, signal, sys, threading
import arviz, flax.nnx, jax, numpyro, optax, tqdm
import jaxcap.benchmarks.cost, jaxcap.benchmarks.probe, jaxcap.config.base, jaxcap.config.registry
import jaxcap.core.train, jaxcap.meta.arch_query, jaxcap.meta.difficulty, jaxcap.meta.model
import jaxcap.meta.posterior, jaxcap.meta.splits, jaxcap.results.store
from absl import flags
from jax._src import xla_bridge
entry = {"jaxcap.launch", "jaxcap.report", "jaxcap.predict", "jaxcap.bench"}
entry |= {f"jaxcap.main.{m}" for m in ("launch", "report", "predict", "bench")}
assert not entry & set(sys.modules), "an entry point imported: -m would run it twice"
assert not xla_bridge._backends, "a device started: its threads would not survive a fork"
# what defines global flags (orbax does) stays out: --help would list them where -m does not
assert all(m.startswith("absl.") for m in flags.FLAGS.flags_by_module_dict()), "flags defined"
gc.freeze()  # a child's collections and exit then skip these objects: 0.3 s of CPU, not 1.7 s
print(json.dumps(threading.active_count()), flush=True)  # ready, with its Python threads
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        signal.alarm(request["timeout"])
        if request["code"]:  # python -c code args
            sys.argv = ["-c", *request["args"]]
            exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})
        else:  # python -m module args: runpy puts the module's path first, as -m does
            sys.argv = ["-m", *request["args"]]
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        sys.exit(0)  # an exception or SystemExit ends the child as it ends `python -m`
    print(json.dumps(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])), flush=True)
"""


class ForkServer:
    """`python -m jaxcap.X args` answered by a child forked from one process that imported JAX and
    jaxcap's libraries once, for the tests that start many entry points only to see them refuse
    their input in one line: a fresh `python -m` pays ~5 s of CPU in imports, a fork almost
    nothing. The entry point's own module still runs from scratch as __main__ (its flags, its
    parsing, its lock, its one-line errors on its own stderr, its exit status) in a process that
    has not touched a device; only the third-party imports are shared. A test that checks what a
    launch imports (`-X importtime`) starts a real process instead."""

    def __init__(self, env=None):
        import tempfile

        self.log = tempfile.NamedTemporaryFile(prefix="fork-server-", suffix=".log")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-c", FORK_SERVER],
            cwd=ROOT,
            env=env or ENV,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
        )
        threads = self._answer()  # (the BLAS pools' native threads are fork-safe)
        assert threads == 1, f"the fork server runs {threads} threads: a forked child could deadlock"

    def _answer(self):
        import json

        line = self.proc.stdout.readline()
        if not line:
            self.log.seek(0)
            raise AssertionError(f"the fork server died:\n{self.log.read().decode()[-3000:]}")
        return json.loads(line)

    def run(self, module: str, *args, code: str = "", timeout: int = 600) -> subprocess.CompletedProcess:
        """What `python -m module args` (with `code`: `python -c code args`) would return, as
        `subprocess.run(..., text=True)` does."""
        import json
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            request = {"module": module, "code": code, "args": [str(a) for a in args], "timeout": timeout}
            self.proc.stdin.write(json.dumps(request | {"stdout": str(out), "stderr": str(err)}) + "\n")
            self.proc.stdin.flush()
            status = self._answer()
            return subprocess.CompletedProcess([module, *args], status, out.read_text(), err.read_text())

    def launch(self, *args, killer_code: str = "", check: bool = True) -> subprocess.CompletedProcess:
        """`helpers.launch(*args)`, forked."""
        out = self.run("jaxcap.launch", *args, code=killer_code)
        if check and out.returncode != 0:
            raise AssertionError(f"exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        return out

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.log.close()
