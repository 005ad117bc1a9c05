"""The notebooks, stored clean and executed top to bottom on CPU by a kernel of this interpreter
(the install cell skips itself, the configs come from this checkout). Each opens on Colab from its
badge and names the repository's URL once, in its first code cell. quickstart: a smoke-sized
calibration through library calls, its tables printed, its figures displayed, a plot of the
user's own shown by plt.show(), a prediction made, no TqdmWarning; it asks for no special runtime
and installs only jaxcap. inspect_run: reads a smoke run's workdir
found from the repository, every bucket it holds, refuses (without creating it) a missing one it
was told to read, and on a fresh runtime with no run makes a smoke run first."""

import sys

import pytest
from helpers import ROOT

pytestmark = pytest.mark.slow  # end-to-end launches and multi-process runs: the full tier

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
kernelspec = pytest.importorskip("ipykernel.kernelspec")

NOTEBOOKS = ROOT / "notebooks"
REPO = "https://github.com/jaxcap/jaxcap"
QUICKSTART = NOTEBOOKS / "quickstart.ipynb"
INSPECT = NOTEBOOKS / "inspect_run.ipynb"


@pytest.mark.parametrize("path", [QUICKSTART, INSPECT], ids=lambda p: p.stem)
def test_notebook_is_stored_valid_and_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)
    assert "accelerator" not in notebook.metadata  # no special runtime requested
    intro = notebook.cells[0].source
    assert "](https://colab.research.google.com/)" not in intro  # no badge to Colab's home page
    # the badge opens this very notebook from the repository, on a fresh Colab runtime
    assert (
        f"(https://colab.research.google.com/github/jaxcap/jaxcap/blob/main/notebooks/{path.name})" in intro
    )
    install = code[0].source
    assert "fresh Colab runtime" in install and "-e {CHECKOUT}" in install and "JAXCAP_REPO" in install
    # the repository's URL in one place: set once, in the first code cell, read everywhere else
    assert install.count(f'REPO_URL = "{REPO}"') == 1
    assert not [c for c in code[1:] if REPO in c.source or "REPO_URL =" in c.source]
    assert "[domains]" not in install  # installs only what it uses


def _client(notebook, tmp_path, monkeypatch):
    """A client whose "python3" kernel is this interpreter, importing jaxcap from this checkout."""
    # "python3" must start this interpreter, whatever other kernelspecs the machine has:
    # JUPYTER_PATH comes first in the kernelspec search
    kernelspec.write_kernel_spec(tmp_path / "jupyter" / "kernels" / "python3")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    return nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )


def _text(notebook, cell_id: str) -> str:
    (cell,) = [c for c in notebook.cells if c.id == cell_id]
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def test_inspect_run_reads_every_bucket_of_a_run(modmod_smoke, tmp_path, monkeypatch):
    monkeypatch.setenv("JAXCAP_WORKDIR", str(modmod_smoke[0]))
    notebook = nbformat.read(INSPECT, as_version=4)
    _client(notebook, tmp_path, monkeypatch).execute()
    assert "buckets: b0" in _text(notebook, "table") and "modulus" in _text(notebook, "table")
    (curves,) = [c for c in notebook.cells if c.id == "curves"]
    # one figure per bucket, drawn by the cell's own plt.show() (the inline backend: no library
    # module may have switched matplotlib to Agg)
    assert sum("image/png" in o.get("data", {}) for o in curves.outputs) == 1


def test_inspect_run_makes_a_smoke_run_on_a_fresh_runtime(tmp_path, monkeypatch):
    """As on a fresh Colab runtime after the install cell: the notebook alone in an empty folder,
    no checkout above it, no run named: it makes the modmod smoke run and reads it."""
    monkeypatch.delenv("JAXCAP_WORKDIR", raising=False)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    notebook = nbformat.read(INSPECT, as_version=4)
    client = _client(notebook, tmp_path, monkeypatch)
    client.resources = {"metadata": {"path": str(fresh)}}
    client.execute()
    assert "making the modmod smoke run" in _text(notebook, "workdir")
    assert "buckets: b0" in _text(notebook, "table") and "modulus" in _text(notebook, "table")
    assert (fresh / "runs" / "modmod_smoke" / "members.csv").is_file()


def test_inspect_run_refuses_a_missing_workdir_without_creating_it(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXCAP_WORKDIR", "runs/does-not-exist")  # relative: from the repository
    notebook = nbformat.read(INSPECT, as_version=4)
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="no jaxcap run in .*does-not-exist"):
        _client(notebook, tmp_path, monkeypatch).execute()
    assert not (ROOT / "runs" / "does-not-exist").exists() and not (NOTEBOOKS / "runs").exists()


@pytest.mark.slow
def test_quickstart_runs_a_smoke_calibration(tmp_path, monkeypatch):
    """Top to bottom in a fresh kernel; the config cell reserves a CPU device per NUTS chain
    before JAX starts, so the chains run in parallel as the text says (the devices cell)."""
    monkeypatch.setenv("JAXCAP_NOTEBOOK_WORKDIR", str(tmp_path / "run"))
    # JAXCAP_CACHE (the shared compilation cache) is set by conftest.py; the kernel inherits it
    notebook = nbformat.read(QUICKSTART, as_version=4)
    _client(
        notebook, tmp_path, monkeypatch
    ).execute()  # raises CellExecutionError naming the cell if any cell fails

    outputs = {cell.id: cell.outputs for cell in notebook.cells if cell.cell_type == "code"}
    assert not [o for outs in outputs.values() for o in outs if o.output_type == "error"]

    def text(cell_id: str) -> str:
        return "".join(o.get("text", "") for o in outputs[cell_id] if o.output_type == "stream")

    assert "families: modulo, random_labels" in text("config")
    assert "platform: cpu" in text("devices") and f"Python {sys.version.split()[0]}" in text("devices")
    assert "NUTS chains: 2, parallel" in text("devices")  # devices reserved before JAX started
    assert "effective capacity C (bits of random_labels" in text("run")
    assert "modulus bits" in text("run") and "median" in text("run")  # the per-level table of a family
    (table,) = [o.data["text/markdown"] for o in outputs["report"] if o.output_type == "display_data"]
    assert "## Effective capacity C per architecture" in table and "| architecture |" in table
    assert "![" not in table  # figure links would not resolve from the notebook's folder
    pngs = sorted(p.name for p in (tmp_path / "run" / "report").glob("*.png"))
    assert pngs == [
        "calibration.png",
        "capacity.png",
        "heldout.png",
        "monotone.png",
        "success_vs_complexity.png",
    ]
    shown = [o for o in outputs["figures"] if o.output_type == "display_data" and "image/png" in o.data]
    assert len(shown) == len(pngs) and text("figures").split() == pngs
    assert text("predict").count("P(learned)") == 3
    # the user's own matplotlib figure: plt.show() draws it inline after jaxcap has made its reports
    assert [o for o in outputs["curves"] if "image/png" in o.get("data", {})]
    # no ipywidgets in this kernel: text progress bars, and no TqdmWarning (NumPyro's tqdm.auto)
    stderr = "".join(
        o.get("text", "") for outs in outputs.values() for o in outs if o.output_type == "stream"
    )
    assert "TqdmWarning" not in stderr and "IProgress not found" not in stderr
